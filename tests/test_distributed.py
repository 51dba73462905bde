"""Sharded runs on a real Dask LocalCluster give exactly the single-process result.

Bit for bit when both encode under the same torch thread count (the dense path
pins it); at another count, the same hits except at near-ties (scores within
``NEAR_TIE``), which is all a float computation on other kernels can promise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import cluster_losing_workers, kill_after_first_task

pytest.importorskip("dask.distributed")

from ragcov.api import measure  # noqa: E402
from ragcov.corpus import Chunk, Corpus  # noqa: E402
from ragcov.data import CoverageData  # noqa: E402
from ragcov.data.datafile import INDEX_RECALL  # noqa: E402
from ragcov.distributed import (  # noqa: E402
    _build_retriever,
    _embed_slice,
    aligned_slices,
    dask_encode_threads,
    measure_dask,
)
from ragcov.errors import RagcovError  # noqa: E402
from ragcov.metrics import chunk_coverage  # noqa: E402
from ragcov.reporters.jsonreport import json_report  # noqa: E402
from ragcov.retrieval import Run  # noqa: E402
from ragcov.retrievers import make_retriever  # noqa: E402
from ragcov.suite import Suite  # noqa: E402

# Embeddings computed under different thread counts or kernels differ by ~1e-7 per
# element (measured: 1.3e-7), so cosine scores by well under this.
NEAR_TIE = 1e-6

WORDS = ["capital", "France", "Germany", "energy", "cell", "plants", "debt", "dividends",
         "Japan", "Spain", "sunlight", "share"]


def city_suite(n: int = 150) -> Suite:
    # More than two retrieval batches of 64, so the suite really is split into shards.
    return Suite.from_texts([f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]} {WORDS[(i * 7) % 11]}"
                             for i in range(n)])


def _without_times(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report["meta"].pop("created", None)
    report["meta"].pop("ragcov_version", None)
    return report


def assert_same(a: Path, b: Path) -> None:
    ma, mb = CoverageData(a).matrix(), CoverageData(b).matrix()
    assert ma.query_ids == mb.query_ids
    assert (ma.hits != mb.hits).nnz == 0
    assert (ma.ranks != mb.ranks).nnz == 0
    np.testing.assert_array_equal(ma.scores.data, mb.scores.data)
    assert chunk_coverage(ma) == chunk_coverage(mb)
    assert _without_times(json_report(ma)) == _without_times(json_report(mb))


def assert_same_up_to_near_ties(a: Path, b: Path, tol: float = NEAR_TIE) -> int:
    """What is promised between runs whose embeddings differ by float rounding only.

    Each ranked list is sorted (score descending, exact ties in corpus order); a
    chunk both runs retrieve has the same score within ``tol``; the scores rank by
    rank agree within ``tol``; and a chunk only one run retrieves scores within
    ``2 * tol`` of the other run's k-th score (a near-tie at the k-th place). So
    ranks can differ only among chunks within ``2 * tol`` of each other, and the
    covered sets only by such chunks. Returns how many queries differ at all.
    """
    ma, mb = CoverageData(a).matrix(), CoverageData(b).matrix()
    assert ma.query_ids == mb.query_ids and ma.chunk_ids == mb.chunk_ids and ma.k == mb.k
    differing = 0
    for row in range(ma.n_queries):
        ids_a, ids_b = ma.retrieved(row), mb.retrieved(row)
        sc_a = np.array(ma.retrieved_scores(row), dtype=float)
        sc_b = np.array(mb.retrieved_scores(row), dtype=float)
        for ids, sc in ((ids_a, sc_a), (ids_b, sc_b)):
            assert all(s > t or (s == t and i < j)
                       for s, t, i, j in zip(sc, sc[1:], ids, ids[1:])), (row, ids, sc)
        assert len(ids_a) == len(ids_b)
        np.testing.assert_allclose(sc_a, sc_b, rtol=0, atol=tol)
        score_a, score_b = dict(zip(ids_a, sc_a)), dict(zip(ids_b, sc_b))
        for c in score_a.keys() & score_b.keys():
            assert abs(score_a[c] - score_b[c]) <= tol, (row, c)
        for mine, other_kth, theirs in ((score_a, sc_b[-1], score_b),
                                        (score_b, sc_a[-1], score_a)):
            for c in mine.keys() - theirs.keys():
                assert abs(mine[c] - other_kth) <= 2 * tol, (row, c, mine[c], other_kth)
        differing += ids_a != ids_b
    return differing


def _run_file(path: Path, corpus: Corpus, ranked: dict[str, list[tuple[str, float]]]) -> Path:
    run = Run(k=3, retriever={"kind": "dense", "index": "flat"})
    for qid, hits in ranked.items():
        run.add(qid, qid, hits)
    CoverageData(path).write(corpus, run)
    return path


def test_near_tie_comparison_allows_only_near_ties(city_corpus, tmp_path):
    base = {"q1": [("paris", 0.9), ("berlin", 0.7), ("madrid", 0.5)],
            "q2": [("tokyo", 0.8), ("interest", 0.6), ("dividends", 0.4)]}
    a = _run_file(tmp_path / "a.ragcov", city_corpus, base)
    assert assert_same_up_to_near_ties(a, a) == 0
    # Rounding-level score changes, two chunks swapped at a near-tie, another chunk
    # at a near-tie on the k-th place: all within what is promised.
    near = {"q1": [("paris", 0.9 + 4e-7), ("berlin", 0.7), ("tokyo", 0.5 - 5e-7)],
            "q2": [("interest", 0.8 - 3e-7), ("tokyo", 0.8 - 4e-7), ("dividends", 0.4)]}
    base_tied = {"q1": base["q1"],
                 "q2": [("tokyo", 0.8), ("interest", 0.8 - 9e-7), ("dividends", 0.4)]}
    assert assert_same_up_to_near_ties(_run_file(tmp_path / "t.ragcov", city_corpus, base_tied),
                                       _run_file(tmp_path / "n.ragcov", city_corpus, near)) == 2
    # Real differences are refused: another chunk well below the k-th score...
    far = {**base, "q1": [("paris", 0.9), ("berlin", 0.7), ("tokyo", 0.5 - 1e-3)]}
    with pytest.raises(AssertionError):
        assert_same_up_to_near_ties(a, _run_file(tmp_path / "f.ragcov", city_corpus, far))
    # ...and a swap of chunks whose scores are far apart.
    swap = {**base, "q2": [("interest", 0.8), ("tokyo", 0.6), ("dividends", 0.4)]}
    with pytest.raises(AssertionError):
        assert_same_up_to_near_ties(a, _run_file(tmp_path / "s.ragcov", city_corpus, swap))


def test_bm25_on_local_cluster_matches_single_process(city_corpus, cluster_address, tmp_path):
    suite = city_suite()
    local = tmp_path / "local.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=3,
            data_file=local, progress=False)
    sharded = tmp_path / "dask.ragcov"
    m = measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded,
                     scheduler=cluster_address, partitions=2, progress=False)
    assert m.n_queries == len(suite)
    assert 0 < chunk_coverage(m) <= 1
    assert_same(local, sharded)
    # No shard files are left behind next to the data file.
    assert not [p for p in tmp_path.iterdir() if "shard" in p.name]


def test_own_local_cluster_when_no_address(city_corpus, tmp_path):
    suite = city_suite(70)
    local, sharded = tmp_path / "local.ragcov", tmp_path / "dask.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=2,
            data_file=local, progress=False)
    measure_dask(city_corpus, suite, "bm25", k=2, data_file=sharded, partitions=2,
                 progress=False)
    assert_same(local, sharded)


def test_append_retrieves_only_new_queries_and_matches(city_corpus, cluster_address, tmp_path):
    suite = city_suite()
    first = Suite(list(suite)[:90])
    local = tmp_path / "local.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=3,
            data_file=local, progress=False)
    sharded = tmp_path / "dask.ragcov"
    measure_dask(city_corpus, first, "bm25", k=3, data_file=sharded,
                 scheduler=cluster_address, progress=False)
    assert len(CoverageData(sharded).query_texts()) == 90
    measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded, append=True,
                 scheduler=cluster_address, progress=False)
    assert_same(local, sharded)
    # Nothing new: the file is unchanged.
    before = CoverageData(sharded).matrix()
    measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded, append=True,
                 scheduler=cluster_address, progress=False)
    assert CoverageData(sharded).matrix().query_ids == before.query_ids


def test_append_to_incompatible_file_is_refused_and_writes_nothing(city_corpus, cluster_address,
                                                                    tmp_path):
    suite = city_suite(10)
    path = tmp_path / "d.ragcov"
    measure_dask(city_corpus, suite, "bm25", k=2, data_file=path, scheduler=cluster_address,
                 progress=False)
    before = path.read_bytes()
    more = Suite.from_texts(["capital of Japan"])
    with pytest.raises(RagcovError, match="k differs"):
        measure_dask(city_corpus, Suite([*suite, *[type(more[0])("new", more[0].text)]]), "bm25",
                     k=3, data_file=path, append=True, scheduler=cluster_address, progress=False)
    assert path.read_bytes() == before


def test_append_with_a_recorded_id_and_new_text_is_refused(city_corpus, cluster_address,
                                                           tmp_path):
    """The same check as a local --append: a changed text is never silently skipped."""
    suite = city_suite(10)
    path = tmp_path / "d.ragcov"
    measure_dask(city_corpus, suite, "bm25", k=2, data_file=path, scheduler=cluster_address,
                 progress=False)
    before = path.read_bytes()
    changed = Suite([type(suite[0])(suite[0].id, "a different question")])
    with pytest.raises(RagcovError, match="already recorded with a different text"):
        measure_dask(city_corpus, changed, "bm25", k=2, data_file=path, append=True,
                     scheduler=cluster_address, progress=False)
    assert path.read_bytes() == before


def test_own_local_cluster_leaves_thread_settings_alone(city_corpus, tmp_path, monkeypatch):
    """Starting a LocalCluster must not leave OMP_NUM_THREADS=1 in the caller's process."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    measure_dask(city_corpus, city_suite(4), "bm25", k=2, data_file=tmp_path / "d.ragcov",
                 progress=False)
    assert "OMP_NUM_THREADS" not in os.environ
    assert os.environ["MKL_NUM_THREADS"] == "3"


def test_bad_arguments(city_corpus, tmp_path):
    with pytest.raises(RagcovError, match="partitions"):
        measure_dask(city_corpus, city_suite(3), "bm25", data_file=tmp_path / "x", partitions=0)
    with pytest.raises(RagcovError, match="k must be"):
        measure_dask(city_corpus, city_suite(3), "bm25", k=0, data_file=tmp_path / "x")
    with pytest.raises(RagcovError, match="empty"):
        measure_dask(city_corpus, Suite([]), "bm25", data_file=tmp_path / "x")
    assert not (tmp_path / "x").exists()


@given(n=st.integers(0, 5000), parts=st.integers(1, 20), unit=st.integers(1, 1100))
def test_aligned_slices_cover_range_on_unit_boundaries(n, parts, unit):
    slices = aligned_slices(n, parts, unit)
    assert len(slices) <= parts
    assert [i for a, b in slices for i in range(a, b)] == list(range(n))
    assert all(a % unit == 0 and b > a for a, b in slices)


def test_cli_engine_dask_in_a_subprocess(city_corpus_file, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                               for i, t in enumerate(city_suite(80).texts)), encoding="utf-8")
    ragcov = Path(sys.executable).with_name("ragcov")
    args = ["--corpus", str(city_corpus_file), "--queries", str(queries), "--retriever", "bm25",
            "--k", "2", "-q"]
    subprocess.run([str(ragcov), "run", *args, "--data-file", str(tmp_path / "a.ragcov")],
                   check=True, cwd=tmp_path, timeout=300)
    subprocess.run([str(ragcov), "run", *args, "--data-file", str(tmp_path / "b.ragcov"),
                    "--engine", "dask", "--partitions", "2"], check=True, cwd=tmp_path,
                   timeout=300)
    assert_same(tmp_path / "a.ragcov", tmp_path / "b.ragcov")


def _many_chunks(n: int) -> Corpus:
    topics = ["rivers and lakes", "interest rates", "cell biology", "football results",
              "train timetables", "volcanoes", "tax law", "jazz history"]
    return Corpus([Chunk(id=f"c{i}", doc_id=f"d{i // 50}",
                         text=f"Note {i} on {topics[i % 8]}: item {i * 7 % 101} of the series.")
                   for i in range(n)])


@pytest.mark.slow
@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_dense_on_local_cluster_matches_single_process(cluster_address, tmp_path, index,
                                                       monkeypatch):
    import faiss

    from ragcov.retrievers.dense import ENCODE_CHUNK, ENCODE_THREADS_ENV, DenseRetriever

    # One torch thread count for every encode, here and on the workers (which were
    # started with OMP_NUM_THREADS=1, so they get 2 only from the driver): the same
    # texts in the same batches then give the same bits in every process.
    monkeypatch.setenv(ENCODE_THREADS_ENV, "2")
    # A multi-threaded HNSW build inserts in a racy order; one thread makes both the
    # sharded run's graph (built in this process) and the local one the same graph.
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        # More chunks than one encode slice, so the corpus is embedded in several shards.
        corpus = _many_chunks(ENCODE_CHUNK + 200)
        suite = Suite.from_texts([f"what about {t} number {i}" for i, t in enumerate(
            ["lakes", "rates", "cells", "volcano", "tax", "jazz"] * 25)])
        # Private caches so the sharded run cannot reuse the local run's embeddings.
        monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-dask"))
        sharded = tmp_path / "dask.ragcov"
        measure_dask(corpus, suite, "dense", index=index, k=5, data_file=sharded,
                     scheduler=cluster_address, partitions=2, progress=False)
        monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-local"))
        r = DenseRetriever(corpus, index=index, progress=False)
        local = tmp_path / "local.ragcov"
        measure(corpus, suite, r, k=5, data_file=local, progress=False)
    finally:
        faiss.omp_set_num_threads(threads)
    assert r.chunks_embedded == len(corpus) and r.threads == 2
    with np.load(next((tmp_path / "cache-dask" / "embeddings").glob("*.npz"))) as entry:
        dask_emb = entry["embeddings"]
    np.testing.assert_array_equal(dask_emb, r.embeddings)
    assert_same(local, sharded)
    if index == "flat":
        assert CoverageData(sharded).annotation(INDEX_RECALL) is None
    else:
        assert CoverageData(sharded).meta().retriever["approximate"] is True
        rec = CoverageData(sharded).annotation(INDEX_RECALL)
        assert rec is not None and rec["sample"] == min(200, len(suite)) and rec["k"] == 5
        assert 0.0 <= rec["recall_at_k"] <= 1.0


@pytest.mark.slow
def test_dense_at_another_thread_count_differs_only_at_near_ties(cluster_address, tmp_path,
                                                                 monkeypatch):
    from ragcov.retrievers.dense import DenseRetriever

    # Workers at 1 thread, the local run at 2: kernels may round differently (the
    # observed 1.3e-7 on a small last batch). Repeated texts make exact and near
    # ties, some of them at the k-th place.
    chunks = list(_many_chunks(300))
    chunks += [Chunk(id=f"dup{i}", doc_id="dups", text=chunks[i % 24].text) for i in range(48)]
    corpus = Corpus(chunks)
    suite = Suite.from_texts([f"what about {t} number {i}" for i, t in enumerate(
        ["lakes", "rates", "cells", "volcano", "tax", "jazz"] * 25)])
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-dask"))
    sharded = tmp_path / "dask.ragcov"
    measure_dask(corpus, suite, "dense", k=5, data_file=sharded, scheduler=cluster_address,
                 partitions=2, progress=False, encode_threads=1)
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-local"))
    r = DenseRetriever(corpus, progress=False, threads=2)
    local = tmp_path / "local.ragcov"
    measure(corpus, suite, r, k=5, data_file=local, progress=False)
    with np.load(next((tmp_path / "cache-dask" / "embeddings").glob("*.npz"))) as entry:
        dask_emb = entry["embeddings"]
    np.testing.assert_allclose(dask_emb, r.embeddings, rtol=0, atol=NEAR_TIE)
    assert_same_up_to_near_ties(local, sharded)
    # The suite does meet ties at the k-th place (the 5th and 6th scores within NEAR_TIE).
    top6, _ = r.index.search(r.embed_queries(suite.texts), 6)
    assert np.any(top6[:, 4] - top6[:, 5] <= NEAR_TIE)


def test_encode_threads_sent_to_workers(monkeypatch):
    from ragcov.retrievers.dense import ENCODE_THREADS_ENV

    monkeypatch.delenv(ENCODE_THREADS_ENV, raising=False)
    torch = pytest.importorskip("torch")
    # A remote cluster: Dask's one core per worker thread; a LocalCluster: this
    # process's count, as a local run here would use.
    assert dask_encode_threads(None, "tcp://127.0.0.1:8786") == 1
    assert dask_encode_threads(None, None) == torch.get_num_threads()
    assert dask_encode_threads(3, "tcp://127.0.0.1:8786") == 3
    monkeypatch.setenv(ENCODE_THREADS_ENV, "2")
    assert dask_encode_threads(None, "tcp://127.0.0.1:8786") == 2
    assert dask_encode_threads(None, None) == 2
    monkeypatch.setenv(ENCODE_THREADS_ENV, "many")
    with pytest.raises(RagcovError, match=ENCODE_THREADS_ENV):
        dask_encode_threads(None, None)


class _ThreadRecordingEncoder:
    """A stand-in for SentenceTransformer that notes torch's thread count when called."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts, **_: object) -> np.ndarray:
        import torch

        self.threads.append(torch.get_num_threads())
        return np.tile(np.array([1, 0, 0, 0], dtype=np.float32), (len(texts), 1))


def test_worker_tasks_encode_under_the_sent_thread_count(city_corpus, monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("faiss")
    import ragcov.retrievers.dense as dense

    fake = _ThreadRecordingEncoder()
    monkeypatch.setattr(dense, "load_encoder", lambda *_a, **_k: fake)
    before = torch.get_num_threads()
    want = 1 if before > 1 else 2
    assert _embed_slice("model", ["a", "b"], 64, want).shape == (2, 4)
    spec = {"kind": "dense", "model": None, "index": "flat", "batch_size": 64, "threads": want}
    emb = np.tile(np.array([1, 0, 0, 0], dtype=np.float32), (len(city_corpus), 1))
    r = _build_retriever(spec, city_corpus, {"embeddings": emb, "index_bytes": None})
    r.retrieve(["capital"], 2)
    assert fake.threads == [want, want]
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("kill", ["one busy worker", "every worker"])
def test_a_worker_lost_mid_run_changes_no_hit(city_corpus, tmp_path, monkeypatch, kill):
    """Workers killed (SIGKILL) once the first batch of queries is back: one busy with a
    batch, or every worker (the scattered corpus goes with them). Lost batches are sent
    again, with the corpus scattered again, and the file records one process's hits."""
    suite = city_suite(600)
    local = tmp_path / "local.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=3,
            data_file=local, progress=False)
    with cluster_losing_workers(kill) as (address, kill_now, killed):
        kill_after_first_task(monkeypatch, kill_now)
        lost = tmp_path / "lost.ragcov"
        measure_dask(city_corpus, suite, "bm25", k=3, data_file=lost, batch_size=8,
                     scheduler=address, progress=False)
    assert killed
    assert_same(local, lost)


class _Cancelled:
    """FAKE future: a batch the scheduler cancelled (its worker and data gone) or one that
    raised; a real cluster cannot be made to lose the same batch four times on cue."""

    def __init__(self, key: str, status: str = "cancelled", error: Exception | None = None):
        self.key, self.status, self.error = key, status, error

    def result(self):
        from concurrent.futures import CancelledError

        raise self.error or CancelledError(self.key)


def test_a_lost_batch_goes_again_three_times_with_one_scatter_per_loss():
    from dask.distributed import KilledWorker

    from ragcov.distributed import LOST_BATCH_TRIES, _Resend

    scatters: list[str] = []

    def scatter() -> str:
        scatters.append(f"copy{len(scatters) + 1}")
        return scatters[-1]

    sent: list[tuple[int, str]] = []  # each batch sent, with the data it was given
    coming: list[_Cancelled] = []  # what the next batch sent comes back as

    def submit(i: int, data: str) -> _Cancelled:
        sent.append((i, data))
        return coming.pop(0)

    resend = _Resend(submit, scatter, "copy0", "queries", "; nothing was recorded")
    coming += [_Cancelled(f"a{i}") for i in range(3)]
    first = [resend.send(i) for i in range(3)]  # three batches, one copy
    for i, fut in enumerate(first):
        assert resend.result(i, fut) == (False, None)
    assert scatters == ["copy1"]  # the copy they all read, scattered again once
    for n in range(2, LOST_BATCH_TRIES + 1):  # batch 0 lost again, each time with the new copy
        coming.append(_Cancelled(f"b{n}"))
        assert resend.result(0, resend.send(0)) == (False, None)
        assert sent[-1] == (0, f"copy{n - 1}")
    assert len(scatters) == LOST_BATCH_TRIES
    coming.append(_Cancelled("last"))
    with pytest.raises(RagcovError, match=f"^Dask: a batch of queries was lost "
                       f"{LOST_BATCH_TRIES + 1} times with its workers; nothing was recorded$"):
        resend.result(0, resend.send(0))
    # A batch's own errors are not losses: raised as they are, nothing scattered.
    from concurrent.futures import CancelledError

    for error in (CancelledError("its own"), KilledWorker("task", "tcp://w", 3), ValueError("x")):
        coming.append(_Cancelled("own", status="error", error=error))
        with pytest.raises(type(error)):
            resend.result(5, resend.send(5))
    assert len(scatters) == LOST_BATCH_TRIES and 5 not in resend.lost
