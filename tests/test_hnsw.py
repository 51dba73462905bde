"""The dense indexes: HNSW flagged as approximate with a measured recall@k; ties; threads."""

from __future__ import annotations

import numpy as np
import pytest

from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.data.datafile import INDEX_RECALL
from ragcov.reporters.table import approximate_index_note
from ragcov.retrieval import Run

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


class _FixedEncoder:
    """A stand-in for SentenceTransformer: fixed query vectors, torch's thread count noted."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.threads: list[int] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts, **_: object) -> np.ndarray:
        import torch

        self.threads.append(torch.get_num_threads())
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def _patched_dense(monkeypatch, encoder):
    import ragcov.retrievers.dense as dense

    monkeypatch.setattr(dense, "load_encoder", lambda *_a, **_k: encoder)
    return dense


@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_score_ties_are_broken_by_corpus_order(monkeypatch, index):
    pytest.importorskip("torch")
    dense = _patched_dense(monkeypatch, _FixedEncoder({"q": [1, 0, 0, 0], "p": [0, 1, 0, 0]}))
    # c1, c3, c4, c6 and c7 are the same vector: exact ties whatever the kernel.
    emb = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [1, 0, 0, 0],
                    [1, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0]], dtype=np.float32)
    r = dense.DenseRetriever(synthetic_corpus(8), index=index, embeddings=emb, progress=False)
    # Earliest first among tied chunks, and the earliest win the k-th place.
    assert [c for c, _ in r.retrieve(["q"], 3)[0]] == ["c1", "c3", "c4"]
    assert [c for c, _ in r.retrieve(["q"], 6)[0]] == ["c1", "c3", "c4", "c6", "c7", "c2"]
    ranked = r.retrieve(["p", "q"], 2)
    assert [c for c, _ in ranked[0]] == ["c0", "c2"] and [s for _, s in ranked[1]] == [1.0, 1.0]


def test_encode_pins_torch_threads_and_restores_them(monkeypatch):
    torch = pytest.importorskip("torch")
    from ragcov.errors import RagcovError

    dense = _patched_dense(monkeypatch, _FixedEncoder({"q": [1, 0, 0, 0]}))
    enc = _FixedEncoder({"q": [1, 0, 0, 0]})
    before = torch.get_num_threads()
    other = 1 if before > 1 else 2
    monkeypatch.delenv(dense.ENCODE_THREADS_ENV, raising=False)
    dense.encode(enc, ["q"], progress=False)
    dense.encode(enc, ["q"], progress=False, threads=other)
    monkeypatch.setenv(dense.ENCODE_THREADS_ENV, "3")
    dense.encode(enc, ["q"], progress=False)
    assert enc.threads == [before, other, 3]
    assert torch.get_num_threads() == before
    # A retriever fixes its count once: the environment at construction, or its argument.
    r = dense.DenseRetriever(synthetic_corpus(2), embeddings=unit_vectors(2, 4, 0),
                             progress=False)
    monkeypatch.setenv(dense.ENCODE_THREADS_ENV, "1")
    r.retrieve(["q"], 1)
    assert r.threads == 3 and r.encoder.threads == [3]
    assert dense.DenseRetriever(synthetic_corpus(2), embeddings=unit_vectors(2, 4, 0),
                                progress=False, threads=2).threads == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(dense.ENCODE_THREADS_ENV, bad)
        with pytest.raises(RagcovError, match=dense.ENCODE_THREADS_ENV):
            dense.encode(enc, ["q"], progress=False)
    with pytest.raises(RagcovError, match="at least 1"):
        dense.encode(enc, ["q"], progress=False, threads=0)
    assert torch.get_num_threads() == before
