"""Vector stores as the corpus and the retriever, each on its real engine on local disk.

Each store is built from the bundled FinQA sample with the real MiniLM model; the
covered set ragcov records must be the union of the top-k lists the store itself
returns for the suite, recomputed here with the store's own client.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
K = 3
N_PAGES = 60
N_QUERIES = 40


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, minilm_path: str, minilm_vectors) -> dict:
    """A few hundred chunks of the sample, their MiniLM vectors, a suite and its vectors."""
    work = tmp_path_factory.mktemp("sample")
    pages = work / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    corpus = load_corpus(pages, split=True)
    queries = [json.loads(line) for line in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    queries = queries[:N_QUERIES]
    suite = work / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in queries))
    vectors = minilm_vectors(corpus.texts)
    qvectors = minilm_vectors([q["question"] for q in queries])
    return {"ids": corpus.ids, "texts": corpus.texts, "docs": [c.doc_id for c in corpus],
            "vectors": vectors, "suite": suite, "qvectors": qvectors, "model": minilm_path}


def run_store(capsys, url: str, sample: dict, tmp_path: Path, *extra: str) -> tuple[set[str], list]:
    data = tmp_path / "store.ragcov"
    code, out, err = cli(capsys, "run", "--corpus", url, "--queries", str(sample["suite"]),
                         "--retriever", "store", "--model", sample["model"], "-k", str(K),
                         "--data-file", str(data), "--quiet", *extra)
    assert code == 0, err
    m = CoverageData(data).matrix()
    covered = {cid for cid, hit in zip(m.chunk_ids, m.covered()) if hit}
    return covered, m.chunk_ids


def check(covered: set[str], chunk_ids: list[str], expected: list[list[str]], n: int) -> None:
    assert len(chunk_ids) == n
    union = {cid for row in expected for cid in row}
    assert all(len(row) == K for row in expected)
    assert covered == union
    assert 0 < len(covered) < n


@pytest.mark.slow
def test_chroma_folder(capsys, sample: dict, tmp_path: Path) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    col = client.create_collection("finqa", configuration={"hnsw": {"space": "cosine"}})
    for i in range(0, len(sample["ids"]), 200):
        col.add(ids=sample["ids"][i:i + 200], documents=sample["texts"][i:i + 200],
                embeddings=sample["vectors"][i:i + 200].tolist(),
                metadatas=[{"doc_id": d} for d in sample["docs"][i:i + 200]])
    expected = col.query(query_embeddings=sample["qvectors"].tolist(), n_results=K)["ids"]
    covered, ids = run_store(capsys, f"chroma://{tmp_path}/chroma?collection=finqa", sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))
    corpus = load_corpus(f"chroma://{tmp_path}/chroma?collection=finqa")
    assert [c.doc_id for c in corpus] == sample["docs"]  # doc_id read from metadata


@pytest.mark.slow
def test_qdrant_local(capsys, sample: dict, tmp_path: Path) -> None:
    import uuid

    from qdrant_client import QdrantClient, models

    path = tmp_path / "qdrant"
    client = QdrantClient(path=str(path))
    client.create_collection("finqa", vectors_config=models.VectorParams(
        size=sample["vectors"].shape[1], distance=models.Distance.COSINE))
    pids = [str(uuid.uuid5(uuid.NAMESPACE_URL, cid)) for cid in sample["ids"]]
    client.upsert("finqa", points=[
        models.PointStruct(id=pid, vector=v.tolist(),
                           payload={"page_content": t, "metadata": {"source": d}})
        for pid, v, t, d in zip(pids, sample["vectors"], sample["texts"], sample["docs"])])
    expected = [[str(p.id) for p in client.query_points("finqa", query=q.tolist(), limit=K).points]
                for q in sample["qvectors"]]
    client.close()  # local mode locks the folder for one client
    covered, ids = run_store(capsys, f"qdrant://{path}?collection=finqa&trust=pickle", sample,
                             tmp_path)
    check(covered, ids, expected, len(pids))
    assert set(ids) == set(pids)  # the store's UUIDs are the chunk ids


@pytest.mark.slow
def test_lancedb(capsys, sample: dict, tmp_path: Path) -> None:
    import lancedb

    db = lancedb.connect(str(tmp_path / "lance"))
    table = db.create_table("finqa", data=[
        {"id": cid, "text": t, "vector": v.tolist(), "metadata": {"document_id": d}}
        for cid, t, v, d in zip(sample["ids"], sample["texts"], sample["vectors"], sample["docs"])])
    expected = [[r["id"] for r in table.search(q.tolist()).select(["id"]).limit(K).to_list()]
                for q in sample["qvectors"]]
    covered, ids = run_store(capsys, f"lancedb://{tmp_path}/lance?table=finqa", sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))
    assert ids == sample["ids"]


@pytest.mark.slow
def test_milvus_lite(capsys, sample: dict, tmp_path: Path) -> None:
    from pymilvus import MilvusClient

    path = tmp_path / "milvus.db"
    client = MilvusClient(uri=str(path))
    client.create_collection("finqa", dimension=sample["vectors"].shape[1], metric_type="COSINE",
                             id_type="string", max_length=200)
    client.insert("finqa", [{"id": cid, "vector": v.tolist(), "text": t, "doc_id": d}
                            for cid, t, v, d in zip(sample["ids"], sample["texts"],
                                                    sample["vectors"], sample["docs"])])
    reply = client.search("finqa", data=sample["qvectors"].tolist(), limit=K)
    expected = [[str(hit["id"]) for hit in hits] for hits in reply]
    client.close()
    covered, ids = run_store(capsys, f"milvus://{path}?collection=finqa", sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))


def test_milvus_primary_key_by_its_own_name(tmp_path: Path) -> None:
    """langchain-milvus names its primary key ``pk`` (an auto id), not ``id``: the store's
    search answers with those keys, in Milvus's own order."""
    from pymilvus import DataType, MilvusClient

    path = tmp_path / "langchain.db"
    client = MilvusClient(uri=str(path))
    schema = client.create_schema(auto_id=True)
    schema.add_field("text", DataType.VARCHAR, max_length=200)
    schema.add_field("pk", DataType.INT64, is_primary=True, auto_id=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=3)
    schema.add_field("source", DataType.VARCHAR, max_length=200)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="L2")
    client.create_collection("app", schema=schema, index_params=index)
    rows = [{"text": f"chunk {i}", "vector": [1.0, float(i), 0.5], "source": f"doc{i // 2}"}
            for i in range(5)]
    pks = [str(pk) for pk in client.insert("app", rows)["ids"]]
    expected = [[str(hit["pk"]) for hit in hits]
                for hits in client.search("app", data=[[1.0, 3.2, 0.5]], limit=3, output_fields=["pk"])]
    client.close()
    corpus = load_corpus(f"milvus://{path}?collection=app")
    assert sorted(corpus.ids) == sorted(pks)
    assert {c.text: c.doc_id for c in corpus} == {f"chunk {i}": f"doc{i // 2}" for i in range(5)}
    assert [[cid for cid, _ in ranked] for ranked in corpus.store.search([[1.0, 3.2, 0.5]], 3)] == expected


def langchain_faiss(sample: dict, folder: Path):
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import FAISS

    embeddings = HuggingFaceEmbeddings(model_name=sample["model"])
    store = FAISS.from_embeddings(list(zip(sample["texts"], sample["vectors"].tolist())),
                                  embeddings, metadatas=[{"source": d} for d in sample["docs"]])
    store.save_local(str(folder))
    return store


@pytest.mark.slow
def test_langchain_faiss_folder(capsys, sample: dict, tmp_path: Path) -> None:
    store = langchain_faiss(sample, tmp_path / "faiss")
    expected = [[d.id for d in store.similarity_search_by_vector(q.tolist(), k=K)]
                for q in sample["qvectors"]]
    covered, ids = run_store(capsys, f"faiss://{tmp_path}/faiss?trust=pickle", sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))


@pytest.mark.slow
def test_llamaindex_storage(capsys, sample: dict, tmp_path: Path) -> None:
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    nodes = [TextNode(id_=cid, text=t, embedding=v.tolist(), metadata={"file_name": d})
             for cid, t, v, d in zip(sample["ids"], sample["texts"], sample["vectors"], sample["docs"])]
    storage = StorageContext.from_defaults()
    index = VectorStoreIndex(nodes, storage_context=storage, embed_model=MiniLMEmbedding(sample["model"]))
    index.storage_context.persist(persist_dir=str(tmp_path / "storage"))
    expected = [storage.vector_store.query(VectorStoreQuery(query_embedding=q.tolist(),
                                                            similarity_top_k=K)).ids
                for q in sample["qvectors"]]
    covered, ids = run_store(capsys, f"llamaindex://{tmp_path}/storage", sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))
    corpus = load_corpus(f"llamaindex://{tmp_path}/storage")
    assert [c.doc_id for c in corpus] == sample["docs"]


def MiniLMEmbedding(path: str):  # noqa: N802 - a class made on first use (llama_index is optional)
    """The real MiniLM model as a LlamaIndex embedding (no HuggingFace integration is installed)."""
    from llama_index.core.embeddings import BaseEmbedding
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu")

    class _MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return model.encode(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return model.encode(text).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return _MiniLM(model_name="all-MiniLM-L6-v2")


# Errors a user can cause: one line each ------------------------------------------------
def test_unknown_scheme_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RagcovError, match=r"unknown store scheme 'pinecone://'.*chroma://"):
        load_corpus("pinecone://index?collection=x")


def test_missing_collection_names_those_present(tmp_path: Path) -> None:
    import chromadb

    chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection("docs")
    with pytest.raises(RagcovError, match=r"no collection 'nope' in this store; collections here: docs"):
        load_corpus(f"chroma://{tmp_path}/db?collection=nope")
    with pytest.raises(RagcovError, match=r"no collection named \(add \?collection=NAME\)"):
        load_corpus(f"chroma://{tmp_path}/db")


def test_a_damaged_local_store_is_one_line_naming_it(capsys, tmp_path: Path) -> None:
    """A chroma.sqlite3 or a LanceDB table that is not what its client expects: the
    client's own words, the store's path, exit 1, no traceback."""
    (tmp_path / "chroma").mkdir()
    (tmp_path / "chroma" / "chroma.sqlite3").write_bytes(b"not a database " * 400)
    table = tmp_path / "lance" / "t.lance"
    (table / "_versions").mkdir(parents=True)
    (table / "_versions" / "1.manifest").write_bytes(b"\x00garbage" * 30)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "text": "what was revenue"}\n', encoding="utf-8")
    for url, words in ((f"chroma://{tmp_path}/chroma?collection=c", "cannot read the chroma store"),
                       (f"lancedb://{tmp_path}/lance?table=t", "cannot read the lancedb store")):
        code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(queries),
                           "--retriever", "store", "--data-file", str(tmp_path / "d.ragcov"))
        assert code == 1 and "Traceback" not in err, err
        assert err.startswith(f"ragcov: error: {tmp_path}/") and words in err, err
        assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "d.ragcov").exists()


def test_missing_store_path(tmp_path: Path) -> None:
    with pytest.raises(RagcovError, match="no such store"):
        load_corpus(f"lancedb://{tmp_path}/absent?table=t")


def test_store_retriever_needs_a_store_corpus(capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "alpha"}\n')
    suite = tmp_path / "q.jsonl"
    suite.write_text('{"id": "q", "query": "alpha"}\n')
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(suite),
                       "--retriever", "store", "--data-file", str(tmp_path / "d"), "--quiet")
    assert code != 0 and "--retriever store needs --corpus to be a store URL" in err


def test_document_lines_hint_at_split(capsys, tmp_path: Path) -> None:
    suite = tmp_path / "q.jsonl"
    suite.write_text('{"id": "q", "query": "alpha"}\n')
    code, _, err = cli(capsys, "run", "--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--queries",
                       str(suite), "--retriever", "bm25", "--data-file", str(tmp_path / "d"))
    assert code != 0
    assert "finqa_pages.jsonl:1: no chunk id" in err and "give --split" in err


def test_doc_key_names_the_document_field(tmp_path: Path) -> None:
    import chromadb

    col = chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection("docs")
    col.add(ids=["a", "b", "c"], documents=["x", "y", "z"], embeddings=[[1.0, 0], [0, 1.0], [1.0, 1.0]],
            metadatas=[{"report": "r1", "source": "s1"}, {"report": "r1", "source": "s2"},
                       {"report": "r2", "source": "s3"}])
    url = f"chroma://{tmp_path}/db?collection=docs"
    by_default = load_corpus(url)
    assert [(c.id, c.doc_id, c.position) for c in by_default] == [("a", "s1", 0), ("b", "s2", 0),
                                                                   ("c", "s3", 0)]
    by_report = load_corpus(url, doc_key="report")
    assert [(c.id, c.doc_id, c.position) for c in by_report] == [("a", "r1", 0), ("b", "r1", 1),
                                                                  ("c", "r2", 0)]


def test_store_retriever_runs_locally_only(capsys, tmp_path: Path) -> None:
    suite = tmp_path / "q.jsonl"
    suite.write_text('{"id": "q", "query": "alpha"}\n')
    code, _, err = cli(capsys, "run", "--corpus", "chroma://nowhere?collection=x", "--queries",
                       str(suite), "--retriever", "store", "--engine", "dask",
                       "--data-file", str(tmp_path / "d"))
    assert code != 0 and "use --engine local" in err


def test_a_milvus_lite_copy_is_stopped_and_removed_with_its_store(tmp_path: Path) -> None:
    """ragcov reads a private copy of a Milvus Lite file; once the store is let go, the
    copy's server is stopped (pymilvus would keep it until the process exits) and the
    copy's folder is gone from the temporary folder."""
    import gc
    import os

    from milvus_lite.server_manager import server_manager_instance
    from pymilvus import MilvusClient

    path = tmp_path / "app.db"
    client = MilvusClient(uri=str(path))
    client.create_collection("app", dimension=3, id_type="string", max_length=20)
    client.insert("app", [{"id": f"c{i}", "vector": [1.0, float(i), 0.5], "text": f"chunk {i}"}
                          for i in range(3)])
    client.close()
    server_manager_instance.release_server(str(path))
    corpus = load_corpus(f"milvus://{path}?collection=app")
    copy = Path(corpus.store.copy)
    assert copy.exists() and os.path.abspath(copy) in server_manager_instance._servers
    del corpus
    gc.collect()
    # _servers: milvus-lite's own table of running servers, read to see this one stopped.
    assert os.path.abspath(copy) not in server_manager_instance._servers
    assert not copy.parent.exists()


@pytest.mark.parametrize("query, column", [("", "id"), ("&id=nope", "nope")])
def test_a_lancedb_table_without_the_id_column_is_one_line(tmp_path: Path, query: str,
                                                           column: str) -> None:
    import lancedb

    db = lancedb.connect(str(tmp_path / "lance"))
    db.create_table("noid", data=[{"key": "c1", "text": "net revenue", "vector": [0.1, 0.2]}])
    with pytest.raises(RagcovError) as info:
        load_corpus(f"lancedb://{tmp_path}/lance?table=noid{query}")
    message = str(info.value)
    assert f"has no column {column!r}" in message and "key, text, vector" in message
    assert "?id=COLUMN" in message and "\n" not in message
