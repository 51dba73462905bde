"""Phoenix spans parquet, Langfuse observation exports, and format detection.

No Phoenix server or Langfuse client is installed: the Phoenix dataframe is
built in the test from spans the real openinference-instrumentation-langchain
recorded, following Phoenix's documented ``get_spans_dataframe()`` columns
(``context.span_id``, ``context.trace_id``, ``parent_id``, ``span_kind``,
``name``, ``start_time``, ``attributes.<name>``, with
``attributes.retrieval.documents`` a list of ``document.*`` records), and the
Langfuse export is written by hand in the documented shape of
``GET /api/public/observations``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from ragcov.cli import app
from ragcov.corpus import Chunk, Corpus
from ragcov.errors import RagcovError
from ragcov.traces import import_traces
from ragcov.traces.detect import detect_format

QUESTIONS = ["Which city sits on the Seine?", "What is the capital of Japan?",
             "How do plants make sugar?"]


def covered(run):
    return {cid for ranked in run.results.values() for cid, _ in ranked}


def phoenix_rows(spans):
    """Spans as Phoenix's spans dataframe lays them out: one row per span."""
    rows = []
    for s in spans:
        attrs = dict(s.attributes)
        docs: dict[int, dict] = {}
        for key in list(attrs):
            m = re.fullmatch(r"retrieval\.documents\.(\d+)\.(document\.\w+)", key)
            if m:
                docs.setdefault(int(m.group(1)), {})[m.group(2)] = attrs.pop(key)
        row = {"context.span_id": format(s.context.span_id, "016x"),
               "context.trace_id": format(s.context.trace_id, "032x"),
               "parent_id": format(s.parent.span_id, "016x") if s.parent else None,
               "name": s.name, "span_kind": attrs.get("openinference.span.kind"),
               "start_time": datetime.fromtimestamp(s.start_time / 1e9, tz=timezone.utc)}
        for key in ("input.value", "output.value", "openinference.span.kind"):
            row[f"attributes.{key}"] = attrs.get(key)
        row["attributes.retrieval.documents"] = [docs[n] for n in sorted(docs)] or None
        rows.append(row)
    return rows


@pytest.mark.slow
def test_phoenix_parquet_covers_what_the_langchain_retriever_returned(minilm_path, city_corpus,
                                                                       tmp_path):
    pytest.importorskip("openinference.instrumentation.langchain")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from instrumented import traced
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from helpers import langchain_embeddings
    from ragcov.retrievers.dense import load_encoder

    store = InMemoryVectorStore(langchain_embeddings(load_encoder(minilm_path)))
    store.add_documents([Document(page_content=c.text, id=c.id) for c in city_corpus])
    retriever = store.as_retriever(search_kwargs={"k": 2})
    returned = {}
    with traced() as exporter:
        for q in QUESTIONS:
            returned[q] = [d.id for d in retriever.invoke(q)]
    path = tmp_path / "spans.parquet"
    pq.write_table(pa.Table.from_pylist(phoenix_rows(exporter.get_finished_spans())), path)

    assert detect_format(path) == "phoenix"
    result = import_traces(path, "phoenix", city_corpus)
    assert result.traces == len(QUESTIONS)
    by_query = {result.run.queries[q]: [c for c, _ in r] for q, r in result.run.results.items()}
    assert by_query == returned
    assert covered(result.run) == {cid for ids in returned.values() for cid in ids}


@pytest.fixture
def corpus():
    return Corpus([Chunk(id=f"c{n}", doc_id="d", text=f"text {n}") for n in range(6)])


def langfuse_export():
    """GET /api/public/observations as documented: a LangChain run with a retriever SPAN
    (output: Documents), a retriever nested in it (one query), a GENERATION, and a
    RETRIEVER observation of a second trace."""
    def obs(id, trace, type, name, parent, t, input=None, output=None):
        return {"id": id, "traceId": trace, "type": type, "name": name,
                "parentObservationId": parent, "startTime": f"2025-01-01T00:00:0{t}.000Z",
                "input": input, "output": output, "metadata": {}}
    docs = [{"page_content": "text 1", "metadata": {}, "id": "c1"},
            {"page_content": "text 3", "metadata": {"source": "x"}, "id": "c3"}]
    data = [
        obs("o1", "t1", "SPAN", "RetrievalQA", None, 0, {"query": "q one"}, {"result": "a"}),
        obs("o2", "t1", "SPAN", "VectorStoreRetriever", "o1", 1, "q one", docs),
        obs("o3", "t1", "SPAN", "VectorStoreRetriever", "o2", 2, "q one", docs[:1]),
        obs("o4", "t1", "GENERATION", "ChatOpenAI", "o1", 3, [{"role": "user"}], "answer"),
        obs("o5", "t2", "RETRIEVER", "search", None, 4, {"input": "q two"},
            {"documents": [{"page_content": "text 5", "id": "c5"}]}),
    ]
    return {"data": data, "meta": {"page": 1, "limit": 50, "totalItems": 5, "totalPages": 1}}


def test_langfuse_retrievals_nested_merged_generation_ignored(corpus, tmp_path):
    path = tmp_path / "observations.json"
    path.write_text(json.dumps(langfuse_export()), encoding="utf-8")
    result = import_traces(path, "langfuse", corpus)
    assert result.run.queries == {"t1": "q one", "t2": "q two"}
    assert {q: [c for c, _ in r] for q, r in result.run.results.items()} == \
        {"t1": ["c1", "c3"], "t2": ["c5"]}
    assert result.merged_spans == 1


def test_langfuse_plain_list_of_observations(corpus, tmp_path):
    path = tmp_path / "obs.json"
    path.write_text(json.dumps(langfuse_export()["data"]), encoding="utf-8")
    assert detect_format(path) == "langfuse"
    assert set(import_traces(path, "langfuse", corpus).run.results) == {"t1", "t2"}


def otlp_export():
    attrs = [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
             {"key": "input.value", "value": {"stringValue": "q"}},
             {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "c1"}}]
    span = {"traceId": "ab", "spanId": "01", "name": "r", "startTimeUnixNano": "1",
            "attributes": attrs}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize("name,text,fmt", [
    ("otlp.json", json.dumps(otlp_export()), "openinference"),
    ("spans.json", json.dumps({"name": "r", "attributes": {"gen_ai.operation.name": "x"}}),
     "otel"),
    ("obs.json", json.dumps(langfuse_export()), "langfuse"),
    ("run.jsonl", '{"query_id": "q1", "retrieved": ["c1"]}\n', "jsonl"),
    ("run.trec", "q1 Q0 c1 1 0.9 bm25\n", "trec"),
    ("run.json", json.dumps({"q1": {"c1": 0.9}}, indent=2), "ranx"),
])
def test_detected_without_format(corpus, tmp_path, name, text, fmt):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert detect_format(path) == fmt


def test_cli_prints_the_detected_format_and_refuses_an_unknown_file(corpus, tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": c.id, "text": c.text}) + "\n" for c in corpus),
        encoding="utf-8")
    (tmp_path / "obs.json").write_text(json.dumps(langfuse_export()), encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(app, ["import", str(tmp_path / "obs.json"), "--corpus",
                               str(tmp_path / "corpus.jsonl"), "--data-file",
                               str(tmp_path / "d.ragcov")])
    assert done.exit_code == 0, done.output
    assert "ragcov: detected format: langfuse" in done.stderr
    (tmp_path / "notes.txt").write_text("just some notes\n", encoding="utf-8")
    with pytest.raises(RagcovError, match="cannot tell the trace format.*jsonl, trec, ranx, "
                                          "openinference, otel, phoenix, langfuse"):
        detect_format(tmp_path / "notes.txt")
    done = subprocess.run([sys.executable, "-m", "ragcov", "import", str(tmp_path / "notes.txt"),
                           "--corpus", str(tmp_path / "corpus.jsonl")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0  # one line
    assert done.stderr.startswith("ragcov: error: ") and "cannot tell the trace format" in \
        done.stderr


def test_phoenix_dataframe_saved_by_pandas_index_and_nested_retriever(corpus, tmp_path):
    """As ``df.to_parquet`` saves Phoenix's dataframe: indexed by ``context.span_id``,
    missing cells NaN. A RETRIEVER inside a RETRIEVER is one query (merged)."""
    pd = pytest.importorskip("pandas")
    nan = float("nan")
    docs = [{"document.id": "c2", "document.score": 0.9, "document.content": "text 2",
             "document.metadata": "{}"}]
    df = pd.DataFrame({
        "context.span_id": ["s1", "s2", "s3"], "context.trace_id": ["t", "t", "t"],
        "parent_id": [None, "s1", "s2"], "name": ["chain", "retrieve", "_retrieve"],
        "span_kind": ["CHAIN", "RETRIEVER", "RETRIEVER"],
        "start_time": pd.to_datetime(["2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z",
                                      "2025-01-01T00:00:02Z"]),
        "attributes.input.value": ["q", "q", "q"],
        "attributes.retrieval.documents": [None, docs, docs],
        "attributes.llm.token_count.total": [nan, nan, nan],
    }).set_index("context.span_id")
    path = tmp_path / "spans.parquet"
    df.to_parquet(path)
    result = import_traces(path, "phoenix", corpus)
    assert result.run.results == {"t": [("c2", 0.9)]}
    assert result.run.queries == {"t": "q"}
    assert result.merged_spans == 1


@pytest.mark.parametrize("column", ["context.span_id", "context.trace_id"])
def test_phoenix_row_with_an_empty_id_is_refused_at_its_row(corpus, tmp_path, column):
    """Phoenix gives every span both ids: an empty one is damage. An empty trace id made
    the span's own id the query id, silently."""
    pd = pytest.importorskip("pandas")
    from ragcov.errors import InputFormatError

    docs = [{"document.id": "c2", "document.score": 0.9}]
    frame = {"context.span_id": ["s1", "s2"], "context.trace_id": ["t1", "t2"],
             "span_kind": ["RETRIEVER", "RETRIEVER"], "attributes.input.value": ["q1", "q2"],
             "attributes.retrieval.documents": [docs, docs]}
    frame[column] = ["s1" if column == "context.span_id" else "t1", None]
    path = tmp_path / "spans.parquet"
    pd.DataFrame(frame).to_parquet(path)
    with pytest.raises(InputFormatError, match=rf"spans\.parquet:2: row 2: {column} is empty"):
        import_traces(path, "phoenix", corpus)
