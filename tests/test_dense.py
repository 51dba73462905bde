"""The built-in dense retriever with the real local all-MiniLM-L6-v2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import cli
from ragcov.api import measure
from ragcov.corpus import Corpus
from ragcov.metrics import chunk_coverage
from ragcov.suite import Suite

pytestmark = pytest.mark.slow


def test_paraphrase_finds_the_right_chunk_first(city_corpus: Corpus) -> None:
    from ragcov.retrievers.dense import DenseRetriever

    r = DenseRetriever(city_corpus, progress=False)
    assert r.fingerprint()["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    results = r.retrieve(["Which French city is the seat of government?",
                          "How do green plants make food out of light?",
                          "What powers a cell's energy supply?"], 3)
    assert [ranked[0][0] for ranked in results] == ["paris", "photosynthesis", "mitochondria"]
    assert all(len(ranked) == 3 for ranked in results)
    scores = [s for _, s in results[0]]
    assert scores == sorted(scores, reverse=True)


def test_top_k_matches_plain_sentence_transformers(city_corpus: Corpus, minilm_path: str) -> None:
    from sentence_transformers import SentenceTransformer

    from ragcov.retrievers.dense import DenseRetriever

    queries = ["capital city in Asia", "company debt and interest", "cash paid to shareholders",
               "Spanish capital", "energy in cells"]
    k = 4
    model = SentenceTransformer(minilm_path, device="cpu")
    emb = model.encode(city_corpus.texts, normalize_embeddings=True)
    q = model.encode(queries, normalize_embeddings=True)
    expected = np.argsort(-(q @ emb.T), axis=1, kind="stable")[:, :k]
    got = DenseRetriever(city_corpus, progress=False).retrieve(queries, k)
    for row, ranked in zip(expected, got):
        assert [cid for cid, _ in ranked] == [city_corpus.ids[j] for j in row]


def test_corpus_embeddings_are_cached(city_corpus: Corpus, tmp_path: Path, monkeypatch) -> None:
    from ragcov.retrievers.dense import DenseRetriever

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    first = DenseRetriever(city_corpus, progress=False)
    assert first.chunks_embedded == len(city_corpus)
    second = DenseRetriever(city_corpus, progress=False)
    assert second.chunks_embedded == 0
    np.testing.assert_array_equal(first.embeddings, second.embeddings)
    m = measure(city_corpus, Suite.from_texts(["capital of Japan"]), second, k=2)
    assert second.chunks_embedded == 0 and second.queries_embedded == 1
    assert chunk_coverage(m) == pytest.approx(2 / 8)


def test_cli_run_dense_end_to_end(tmp_path: Path, city_corpus_file: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "Tokyo facts"}) + "\n")
    code, _, _ = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                     "--k", "1", "-q")
    assert code == 0
    _, out, _ = cli(capsys, "json", "-o", "-")
    doc = json.loads(out)
    assert doc["queries"]["q1"]["retrieved"] == ["tokyo"]
    assert doc["meta"]["retriever"]["kind"] == "dense"


def test_demo_runs_offline(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, "demo")
    assert code == 0
    assert "TOTAL" in out and "Chunk coverage:" in out and "300 queries" in out
    assert (tmp_path / "ragcov-demo" / ".ragcov").exists()


def test_hnsw_run_records_recall_and_report_says_approximate(
        tmp_path: Path, city_corpus_file: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"question": q}) + "\n" for q in
                                              ["Tokyo facts", "plant sugar", "dividends"]))
    code, _, _ = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                     "--k", "2", "--index", "hnsw", "-q")
    assert code == 0
    _, out, _ = cli(capsys, "report")
    # Eight chunks: the HNSW graph is exhaustive, so recall against exact search is 1.
    assert "Note: results from an approximate index (recall@2 = 1.000 on 3 sampled queries)" in out
    _, out, _ = cli(capsys, "json", "-o", "-")
    meta = json.loads(out)["meta"]
    assert meta["retriever"]["approximate"] is True
    assert meta["index_recall"]["recall_at_k"] == 1.0


def test_index_command_caches_the_corpus(tmp_path: Path, city_corpus_file: Path, monkeypatch,
                                         capsys) -> None:
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    for expected in ("8 chunks embedded", "8 chunks already cached"):
        code, out, _ = cli(capsys, "index", "--corpus", str(city_corpus_file))
        assert code == 0
        assert expected in out
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.npz"))) == 1
