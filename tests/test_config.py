"""Configuration mistakes are errors that name the file, the table or key, and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli


@pytest.fixture
def project(tmp_path: Path, monkeypatch, city_corpus_file: Path, capsys) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "Tokyo, capital of Japan"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                       "--retriever", "bm25", "--k", "1", "-q")
    assert code == 0, err
    return tmp_path


@pytest.mark.parametrize("file, text, message", [
    ("pyproject.toml", "[tool.ragcov.reprot]\nfail_under = 90\n",
     "pyproject.toml: unknown table [tool.ragcov.reprot] (did you mean [tool.ragcov.report]?)"),
    ("ragcov.toml", "[reprot]\nfail_under = 90\n",
     "ragcov.toml: unknown table [reprot] (did you mean [report]?)"),
    ("ragcov.toml", "[report]\nfail_undr = 90\n",
     "ragcov.toml: [report] has unknown setting(s) fail_undr (did you mean fail_under?)"),
    ("pyproject.toml", "[tool.ragcov]\nshow_mising = true\n",
     "pyproject.toml: unknown setting(s) show_mising in [tool.ragcov] (did you mean show_missing?)"),
])
def test_a_misspelt_table_or_key_is_an_error(project: Path, capsys, file: str, text: str,
                                             message: str) -> None:
    """Before, the misspelt [reprot] table was ignored: the gate was off and the exit 0."""
    (project / file).write_text(text)
    code, out, err = cli(capsys, "report")
    assert code == 1 and out == ""
    assert err.startswith(f"ragcov: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize("file, text, message", [
    ("ragcov.toml", '[run]\nk = "one"\n', "ragcov.toml: [run] k = 'one': not an integer"),
    ("ragcov.toml", 'k = "one"\n', "ragcov.toml: k = 'one': not an integer"),
    ("ragcov.toml", "k = 2.5\n", "ragcov.toml: k = 2.5: not an integer"),
    ("ragcov.toml", "[report]\nshow_missing = \"yes\"\n",
     "ragcov.toml: [report] show_missing = 'yes': not true or false"),
    ("ragcov.toml", "[report]\nfail_under = \"high\"\n",
     "ragcov.toml: [report] fail_under = 'high': not a number"),
    ("pyproject.toml", '[tool.ragcov.run]\nk = "one"\n',
     "pyproject.toml: [tool.ragcov.run] k = 'one': not an integer"),
])
def test_a_bad_value_blames_the_config_file_not_the_flag(project: Path, capsys, file: str,
                                                        text: str, message: str) -> None:
    (project / file).write_text(text)
    code, _, err = cli(capsys, "report")
    assert code == 1
    assert err.strip() == f"ragcov: error: {message}"
    assert "--k" not in err and "Invalid value" not in err


@pytest.mark.parametrize("file, text, args, flag, message", [
    ("ragcov.toml", "fail_under = 160\n", ["report"], ["--fail-under", "160"],
     "ragcov.toml: fail_under = 160: must be a percentage from 0 to 100, got 160"),
    ("ragcov.toml", "[diff]\nfail_under_delta = -3\n", ["diff", ".ragcov", ".ragcov"],
     ["--fail-under-delta", "-3"],
     "ragcov.toml: [diff] fail_under_delta = -3: must be 0 to 100 points, got -3"),
    ("pyproject.toml", "[tool.ragcov.report]\nprecision = -1\n", ["report"],
     ["--precision", "-1"],
     "pyproject.toml: [tool.ragcov.report] precision = -1: must be 0 or more, got -1"),
    ("ragcov.toml", "[faults]\nfail_below = nan\n", ["faults", "--qrels", "q.jsonl"],
     ["--fail-below", "nan"],
     "ragcov.toml: [faults] fail_below = nan: must be a finite number, got nan"),
    ("pyproject.toml", "[tool.ragcov]\nfail-under = 160\n", ["report"], ["--fail-under", "160"],
     "pyproject.toml: [tool.ragcov] fail-under = 160: must be a percentage from 0 to 100, got 160"),
])
def test_a_value_out_of_range_blames_the_config_file(project: Path, capsys, file: str,
                                                     text: str, args: list[str],
                                                     flag: list[str], message: str) -> None:
    """A value the file gave and the command refuses is the file's error, not the flag's;
    the same value given as the flag is the flag's."""
    (project / file).write_text(text)
    code, _, err = cli(capsys, *args)
    assert code == 1
    assert err.strip() == f"ragcov: error: {message}"
    code, _, err = cli(capsys, *args, *flag)
    assert code == 1 and err.startswith(f"ragcov: error: {flag[0]} "), err


def test_good_settings_still_apply(project: Path, capsys) -> None:
    (project / "ragcov.toml").write_text("k = 1\n[report]\nfail_under = 90\nprecision = 1\n")
    code, _, err = cli(capsys, "report")
    assert code == 2 and "fail-under=90" in err


def test_every_registered_option_is_a_known_setting() -> None:
    """Known names come from the commands themselves: a new option needs no list updated."""
    from typer.main import get_command

    from ragcov.cli.commands import app
    from ragcov.config import default_map

    group = get_command(app)
    commands = {name: [p.name for p in cmd.params if p.name]
                for name, cmd in group.commands.items()}  # type: ignore[attr-defined]
    assert {"combine", "erase", "run", "report"} <= set(commands)
    settings = {name: {option: None for option in options} for name, options in commands.items()}
    got = default_map(settings, commands, "ragcov.toml")
    assert got["run"]["parallel_mode"] is None and got["combine"]["keep"] is None


def test_the_plugins_scope_reads_the_config_as_the_cli_does(tmp_path, monkeypatch):
    from ragcov.api import configured_scope
    from ragcov.errors import RagcovError

    monkeypatch.delenv("RAGCOV_RCFILE", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragcov]\nomit = ["*/2009/*"]\nmin_chunk_chars = 20\n'
        '[tool.ragcov.json]\nreachable = true\nomit = []\n')
    report, json_scope = configured_scope("report", tmp_path), configured_scope("json", tmp_path)
    assert report.omit == ("*/2009/*",) and report.min_chunk_chars == 20 and not report.reachable
    assert json_scope.omit == () and json_scope.min_chunk_chars == 20 and json_scope.reachable
    (tmp_path / "pyproject.toml").write_text('[tool.ragcov]\nmin_chunk_chars = "abc"\n')
    with pytest.raises(RagcovError, match="min_chunk_chars = 'abc': expected an integer"):
        configured_scope("report", tmp_path)


def test_only_a_range_check_is_blamed_on_the_file(project: Path, capsys) -> None:
    """A message about how two options combine is the command's, worded as it is."""
    (project / "ragcov.toml").write_text("[run]\nappend = true\n")
    code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "q.jsonl",
                       "--retriever", "bm25", "-p")
    assert code == 1
    assert err.strip().startswith("ragcov: error: --append and --parallel-mode do not go "
                                  "together"), err
