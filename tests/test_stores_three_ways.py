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
from pathlib import Path

import pytest

from helpers import cli
from ragcov.data import CoverageData

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
K = 3
N_PAGES = 40
N_QUERIES = 30

pytest.importorskip("langchain_community")
pytest.importorskip("openinference.instrumentation.langchain")


def covered(data_file: Path) -> set[str]:
    m = CoverageData(data_file).matrix()
    return {cid for cid, hit in zip(m.chunk_ids, m.covered()) if hit}


@pytest.mark.slow
def test_store_adapter_and_traces_agree(capsys, tmp_path: Path, minilm_path: str) -> None:
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import FAISS
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragcov.api import measure
    from ragcov.corpus import load_corpus
    from ragcov.retrievers.adapters import wrap
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
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        for q in questions:
            retriever.invoke(q["question"])
    finally:
        instrumentor.uninstrument()
    spans = tmp_path / "spans.json"
    spans.write_text("".join(s.to_json() + "\n" for s in exporter.get_finished_spans()))
    code, out, err = cli(capsys, "import", str(spans), "--format", "openinference", "--corpus",
                         store_url, "--data-file", str(tmp_path / "traces.ragcov"))
    assert code == 0, err
    by_traces = covered(tmp_path / "traces.ragcov")

    assert len(corpus) == len(docs) and 0 < len(by_store) < len(corpus)
    assert by_adapter == by_store
    assert by_traces == by_store
