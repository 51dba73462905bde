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
     "pyproject.toml: [tool.ragcov.report] precision = -1: must be from 0 to 10, got -1"),
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


def _every_option():
    from typer.main import get_command

    from ragcov.cli.commands import app

    group = get_command(app)
    return [(name, p) for name, cmd in group.commands.items()  # type: ignore[attr-defined]
            for p in cmd.params if p.name]


def test_one_strict_type_rule_for_every_key() -> None:
    """Each option of each command, given a value of another TOML type: refused. Strings
    where numbers belong were accepted ("5", "99"), while 5.5 and true were refused."""
    import typing

    from ragcov.config import value_problem

    wrong = {int: ["5", 5.5, True], float: ["99", True], bool: ["true", 1],
             str: [5, True], Path: [5, 1.5]}
    right = {int: 1, float: 1, bool: True, str: "x", Path: "x"}
    checked = 0
    for command, param in _every_option():
        annotation = param.type_descriptor.annotation
        many = bool(getattr(param, "multiple", False)) or getattr(param, "nargs", 1) == -1
        kind = next(iter(typing.get_args(annotation)), str) if many else annotation
        assert kind in wrong, (command, param.name, annotation)
        for value in wrong[kind]:
            given = [value] if many else value
            assert value_problem(param, given), (command, param.name, given)
        if many:
            assert value_problem(param, "x") == "expected a list"
        if param.name not in ("corpus", "queries", "traffic", "tests"):  # some refuse "x" later
            good = [right[kind]] if many else right[kind]
            problem = value_problem(param, good)
            assert problem is None or "must" in problem, (command, param.name, problem)
        checked += 1
    assert checked > 150


@pytest.mark.parametrize("text, message", [
    ('k = "5"\n', "ragcov.toml: k = '5': not an integer; write it without quotes"),
    ('fail_under = "99"\n', "ragcov.toml: fail_under = '99': not a number; write it without quotes"),
    ('[report]\nprecision = "3"\n',
     "ragcov.toml: [report] precision = '3': not an integer; write it without quotes"),
    ("omit = [5]\n", "ragcov.toml: omit = [5]: not a string (quote it)"),
    ("[report]\nprecision = 1000\n",
     "ragcov.toml: [report] precision = 1000: must be from 0 to 10, got 1000"),
])
def test_strings_for_numbers_and_numbers_for_strings_are_refused(project: Path, capsys, text: str,
                                                                 message: str) -> None:
    (project / "ragcov.toml").write_text(text)
    code, out, err = cli(capsys, "report")
    assert (code, out, err.strip()) == (1, "", f"ragcov: error: {message}")


def test_the_plugin_reads_the_config_by_the_same_rule(tmp_path: Path) -> None:
    from ragcov.config import plugin_settings
    from ragcov.errors import RagcovError

    for text in ('k = "5"\n', 'fail_under = "99"\n', "precision = 1000\n"):
        (tmp_path / "ragcov.toml").write_text(text)
        with pytest.raises(RagcovError, match="ragcov.toml: "):
            plugin_settings(tmp_path)
    (tmp_path / "ragcov.toml").write_text("k = 5\nfail_under = 99\nprecision = 3\n")
    assert plugin_settings(tmp_path)[1] == {"k": 5, "fail_under": 99, "precision": 3}


def test_rcfile_that_is_not_a_file_says_what_it_is(tmp_path: Path, capsys) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "a folder, not a config file"),
                       (fifo, "a FIFO (named pipe), not a config file"),
                       (Path("/dev/null"), "a device, not a config file"),
                       (tmp_path / "nope.toml", "no such config file")):
        code, _, err = cli(capsys, "--rcfile", str(path), "report")
        assert code == 1 and err.strip().startswith(f"ragcov: error: {path}: {what}"), err


def test_the_llm_is_llm_model_and_its_old_spellings_still_work(capsys, tmp_path: Path) -> None:
    """--model is the embedding model everywhere; generate's LLM was --model and probe's
    --generator-model: both read as --llm-model for one release, with a deprecation line."""
    from ragcov.cli.options import llm_model
    from ragcov.errors import RagcovError

    assert llm_model("g", None, "--model") == "g"
    assert llm_model(None, "g", "--model") == "g"
    assert "--model is deprecated for the LLM" in capsys.readouterr().err
    with pytest.raises(RagcovError, match="name two LLMs"):
        llm_model("a", "b", "--generator-model")
    code, out, _ = cli(capsys, "generate", "--help")
    assert "--llm-model" in out and "--embedding-model" in out
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "doc_id": "d", "text": "Paris is in France."}) + "\n")
    code, _, err = cli(capsys, "generate", "--corpus", str(corpus), "--generator", "extractive",
                       "--retriever", "bm25", "-k", "1", "--budget", "1", "--model", "x",
                       "--data-file", str(tmp_path / "d.ragcov"), "-o", str(tmp_path / "g.jsonl"),
                       "-q")
    assert "--model is deprecated for the LLM" in err


@pytest.mark.parametrize("target", ["ragcov.toml", "pyproject.toml", "conftest.py"])
def test_no_report_is_written_over_the_config_or_a_source_file(project: Path, capsys,
                                                               target: str) -> None:
    """`json -o pyproject.toml` and `probe --drafts-out ragcov.toml` replaced the settings the
    command had just read (the next command: invalid TOML)."""
    text = '[tool.ragcov]\nk = 1\n' if target == "pyproject.toml" else (
        "k = 1\n" if target == "ragcov.toml" else "import os\n")
    (project / target).write_text(text)
    code, _, err = cli(capsys, "json", "-o", target)
    assert code == 1 and "refusing to overwrite it" in err, err
    assert (project / target).read_text() == text


def test_a_team_wide_reachable_and_topic_gate_do_not_break_a_plain_report(project: Path,
                                                                          capsys) -> None:
    """Flat ``reachable = true`` and ``min_topic_coverage = 50`` set for the whole team: a
    data file not probed yet is reported whole with a warning (asked for with the flag, it
    is an error), and the topic gate belongs to ``ragcov topics``, not to ``report``."""
    (project / "ragcov.toml").write_text("reachable = true\nmin_topic_coverage = 50\n")
    code, out, err = cli(capsys, "report")
    assert code == 0, err
    assert "TOTAL" in out and "has no probes: every chunk is counted" in err
    code, _, err = cli(capsys, "report", "--reachable")
    assert code == 1 and "--reachable needs probes" in err
    from ragcov.config import default_map

    got = default_map({"min_topic_coverage": 50}, {"report": ["min_topic_coverage"],
                                                    "topics": ["min_topic_coverage"]})
    assert got == {"topics": {"min_topic_coverage": 50}}
