"""The data file under races, hostile paths and damage: nothing lost, one-line errors.

Each test reproduces a case that once lost data, hung or ended in a traceback
(docs/reliability.md lists them). Processes are real ``ragcov`` processes with the
BM25 retriever over the bundled FinQA sample, so no model is loaded.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import Chunk, Corpus, load_corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.files import atomic_path, iter_csv, remove_stale_temps, temp_prefix
from ragcov.retrieval import Run

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
FP = {"kind": "test"}


def small_corpus(n: int = 6) -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=f"text {i}", doc_id=f"d{i // 3}", position=i % 3)
                   for i in range(n)])


def run_of(results: dict[str, list[str]], k: int = 3) -> Run:
    run = Run(k=k, retriever=FP)
    for qid, ids in results.items():
        run.add(qid, f"text of {qid}", [(c, 1.0 / (r + 1)) for r, c in enumerate(ids)])
    return run


def ragcov(*args: str, cwd: Path, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, **kw)


def questions(tmp_path: Path, name: str, lines: range) -> Path:
    src = (SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    p = tmp_path / name
    p.write_text("".join(src[i] + "\n" for i in lines), encoding="utf-8")
    return p


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


RUN = ("run", "--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split", "--retriever", "bm25",
       "-q")


# ------------------------------------------------------------------ races
@pytest.mark.slow
def test_two_appends_creating_the_file_lose_nothing(tmp_path: Path) -> None:
    """Case 3: both processes' queries are in the file, five times out of five."""
    a = questions(tmp_path, "a.jsonl", range(0, 40))
    b = questions(tmp_path, "b.jsonl", range(40, 80))
    for trial in range(5):
        target = tmp_path / f"t{trial}.ragcov"
        procs = [subprocess.Popen([sys.executable, "-m", "ragcov", *RUN, "--queries", str(q),
                                   "--append", "--data-file", str(target)],
                                  cwd=tmp_path, stderr=subprocess.PIPE, text=True)
                 for q in (a, b)]
        for p in procs:
            assert p.wait(timeout=120) == 0, p.stderr.read() if p.stderr else ""
        m = CoverageData(target).matrix()
        assert m.n_queries == 80
        assert not list(tmp_path.glob(f".{target.name}.*"))


def test_create_without_replace_never_overwrites(tmp_path: Path) -> None:
    """Two creators: the second finds the file taken and appends instead of replacing."""
    target = tmp_path / ".ragcov"
    first, second = CoverageData(target), CoverageData(target)
    c = small_corpus()
    # The second writer decided to create (no file yet), then the first one won the race.
    real_exists = CoverageData.exists
    CoverageData.exists = lambda self: False  # type: ignore[method-assign]
    try:
        first.write(c, run_of({"q1": ["c0"]}), append=True)
        second.write(c, run_of({"q2": ["c1"]}), append=True)
    finally:
        CoverageData.exists = real_exists  # type: ignore[method-assign]
    assert sorted(CoverageData(target).query_texts()) == ["q1", "q2"]


def test_matrix_reads_one_snapshot_during_appends(tmp_path: Path) -> None:
    """Case 8: a reader racing 200 appends never sees hits of a query it has not read."""
    target = tmp_path / ".ragcov"
    c = small_corpus()
    CoverageData(target).write(c, run_of({"q0": ["c0"]}))
    stop = threading.Event()
    problems: list[BaseException] = []

    def writer() -> None:
        data = CoverageData(target)
        try:
            for i in range(1, 200):
                data.write(c, run_of({f"q{i}": ["c1", "c2"]}), append=True)
        except BaseException as exc:  # pragma: no cover - reported below
            problems.append(exc)
        finally:
            stop.set()

    t = threading.Thread(target=writer)
    t.start()
    reads, last = 0, 0
    while not stop.is_set() or reads == 0:
        m = CoverageData(target).matrix()
        assert m.n_queries >= last  # appends only add
        assert m.hits.shape[0] == m.n_queries == len(m.query_texts)
        last, reads = m.n_queries, reads + 1
    t.join()
    assert not problems
    assert CoverageData(target).matrix().n_queries == 200


# ----------------------------------------------------- refusals before work
def test_refuses_to_replace_the_corpus_or_a_coverage_py_file(tmp_path: Path, capsys) -> None:
    """Case 4: a file that is not a ragcov data file is never replaced."""
    corpus = tmp_path / "my.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Paris is in France"}) + "\n"
                      + json.dumps({"id": "b", "text": "Berlin is in Germany"}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": "France"}) + "\n")
    cov = tmp_path / ".coverage"
    with sqlite3.connect(cov) as con:  # coverage.py's data file is SQLite too
        con.execute("CREATE TABLE coverage_schema (version INTEGER)")
        con.execute("INSERT INTO coverage_schema VALUES (7)")
    con.close()
    for target in (corpus, cov, tmp_path / "folder"):
        if target.name == "folder":
            target.mkdir()
        before = target.read_bytes() if target.is_file() else None
        code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                           "--retriever", "bm25", "--data-file", str(target), "-q")
        assert code == 1
        assert str(target) in err and "Traceback" not in err
        assert ("refusing to replace" in err) or ("is a directory" in err)
        if before is not None:
            assert target.read_bytes() == before


def test_destination_is_checked_before_any_retrieval(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    (tmp_path / "counting.py").write_text(textwrap.dedent(f"""
        def retriever(text, k):
            with open({str(calls)!r}, "a") as fh:
                fh.write(text + "\\n")
            return ["a"]
    """))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": "y"}) + "\n")
    (tmp_path / "out").mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = ragcov("run", "--corpus", str(corpus), "--queries", str(queries), "--retriever",
                  "counting:retriever", "--data-file", "out", "-q", cwd=tmp_path, env=env)
    assert_one_line_error(proc, "out", "is a directory")
    assert not calls.exists()


def test_append_with_a_known_id_and_new_text_is_refused(tmp_path: Path, capsys) -> None:
    """Case 5: the new text is not silently ignored; the file keeps its old content."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Paris is in France"}) + "\n")
    q1 = tmp_path / "q1.jsonl"
    q1.write_text(json.dumps({"id": "q", "text": "France"}) + "\n")
    q2 = tmp_path / "q2.jsonl"
    q2.write_text(json.dumps({"id": "q", "text": "Germany"}) + "\n")
    target = tmp_path / ".ragcov"
    args = ("run", "--corpus", str(corpus), "--retriever", "bm25", "--k", "1", "--data-file",
            str(target), "-q")
    assert cli(capsys, *args, "--queries", str(q1))[0] == 0
    before = target.read_bytes()
    code, _, err = cli(capsys, *args, "--queries", str(q2), "--append")
    assert code == 1
    assert "already recorded with a different text" in err and "'France'" in err
    assert target.read_bytes() == before


def test_csv_unterminated_quote_is_an_error_at_its_line(tmp_path: Path) -> None:
    """Case 6: ``c3`` is not swallowed by the open quote on line 3."""
    p = tmp_path / "q.csv"
    p.write_text('id,text\nc1,ok\nc2,"unterminated\nc3,fine\n', encoding="utf-8")
    with pytest.raises(RagcovError, match=r"q\.csv:3: invalid CSV \(a quoted field starting "
                                          r"on this line is never closed\)"):
        list(iter_csv(p))


def test_csv_quoted_newlines_still_read(tmp_path: Path) -> None:
    p = tmp_path / "q.csv"
    p.write_text('id,text\nc1,"two\nlines"\nc2,fine\n', encoding="utf-8")
    assert [row for _, row in iter_csv(p)] == [{"id": "c1", "text": "two\nlines"},
                                               {"id": "c2", "text": "fine"}]


# ------------------------------------------------------------ damaged files
def _damaged(tmp_path: Path) -> Path:
    target = tmp_path / "d.ragcov"
    c = Corpus([Chunk(id=f"c{i}", text="x" * 200, doc_id=f"d{i % 7}", position=i)
                for i in range(2000)])
    run = Run(k=3, retriever=FP)
    for q in range(500):
        run.add(f"q{q}", f"query {q}", [(f"c{(q * 7 + j) % 2000}", 1.0) for j in range(3)])
    CoverageData(target).write(c, run)
    raw = bytearray(target.read_bytes())
    page = 4096
    for start in range(page * 20, page * 40, page):  # interior pages of the chunks table
        raw[start:start + page] = b"\xa5" * page
    target.write_bytes(bytes(raw))
    return target


@pytest.mark.parametrize("command", [
    ("report",), ("json", "-o", "-"), ("html", "-d", "site"), ("select", "--budget", "3"),
    ("combine", "{f}", "-o", "out.ragcov"),
])
def test_damaged_data_file_is_one_line(tmp_path: Path, capsys, command) -> None:
    target = _damaged(tmp_path)
    args = [a.format(f=target) for a in command]
    if args[0] != "combine":
        args += ["--data-file", str(target)]
    os.chdir(tmp_path)
    code, _, err = cli(capsys, *args)
    assert code == 1, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and str(target) in err


def test_damaged_data_file_refuses_append(tmp_path: Path) -> None:
    """--append checks the file before retrieving anything into it."""
    target = _damaged(tmp_path)
    meta = CoverageData(target).meta()
    with pytest.raises(RagcovError, match=f"{target}: .*damaged"):
        CoverageData(target).pending([("new", "text")], meta.k, meta.corpus_hash, meta.retriever)


# -------------------------------------------------------------- permissions
def _make_read_only(path: Path) -> None:
    """chmod as a user; as root (which chmod does not stop) the immutable attribute."""
    if os.getuid() != 0:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
        return
    proc = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot make {path} read-only as root: {proc.stderr.strip()}")


def _make_writable(path: Path) -> None:
    if os.getuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    os.chmod(path, 0o755 if path.is_dir() else 0o644)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_read_only_folder_and_file_are_one_line_errors(tmp_path: Path, capsys) -> None:
    work = tmp_path / "ro"
    work.mkdir()
    data = work / ".ragcov"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "c0", "text": "Paris"}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q2", "text": "Paris"}) + "\n")
    CoverageData(data).write(load_corpus(corpus), run_of({"q1": ["c0"]}, k=1))
    os.chdir(tmp_path)
    _make_read_only(data)
    _make_read_only(work)
    try:
        code, out, err = cli(capsys, "report", "--data-file", str(data))
        assert code == 0, err  # reading needs no write permission
        code, _, err = cli(capsys, "json", "--data-file", str(data), "-o", str(work / "r.json"))
        assert code == 1 and err.count("\n") == 1 and str(work) in err, err
        assert "not permitted" in err or "denied" in err
        # Both the folder (a new file) and the file (an append) refuse before retrieval.
        for target, extra in ((work / "new.ragcov", ()), (data, ("--append",))):
            code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                               "--retriever", "bm25", "--k", "1", "--data-file", str(target),
                               "-q", *extra)
            assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
            assert str(target) in err or str(work) in err
    finally:
        _make_writable(work)
        _make_writable(data)
    assert set(CoverageData(data).query_texts()) == {"q1"}


def test_precision_below_zero_is_refused(tmp_path: Path, capsys) -> None:
    data = tmp_path / ".ragcov"
    CoverageData(data).write(small_corpus(), run_of({"q1": ["c0"]}))
    code, _, err = cli(capsys, "report", "--data-file", str(data), "--precision", "-1")
    assert code == 1 and "--precision must be from 0 to 10" in err


def test_infinite_scores_never_reach_the_json(tmp_path: Path, capsys) -> None:
    """An old file (or a hand-made one) with inf scores gives strict JSON, not ``Infinity``."""
    data = tmp_path / ".ragcov"
    CoverageData(data).write(small_corpus(), run_of({"q1": ["c0", "c1"]}))
    with sqlite3.connect(data) as con:
        con.execute("UPDATE hits SET score = 9e999 WHERE rank = 1")
    con.close()
    code, out, _ = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code == 0
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert doc["queries"]["q1"]["scores"] == [None, 0.5]
    with pytest.raises(RagcovError, match="not a finite number"):
        run_of({}).add("q", "t", [("c0", float("nan"))])


# ------------------------------------------------------------- interrupts
def _default_sigint() -> None:  # runs in the child, before exec
    """Ctrl-C's default disposition: a background job (CI, nohup) starts with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_prints_one_line_and_keeps_the_file(tmp_path: Path) -> None:
    started = tmp_path / "started"
    (tmp_path / "slow.py").write_text(textwrap.dedent(f"""
        import time
        def retriever(text, k):
            open({str(started)!r}, "a").close()
            time.sleep(0.2)
            return ["a"]
    """))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": f"t{i}"}) + "\n"
                               for i in range(400)))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    p = subprocess.Popen([sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus),
                          "--queries", str(queries), "--retriever", "slow:retriever", "-q"],
                         cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    # Interrupt retrieval itself, however long start-up takes on a loaded machine.
    deadline = time.monotonic() + 120
    while not started.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the retriever was never called"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert "interrupted" in err and "Traceback" not in err
    assert not (tmp_path / ".ragcov").exists()  # nothing half-written
    assert not list(tmp_path.glob(".*.tmp"))


# ------------------------------------------------------------ stray temps
def test_stale_temps_of_dead_writers_are_removed(tmp_path: Path) -> None:
    target = tmp_path / ".ragcov"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".{target.name}.{dead.pid}-abc.tmp"
    stale.write_bytes(b"x" * 1000)
    stale_site = tmp_path / f".{target.name}.{dead.pid}-def.tmp"
    stale_site.mkdir()
    (stale_site / "index.html").write_text("half")
    live = tmp_path / f"{temp_prefix(target)}live.tmp"  # a concurrent writer: this process
    live.write_bytes(b"y")
    unrelated = tmp_path / ".other.123-x.tmp"
    unrelated.write_bytes(b"z")
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"new")
    assert not stale.exists() and not stale_site.exists()
    assert live.exists() and unrelated.exists()
    assert target.read_bytes() == b"new"


def test_an_interrupted_append_keeps_the_parts_it_committed(tmp_path: Path) -> None:
    """An --append interrupted after 600 of 700 answered requests kept none of them (one
    transaction), though the message said the file keeps what was committed. It commits
    every 256 queries now: the rerun asks only for what is missing."""
    from ragcov.api.steps import CHECKPOINT
    from ragcov.data import CoverageData

    asked = tmp_path / "asked.txt"
    (tmp_path / "slow.py").write_text(textwrap.dedent(f"""
        import time
        def retriever(text, k):
            with open({str(asked)!r}, "a") as f:
                f.write(text + "\\n")
            time.sleep(0.002)
            return ["a"]
    """))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    queries = tmp_path / "q.jsonl"
    n = 2 * CHECKPOINT + 100
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": f"t{i}"}) + "\n"
                               for i in range(n)))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus), "--queries",
               str(queries), "--retriever", "slow:retriever", "-k", "1", "--append", "-q"]
    p = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    deadline = time.monotonic() + 180
    while p.poll() is None and time.monotonic() < deadline:
        if asked.exists() and len(asked.read_text().splitlines()) >= 2 * CHECKPOINT + 50:
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted" in err, err
    kept = CoverageData(tmp_path / ".ragcov").matrix().n_queries
    assert kept == 2 * CHECKPOINT  # two parts committed, the third cut short
    before = len(asked.read_text().splitlines())
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert len(asked.read_text().splitlines()) - before == n - kept  # only what was missing
    assert CoverageData(tmp_path / ".ragcov").matrix().n_queries == n


def test_an_old_site_set_aside_by_a_killed_swap_is_restored(tmp_path: Path) -> None:
    target = tmp_path / "site"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    aside = tmp_path / f".site.{dead.pid}-x.old"
    aside.mkdir()
    (aside / "index.html").write_text("old report")
    assert remove_stale_temps(target) == 1
    assert (target / "index.html").read_text() == "old report"
