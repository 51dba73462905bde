"""coverage.py's habits that users bring to ragcov: --version, exit statuses, negatable flags."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import cli
from ragcov import __version__
from ragcov.cli.entry import INTERRUPTED


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch, city_corpus_file: Path, capsys) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "Tokyo, the capital of Japan"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                       "--retriever", "bm25", "--k", "1", "-q")
    assert code == 0, err
    return tmp_path


def test_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "ragcov", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"ragcov {__version__}"


def test_usage_error_exits_1_and_fail_under_2(recorded: Path, capsys) -> None:
    """CI must tell a mistyped option (1) from coverage under the gate (2)."""
    code, _, err = cli(capsys, "report", "--fail-under", "40", "--skip-covred")
    assert code == 1 and "--skip-covred" in err
    code, _, err = cli(capsys, "report", "--precision", "many")
    assert code == 1
    code, _, err = cli(capsys, "report", "--fail-under", "40")
    assert code == 2 and "Coverage failure" in err


@pytest.mark.parametrize("value", ["150", "-5", "100.5"])
def test_fail_under_out_of_range_is_refused(recorded: Path, capsys, value: str) -> None:
    code, _, err = cli(capsys, "report", "--fail-under", value)
    assert code == 1 and "--fail-under must be a percentage from 0 to 100" in err


@pytest.mark.parametrize("command", [
    ["select", "-o", "order.json"],
    ["probe", "--corpus", "corpus.jsonl", "--retriever", "bm25", "--sample", "2"],
    ["generate", "--corpus", "corpus.jsonl", "--generator", "extractive", "--retriever", "bm25",
     "-o", "gen.jsonl"],
], ids=["select", "probe", "generate"])
def test_a_negative_seed_is_one_line_before_any_work(recorded: Path, capsys, command: list[str],
                                                     city_corpus_file: Path) -> None:
    (recorded / "corpus.jsonl").write_bytes(city_corpus_file.read_bytes())
    before = (recorded / ".ragcov").read_bytes()
    code, _, err = cli(capsys, *command, "--seed", "-1")
    assert code == 1
    assert err.strip().splitlines() == ["ragcov: error: --seed must be a whole number of at least "
                                        "0, got -1"]
    assert (recorded / ".ragcov").read_bytes() == before
    assert not any((recorded / f).exists() for f in ("order.json", "gen.jsonl"))


def test_show_missing_from_config_can_be_turned_off(recorded: Path, capsys) -> None:
    (recorded / "ragcov.toml").write_text("[report]\nshow_missing = true\n")
    _, with_missing, _ = cli(capsys, "report")
    _, without, _ = cli(capsys, "report", "--no-show-missing")
    assert "Missing" in with_missing or "berlin" in with_missing
    assert with_missing != without
    assert "berlin" not in without


def test_warnings_are_one_line_without_source(tmp_path: Path) -> None:
    (tmp_path / "chatty.py").write_text(textwrap.dedent("""
        import warnings
        def retriever(text, k):
            warnings.warn("ids matched by content", UserWarning)
            return ["a"]
    """))
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "text": "x"}) + "\n"
                                      + json.dumps({"id": "b", "text": "z"}) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "y"}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "ragcov", "run", "--corpus", "c.jsonl",
                           "--queries", "q.jsonl", "--retriever", "chatty:retriever", "-k", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert proc.returncode == 0, proc.stderr
    # Not ragcov's own warning: one line, labelled with the module that warned.
    assert proc.stderr.strip() == "ragcov: warning: (chatty) ids matched by content"


def test_warning_labels_say_whose_warning_it_is() -> None:
    from ragcov.cli.entry import _one_line_warning
    from ragcov.retrievers.resolver import AdapterWarning

    ours = _one_line_warning(AdapterWarning("3 ids matched by content"), AdapterWarning,
                             "/x/site-packages/ragcov/retrievers/resolver.py", 10)
    assert ours == "ragcov: warning: 3 ids matched by content\n"
    dask = _one_line_warning(UserWarning("Port 8787 is already in use.\nPerhaps you already "
                                         "have a cluster running?"), UserWarning,
                             "/venv/lib/python3.11/site-packages/distributed/node.py", 182)
    assert dask == ("ragcov: warning: (distributed) Port 8787 is already in use. Perhaps you "
                    "already have a cluster running?\n")


def test_main_leaves_the_warning_format_as_it_found_it(capsys) -> None:
    import warnings

    before = warnings.formatwarning
    cli(capsys, "--version")
    assert warnings.formatwarning is before


def test_skip_covered_can_be_turned_off(recorded: Path, capsys) -> None:
    (recorded / "ragcov.toml").write_text("[report]\nskip_covered = true\n")
    _, skipping, _ = cli(capsys, "report")
    code, plain, _ = cli(capsys, "report", "--no-skip-covered")
    assert code == 0
    assert "asia" not in skipping and "asia" in plain


def test_skip_covered_says_how_many_documents_it_left_out(recorded: Path, capsys) -> None:
    _, out, _ = cli(capsys, "report", "--skip-covered")
    assert out.rstrip().endswith("1 document skipped due to complete coverage.")
    assert "asia" not in out
    _, out, _ = cli(capsys, "report")
    assert "skipped" not in out and "asia" in out


# A real retriever whose results carry text but no id: ragcov matches them to the
# corpus by content and warns that it did.
BY_CONTENT = textwrap.dedent("""
    def retrieve(text, k):
        return [{"text": "Tokyo is the capital of Japan and a huge metropolis."}]
""")


def _env_with(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])}


def test_api_warning_points_at_the_callers_line_not_ragcov(tmp_path: Path,
                                                           city_corpus_file: Path) -> None:
    (tmp_path / "by_content.py").write_text(BY_CONTENT)
    (tmp_path / "script.py").write_text(textwrap.dedent(f"""
        from ragcov.api import measure
        from ragcov.corpus import load_corpus
        from ragcov.retrievers import wrap
        from ragcov.suite import Suite
        from by_content import retrieve

        corpus = load_corpus({str(city_corpus_file)!r})
        m = measure(corpus, Suite.from_texts(["capital of Japan"]), wrap(retrieve, corpus), k=1)
        print(m.n_queries)
    """))
    proc = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=_env_with(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr  # Python's format: location, then the caller's line
    assert lines[0].startswith(str(tmp_path / "script.py") + ":9: AdapterWarning: ")
    assert "matched them to the corpus by content hash" in lines[0]
    assert lines[1].strip().startswith("m = measure(")
    assert "ragcov" + os.sep not in proc.stderr and "results.append" not in proc.stderr


def test_pytest_warning_summary_names_the_test_not_ragcov(tmp_path: Path,
                                                          city_corpus_file: Path) -> None:
    (tmp_path / "by_content.py").write_text(BY_CONTENT)
    (tmp_path / "test_app.py").write_text(textwrap.dedent("""
        from ragcov.pytest_plugin import record
        from by_content import retrieve

        def test_japan():
            r = record(retrieve)
            assert r("capital of Japan", 1)
    """))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--ragcov", "--ragcov-corpus", str(city_corpus_file), "test_app.py",
                           "-W", "default"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=_env_with(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "AdapterWarning" in proc.stdout, proc.stdout
    summary = proc.stdout[proc.stdout.index("warnings summary"):]
    assert "test_app.py:7: AdapterWarning" in summary, summary
    assert "resolver.py" not in summary and "langchain.py" not in summary


@pytest.mark.slow
def test_dask_worker_warnings_reach_the_user_once_as_one_line(tmp_path: Path,
                                                              city_corpus_file: Path) -> None:
    (tmp_path / "by_content.py").write_text(BY_CONTENT)
    (tmp_path / "q.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "text": f"capital {i}"}) + "\n" for i in range(130)))
    proc = subprocess.run([sys.executable, "-m", "ragcov", "run", "--corpus",
                           str(city_corpus_file), "--queries", "q.jsonl", "--retriever",
                           "by_content:retrieve", "--k", "1", "-q", "--engine", "dask",
                           "--partitions", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=_env_with(tmp_path))
    assert proc.returncode == 0, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if "matched them to the corpus" in line]
    assert ours == ["ragcov: warning: retriever results carry no corpus chunk id of their own; "
                    "matched them to the corpus by content hash"], proc.stderr
    assert "AdapterWarning" not in proc.stderr and "warnings.warn" not in proc.stderr


# ------------------------------------------------------------ parallel mode, combine, erase
SHARD = re.compile(r"^\.ragcov\.[^.]+\.\d+\.[0-9a-f]{6}$")


def _parallel_runs(capsys, folder: Path, corpus: Path, ks: tuple[int, int] = (1, 1)) -> list[Path]:
    for n, (text, k) in enumerate(zip(["Tokyo, the capital of Japan", "Berlin capital"], ks)):
        (folder / f"q{n}.jsonl").write_text(json.dumps({"id": f"q{n}", "text": text}) + "\n")
        code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", f"q{n}.jsonl",
                           "--retriever", "bm25", "--k", str(k), "-q", "--parallel-mode")
        assert code == 0, err
    return sorted(p for p in folder.iterdir() if p.name.startswith(".ragcov."))


def _recorded_queries(path: Path) -> list[str]:
    """Read straight from the SQLite file, not through ragcov."""
    con = sqlite3.connect(path)
    try:
        return sorted(row[0] for row in con.execute("SELECT id FROM queries"))
    finally:
        con.close()


def test_parallel_mode_shards_are_found_combined_and_removed(tmp_path: Path, monkeypatch,
                                                            city_corpus_file: Path,
                                                            capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    assert len(shards) == 2 and all(SHARD.match(p.name) for p in shards), shards
    assert not (tmp_path / ".ragcov").exists()
    code, out, err = cli(capsys, "combine")
    assert code == 0, err
    assert [f"Combined data file {p.name}" for p in shards] == out.splitlines()[:2]
    assert _recorded_queries(tmp_path / ".ragcov") == ["q0", "q1"]
    assert not any(p.exists() for p in shards)
    code, _, err = cli(capsys, "combine")
    assert code == 1 and err.strip() == "ragcov: error: No data to combine"


def test_combine_of_a_folder_that_holds_no_shard_says_what_it_looked_for(
        tmp_path: Path, monkeypatch, city_corpus_file: Path, capsys) -> None:
    """Shards are found by the data file's name: a folder of files named otherwise is named."""
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    runs = tmp_path / "runs"
    runs.mkdir()
    for n, shard in enumerate(shards):
        shard.rename(runs / f"nightly-{n}.ragcov")
    (runs / ".ragcov.broken").write_text("not a data file\n")
    code, _, err = cli(capsys, "combine", "runs")
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("ragcov: error: No data to combine (no usable .ragcov.* shard in runs; "
                          "name other data files on the command line; 1 shard-named file unusable, "
                          "first runs/.ragcov.broken: "), err
    code, out, err = cli(capsys, "combine", *sorted(str(p) for p in runs.glob("nightly-*")))
    assert code == 0, err
    assert _recorded_queries(tmp_path / ".ragcov") == ["q0", "q1"]


def test_combine_keep_and_append(tmp_path: Path, monkeypatch, city_corpus_file: Path,
                                 capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    first = next(p for p in shards if _recorded_queries(p) == ["q0"])
    code, _, _ = cli(capsys, "combine", "--keep", str(first))
    assert code == 0 and all(p.exists() for p in shards)
    assert _recorded_queries(tmp_path / ".ragcov") == ["q0"]
    code, _, err = cli(capsys, "combine", "--append", ".")  # a folder: its shards
    assert code == 0, err
    assert _recorded_queries(tmp_path / ".ragcov") == ["q0", "q1"]
    assert not any(p.exists() for p in shards)


def test_a_data_file_named_dash_is_refused_not_written(tmp_path: Path, monkeypatch,
                                                       city_corpus_file: Path, capsys) -> None:
    """``-`` is stdout to every report; a SQLite data file cannot go there, and a file
    literally named ``-`` is what a user never meant."""
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    message = ("ragcov: error: -: a data file cannot go to stdout (it is a SQLite file); give "
               "--data-file a file path")
    code, _, err = cli(capsys, "combine", "--keep", "-o", "-", *map(str, shards))
    assert code == 1 and err.strip() == message
    (tmp_path / "q.jsonl").write_text('{"id": "q", "text": "capital of Japan"}\n')
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                       "--retriever", "bm25", "--data-file", "-", "-q")
    assert code == 1 and err.strip() == message
    assert not (tmp_path / "-").exists() and all(p.exists() for p in shards)


def test_combine_refuses_shards_of_different_runs_and_keeps_them(tmp_path: Path, monkeypatch,
                                                                 city_corpus_file: Path,
                                                                 capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file, ks=(1, 2))
    code, _, err = cli(capsys, "combine")
    assert code == 1 and "k differs" in err
    assert all(p.exists() for p in shards) and not (tmp_path / ".ragcov").exists()


def test_combine_skips_a_stray_file_named_like_a_shard(tmp_path: Path, monkeypatch,
                                                       city_corpus_file: Path, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    (tmp_path / ".ragcov.notes").write_text("not a data file")
    code, _, err = cli(capsys, "combine")
    assert code == 0
    assert "ragcov: warning: couldn't use data file .ragcov.notes" in err
    assert (tmp_path / ".ragcov.notes").exists() and not any(p.exists() for p in shards)


def test_erase_removes_the_data_file_and_shards(tmp_path: Path, monkeypatch,
                                                city_corpus_file: Path, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    cli(capsys, "combine", "--keep")
    code, out, err = cli(capsys, "erase")
    assert code == 0 and out == "" and err == ""
    assert not (tmp_path / ".ragcov").exists() and not any(p.exists() for p in shards)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "q0.jsonl", "q1.jsonl"]
    code, _, _ = cli(capsys, "erase")  # nothing to erase is not an error (coverage erase)
    assert code == 0


def test_erase_refuses_a_file_that_is_not_ragcovs_and_deletes_nothing(
        tmp_path: Path, monkeypatch, city_corpus_file: Path, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    shards = _parallel_runs(capsys, tmp_path, city_corpus_file)
    con = sqlite3.connect(tmp_path / "other.db")  # a SQLite file of someone else's
    con.execute("CREATE TABLE coverage_schema (version integer)")
    con.commit()
    con.close()
    code, _, err = cli(capsys, "erase", "--data-file", "other.db")
    assert code == 1 and "other.db: is not a ragcov data file; refusing to erase it" in err
    assert (tmp_path / "other.db").exists()
    (tmp_path / ".ragcov").write_text("my notes\n")
    code, _, err = cli(capsys, "erase")
    assert code == 1 and ".ragcov: is not a ragcov data file" in err
    assert (tmp_path / ".ragcov").read_text() == "my notes\n" and all(p.exists() for p in shards)


class _InterruptedKernel:
    """FAKE (labelled): a retriever whose compiled kernel is interrupted. A Ctrl-C landing
    as numba's BM25 kernel returns raises SystemError with the KeyboardInterrupt as its
    context, about 2 runs in 10 on a 40k-chunk corpus: too rare to test with a real signal."""

    def __init__(self, corpus) -> None:
        pass

    def fingerprint(self) -> dict:
        return {"kind": "callable", "name": "interrupted-kernel"}

    def retrieve(self, texts, k):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("<built-in function top_k> returned a result with an exception set")  # noqa: B904 - as CPython raises it: the interrupt is its context


class _BrokenKernel(_InterruptedKernel):
    def retrieve(self, texts, k):
        raise SystemError("a real interpreter error")


def test_ctrl_c_inside_compiled_code_is_130_one_line(tmp_path: Path, monkeypatch, capsys,
                                                      city_corpus_file: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "Tokyo"}) + "\n")
    base = ["run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl", "-q"]
    code, _, err = cli(capsys, *base, "--retriever", "test_cli_habits:_InterruptedKernel")
    assert code == 130 and err.strip().splitlines() == [INTERRUPTED], err
    assert not (tmp_path / ".ragcov").exists()
    with pytest.raises(SystemError, match="a real interpreter error"):  # never hidden
        cli(capsys, *base, "--retriever", "test_cli_habits:_BrokenKernel")
