"""The totals a data file keeps for its gates (``report --format total``, ``--fail-under``).

They must be the numbers the rows give (counted the long way, through the matrix and the
report's scope), on any run, append, import or combine; a kept total the rows no longer
match (edited behind ragcov's back) is never trusted; a file written before totals were
kept is counted from its rows; and the gate's outcome is the same either way.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData, combine
from ragcov.data.totals import kept_covered
from ragcov.retrieval import Run
from ragcov.scope import ReportScope, load_scoped

ROOT = Path(__file__).resolve().parent.parent
FP = {"kind": "test", "model": "fixed"}


def corpus(n: int) -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=f"text {i}", doc_id=f"d{i // 3}", position=i % 3)
                   for i in range(n)])


def run_of(results: dict[str, list[str]], k: int) -> Run:
    run = Run(k=k, retriever=FP)
    for qid, ids in results.items():
        run.add(qid, f"text of {qid}", [(c, 1.0 / (r + 1)) for r, c in enumerate(ids)])
    return run


def from_rows(path: Path, include_generated: bool = False) -> tuple[int, int, int, int]:
    """(chunks, covered, queries, k) as every report counts them: the matrix, scoped."""
    scoped = load_scoped(path, ReportScope(include_generated=include_generated))
    s = scoped.summary(jaccard=False)
    return s.chunks, s.covered, s.queries, scoped.meta.k


def kept(path: Path, include_generated: bool = False) -> tuple[tuple[int, int, int, int], bool]:
    t = CoverageData(path).totals(include_generated)
    assert t is not None
    return (t.chunks, t.covered, t.queries, t.k), t.kept


def drop_totals(path: Path) -> None:
    """Make the file as ragcov wrote it before it kept totals: no table, no triggers."""
    with sqlite3.connect(path) as con:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            con.execute(f"DROP TRIGGER {name}")
        con.execute("DROP TABLE totals")
        con.execute("DROP TABLE IF EXISTS covered_chunks")


def kept_bits(path: Path) -> bytes | None:
    """The covered chunks' bitmap an append would take, as it reads it."""
    with CoverageData(path).reading() as con:
        return kept_covered(con)


def bits_of_rows(path: Path) -> bytes:
    """The bitmap of the chunk idx the hits name, counted the long way."""
    with sqlite3.connect(path) as con:
        n = con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        flags = bytearray((n + 7) // 8)
        for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM hits"):
            flags[c // 8] |= 1 << (c % 8)
    return bytes(flags)


runs = st.integers(min_value=1, max_value=12).flatmap(lambda n: st.tuples(
    st.just(n), st.integers(min_value=1, max_value=4),
    st.lists(st.lists(st.integers(min_value=0, max_value=n - 1), max_size=5), min_size=1, max_size=6),
    st.lists(st.lists(st.integers(min_value=0, max_value=n - 1), max_size=5), max_size=6),
    st.sets(st.integers(min_value=0, max_value=11), max_size=4)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=runs)
def test_kept_totals_are_the_rows_numbers_after_any_write(tmp_path_factory, case) -> None:
    n, k, first, later, marked = case
    folder = tmp_path_factory.mktemp("t")
    c = corpus(n)
    one = {f"q{i}": [f"c{j}" for j in hits] for i, hits in enumerate(first)}
    two = {f"p{i}": [f"c{j}" for j in hits] for i, hits in enumerate(later)}
    # Some of the later queries written by `ragcov generate`: left out of the suite's totals.
    generated = {q: {"source": "x"} for i, q in enumerate(two) if i in marked}
    path = folder / ".ragcov"
    data = CoverageData(path)
    data.write(c, run_of(one, k))
    assert kept(path) == (from_rows(path), True) and kept_bits(path) == bits_of_rows(path)
    if two:
        data.write(c, run_of(two, k), append=True, generated=generated)
        for include in (False, True):
            assert kept(path, include) == (from_rows(path, include), True)
        assert kept_bits(path) == bits_of_rows(path)
        # A second append takes the first one's kept chunks, not a count of every hit.
        data.write(c, run_of({f"s{i}": h for i, h in enumerate(two.values())}, k), append=True)
        for include in (False, True):
            assert kept(path, include) == (from_rows(path, include), True)
        assert kept_bits(path) == bits_of_rows(path)
    # A combine of the file with a second one: counted from the combined rows.
    other = folder / "other"
    CoverageData(other).write(c, run_of({f"r{i}": h for i, h in enumerate(one.values())}, k))
    combine([path, other], folder / "combined")
    assert kept(folder / "combined") == (from_rows(folder / "combined"), True)
    assert kept_bits(folder / "combined") == bits_of_rows(folder / "combined")


def test_hand_worked_totals(tmp_path: Path) -> None:
    """6 chunks; q1 retrieves c2, c0 and q2 c0 again: 2 covered of 6 by 2 queries at k=3."""
    path = tmp_path / ".ragcov"
    CoverageData(path).write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3))
    t = CoverageData(path).totals()
    assert (t.chunks, t.covered, t.queries, t.k, t.kept) == (6, 2, 2, 3, True)
    assert t.coverage == pytest.approx(2 / 6)


@pytest.mark.parametrize("edit", [
    ["UPDATE hits SET chunk_idx = 5 WHERE query_idx = 1"],   # the same row counts
    ["DELETE FROM hits WHERE query_idx = 0"],
    ["INSERT INTO hits VALUES (1, 4, 2, NULL)"],
    ["DELETE FROM hits WHERE query_idx = 0", "DELETE FROM queries WHERE idx = 0"],
    ["UPDATE meta SET value = '{\"q2\": {}}' WHERE key = 'x:generated'"],   # q2 now generated
])
def test_totals_the_rows_no_longer_match_are_counted_again(tmp_path: Path, edit: list[str]) -> None:
    path = tmp_path / ".ragcov"
    CoverageData(path).write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3),
                             generated={"q9": {}})
    before, trusted = kept(path)
    assert trusted
    with sqlite3.connect(path) as con:  # behind ragcov's back
        for statement in edit:
            con.execute(statement)
    after, trusted = kept(path)
    assert not trusted and after == from_rows(path) and after != before


def test_an_edit_with_the_triggers_dropped_is_caught_by_the_key(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    CoverageData(path).write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3))
    with sqlite3.connect(path) as con:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            con.execute(f"DROP TRIGGER {name}")
        con.execute("DELETE FROM hits WHERE query_idx = 0")
    got, trusted = kept(path)
    assert not trusted and got == from_rows(path) == (6, 1, 2, 3)


def test_a_file_from_before_totals_is_counted_from_its_rows_and_kept_at_its_next_write(
        tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    data = CoverageData(path)
    data.write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3))
    drop_totals(path)
    assert kept(path) == ((6, 2, 2, 3), False)
    data.write(corpus(6), run_of({"q3": ["c5"]}, 3), append=True)
    assert kept(path) == ((6, 3, 3, 3), True) and from_rows(path) == (6, 3, 3, 3)


def _tamper(path: Path, statement: str) -> None:
    """Change the kept bitmap with its triggers dropped (they would empty it)."""
    with sqlite3.connect(path) as con:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                   "AND name LIKE 'covered_chunks_stale_%'").fetchall():
            con.execute(f"DROP TRIGGER {name}")
        con.execute(statement)


@pytest.mark.parametrize("statement", [
    "UPDATE covered_chunks SET bits = X'01'",            # one chunk fewer than the totals say
    "UPDATE covered_chunks SET bits = X'0500'",          # a byte too many
    "UPDATE covered_chunks SET bits = X'41'",            # as many bits, one past the last chunk
    "UPDATE covered_chunks SET bits = 'x'",              # no blob
    "UPDATE covered_chunks SET rows_key = 'old'",        # kept for other rows
    "INSERT INTO covered_chunks SELECT * FROM covered_chunks",  # two of them
    "UPDATE totals SET covered = 1 WHERE scope = 'all'",  # the totals it must match
])
def test_a_kept_bitmap_that_does_not_match_is_not_taken(tmp_path: Path, statement: str) -> None:
    path = tmp_path / ".ragcov"
    data = CoverageData(path)
    data.write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3))
    assert kept_bits(path) == bytes([0b101])
    _tamper(path, statement)
    assert kept_bits(path) is None
    data.write(corpus(6), run_of({"q3": ["c5"]}, 3), append=True)  # counted from the rows
    assert kept(path) == ((6, 3, 3, 3), True) == (from_rows(path), True)
    assert kept_bits(path) == bits_of_rows(path) == bytes([0b100101])


def test_rows_another_writer_adds_empty_the_kept_bitmap(tmp_path: Path) -> None:
    """An older ragcov (or a sqlite3 shell) appending rows: the triggers empty the bitmap, and
    the next append counts every hit again."""
    path = tmp_path / ".ragcov"
    data = CoverageData(path)
    data.write(corpus(6), run_of({"q1": ["c2", "c0"]}, 3))
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO queries VALUES (1, 'q2', 'text of q2', NULL)")
        con.execute("INSERT INTO hits VALUES (1, 4, 1, NULL)")
    assert kept_bits(path) is None
    data.write(corpus(6), run_of({"q3": ["c5"]}, 3), append=True)
    assert kept(path) == ((6, 4, 3, 3), True) == (from_rows(path), True)
    assert kept_bits(path) == bits_of_rows(path)


def _gate(capsys, *args: str) -> tuple[int, str, str]:
    with warnings.catch_warnings():  # each call says its warnings, as a process does
        return cli(capsys, "report", "--format", "total", *args)


def test_the_gate_says_the_same_from_kept_totals_from_rows_and_through_a_scope(
        capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    CoverageData(".ragcov").write(corpus(9), run_of({"q1": ["c2", "c0"], "q2": ["c0", "c7"]}, 2))
    fast = [_gate(capsys, *g) for g in ((), ("--fail-under", "33.33"), ("--fail-under", "33.34"),
                                        ("--fail-under", "50"))]
    assert [f[:2] for f in fast] == [(0, "33.33\n"), (0, "33.33\n"), (2, "33.33\n"), (2, "33.33\n")]
    assert "less than fail-under=33.34" in fast[2][2]
    # --fail-under 50 is above the workload ceiling (2 queries x k=2 of 9 chunks: 44.44%).
    assert "above the workload ceiling 44.44% (2 queries x k=2 of 9 chunks)" in fast[3][2]
    # A scope the totals do not answer reads the rows: the same number, the same outcome.
    scoped = [_gate(capsys, "--include", "*", *g) for g in ((), ("--fail-under", "33.33"),
                                                            ("--fail-under", "33.34"),
                                                            ("--fail-under", "50"))]
    assert scoped == fast
    drop_totals(tmp_path / ".ragcov")  # an older file: counted from its rows
    assert [_gate(capsys, *g) for g in ((), ("--fail-under", "33.33"), ("--fail-under", "33.34"),
                                        ("--fail-under", "50"))] == fast


def test_the_badge_is_the_same_from_kept_totals_and_from_rows(capsys, tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    CoverageData(".ragcov").write(corpus(9), run_of({"q1": ["c2", "c0"], "q2": ["c0", "c7"]}, 2))

    def badge(*args: str) -> tuple[int, str, str, str]:
        with warnings.catch_warnings():
            code, out, err = cli(capsys, "badge", "-o", "b.svg", "--precision", "1", *args)
        return code, out, err, (tmp_path / "b.svg").read_text()

    fast = [badge(), badge("--fail-under", "50")]
    assert fast[0][0] == 0 and ">33.3%<" in fast[0][3]
    assert fast[1][0] == 2 and "above the workload ceiling" in fast[1][2]
    assert [badge("--include", "*"), badge("--include", "*", "--fail-under", "50")] == fast
    drop_totals(tmp_path / ".ragcov")
    assert [badge(), badge("--fail-under", "50")] == fast
    # Its own data file is never its output, whichever way the total is read.
    code, _out, err = cli(capsys, "badge", "-o", ".ragcov")
    assert code == 1 and ".ragcov" in err


def test_generated_questions_stay_out_of_the_kept_total(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = CoverageData(".ragcov")
    data.write(corpus(4), run_of({"q1": ["c0"]}, 1))
    data.write(corpus(4), run_of({"g1": ["c1"]}, 1), append=True, generated={"g1": {"source": "x"}})
    assert _gate(capsys)[1] == "25.00\n"
    assert _gate(capsys, "--include-generated")[1] == "50.00\n"
    assert kept(tmp_path / ".ragcov") == ((4, 1, 1, 1), True)
    # Accepted: recorded again from the user's suite, it counts.
    data.write(corpus(4), run_of({"q2": ["c0"]}, 1), append=True, accept=["g1"])
    assert _gate(capsys)[1] == "50.00\n"


def test_rows_ragcov_never_writes_are_refused_as_the_rows_path_refuses_them(
        capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    CoverageData(".ragcov").write(corpus(6), run_of({"q1": ["c2", "c0"], "q2": ["c0"]}, 3))
    with sqlite3.connect(tmp_path / ".ragcov") as con:  # a hit naming no chunk
        con.execute("UPDATE hits SET chunk_idx = 99 WHERE query_idx = 1")
    code, out, err = _gate(capsys)
    assert (code, out) == (1, "") and "damaged" in err and len(err.strip().splitlines()) == 1
    assert _gate(capsys, "--include", "*")[0] == 1


def test_no_data_file_is_the_report_s_own_error(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _out, err = _gate(capsys)
    assert code == 1 and "no data file" in err


# ---------------------------------------------------------------- start-up
def _modules_after(code: str, cwd: Path) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_the_api_loads_its_verbs_modules_on_first_use(tmp_path: Path) -> None:
    light = _modules_after("import ragcov.api", tmp_path)
    assert "numpy" not in light and "ragcov.corpus" not in light and "ragcov.selection" not in light
    taken = _modules_after("from ragcov.api import load_corpus, CoverageMatrix\n"
                           "assert callable(load_corpus) and CoverageMatrix", tmp_path)
    assert "ragcov.corpus" in taken and "ragcov.matrix" in taken and "numpy" in taken


def test_the_total_reads_no_rows_and_loads_no_numpy(tmp_path: Path) -> None:
    CoverageData(tmp_path / ".ragcov").write(corpus(9), run_of({"q1": ["c2", "c0"]}, 2))
    code = ("from ragcov.cli import main\ntry:\n    main(['report', '--format', 'total'])\n"
            "except SystemExit as exc:\n    assert not exc.code\n")
    mods = _modules_after(code, tmp_path)
    assert "numpy" not in mods and "ragcov.matrix" not in mods and "ragcov.api" in mods


def test_the_deferred_names_are_the_imports_the_api_declares() -> None:
    """The name -> module table and the api's TYPE_CHECKING imports (what a reader and the
    architecture check see) name the same objects, and every one loads."""
    import ragcov.api as api

    tree = ast.parse((ROOT / "src" / "ragcov" / "api" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    declared = {(a.asname or a.name): (node.module, a.name) for node in block.body
                if isinstance(node, ast.ImportFrom) for a in node.names}
    deferred = api._DEFERRED
    assert set(deferred) <= set(declared)
    assert all(declared[name] == where for name, where in deferred.items())
    for name, (module, attr) in deferred.items():
        assert getattr(api, name) is getattr(__import__(module, fromlist=[attr]), attr)
