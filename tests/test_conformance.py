"""The conformance matrix: frameworks' own ingestion x local stores x entry points.

Each cell builds its store the way the framework's users do (LlamaIndex
``VectorStoreIndex`` over documents and over nodes, default settings, metadata embedded
as LlamaIndex embeds it; LangChain ``from_documents`` with metadata), measures it with
ragcov, and holds ragcov's chunk ids, document ids, covered set and every query's
ordered top-k equal to a recount made here without ragcov: the framework's own
retriever's top-k. The model check must pass with no warning and no ``--model``.
docs/integrations/README.md (the conformance matrix) shows exactly these cells.

Every store is built once for the module (30 pages of the bundled FinQA sample: 39
LlamaIndex nodes from the documents, or the app's 172 chunks; 20 questions, k=3), with the
real all-MiniLM-L6-v2 (offline); the pgvector cells on the session's real PostgreSQL
server (tests/pg_server.py), started only when one of them runs.
"""

from __future__ import annotations

import json
import uuid
import warnings
from pathlib import Path

import pytest

from framework_stores import K, close_store, llamaindex_store, minilm_llamaindex
from helpers import cli, langchain_embeddings, record_spans
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData

pytestmark = pytest.mark.slow
pytest.importorskip("llama_index.core")

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
N_PAGES = 30
N_QUERIES = 20


def _pages() -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()][:N_PAGES]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, minilm_path: str, minilm_vectors) -> dict:
    """Every cell's store, built by its framework, and the framework's own top-k per query."""
    from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode

    Settings.llm = None
    work = tmp_path_factory.mktemp("conformance")
    pages = _pages()
    docs = {p["doc_id"] for p in pages}
    questions = [json.loads(line) for line in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    questions = [q for q in questions if q["doc_id"] in docs][:N_QUERIES]
    suite = work / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n" for q in questions))
    texts = [q["question"] for q in questions]
    embed = minilm_llamaindex(minilm_path)

    # LlamaIndex over documents: its default splitter, the document's metadata embedded.
    documents = [Document(id_=p["doc_id"], text=p["text"], metadata={"company": p["doc_id"].split("/")[0]})
                 for p in pages]
    # LlamaIndex over nodes: the app's chunks, UUID node ids (Qdrant's rule), its ids in metadata.
    chunks = load_corpus(_write(work / "pages.jsonl", pages), split=True)
    nodes = [TextNode(id_=str(uuid.uuid5(uuid.NAMESPACE_URL, c.id)), text=c.text,
                      metadata={"chunk_id": c.id, "doc_id": c.doc_id}) for c in chunks]
    cells: dict[str, dict] = {}
    urls = {"qdrant": "qdrant://{path}?collection=app&trust=pickle",
            "chroma": "chroma://{path}?collection=app", "lancedb": "lancedb://{path}?table=app",
            "storage": "llamaindex://{path}"}
    for engine, hows in (("qdrant", ("documents", "nodes")), ("chroma", ("documents", "nodes")),
                         ("lancedb", ("nodes",)), ("storage", ("documents",))):
        for how in hows:
            path = str(work / f"{engine}-{how}")
            # LlamaIndex's own storage: its default SimpleVectorStore, persisted to a folder.
            store = None if engine == "storage" else llamaindex_store(engine, path, "app")
            context = StorageContext.from_defaults(vector_store=store)
            index = (VectorStoreIndex.from_documents(documents, storage_context=context, embed_model=embed)
                     if how == "documents" else
                     VectorStoreIndex(nodes, storage_context=context, embed_model=embed))
            if engine == "storage":
                index.storage_context.persist(persist_dir=path)
            retriever = index.as_retriever(similarity_top_k=K)
            top = [[_llamaindex_id(n) for n in retriever.retrieve(t)] for t in texts]
            url = urls[engine].format(path=path)
            expected_docs = ({n.metadata["chunk_id"]: n.metadata["doc_id"] for n in nodes} if how == "nodes"
                             else _llamaindex_docs(index))
            if store is not None:
                close_store(store)  # the app's client lets go of a local Qdrant folder
            cells[f"llamaindex-{how}-{engine}"] = {
                "url": url, "top": top, "docs": expected_docs, "path": path, "engine": engine}
    embeddings = langchain_embeddings(_SessionMiniLM(minilm_vectors))
    for engine in ("chroma", "faiss", "lancedb", "qdrant", "milvus"):
        cells[f"langchain-documents-{engine}"] = _langchain(engine, str(work / f"{engine}-langchain"), chunks,
                                                            texts, embeddings)
    return {"suite": suite, "cells": cells, "queries": [q["id"] for q in questions], "model": minilm_path,
            "work": work, "documents": documents, "chunks": chunks, "texts": texts, "embed": embed,
            "embeddings": embeddings}


@pytest.fixture(scope="module")
def pg_cells(world: dict, pg) -> dict:
    """The pgvector cells, on the real server (tests/pg_server.py): LlamaIndex's
    ``PGVectorStore`` (its ``data_app`` table) and LangChain's ``PGVector`` in one database."""
    pytest.importorskip("llama_index.vector_stores.postgres")
    pytest.importorskip("langchain_postgres")
    from llama_index.core import StorageContext, VectorStoreIndex

    pg.create_database("conformance")
    app_url = pg.url("conformance", scheme="postgresql+psycopg")  # as the app's config holds it
    store = llamaindex_store("pgvector", app_url, "app")
    index = VectorStoreIndex.from_documents(world["documents"], embed_model=world["embed"],
                                            storage_context=StorageContext.from_defaults(vector_store=store))
    retriever = index.as_retriever(similarity_top_k=K)
    top = [[_llamaindex_id(n) for n in retriever.retrieve(t)] for t in world["texts"]]
    docs = _llamaindex_docs(index)
    close_store(store)
    return {
        "llamaindex-documents-pgvector": {"url": pg.url("conformance", "table=data_app"), "top": top,
                                          "docs": docs, "path": app_url, "engine": "pgvector"},
        "langchain-documents-pgvector": _langchain("pgvector", app_url, world["chunks"], world["texts"],
                                                   world["embeddings"],
                                                   pg.url("conformance", "collection=app"))}


def _cell(request: pytest.FixtureRequest, world: dict, name: str) -> dict:
    """A cell of the world, or of the pgvector server (started only for the cells that need it)."""
    if name in world["cells"]:
        return world["cells"][name]
    return request.getfixturevalue("pg_cells")[name]


class _SessionMiniLM:
    """The session's MiniLM (tests/conftest.py ``minilm_vectors``: each text encoded once),
    with the ``encode`` of a SentenceTransformer, so every LangChain cell embeds the same
    chunks without encoding them again."""

    def __init__(self, encode) -> None:
        self._encode = encode

    def encode(self, texts: list[str], normalize_embeddings: bool = True):
        return self._encode(list(texts))


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _llamaindex_id(scored) -> str:
    """The app's chunk id of a retrieved node: its chunk_id where it has one, else its node id."""
    return str(scored.node.metadata.get("chunk_id") or scored.node.node_id)


def _llamaindex_docs(index) -> dict[str, str]:
    """Each node's source document, as LlamaIndex reads its own nodes back (every node retrieved)."""
    return {n.node.node_id: n.node.ref_doc_id
            for n in index.as_retriever(similarity_top_k=10_000).retrieve("revenue")}


def _langchain(engine: str, path: str, chunks, texts: list[str], embeddings, url: str = "") -> dict:
    """``from_documents`` with the app's metadata, into the store as LangChain's users make it
    (``path``: its folder, or for pgvector the app's SQLAlchemy URL and ``url`` ragcov's)."""
    from langchain_community.vectorstores import FAISS, Chroma, LanceDB
    from langchain_core.documents import Document

    documents = [Document(page_content=c.text, metadata={"chunk_id": c.id, "source": c.doc_id})
                 for c in chunks]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain_community's stores are deprecated for their own packages
        if engine == "chroma":
            vs = Chroma.from_documents(documents, embeddings, persist_directory=path, collection_name="app")
            url = f"chroma://{path}?collection=app"
        elif engine == "faiss":
            vs = FAISS.from_documents(documents, embeddings)
            vs.save_local(path)
            url = f"faiss://{path}?trust=pickle"
        elif engine == "lancedb":
            vs = LanceDB.from_documents(documents, embeddings, uri=path, table_name="app")
            url = f"lancedb://{path}?table=app"
        elif engine == "qdrant":
            from langchain_qdrant import QdrantVectorStore

            vs = QdrantVectorStore.from_documents(documents, embeddings, path=path, collection_name="app")
            url = f"qdrant://{path}?collection=app&trust=pickle"
        elif engine == "milvus":
            from langchain_milvus import Milvus

            path += ".db"  # Milvus Lite: a store whose name ends in .db
            vs = Milvus.from_documents(documents, embeddings, connection_args={"uri": path},
                                       collection_name="app")
            url = f"milvus://{path}?collection=app"
        else:
            from langchain_postgres import PGVector

            vs = PGVector.from_documents(documents, embeddings, connection=path, collection_name="app")
        top = [[d.metadata["chunk_id"] for d in vs.similarity_search(t, k=K)] for t in texts]
    close_store(vs)  # the app's client lets go of a Qdrant folder, a Milvus Lite file
    return {"url": url, "top": top, "docs": {c.id: c.doc_id for c in chunks}, "path": path,
            "engine": engine}


def _ragcov(capsys, world: dict, url: str, tmp_path: Path, *extra: str) -> tuple[list[list[str]], str, list]:
    data = tmp_path / "run.ragcov"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model check passes with no warning
        code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(world["suite"]),
                           "-k", str(K), "--data-file", str(data), "--quiet", *extra)
    assert code == 0, err
    m = CoverageData(data).matrix()
    rows = {qid: [m.chunk_ids[c] for c in m.retrieved(i)] for i, qid in enumerate(m.query_ids)}
    return [rows[q] for q in world["queries"]], err, m.chunk_ids


CELLS = ["llamaindex-documents-qdrant", "llamaindex-nodes-qdrant", "llamaindex-documents-chroma",
         "llamaindex-nodes-chroma", "llamaindex-nodes-lancedb", "llamaindex-documents-storage",
         "llamaindex-documents-pgvector", "langchain-documents-chroma", "langchain-documents-faiss",
         "langchain-documents-lancedb", "langchain-documents-qdrant", "langchain-documents-milvus",
         "langchain-documents-pgvector"]


@pytest.mark.parametrize("cell", CELLS)
def test_store_url(capsys, request: pytest.FixtureRequest, world: dict, tmp_path: Path, cell: str) -> None:
    """``ragcov run --corpus STORE_URL``: the store's own search, the model checked."""
    c = _cell(request, world, cell)
    top, err, chunk_ids = _ragcov(capsys, world, c["url"], tmp_path)
    assert top == c["top"]  # every query's ordered top-k
    covered = {cid for row in top for cid in row}
    assert 0 < len(covered) < len(chunk_ids)
    corpus = load_corpus(c["url"])
    assert set(corpus.ids) == set(c["docs"])  # the app's chunk ids
    assert {ch.id: ch.doc_id for ch in corpus} == c["docs"]  # and its documents
    assert "None" not in {ch.doc_id for ch in corpus}
    assert "checked: mean cosine 1.0000" in err or "checked: mean cosine 0.99" in err
    if cell.startswith("llamaindex"):
        # LlamaIndex embedded its metadata template and the text: the check says so.
        assert "texts embedded as LlamaIndex embeds them" in err
    if "nodes" in cell or "langchain" in cell:
        assert "chunk ids from metadata 'chunk_id' (detected)" in err


FACTORY = '''
from framework_stores import llamaindex_store, minilm_llamaindex
from llama_index.core import Settings, VectorStoreIndex

Settings.llm = None


STORES = []


def build(corpus):
    STORES.append(llamaindex_store({engine!r}, {path!r}, "app"))
    return VectorStoreIndex.from_vector_store(STORES[-1], embed_model=minilm_llamaindex({model!r}))
'''


LANGCHAIN_FACTORY = '''
from framework_stores import langchain_store
from helpers import langchain_embeddings
from sentence_transformers import SentenceTransformer

STORES = []


def build(corpus):
    embeddings = langchain_embeddings(SentenceTransformer({model!r}, device="cpu"))
    STORES.append(langchain_store({engine!r}, {path!r}, embeddings))
    return STORES[-1].as_retriever(search_kwargs={{"k": {k}}})
'''


@pytest.mark.parametrize("cell", ["llamaindex-nodes-qdrant", "llamaindex-documents-chroma",
                                  "llamaindex-documents-pgvector", "langchain-documents-qdrant",
                                  "langchain-documents-milvus", "langchain-documents-pgvector"])
def test_framework_retriever(capsys, request: pytest.FixtureRequest, world: dict, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch, cell: str) -> None:
    """``--retriever module:attr``: the app's own LlamaIndex index or LangChain retriever, over
    the same store as corpus."""
    import importlib

    c = _cell(request, world, cell)
    module = f"app_{cell.replace('-', '_')}"
    factory = LANGCHAIN_FACTORY if cell.startswith("langchain") else FACTORY
    (tmp_path / f"{module}.py").write_text(factory.format(engine=c["engine"], path=c["path"],
                                                          model=world["model"], k=K))
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "run.ragcov"
    try:
        code, _, err = cli(capsys, "run", "--corpus", c["url"], "--queries", str(world["suite"]),
                           "--retriever", f"{module}:build", "-k", str(K), "--data-file", str(data),
                           "--quiet")
    finally:
        for store in importlib.import_module(module).STORES:
            close_store(store)  # the app lets go of its store: later tests open it again
    assert code == 0, err
    m = CoverageData(data).matrix()
    rows = {qid: [m.chunk_ids[x] for x in m.retrieved(i)] for i, qid in enumerate(m.query_ids)}
    assert [rows[q] for q in world["queries"]] == c["top"]
    assert set(m.chunk_ids) == set(c["docs"])


def test_a_store_another_model_made_is_refused(capsys, world: dict, tmp_path: Path) -> None:
    """The LlamaIndex form is tried as well as the bare text, and a wrong model still fails both."""
    from qdrant_client import QdrantClient, models

    source = QdrantClient(path=world["cells"]["llamaindex-documents-qdrant"]["path"])
    points, _ = source.scroll("app", limit=1000, with_payload=True, with_vectors=True)
    source.close()
    moved = QdrantClient(path=str(tmp_path / "other"))
    moved.create_collection("app", vectors_config=models.VectorParams(
        size=len(points[0].vector), distance=models.Distance.COSINE))
    # Each text beside another text's vector: vectors no model made from these texts.
    moved.upsert("app", points=[models.PointStruct(id=p.id, vector=q.vector, payload=p.payload)
                                for p, q in zip(points, points[1:] + points[:1])])
    moved.close()
    code, _, err = cli(capsys, "run", "--corpus", f"qdrant://{tmp_path}/other?collection=app&trust=pickle",
                       "--queries", str(world["suite"]), "-k", str(K),
                       "--data-file", str(tmp_path / "x.ragcov"), "--quiet")
    assert code != 0
    assert "the stored vectors were not made by" in err and "MiniLM" in err
    assert len(err.strip().splitlines()) == 1


def test_a_pgvector_table_another_model_made_is_refused(capsys, request: pytest.FixtureRequest, world: dict,
                                                       tmp_path: Path) -> None:
    """The same refusal on the real server: LlamaIndex's PGVectorStore table with each node
    beside another node's vector."""
    c = _cell(request, world, "llamaindex-documents-pgvector")
    pg = request.getfixturevalue("pg")
    with pg.connect("conformance") as con:
        con.execute("CREATE TABLE data_moved AS SELECT id, text, metadata_, node_id, "
                    "coalesce(lead(embedding) OVER (ORDER BY id), first_value(embedding) OVER (ORDER BY id)) "
                    "AS embedding FROM data_app")
    code, _, err = cli(capsys, "run", "--corpus", c["url"].replace("table=data_app", "table=data_moved"),
                       "--queries", str(world["suite"]), "-k", str(K),
                       "--data-file", str(tmp_path / "x.ragcov"), "--quiet")
    assert code != 0
    assert "the stored vectors were not made by" in err and "MiniLM" in err
    assert pg.password not in err
    assert len(err.strip().splitlines()) == 1


PLUGIN_APP = '''
import json

import pytest
from framework_stores import llamaindex_store, minilm_llamaindex
from llama_index.core import Settings, VectorStoreIndex
from qdrant_client import QdrantClient

from ragcov.pytest_plugin import record

Settings.llm = None
QUESTIONS = [json.loads(line) for line in open({suite!r})]
INDEX = VectorStoreIndex.from_vector_store(llamaindex_store("qdrant", {path!r}, "app"),
                                           embed_model=minilm_llamaindex({model!r}))


def make_retriever():
    return INDEX.as_retriever(similarity_top_k={k})


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_question(q):
    retriever = record(make_retriever(), query_id=q["id"], source="test_app:make_retriever")
    assert len(retriever.retrieve(q["query"])) == {k}


def test_the_app_opens_its_own_store():
    # After ragcov read the store URL as its corpus, the app lets go of its folder and opens
    # it again: nothing of ragcov's holds the folder's lock. (Runs last: file order.)
    INDEX.vector_store.client.close()
    client = QdrantClient(path={path!r})
    assert client.count("app").count > 0
    client.close()
'''


PLUGIN_LANGCHAIN_APP = '''
import json

import pytest
from framework_stores import close_store, langchain_store
from helpers import langchain_embeddings
from sentence_transformers import SentenceTransformer

from ragcov.pytest_plugin import record

QUESTIONS = [json.loads(line) for line in open({suite!r})]
EMBEDDINGS = langchain_embeddings(SentenceTransformer({model!r}, device="cpu"))
STORE = langchain_store({engine!r}, {path!r}, EMBEDDINGS)


def make_retriever():
    return STORE.as_retriever(search_kwargs={{"k": {k}}})


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_question(q):
    retriever = record(make_retriever(), query_id=q["id"], source="test_app:make_retriever")
    assert len(retriever.invoke(q["query"])) == {k}


def test_the_app_opens_its_own_store():
    # The app lets go of its store and opens it again while ragcov has it as the corpus.
    close_store(STORE)
    again = langchain_store({engine!r}, {path!r}, EMBEDDINGS)
    assert len(again.similarity_search("revenue", k=1)) == 1
    close_store(again)
'''


@pytest.mark.parametrize("cell", ["llamaindex-nodes-qdrant", "langchain-documents-chroma",
                                  "langchain-documents-milvus"])
def test_pytest_plugin_with_record(world: dict, tmp_path: Path, cell: str) -> None:
    """The pytest plugin, the store URL as corpus, ``record()`` around the app's LlamaIndex or
    LangChain retriever with the team's question ids: the same top-k, and the app's tests
    open its store. The probe rebuilding the recorded retriever is run for the first cell only."""
    import os
    import subprocess
    import sys

    c = world["cells"][cell]
    app = PLUGIN_APP if cell.startswith("llamaindex") else PLUGIN_LANGCHAIN_APP
    (tmp_path / "test_app.py").write_text(app.format(
        suite=str(world["suite"]), path=c["path"], model=world["model"], k=K, engine=c["engine"]))
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_app.py",
         "--ragcov", "--ragcov-corpus", c["url"], "--ragcov-k", str(K)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    m = CoverageData(tmp_path / ".ragcov").matrix()
    rows = {qid: [m.chunk_ids[x] for x in m.retrieved(i)] for i, qid in enumerate(m.query_ids)}
    assert [rows[q] for q in world["queries"]] == c["top"]  # keyed by the team's question ids
    assert set(m.chunk_ids) == set(c["docs"])  # the app's chunk ids
    if cell != "llamaindex-nodes-qdrant":
        return
    # The session named its retriever's factory: the probe builds it again from the data file.
    probe = subprocess.run(
        [sys.executable, "-m", "ragcov", "probe", "--corpus", c["url"], "--sample", "4"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert "was recorded with: test_app:make_retriever" in probe.stderr
    assert "queries embedded in batches by the retriever's own model" in probe.stderr


def test_imported_traces(capsys, world: dict, tmp_path: Path) -> None:
    """OpenInference spans recorded from the app's LlamaIndex retriever by
    openinference-instrumentation-llama-index, imported with the store URL as corpus: each
    query's ordered top-k, by the app's chunk ids, equals the framework's own."""
    pytest.importorskip("openinference.instrumentation.llama_index")
    from llama_index.core import Settings, VectorStoreIndex
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    Settings.llm = None
    c = world["cells"]["llamaindex-nodes-qdrant"]
    store = llamaindex_store("qdrant", c["path"], "app")
    retriever = VectorStoreIndex.from_vector_store(
        store, embed_model=minilm_llamaindex(world["model"])).as_retriever(similarity_top_k=K)
    questions = [json.loads(line) for line in world["suite"].read_text().splitlines()]
    spans = tmp_path / "spans.json"
    try:
        record_spans(LlamaIndexInstrumentor(), lambda: [retriever.retrieve(q["query"]) for q in questions],
                     spans)
    finally:
        close_store(store)
    data = tmp_path / "traces.ragcov"
    code, _, err = cli(capsys, "import", str(spans), "--format", "openinference", "--corpus", c["url"],
                       "--data-file", str(data), "-k", str(K))
    assert code == 0, err
    m = CoverageData(data).matrix()
    texts = CoverageData(data).query_texts()
    by_text = {texts[qid]: [m.chunk_ids[x] for x in m.retrieved(i)] for i, qid in enumerate(m.query_ids)}
    assert [by_text[q["query"]] for q in questions] == c["top"]
