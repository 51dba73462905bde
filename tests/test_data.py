"""The SQLite data file: round trips, append, combine and refusals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcov.corpus import Chunk, Corpus
from ragcov.data import FORMAT_VERSION, CoverageData, combine
from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage
from ragcov.retrieval import Run

FP = {"kind": "test", "model": "fixed"}


def corpus(n: int = 6) -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=f"text {i}", doc_id=f"d{i // 3}", position=i % 3)
                   for i in range(n)])


def run_of(results: dict[str, list[str]], k: int = 3, fp: dict | None = None) -> Run:
    run = Run(k=k, retriever=fp or FP)
    for qid, ids in results.items():
        run.add(qid, f"text of {qid}", [(c, 1.0 / (r + 1)) for r, c in enumerate(ids)])
    return run


def test_round_trip(tmp_path: Path) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    c = corpus()
    assert data.write(c, run_of({"q1": ["c2", "c0"], "q2": ["c0"]})) == 2
    meta = data.meta()
    assert (meta.format, meta.k, meta.retriever, meta.corpus_hash) == (FORMAT_VERSION, 3, FP, c.hash)
    m = data.matrix()
    assert m.query_ids == ["q1", "q2"] and m.chunk_ids == c.ids
    assert [m.chunk_ids[j] for j in m.retrieved(0)] == ["c2", "c0"]
    assert m.retrieved_scores(0) == pytest.approx([1.0, 0.5])
    assert m.query_texts == ["text of q1", "text of q2"]
    assert list(m.doc_ids) == ["d0", "d0", "d0", "d1", "d1", "d1"]
    assert data.chunk_texts()["c4"] == "text 4"
    assert chunk_coverage(m) == pytest.approx(2 / 6)


def test_run_keeps_k_and_drops_repeats() -> None:
    """Cut to k first, then repeats dropped: b ranked third, below k, and counts nowhere."""
    run = Run(k=2, retriever=FP)
    run.add("q", "t", [("a", 3.0), ("a", 2.0), ("b", 1.0), ("c", 0.5)])
    assert run.results["q"] == [("a", 3.0)]
    run.add("r", "t", [("a", 3.0), ("b", 2.0), ("a", 1.0), ("c", 0.5)])
    assert run.results["r"] == [("a", 3.0), ("b", 2.0)]
    with pytest.raises(RagcovError, match="k must be"):
        Run(k=0, retriever=FP)


def test_append_keeps_recorded_queries(tmp_path: Path) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    c = corpus()
    data.write(c, run_of({"q1": ["c0"]}))
    added = data.write(c, run_of({"q1": ["c5"], "q2": ["c1"]}), append=True)
    assert added == 1
    m = data.matrix()
    assert m.query_ids == ["q1", "q2"]
    assert [m.chunk_ids[j] for j in m.retrieved(0)] == ["c0"]  # the recorded one is kept


@pytest.mark.parametrize("change, message", [
    ({"k": 4}, "k differs"),
    ({"fp": {"kind": "other"}}, "the retriever differs"),
    ({"corpus": 7}, "the corpus differs"),
])
def test_append_refuses_mismatch(tmp_path: Path, change: dict, message: str) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    before = (tmp_path / ".ragcov").read_bytes()
    with pytest.raises(RagcovError, match=message):
        data.write(corpus(change.get("corpus", 6)),
                   run_of({"q2": ["c1"]}, k=change.get("k", 3), fp=change.get("fp")), append=True)
    assert (tmp_path / ".ragcov").read_bytes() == before


def test_unknown_chunk_ids_are_an_error_and_nothing_is_written(tmp_path: Path) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    with pytest.raises(RagcovError, match="not in the corpus: zz, yy"):
        data.write(corpus(), run_of({"q1": ["c0", "zz", "yy"]}))
    assert not data.exists()


def test_failed_write_leaves_old_file_and_no_temp(tmp_path: Path, monkeypatch) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    before = (tmp_path / ".ragcov").read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("ragcov.data.datafile._insert_queries", boom)
    with pytest.raises(OSError):
        data.write(corpus(), run_of({"q9": ["c3"]}))
    assert (tmp_path / ".ragcov").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ragcov"]


def test_newer_format_is_refused(tmp_path: Path) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    con = sqlite3.connect(tmp_path / ".ragcov")
    con.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT_VERSION + 1),))
    con.commit()
    con.close()
    with pytest.raises(RagcovError, match="newer than this ragcov understands"):
        data.matrix()


def test_not_a_data_file(tmp_path: Path) -> None:
    (tmp_path / "junk").write_text("hello")
    with pytest.raises(RagcovError, match="not a ragcov data file"):
        CoverageData(tmp_path / "junk").meta()
    with pytest.raises(RagcovError, match="no data file"):
        CoverageData(tmp_path / "missing").matrix()


def test_combine_refuses_mismatch(tmp_path: Path) -> None:
    CoverageData(tmp_path / "a").write(corpus(), run_of({"q1": ["c0"]}))
    CoverageData(tmp_path / "b").write(corpus(), run_of({"q2": ["c0"]}, k=5))
    with pytest.raises(RagcovError, match="k differs"):
        combine([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_combine_refuses_conflicting_query(tmp_path: Path) -> None:
    CoverageData(tmp_path / "a").write(corpus(), run_of({"q1": ["c0"]}))
    CoverageData(tmp_path / "b").write(corpus(), run_of({"q1": ["c1"]}))
    with pytest.raises(RagcovError, match="query 'q1' has different text or hits"):
        combine([tmp_path / "a", tmp_path / "b"], tmp_path / "out")


shards = st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=3, unique=True),
                  min_size=1, max_size=8)


@given(shards, shards, st.sampled_from([1, 3, 20_000]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_combine_of_two_runs_equals_one_run_of_both(tmp_path: Path, left, right, at_once) -> None:
    """Also with the queries written a few at a time (as a large file's are)."""
    from ragcov.data import merge

    c = corpus()
    results_a = {f"a{i}": [f"c{j}" for j in s] for i, s in enumerate(left)}
    results_b = {f"b{i}": [f"c{j}" for j in s] for i, s in enumerate(right)}
    folder = Path(tmp_path) / f"case{abs(hash((str(left), str(right), at_once)))}"
    CoverageData(folder / "a").write(c, run_of(results_a))
    CoverageData(folder / "b").write(c, run_of(results_b))
    CoverageData(folder / "both").write(c, run_of({**results_a, **results_b}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(merge, "QUERIES_AT_ONCE", at_once)
        combine([folder / "a", folder / "b"], folder / "combined")
    got = CoverageData(folder / "combined").matrix()
    want = CoverageData(folder / "both").matrix()
    assert got.query_ids == want.query_ids
    assert (got.hits != want.hits).nnz == 0
    assert (got.ranks != want.ranks).nnz == 0
    assert chunk_coverage(got) == chunk_coverage(want)


def test_matrix_from_run_equals_matrix_from_file(tmp_path: Path) -> None:
    c = corpus()
    run = run_of({"q1": ["c2", "c0"], "q2": ["c4"]})
    data = CoverageData(tmp_path / ".ragcov")
    data.write(c, run)
    a, b = CoverageMatrix.from_run(run, c), data.matrix()
    assert (a.ranks != b.ranks).nnz == 0 and a.query_ids == b.query_ids


def test_written_files_get_the_usual_mode(tmp_path: Path) -> None:
    import os

    from ragcov.files import write_text_atomic

    write_text_atomic(tmp_path / "report.json", "{}")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_missing_scores_round_trip_as_none(tmp_path: Path) -> None:
    run = Run(k=2, retriever=FP)
    run.add("q1", "traced query", [("c3", None), ("c1", None)])
    run.add("q2", "scored query", [("c0", 0.5)])
    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run)
    m = data.matrix()
    assert [m.chunk_ids[j] for j in m.retrieved(0)] == ["c3", "c1"]
    assert m.retrieved_scores(0) == [None, None] and m.retrieved_scores(1) == [0.5]


def test_append_refuses_a_recorded_id_with_new_text(tmp_path: Path) -> None:
    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    before = (tmp_path / ".ragcov").read_bytes()
    clash = Run(k=3, retriever=FP)
    clash.add("q2", "new", [("c1", 1.0)])
    clash.add("q1", "a different question", [("c2", 1.0)])
    with pytest.raises(RagcovError, match="'q1' is already recorded with a different text"):
        data.write(corpus(), clash, append=True)
    assert (tmp_path / ".ragcov").read_bytes() == before  # q2 was rolled back too


def test_measure_append_checks_the_file_before_retrieving(tmp_path: Path) -> None:
    from ragcov.api import measure
    from ragcov.suite import Suite

    class Counting:
        calls = 0

        def fingerprint(self) -> dict:
            return {"kind": "counting"}

        def retrieve(self, texts, k):
            Counting.calls += 1
            return [[("c0", 1.0)] for _ in texts]

    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    with pytest.raises(RagcovError, match="the retriever differs"):
        measure(corpus(), Suite.from_texts(["x"]), Counting(), k=3, data_file=data.path, append=True)
    assert Counting.calls == 0


def test_combine_adds_up_the_hits_matched_by_text(tmp_path: Path) -> None:
    """Shards of a run whose hits carried no ids each count their text matches; the
    combined file counts them all, as one --append of every shard would."""
    rule = "first of the twins left"
    for name, counts in (("a", {"by_content": 3, "shared_text": 1, "ambiguous": 1}),
                         ("b", {"by_content": 2, "by_metadata": 2}), ("c", None)):
        data = CoverageData(tmp_path / name)
        data.write(corpus(), run_of({f"q{name}": ["c0"]}))
        if counts is not None:
            data.annotate("id_matching", {**counts, "ambiguous_resolved_by": rule})
    combine([tmp_path / "a", tmp_path / "c", tmp_path / "b"], tmp_path / "out")
    assert CoverageData(tmp_path / "out").annotation("id_matching") == {
        "by_content": 5, "shared_text": 1, "ambiguous": 1, "by_metadata": 2,
        "ambiguous_resolved_by": rule}


def test_combine_keeps_annotations(tmp_path: Path) -> None:
    a = CoverageData(tmp_path / "a")
    a.write(corpus(), run_of({"q1": ["c0"]}))
    a.annotate("index_recall", {"recall_at_k": 0.9, "k": 3, "sample": 1})
    CoverageData(tmp_path / "b").write(corpus(), run_of({"q2": ["c1"]}))
    combine([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    out = CoverageData(tmp_path / "out")
    assert out.annotation("index_recall") == {"recall_at_k": 0.9, "k": 3, "sample": 1}
    assert out.matrix().meta["index_recall"]["recall_at_k"] == 0.9


def test_a_read_that_meets_a_disk_io_error_opens_the_path_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE, labelled: SQLite's "disk I/O error" (a failing disk, or a file swapped by a
    writer that takes no turn) cannot be produced on demand, so it is injected into the
    first read. The reader opens the path again; an error that persists is still one
    line. The real swapped-journal case is tests/test_trust_journals.py."""
    import sqlite3 as sqlite

    from ragcov.data import schema

    data = CoverageData(tmp_path / ".ragcov")
    data.write(corpus(), run_of({"q1": ["c0"]}))
    real = schema._check_format
    failures = {"left": 2}

    def flaky(con, path):  # type: ignore[no-untyped-def]
        if failures["left"]:
            failures["left"] -= 1
            raise schema.database_error(path, sqlite.OperationalError("disk I/O error"))
        return real(con, path)

    monkeypatch.setattr(schema, "_check_format", flaky)
    monkeypatch.setattr(schema, "IO_PAUSE_S", 0.0)
    assert data.meta().k == 3 and failures["left"] == 0
    failures["left"] = schema.IO_RETRIES
    with pytest.raises(RagcovError, match=r"\.ragcov: disk I/O error \(cannot use the data file\)"):
        data.meta()
