"""The approximate (HNSW) index: flagged as approximate, with a measured recall@k."""

from __future__ import annotations

import numpy as np
import pytest

from ragcov.api import INDEX_RECALL
from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.report.table import approximate_index_note
from ragcov.run import Run

faiss = pytest.importorskip("faiss")


def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_exact_search_is_numpy_top_k():
    from ragcov.retrievers.dense import exact_search

    base, queries = unit_vectors(500, 16, 0), unit_vectors(20, 16, 1)
    scores, idx = exact_search(base, queries, 7)
    expected = np.argsort(-(queries @ base.T), axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(queries @ base.T, expected, 1),
                               rtol=1e-5)


def test_exact_search_caps_k_at_corpus_size():
    from ragcov.retrievers.dense import exact_search

    _, idx = exact_search(unit_vectors(3, 4, 0), unit_vectors(2, 4, 1), 10)
    assert idx.shape == (2, 3)
    assert sorted(idx[0].tolist()) == [0, 1, 2]


def test_note_only_for_approximate_indexes():
    assert approximate_index_note({"kind": "dense", "index": "flat"}) is None
    assert approximate_index_note({"kind": "bm25"}) is None
    assert approximate_index_note({"kind": "dense", "index": "hnsw", "approximate": True},
                                  {"recall_at_k": 0.9876, "k": 10, "sample": 200}) == \
        "results from an approximate index (recall@10 = 0.988 on 200 sampled queries)"
    assert "not measured" in approximate_index_note({"approximate": True})


def test_recall_round_trips_through_the_data_file(city_corpus, tmp_path):
    path = tmp_path / "d.ragcov"
    run = Run(k=2, retriever={"kind": "dense", "index": "hnsw", "approximate": True})
    run.add("q1", "capital of France", [("paris", 0.9), ("berlin", 0.5)])
    CoverageData(path).write(city_corpus, run)
    assert CoverageData(path).annotation(INDEX_RECALL) is None
    recall = {"recall_at_k": 0.75, "k": 2, "sample": 4, "source": "queries"}
    CoverageData(path).annotate(INDEX_RECALL, recall)
    assert CoverageData(path).annotation(INDEX_RECALL) == recall
    # The data file still reads as before.
    assert CoverageData(path).matrix().query_ids == ["q1"]
    assert CoverageData(path).meta().retriever["approximate"] is True


def synthetic_corpus(n: int) -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=f"chunk {i}", doc_id=f"d{i // 10}") for i in range(n)])


@pytest.mark.slow
def test_fingerprint_says_approximate_and_flat_recall_is_one(city_corpus):
    from ragcov.retrievers.dense import DenseRetriever

    flat = DenseRetriever(city_corpus, index="flat", progress=False)
    hnsw = DenseRetriever(city_corpus, index="hnsw", progress=False)
    assert "approximate" not in flat.fingerprint()
    assert hnsw.fingerprint()["approximate"] is True
    assert hnsw.fingerprint()["index_params"] == {"M": 32, "efSearch": 128}
    assert flat.measure_recall(["capital of Japan", "cell energy"], k=3)["recall_at_k"] == 1.0
    # Eight chunks: HNSW visits them all and finds the exact top-3.
    rec = hnsw.measure_recall(["capital of Japan", "cell energy", "dividend"], k=3)
    assert rec == {"recall_at_k": 1.0, "k": 3, "sample": 3, "source": "queries"}
    assert hnsw.recall == rec


@pytest.mark.slow
def test_measured_recall_matches_an_independent_recount():
    from ragcov.retrievers.dense import DenseRetriever

    n = 3000
    emb = unit_vectors(n, 32, 3)
    # A deliberately weak graph so recall is well below 1.
    r = DenseRetriever(synthetic_corpus(n), index="hnsw", embeddings=emb, hnsw_m=4,
                       ef_search=4, progress=False)
    rec = r.measure_recall(k=10, sample=100, seed=5)
    assert rec["source"] == "chunks" and rec["sample"] == 100
    pick = np.sort(np.random.default_rng(5).choice(n, size=100, replace=False))
    q = emb[pick]
    exact = np.argsort(-(q @ emb.T), axis=1)[:, :10]
    _, approx = r.index.search(q, 10)
    expected = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx.tolist(),
                                                                  exact.tolist())])
    assert rec["recall_at_k"] == pytest.approx(expected)
    assert 0 < rec["recall_at_k"] < 1
