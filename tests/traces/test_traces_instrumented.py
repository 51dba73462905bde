"""Imports of spans recorded by the real OpenInference instrumentors (see instrumented.py):
the covered set is the set the retrievers returned, chunk for chunk."""

from __future__ import annotations

import pytest
from instrumented import traced, write_console, write_otlp_json

from helpers import langchain_embeddings, llamaindex_embedding
from ragcov.corpus import Chunk, Corpus
from ragcov.traces import import_traces

pytest.importorskip("openinference.instrumentation.langchain")
pytest.importorskip("openinference.instrumentation.llama_index")

pytestmark = pytest.mark.slow

QUESTIONS = ["Which city sits on the Seine?", "What is the capital of Japan?",
             "How do plants make sugar?", "What did the board declare for shareholders?",
             "Where is the German capital?", "Why did interest expense rise?"]


@pytest.fixture(scope="module")
def encoder(minilm_path):
    from ragcov.retrievers.dense import load_encoder

    return load_encoder(minilm_path)


@pytest.fixture
def dup_corpus(city_corpus):
    """The city corpus plus chunks whose texts repeat others' exactly (another document's
    copy): a content match cannot tell them apart, only the ids can."""
    chunks = list(city_corpus)
    for c in list(chunks)[:4]:
        chunks.append(Chunk(id=f"{c.id}-copy", doc_id="copies", text=c.text))
    return Corpus(chunks)


def covered(run):
    return {cid for ranked in run.results.values() for cid, _ in ranked}


@pytest.mark.parametrize("where", ["id", "metadata"])
@pytest.mark.parametrize("writer", [write_console, write_otlp_json])
def test_langchain_spans_give_the_retrievers_own_ids(encoder, dup_corpus, tmp_path, where,
                                                     writer, recwarn):
    """openinference-instrumentation-langchain records no document.id: with ids only in
    Document(id=...), they are read from output.value; with ids in metadata, from
    document.metadata. Duplicate texts stay apart either way."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(langchain_embeddings(encoder))
    if where == "id":
        docs = [Document(page_content=c.text, id=c.id) for c in dup_corpus]
    else:
        docs = [Document(page_content=c.text, metadata={"chunk_id": c.id}) for c in dup_corpus]
    store.add_documents(docs)
    retriever = store.as_retriever(search_kwargs={"k": 3})
    returned = []
    with traced() as exporter:
        for q in QUESTIONS:
            got = retriever.invoke(q)
            returned.append([d.id if where == "id" else d.metadata["chunk_id"] for d in got])
    spans = exporter.get_finished_spans()
    assert not any("retrieval.documents.0.document.id" in s.attributes for s in spans)
    result = import_traces(writer(spans, tmp_path / "spans.json"), "openinference", dup_corpus)
    assert result.traces == len(QUESTIONS)
    assert (result.merged_spans, result.empty_spans) == (0, 0)
    assert "content hash" not in result.fallbacks
    by_query = {result.run.queries[qid]: [c for c, _ in r] for qid, r in result.run.results.items()}
    assert by_query == dict(zip(QUESTIONS, returned))
    assert covered(result.run) == {cid for ids in returned for cid in ids}
    assert any(cid.endswith("-copy") for ids in returned for cid in ids)  # the case that mattered


@pytest.mark.parametrize("writer", [write_console, write_otlp_json])
def test_llamaindex_retrieve_and__retrieve_are_one_query(encoder, dup_corpus, tmp_path, writer):
    """LlamaIndex opens `retrieve` and `_retrieve` (both RETRIEVER) per query: one query,
    the nested spans counted as merged, no phantom empty queries."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.schema import TextNode

    Settings.llm = None
    nodes = [TextNode(id_=c.id, text=c.text) for c in dup_corpus]
    index = VectorStoreIndex(nodes, embed_model=llamaindex_embedding(encoder))
    retriever = index.as_retriever(similarity_top_k=3)
    with traced() as exporter:
        returned = [[n.node.node_id for n in retriever.retrieve(q)] for q in QUESTIONS]
    spans = exporter.get_finished_spans()
    kinds = [s.attributes.get("openinference.span.kind") for s in spans]
    assert kinds.count("RETRIEVER") == 2 * len(QUESTIONS)  # what the issue saw
    result = import_traces(writer(spans, tmp_path / "spans.json"), "openinference", dup_corpus)
    assert result.traces == len(QUESTIONS)
    assert result.merged_spans == len(QUESTIONS)
    assert result.empty_spans == 0
    by_query = {result.run.queries[qid]: [c for c, _ in r] for qid, r in result.run.results.items()}
    assert by_query == dict(zip(QUESTIONS, returned))
    assert covered(result.run) == {cid for ids in returned for cid in ids}


def test_cli_says_what_was_merged(encoder, city_corpus_file, city_corpus, tmp_path, capsys):
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.schema import TextNode

    from helpers import cli

    Settings.llm = None
    index = VectorStoreIndex([TextNode(id_=c.id, text=c.text) for c in city_corpus],
                             embed_model=llamaindex_embedding(encoder))
    with traced() as exporter:
        for q in QUESTIONS[:2]:
            index.as_retriever(similarity_top_k=2).retrieve(q)
    f = write_console(exporter.get_finished_spans(), tmp_path / "spans.json")
    code, out, err = cli(capsys, "import", str(f), "--format", "openinference", "--corpus",
                         str(city_corpus_file), "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 0, err
    assert "Merged 2 nested RETRIEVER span(s)" in err
    assert "Imported 2 queries" in out
