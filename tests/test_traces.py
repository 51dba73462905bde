"""Trace import: every format, hand-worked, plus the error paths (file and line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.data import CoverageData
from ragcov.errors import InputFormatError, RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage
from ragcov.retrievers.adapters import AdapterWarning
from ragcov.traces import import_traces, read_traces


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, records: list[dict]) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def ranked_ids(run) -> dict[str, list[str]]:
    return {qid: [cid for cid, _ in r] for qid, r in run.results.items()}


# ------------------------------------------------------------------- JSONL
def test_jsonl_ids_pairs_objects_and_parallel_scores(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [
        {"query_id": "q1", "query": "capital of France?", "retrieved": ["paris", "berlin"],
         "scores": [0.9, 0.4]},
        {"query_id": "q2", "query": "plants", "retrieved": [["photosynthesis", 0.8]]},
        {"query_id": "q3", "query": "energy", "retrieved": [{"chunk_id": "mitochondria",
                                                             "score": 0.7}]},
    ])
    result = import_traces(f, "jsonl", city_corpus)
    assert result.run.k == 2  # the longest list
    assert result.run.results["q1"] == [("paris", 0.9), ("berlin", 0.4)]
    assert result.run.results["q2"] == [("photosynthesis", 0.8)]
    assert result.run.results["q3"] == [("mitochondria", 0.7)]
    assert result.run.queries["q1"] == "capital of France?"
    m = CoverageMatrix.from_run(result.run, city_corpus)
    assert chunk_coverage(m) == pytest.approx(4 / 8)


def test_jsonl_ragas_ids_and_contexts_matched_by_content(tmp_path, city_corpus):
    tokyo = city_corpus.get("tokyo").text
    f = jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "Where is Madrid?", "retrieved_context_ids": ["madrid"]},
        {"user_input": "Japan", "retrieved_contexts": ["  " + tokyo + "\n"]},
    ])
    with pytest.warns(AdapterWarning, match="content hash"):
        result = import_traces(f, "jsonl", city_corpus)
    assert ranked_ids(result.run) == {"line-1": ["madrid"], "line-2": ["tokyo"]}
    assert result.run.queries["line-1"] == "Where is Madrid?"
    assert result.fallbacks == {"content hash": 1}


@pytest.mark.parametrize("line, message", [
    ('{"query_id": "q", "retrieved": "paris"}', "'retrieved' is not a list"),
    ('{"query_id": "q"}', "no retrieved ids"),
    ('{"query_id": "q", "retrieved": ["paris"], "scores": [1, 2]}', "'scores'"),
    ('{"query_id": "q", "retrieved": [["paris", "high"]]}', "not a number"),
    ('{"query_id": "q", "retrieved": [{"score": 1}]}', "has no id"),
    ('not json', "invalid JSON"),
    ('{"query_id": "q", "query": 3, "retrieved": []}', "not a string"),
])
def test_jsonl_malformed_line_is_located(tmp_path, city_corpus, line, message):
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n\n' + line + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 3
    assert str(f) in str(info.value)


def test_jsonl_repeated_query_id_names_first_line(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q", "retrieved": ["paris"]},
                                     {"query_id": "q", "retrieved": ["tokyo"]}])
    with pytest.raises(InputFormatError, match="already appeared on line 1"):
        import_traces(f, "jsonl", city_corpus)


# -------------------------------------------------------------------- TREC
def test_trec_orders_by_score_then_rank(tmp_path, city_corpus):
    f = write(tmp_path / "run.trec", "\n".join([
        "q1 Q0 berlin 2 0.5 sys",
        "q1 Q0 paris 1 0.9 sys",
        "q2 Q0 tokyo 2 0.3 sys",
        "q2 Q0 madrid 1 0.3 sys",   # tie on score: rank decides
        "# a comment",
        "q2 Q0 dividends 3 0.1 sys",
    ]) + "\n")
    run = import_traces(f, "trec", city_corpus).run
    assert ranked_ids(run) == {"q1": ["paris", "berlin"], "q2": ["madrid", "tokyo", "dividends"]}
    assert run.k == 3
    assert run.queries == {"q1": "", "q2": ""}


def test_trec_query_texts_come_from_a_suite(tmp_path, city_corpus):
    f = write(tmp_path / "run.trec", "q1 Q0 paris 1 1.0 sys\n")
    run = import_traces(f, "trec", city_corpus, queries={"q1": "French capital"}).run
    assert run.queries == {"q1": "French capital"}


@pytest.mark.parametrize("bad, message", [
    ("q1 Q0 paris 1 0.9", "expected 6 columns"),
    ("q1 Q0 paris first 0.9 sys", "not a whole number"),
    ("q1 Q0 paris 1 high sys", "not a number"),
])
def test_trec_malformed_line_is_located(tmp_path, city_corpus, bad, message):
    f = write(tmp_path / "run.trec", "q0 Q0 tokyo 1 1.0 sys\n" + bad + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "trec", city_corpus)
    assert info.value.line == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["paris", "berlin", "madrid", "tokyo",
                                          "interest", "dividends"]), min_size=1, max_size=6,
                         unique=True), min_size=1, max_size=8),
       st.integers(min_value=1, max_value=6))
def test_trec_round_trip_keeps_every_ranked_list(tmp_path_factory, lists, k):
    """Whatever ranked lists are written as TREC (score = descending rank), import gives
    them back cut to k, and CC equals the union of those cut lists over the corpus."""
    from ragcov.corpus import Chunk, Corpus

    corpus = Corpus([Chunk(cid, f"text of {cid}", "doc") for cid in
                     ["paris", "berlin", "madrid", "tokyo", "interest", "dividends", "other"]])
    path = tmp_path_factory.mktemp("trec") / "run.trec"
    lines = [f"q{i} Q0 {cid} {r} {len(ids) - r + 1} sys"
             for i, ids in enumerate(lists) for r, cid in enumerate(ids, start=1)]
    write(path, "\n".join(lines) + "\n")
    run = import_traces(path, "trec", corpus, k=k).run
    assert ranked_ids(run) == {f"q{i}": ids[:k] for i, ids in enumerate(lists)}
    union = {cid for ids in lists for cid in ids[:k]}
    assert chunk_coverage(CoverageMatrix.from_run(run, corpus)) == pytest.approx(
        len(union) / len(corpus))


# -------------------------------------------------------------------- ranx
def test_ranx_json_orders_by_score(tmp_path, city_corpus):
    f = write(tmp_path / "run.json", json.dumps(
        {"q1": {"berlin": 0.2, "paris": 0.8, "madrid": 0.5}, "q2": {"tokyo": 1}}))
    result = import_traces(f, "ranx", city_corpus, k=2)
    assert ranked_ids(result.run) == {"q1": ["paris", "madrid"], "q2": ["tokyo"]}
    assert result.run.results["q1"][0] == ("paris", 0.8)


@pytest.mark.parametrize("doc, message", [
    ([1, 2], "expected a JSON object"),
    ({"q1": ["paris"]}, "query 'q1': expected an object"),
    ({"q1": {"paris": "x"}}, "not a number"),
    ({"q1": {"paris": None}}, "no score"),
])
def test_ranx_malformed(tmp_path, city_corpus, doc, message):
    f = write(tmp_path / "run.json", json.dumps(doc))
    with pytest.raises(InputFormatError, match=message):
        import_traces(f, "ranx", city_corpus)


# ------------------------------------------------------------ OpenInference
def otlp_attr(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def otlp_span(trace, span, start, attrs, parent=None):
    s = {"traceId": trace, "spanId": span, "name": "span", "startTimeUnixNano": str(start),
         "attributes": [otlp_attr(k, v) for k, v in attrs.items()]}
    if parent:
        s["parentSpanId"] = parent
    return s


def oi_docs(prefix, ids):
    out = {}
    for n, (cid, score) in enumerate(ids):
        out[f"{prefix}.{n}.document.id"] = cid
        out[f"{prefix}.{n}.document.score"] = score
    return out


def otlp_export(spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}


def test_openinference_otlp_reranker_output_is_the_final_list(tmp_path, city_corpus):
    spans = [
        # trace A: retrieve 3, then a reranker keeps 2 in a new order
        otlp_span("A", "a1", 100, {"openinference.span.kind": "RETRIEVER",
                                   "input.value": "capital cities",
                                   **oi_docs("retrieval.documents",
                                             [("paris", 0.9), ("berlin", 0.8), ("tokyo", 0.7)])}),
        otlp_span("A", "a2", 200, {"openinference.span.kind": "RERANKER",
                                   "reranker.query": "capital cities",
                                   **oi_docs("reranker.input_documents",
                                             [("paris", 0.9), ("berlin", 0.8), ("tokyo", 0.7)]),
                                   **oi_docs("reranker.output_documents",
                                             [("tokyo", 3.1), ("paris", 2.0)])}),
        # trace B: a retriever only, plus an LLM span that must be ignored
        otlp_span("B", "b1", 150, {"openinference.span.kind": "RETRIEVER",
                                   "input.value": "plants",
                                   **oi_docs("retrieval.documents", [("photosynthesis", 0.6)])}),
        otlp_span("B", "b2", 160, {"openinference.span.kind": "LLM", "input.value": "x"}),
    ]
    # Two OTLP export lines, as a collector's file exporter writes them.
    f = write(tmp_path / "spans.jsonl", json.dumps(otlp_export(spans[:2])) + "\n"
              + json.dumps(otlp_export(spans[2:])) + "\n")
    result = import_traces(f, "openinference", city_corpus)
    assert ranked_ids(result.run) == {"A": ["tokyo", "paris"], "B": ["photosynthesis"]}
    assert result.run.results["A"][0] == ("tokyo", 3.1)
    assert result.run.queries == {"A": "capital cities", "B": "plants"}


def test_openinference_two_retrievals_in_one_trace_get_numbered(tmp_path, city_corpus):
    spans = [otlp_span("T", "s2", 20, {"openinference.span.kind": "RETRIEVER",
                                       "input.value": "second",
                                       **oi_docs("retrieval.documents", [("tokyo", 1.0)])}),
             otlp_span("T", "s1", 10, {"openinference.span.kind": "RETRIEVER",
                                       "input.value": "first",
                                       **oi_docs("retrieval.documents", [("paris", 1.0)])})]
    f = write(tmp_path / "spans.json", json.dumps(otlp_export(spans)))
    run = import_traces(f, "openinference", city_corpus).run
    assert run.queries == {"T:1": "first", "T:2": "second"}  # ordered by start time
    assert ranked_ids(run) == {"T:1": ["paris"], "T:2": ["tokyo"]}


def test_openinference_nested_phoenix_style_and_content_fallback(tmp_path, city_corpus):
    """Phoenix exports nested attributes; documents without an id are matched by content
    or by metadata chunk_id, with a warning naming the fallback."""
    span = {
        "name": "retrieve", "context": {"trace_id": "t9", "span_id": "s9"},
        "span_kind": "RETRIEVER", "start_time": "2025-01-01T00:00:00Z",
        "attributes": {
            "input": {"value": json.dumps({"query": "dividends?"}), "mime_type": "application/json"},
            "retrieval": {"documents": [
                {"document": {"content": city_corpus.get("dividends").text, "score": 0.5}},
                {"document": {"id": "uuid-1", "metadata": json.dumps({"chunk_id": "interest"})}},
            ]},
        },
    }
    f = write(tmp_path / "phoenix.json", json.dumps([span], indent=2))
    with pytest.warns(AdapterWarning):
        result = import_traces(f, "openinference", city_corpus)
    assert ranked_ids(result.run) == {"t9": ["dividends", "interest"]}
    assert result.run.queries == {"t9": "dividends?"}
    assert result.fallbacks == {"content hash": 1, "metadata['chunk_id']": 1}


def test_openinference_console_exporter_objects_back_to_back(tmp_path, city_corpus):
    """ConsoleSpanExporter prints pretty JSON objects one after another (not JSONL)."""
    spans = [{"name": "r", "context": {"trace_id": f"0x{i}", "span_id": f"0x{i}{i}"},
              "start_time": f"2025-01-01T00:00:0{i}Z",
              "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": f"q{i}",
                             **oi_docs("retrieval.documents", [(cid, 1.0)])}}
             for i, cid in enumerate(["madrid", "berlin"])]
    f = write(tmp_path / "console.txt", "\n".join(json.dumps(s, indent=4) for s in spans))
    run = import_traces(f, "openinference", city_corpus).run
    assert ranked_ids(run) == {"0x0": ["madrid"], "0x1": ["berlin"]}


def test_openinference_bad_json_reports_line(tmp_path, city_corpus):
    good = json.dumps(otlp_export([otlp_span("A", "a", 1, {"openinference.span.kind":
                                                            "RETRIEVER"})]))
    f = write(tmp_path / "spans.jsonl", good + "\n" + good + "\n{oops\n")
    with pytest.raises(InputFormatError) as info:
        read_traces(f, "openinference")
    assert info.value.line == 3


# -------------------------------------------------------------------- OTel
def test_otel_gen_ai_retrieval_documents_json_string_and_structured(tmp_path, city_corpus):
    spans = [
        otlp_span("X", "x1", 1, {"gen_ai.operation.name": "retrieval",
                                 "gen_ai.retrieval.query.text": "energy in cells",
                                 "gen_ai.retrieval.documents": json.dumps(
                                     [{"id": "mitochondria", "score": 0.95},
                                      {"id": "photosynthesis", "score": 0.5}])}),
        otlp_span("Y", "y1", 2, {"gen_ai.operation.name": "chat", "input.value": "hi"}),
    ]
    structured = {"name": "retrieval", "context": {"trace_id": "Z", "span_id": "z1"},
                  "attributes": {"gen_ai.operation.name": "retrieval",
                                 "gen_ai.retrieval.query.text": "debt",
                                 "gen_ai.retrieval.documents": [{"id": "interest",
                                                                 "score": 0.9}]}}
    f = write(tmp_path / "otel.jsonl", json.dumps(otlp_export(spans)) + "\n"
              + json.dumps(structured) + "\n")
    run = import_traces(f, "otel", city_corpus).run
    assert ranked_ids(run) == {"X": ["mitochondria", "photosynthesis"], "Z": ["interest"]}
    assert run.queries == {"X": "energy in cells", "Z": "debt"}
    assert run.results["X"][0] == ("mitochondria", 0.95)


# ----------------------------------------------------- unknown ids and k
def test_unknown_ids_are_listed_or_skipped_and_counted(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [
        {"query_id": "q1", "retrieved": ["paris", "gone-1", "berlin"]},
        {"query_id": "q2", "retrieved": ["gone-1", "gone-2"]},
    ])
    with pytest.raises(RagcovError, match="2 retrieved ids not in the corpus: gone-1, gone-2"):
        import_traces(f, "jsonl", city_corpus)
    result = import_traces(f, "jsonl", city_corpus, ignore_unknown=True)
    assert result.unknown == {"gone-1": 2, "gone-2": 1}
    assert result.skipped == 3
    # Skipped ids leave a hole: nothing below k is pulled up to replace them.
    assert ranked_ids(result.run) == {"q1": ["paris", "berlin"], "q2": []}


def test_k_cuts_before_the_unknown_check(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q1", "retrieved": ["paris", "tokyo",
                                                                      "not-there"]}])
    run = import_traces(f, "jsonl", city_corpus, k=2).run
    assert ranked_ids(run) == {"q1": ["paris", "tokyo"]}


def test_unknown_format_and_missing_file(tmp_path, city_corpus):
    with pytest.raises(RagcovError, match="unknown trace format"):
        import_traces(tmp_path / "x", "csv", city_corpus)
    with pytest.raises(RagcovError, match="no such file"):
        import_traces(tmp_path / "missing.jsonl", "jsonl", city_corpus)
    empty = write(tmp_path / "empty.trec", "\n")
    with pytest.raises(RagcovError, match="no retrievals"):
        import_traces(empty, "trec", city_corpus)


# --------------------------------------------------------------------- CLI
def test_cli_import_writes_data_file_and_refuses_unknown(tmp_path, city_corpus_file, capsys):
    f = write(tmp_path / "run.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 berlin 2 0.8 s\n"
                                     "q2 Q0 tokyo 1 0.5 s\n")
    data = tmp_path / "cov.ragcov"
    code, out, _ = cli(capsys, "import", "--format", "trec", str(f), "--corpus",
                       str(city_corpus_file), "--data-file", str(data))
    assert code == 0
    assert "Imported 2 queries" in out
    assert "Chunk coverage: 37.5% (3 of 8 chunks, 2 queries)" in out
    m = CoverageData(data).matrix()
    assert m.k == 2 and chunk_coverage(m) == pytest.approx(3 / 8)
    assert CoverageData(data).meta().retriever == {"kind": "traces", "name": "traces"}

    bad = write(tmp_path / "bad.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 nowhere 2 0.8 s\n")
    data2 = tmp_path / "cov2.ragcov"
    code, _, err = cli(capsys, "import", "--format", "trec", str(bad), "--corpus",
                       str(city_corpus_file), "--data-file", str(data2))
    assert code == 1
    assert "nowhere" in err
    assert not data2.exists()  # nothing written on error

    code, out, err = cli(capsys, "import", "-f", "trec", str(bad), "--corpus",
                         str(city_corpus_file), "--data-file", str(data2), "--ignore-unknown")
    assert code == 0
    assert "Chunk coverage: 12.5% (1 of 8 chunks, 1 queries)" in out
    assert "Skipped 1 retrieved id(s) not in the corpus" in err
    assert CoverageData(data2).matrix().k == 2
    # With --k 1 the unknown id ranked second never counted: nothing to skip.
    code, _, err = cli(capsys, "import", "-f", "trec", str(bad), "--corpus",
                       str(city_corpus_file), "--data-file", str(data2), "--k", "1")
    assert code == 0 and "Skipped" not in err
    assert CoverageData(data2).matrix().k == 1


def test_cli_import_append_keeps_the_files_k(tmp_path, city_corpus_file, capsys):
    data = tmp_path / "cov.ragcov"
    first = write(tmp_path / "a.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 berlin 2 0.8 s\n")
    later = write(tmp_path / "b.trec", "q2 Q0 tokyo 1 0.5 s\n")  # a shorter list
    for f in (first, later):
        code, _, err = cli(capsys, "import", "-f", "trec", str(f), "--corpus",
                           str(city_corpus_file), "--data-file", str(data), "--append")
        assert code == 0, err
    m = CoverageData(data).matrix()
    assert m.k == 2 and m.query_ids == ["q1", "q2"]


def test_cli_import_malformed_line_exits_1_with_location(tmp_path, city_corpus_file, capsys):
    bad = write(tmp_path / "t.jsonl", '{"query_id": "a", "retrieved": ["paris"]}\n{bad\n')
    code, _, err = cli(capsys, "import", str(bad), "--corpus", str(city_corpus_file),
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 1
    assert f"{bad}:2: invalid JSON" in err
    assert not (tmp_path / "d.ragcov").exists()
