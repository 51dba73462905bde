"""The same corpus three ways gives one answer, chunk for chunk.

One real store (a LangChain FAISS folder built from the bundled sample with the real
MiniLM model, with the UUID ids LangChain gives) measured as

1. ``ragcov run --corpus <folder> --retriever store`` (the store's own search),
2. the LangChain app's own retriever over that folder, through ragcov's adapter,
3. OpenInference spans recorded from that app by openinference-instrumentation-langchain,
   imported with ``ragcov import --format openinference``,

must cover the same chunks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cli, record_spans
from ragcov.data import CoverageData

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
K = 3
N_PAGES = 20
N_QUERIES = 30

pytest.importorskip("langchain_community")
pytest.importorskip("openinference.instrumentation.langchain")


def covered(data_file: Path) -> set[str]:
    m = CoverageData(data_file).matrix()
    return {cid for cid, hit in zip(m.chunk_ids, m.covered()) if hit}


# ------------------------------------------------ duplicate texts, results without ids
#: A paragraph every filing repeats word for word, each copy a chunk of its own document.
BOILERPLATE = ("Forward-looking statements: this report contains statements about future "
               "results that involve risks and uncertainties; actual results may differ "
               "materially from those projected.")
# As many documents end with the same paragraph as a query retrieves: a store's order among
# exact ties is its own, so a list cut inside the group could differ from one open to the next.
N_BOILERPLATE = K
N_REPUBLISHED = 4   # chunks republished verbatim in a second document
DUPLICATE_QUERIES = ["forward-looking statements risks and uncertainties",
                     "actual results may differ materially from projections",
                     "statements about future results"]

PLUGIN_SUITE = '''
import json

import chromadb
from langchain_community.embeddings import HuggingFaceEmbeddings
from langchain_community.vectorstores import Chroma

from ragcov.pytest_plugin import record

QUESTIONS = json.loads(open("questions.json").read())
store = Chroma(collection_name="filings", client=chromadb.PersistentClient(path=FOLDER),
               embedding_function=HuggingFaceEmbeddings(model_name=MINILM))
retriever = record(store.as_retriever(search_kwargs={"k": K}))


def test_every_question():
    for q in QUESTIONS:
        docs = retriever.invoke(q)
        assert len(docs) == K and all(d.id is None for d in docs)
'''


def _duplicate_filings():
    """The sample's pages split by LangChain, plus exact twins in other documents."""
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    pages = [json.loads(x) for x in
             (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()[:N_PAGES]]
    splitter = RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=80)
    docs = splitter.create_documents([p["text"] for p in pages],
                                     metadatas=[{"source": p["doc_id"]} for p in pages])
    docs += [Document(page_content=BOILERPLATE, metadata={"source": p["doc_id"]})
             for p in pages[:N_BOILERPLATE]]
    republished = docs[:: len(docs) // N_REPUBLISHED][:N_REPUBLISHED]
    docs += [Document(page_content=d.page_content,
                      metadata={"source": d.metadata["source"] + "-republished"})
             for d in republished]
    queries = DUPLICATE_QUERIES + [d.page_content[:200] for d in republished]
    return docs, queries


@pytest.mark.slow
def test_duplicate_texts_without_ids_agree_four_ways(capsys, tmp_path_factory: pytest.TempPathFactory,
                                                     tmp_path: Path, minilm_path: str) -> None:
    """langchain-community's Chroma returns ``Document.id = None``: its hits are matched by
    text and metadata, and exact twins in different documents stay distinct chunks."""
    import chromadb
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import Chroma
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from ragcov.api import measure
    from ragcov.corpus import load_corpus
    from ragcov.retrievers import wrap
    from ragcov.suite import load_suite

    docs, twin_queries = _duplicate_filings()
    # The app's own test suite runs in a folder of its own, in a pytest subprocess (not the
    # pytester fixture: it unloads the modules a test imported, and torch, onnx and
    # protobuf cannot be imported twice in one process).
    app_dir = tmp_path_factory.mktemp("app")
    folder = app_dir / "chroma"
    embeddings = HuggingFaceEmbeddings(model_name=minilm_path)
    # One client per folder in a process: ragcov's store reader opens the same one.
    app = Chroma.from_documents(docs, embeddings, collection_name="filings",
                                client=chromadb.PersistentClient(path=str(folder)))
    questions = [json.loads(x)["question"] for x in
                 (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()[:N_QUERIES]]
    # A list cut at k between two exactly tied chunks (twins) is the store's own pick, and
    # may differ from one open of the folder to the next: such queries are left out.
    tied = [q for q in questions + twin_queries
            if abs((d := [s for _, s in app.similarity_search_with_score(q, k=K + 1)])[K - 1]
                   - d[K]) < 1e-4]
    questions = [q for q in questions + twin_queries if q not in tied]
    assert len(tied) < 5 and sum(q in questions for q in twin_queries) >= len(twin_queries) - 2
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"q{n}", "query": q}) + "\n"
                             for n, q in enumerate(questions)))
    url = f"chroma://{folder}?collection=filings"
    corpus = load_corpus(url)
    texts = [c.text for c in corpus]
    assert len(corpus) == len(docs) and len(texts) - len(set(texts)) == \
        N_BOILERPLATE - 1 + N_REPUBLISHED

    # 1. the store as corpus and retriever (its own ids)
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite),
                       "--retriever", "store", "--model", minilm_path, "-k", str(K),
                       "--data-file", str(tmp_path / "store.ragcov"), "--quiet")
    assert code == 0, err
    by_store = covered(tmp_path / "store.ragcov")

    # 2. the app's retriever through the LangChain adapter (Documents without ids)
    retriever = app.as_retriever(search_kwargs={"k": K})
    assert all(d.id is None for d in retriever.invoke(questions[0]))
    adapted = wrap(retriever, corpus)
    measure(corpus, load_suite(suite), adapted, k=K, data_file=tmp_path / "adapter.ragcov",
            progress=False)
    by_adapter = covered(tmp_path / "adapter.ragcov")

    # 3. the same retriever in a test suite, through record() and the pytest plugin
    (app_dir / "test_app.py").write_text(f"MINILM = {minilm_path!r}\nFOLDER = {str(folder)!r}\n"
                                         f"K = {K}\n" + PLUGIN_SUITE)
    (app_dir / "questions.json").write_text(json.dumps(questions))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py",
         "--ragcov", "--ragcov-corpus", url, "--ragcov-k", str(K),
         "--ragcov-report", "json:plugin.json"],
        cwd=app_dir, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr
    by_plugin = covered(app_dir / ".ragcov")
    plugin_json = json.loads((app_dir / "plugin.json").read_text())

    # 4. spans recorded from the app by the real instrumentor (document ids absent), imported
    spans = tmp_path / "spans.json"
    record_spans(LangChainInstrumentor(), lambda: [retriever.invoke(q) for q in questions], spans)
    code, out, err = cli(capsys, "import", str(spans), "--format", "openinference", "--corpus",
                         url, "-k", str(K), "--data-file", str(tmp_path / "traces.ragcov"))
    assert code == 0, err
    by_traces = covered(tmp_path / "traces.ragcov")

    twins = {c.id for c in corpus if texts.count(c.text) > 1}
    assert len(by_store & twins) >= N_BOILERPLATE, "the suite must reach the twins"
    assert by_adapter == by_store
    assert by_plugin == by_store
    assert by_traces == by_store
    # Every query keeps its k hits on every path: no twin folded into another.
    for data_file in ("store.ragcov", "adapter.ragcov", "traces.ragcov"):
        m = CoverageData(tmp_path / data_file).matrix()
        assert all(len(m.retrieved(i)) == K for i in range(m.n_queries)), data_file
    m = CoverageData(app_dir / ".ragcov").matrix()
    assert all(len(m.retrieved(i)) == K for i in range(m.n_queries))
    # Source metadata told the twins apart: nothing was left to corpus order.
    assert "told apart by metadata" in err and "0 ambiguous" in err, err
    matching = plugin_json["meta"]["id_matching"]
    assert matching["shared_text"] > 0 and matching["ambiguous"] == 0
    assert adapted.resolver.matching.ambiguous == 0


@pytest.mark.slow
def test_store_adapter_and_traces_agree(capsys, tmp_path: Path, minilm_path: str) -> None:
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import FAISS
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from ragcov.api import measure
    from ragcov.corpus import load_corpus
    from ragcov.retrievers import wrap
    from ragcov.suite import load_suite

    pages = [json.loads(x) for x in (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()[:N_PAGES]]
    splitter = RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=80)
    docs = splitter.create_documents([p["text"] for p in pages],
                                     metadatas=[{"source": p["doc_id"]} for p in pages])
    embeddings = HuggingFaceEmbeddings(model_name=minilm_path)
    folder = tmp_path / "faiss_index"
    FAISS.from_documents(docs, embeddings).save_local(str(folder))
    store_url = f"faiss://{folder}?trust=pickle"  # index.pkl is a pickle: opened only on trust
    questions = [json.loads(x) for x in
                 (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()[:N_QUERIES]]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in questions))

    # 1. the store as corpus and retriever
    code, _, err = cli(capsys, "run", "--corpus", store_url, "--queries", str(suite),
                       "--retriever", "store", "--model", minilm_path, "-k", str(K),
                       "--data-file", str(tmp_path / "store.ragcov"), "--quiet")
    assert code == 0, err
    by_store = covered(tmp_path / "store.ragcov")

    # 2. the app's retriever through the LangChain adapter
    app = FAISS.load_local(str(folder), embeddings, allow_dangerous_deserialization=True)
    retriever = app.as_retriever(search_kwargs={"k": K})
    corpus = load_corpus(store_url)
    measure(corpus, load_suite(suite), wrap(retriever, corpus), k=K,
            data_file=tmp_path / "adapter.ragcov", progress=False)
    by_adapter = covered(tmp_path / "adapter.ragcov")

    # 3. spans recorded from the app by the real instrumentor, imported
    spans = tmp_path / "spans.json"
    record_spans(LangChainInstrumentor(), lambda: [retriever.invoke(q["question"]) for q in questions], spans)
    code, out, err = cli(capsys, "import", str(spans), "--format", "openinference", "--corpus",
                         store_url, "--data-file", str(tmp_path / "traces.ragcov"))
    assert code == 0, err
    by_traces = covered(tmp_path / "traces.ragcov")

    assert len(corpus) == len(docs) and 0 < len(by_store) < len(corpus)
    assert by_adapter == by_store
    assert by_traces == by_store


@pytest.mark.slow
def test_pgvector_store_adapter_and_traces_agree(capsys, tmp_path: Path, minilm_path: str, pg) -> None:
    """The same three ways over a pgvector table written by the real langchain-postgres PGVector."""
    pytest.importorskip("langchain_postgres", reason="langchain-postgres is not installed")
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_postgres import PGVector
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from ragcov.api import measure
    from ragcov.corpus import load_corpus
    from ragcov.retrievers import wrap
    from ragcov.suite import load_suite

    pages = [json.loads(x) for x in (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()[:N_PAGES]]
    splitter = RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=80)
    docs = splitter.create_documents([p["text"] for p in pages],
                                     metadatas=[{"source": p["doc_id"]} for p in pages])
    embeddings = HuggingFaceEmbeddings(model_name=minilm_path)
    pg.create_database("three_ways")
    app = PGVector(embeddings=embeddings, connection=pg.url("three_ways", scheme="postgresql+psycopg"),
                   collection_name="finqa")
    app.add_documents(docs)  # UUID ids, as LangChain gives them
    url = pg.url("three_ways", "collection=finqa")
    questions = [json.loads(x) for x in
                 (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()[:N_QUERIES]]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in questions))

    # 1. the table as corpus, pgvector's own search as the retriever
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite), "--retriever", "store",
                       "--model", minilm_path, "-k", str(K), "--data-file", str(tmp_path / "store.ragcov"),
                       "--quiet")
    assert code == 0, err
    by_store = covered(tmp_path / "store.ragcov")

    # 2. the app's retriever through the LangChain adapter
    retriever = app.as_retriever(search_kwargs={"k": K})
    corpus = load_corpus(url)
    measure(corpus, load_suite(suite), wrap(retriever, corpus), k=K,
            data_file=tmp_path / "adapter.ragcov", progress=False)
    by_adapter = covered(tmp_path / "adapter.ragcov")

    # 3. spans recorded from the app by the real instrumentor, imported
    spans = tmp_path / "spans.json"
    record_spans(LangChainInstrumentor(), lambda: [retriever.invoke(q["question"]) for q in questions], spans)
    code, out, err = cli(capsys, "import", str(spans), "--format", "openinference", "--corpus", url,
                         "--data-file", str(tmp_path / "traces.ragcov"))
    assert code == 0, err
    by_traces = covered(tmp_path / "traces.ragcov")

    assert len(corpus) == len(docs) and 0 < len(by_store) < len(corpus)
    assert by_adapter == by_store
    assert by_traces == by_store
