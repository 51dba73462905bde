"""The command line end to end (BM25 keeps these fast; the dense path is in test_dense.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cli


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch, city_corpus_file: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q-fr", "question": "What is the capital of France?"},
        {"id": "q-de", "question": "Which city is Germany's capital?"},
        {"id": "q-plants", "question": "How do plants make sugar from sunlight?"},
    ]), encoding="utf-8")
    return tmp_path


def run_bm25(capsys, workdir: Path, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, "run", "--corpus", str(workdir / "corpus.jsonl"), "--queries",
               str(workdir / "queries.jsonl"), "--retriever", "bm25", "--k", "2", *extra)


def test_run_report_json_agree_with_an_independent_count(capsys, workdir: Path) -> None:
    code, out, _ = run_bm25(capsys, workdir)
    assert code == 0 and "Wrote .ragcov: 3 queries" in out
    code, out, _ = cli(capsys, "json", "-o", "cov.json")
    assert code == 0
    doc = json.loads((workdir / "cov.json").read_text())
    assert doc["meta"]["format"] == 1 and doc["meta"]["k"] == 2
    assert doc["meta"]["retriever"]["kind"] == "bm25"
    # Independent recount from the JSON's own retrieved lists.
    retrieved = [c for q in doc["queries"].values() for c in q["retrieved"]]
    assert all(len(q["retrieved"]) <= 2 for q in doc["queries"].values())
    assert doc["queries"]["q-fr"]["retrieved"][0] == "paris"
    assert doc["totals"]["chunks"] == 8 == len(doc["chunks"])
    assert doc["totals"]["covered_chunks"] == len(set(retrieved))
    assert doc["totals"]["chunk_coverage"] == pytest.approx(len(set(retrieved)) / 8)
    for cid, info in doc["chunks"].items():
        assert info["hit_count"] == retrieved.count(cid)
        assert info["queries"] == [q for q, v in doc["queries"].items() if cid in v["retrieved"]]
    europe = doc["documents"]["europe"]
    assert europe["chunks"] == 3
    assert set(europe["missing_chunks"]) == {"paris", "berlin", "madrid"} - set(retrieved)
    assert set(doc["totals"]) >= {"normalized_entropy", "gini", "mean_pairwise_jaccard",
                                  "entropy_support", "gini_over", "queries"}


def test_report_formats_and_fail_under(capsys, workdir: Path) -> None:
    run_bm25(capsys, workdir)
    total = float(json.loads(subprocess_free_json(capsys))["totals"]["chunk_coverage"]) * 100
    code, out, _ = cli(capsys, "report", "--show-missing", "--show-ids")
    assert code == 0
    lines = out.splitlines()
    # BM25 returns only chunks sharing a word with the query: one query got 1 of k = 2
    assert lines[0] == ("retriever: bm25 (bm25s(k1=1.5,b=0.75)), k=2; 1 of 3 queries retrieved "
                        "fewer than 2 chunks (mean depth 1.7); workload ceiling 75% (3 queries x k=2 "
                        "of 8 chunks)")
    assert lines[1].split()[:5] == ["Document", "Chunks", "Covered", "Missing", "Cover"]
    assert lines[-1].split()[0] == "TOTAL" and lines[-1].split()[1] == "8"
    assert "mitochondria" in out  # a missing chunk is listed
    code, out, _ = cli(capsys, "report", "--format", "total")
    assert out.strip() == f"{total:.2f}"
    code, out, _ = cli(capsys, "report", "--format", "markdown", "--sort", "-cover")
    assert out.startswith("| Document |") and "**TOTAL**" in out
    code, _, err = cli(capsys, "report", "--fail-under", str(total + 1))
    assert code == 2 and "fail-under" in err
    code, _, _ = cli(capsys, "report", "--fail-under", str(total - 1))
    assert code == 0
    code, _, _ = cli(capsys, "report", "--skip-covered")
    assert code == 0


def subprocess_free_json(capsys) -> str:
    code, out, _ = cli(capsys, "json", "-o", "-")
    assert code == 0
    return out


def test_append_retrieves_only_new_queries(capsys, workdir: Path) -> None:
    run_bm25(capsys, workdir)
    with open(workdir / "queries.jsonl", "a") as fh:
        fh.write(json.dumps({"id": "q-jp", "question": "What is Japan's capital?"}) + "\n")
    code, out, _ = run_bm25(capsys, workdir, "--append")
    assert code == 0 and "4 queries" in out
    doc = json.loads(subprocess_free_json(capsys))
    assert doc["queries"]["q-jp"]["retrieved"][0] == "tokyo"


def test_combine_cli(capsys, workdir: Path) -> None:
    run_bm25(capsys, workdir, "--data-file", "a.ragcov")
    (workdir / "q2.jsonl").write_text(json.dumps({"id": "q-money", "question": "dividends per share"}))
    cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "q2.jsonl", "--retriever", "bm25",
        "--k", "2", "--data-file", "b.ragcov")
    code, out, _ = cli(capsys, "combine", "a.ragcov", "b.ragcov", "-o", "all.ragcov")
    assert code == 0 and "4 queries" in out
    cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "q2.jsonl", "--retriever", "bm25",
        "--k", "3", "--data-file", "c.ragcov")
    code, _, err = cli(capsys, "combine", "a.ragcov", "c.ragcov", "-o", "bad.ragcov")
    assert code == 1 and "k differs" in err and "Traceback" not in err
    assert not (workdir / "bad.ragcov").exists()


@pytest.mark.parametrize("setup, args, message", [
    (None, ["--k", "0"], "k must be"),
    ("empty_queries", [], "the suite is empty"),
    ("bad_queries", [], "queries.jsonl:2: invalid JSON"),
])
def test_user_errors_exit_1_without_traceback(capsys, workdir: Path, setup, args, message) -> None:
    if setup == "empty_queries":
        (workdir / "queries.jsonl").write_text("")
    if setup == "bad_queries":
        (workdir / "queries.jsonl").write_text('{"id": "a", "text": "x"}\n{oops\n')
    code, _, err = run_bm25(capsys, workdir, *args)
    assert code == 1
    assert message in err and "Traceback" not in err
    assert not (workdir / ".ragcov").exists()


def test_report_without_data_file(capsys, workdir: Path) -> None:
    code, _, err = cli(capsys, "report")
    assert code == 1 and "no data file" in err


def test_settings_from_ragcov_toml(capsys, workdir: Path) -> None:
    (workdir / "ragcov.toml").write_text('retriever = "bm25"\nk = 1\ndata_file = "cfg.ragcov"\n'
                                         '[report]\nshow_missing = true\n')
    code, out, _ = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl")
    assert code == 0 and "k=1" in out and (workdir / "cfg.ragcov").exists()
    code, out, _ = cli(capsys, "report")
    assert "Missing chunks" in out
    # A flag beats the file.
    code, out, _ = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                       "--k", "2")
    assert "k=2" in out


def test_settings_from_pyproject_and_typos(capsys, workdir: Path) -> None:
    (workdir / "pyproject.toml").write_text('[tool.ragcov]\nretriever = "bm25"\nkk = 3\n')
    code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl")
    assert code == 1 and "unknown setting(s) kk" in err


def test_installed_entry_point(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "ragcov"
    exe = exe if exe.exists() else shutil.which("ragcov")
    assert exe, "the ragcov console script is not installed"
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for command in ("run", "report", "json", "combine", "demo"):
        assert command in proc.stdout
    proc = subprocess.run([str(exe), "report", "--data-file", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no data file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("module", ["ragcov", "ragcov.cli"])
def test_python_dash_m_has_every_command(module: str) -> None:
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for command in ("run", "report", "select", "generate", "faults", "html", "import"):
        assert command in proc.stdout
    # The research harness is not installed: `python -m research` runs it from a checkout.
    assert "experiment" not in proc.stdout


def test_flat_settings_with_several_meanings_stay_with_their_command() -> None:
    from ragcov.config import default_map
    from ragcov.errors import RagcovError

    commands = {"report": ["format", "k"], "import": ["format", "k"], "run": ["model", "k"],
                "generate": ["model", "k"], "json": ["output"]}
    got = default_map({"format": "markdown", "model": "my-encoder", "k": 3,
                       "generate": {"model": "my-llm"}}, commands)
    assert got["report"] == {"format": "markdown", "k": 3}
    assert got["import"] == {"k": 3}
    assert got["run"] == {"model": "my-encoder", "k": 3}
    assert got["generate"] == {"model": "my-llm", "k": 3}
    with pytest.raises(RagcovError, match="output differs from command to command"):
        default_map({"output": "x.json"}, commands)
    assert default_map({"json": {"output": "x.json"}}, commands) == {"json": {"output": "x.json"}}


def test_colons_around_a_name_are_printed_as_written_not_as_an_emoji(capsys, tmp_path) -> None:
    """rich reads ":100:" and ":smile:" as emoji codes: an error's file:line and an id
    written that way must reach the terminal as they are."""
    bad = tmp_path / "q.jsonl"
    bad.write_text("".join(f'{{"id": "q{i}", "text": "revenue"}}\n' for i in range(1, 100))
                   + '{"id": "x", \n')
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": ":smile:", "doc_id": ":100:", "text": "net revenue grew"}\n'
                      '{"id": ":wave:", "doc_id": ":smile:", "text": "cloudy weather"}\n')
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(bad),
                       "--retriever", "bm25", "--data-file", str(tmp_path / "d.ragcov"))
    assert code != 0 and "q.jsonl:100:" in err and "\U0001f4af" not in err
    bad.write_text('{"id": "q1", "text": "revenue"}\n')
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(bad),
                       "--retriever", "bm25", "-k", "1", "--data-file", str(tmp_path / "d.ragcov"),
                       "-q")
    assert code == 0, err
    code, out, err = cli(capsys, "report", "--data-file", str(tmp_path / "d.ragcov"), "-m",
                         "--show-ids")
    assert code == 0, err
    assert ":100:" in out and ":smile:" in out and ":wave:" in out
    assert "\U0001f604" not in out and "\U0001f44b" not in out and "\U0001f4af" not in out
