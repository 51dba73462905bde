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


@pytest.mark.parametrize("record, message", [
    ({"query_id": ["q"], "retrieved": ["paris"]}, r"query id: \['q'\] is not an id"),
    ({"query_id": True, "retrieved": ["paris"]}, "query id: True is not an id"),
    ({"query_id": "  ", "retrieved": ["paris"]}, "query id: the id is blank"),
    ({"query_id": "q", "retrieved": ["paris", ""]}, r"retrieved\[1\]: the id is blank"),
    ({"query_id": "q", "retrieved": [True]}, r"retrieved\[0\]: True is not an id"),
    ({"query_id": "q", "retrieved": [1.5]}, r"retrieved\[0\]: 1.5 is not an id"),
    ({"query_id": "q", "retrieved": [[{"id": "paris"}, 0.5]]}, "is not an id"),
    ({"query_id": "q", "retrieved": [{"id": ["paris"], "score": 1}]}, r"\['paris'\] is not an id"),
    ({"query_id": "q", "retrieved": [{"chunk_id": {"v": "paris"}}]}, "is not an id"),
    # A blank id is refused even where content could have matched a chunk.
    ({"query_id": "q", "retrieved": [{"id": "", "text": "Tokyo is the capital of Japan and "
                                      "a huge metropolis."}]}, "the id is blank"),
])
def test_jsonl_ids_that_are_not_ids_are_refused(tmp_path, city_corpus, record, message):
    """Lists, dicts, booleans, floats and blank strings are not ids: never stored as their
    Python text ("['q']", "True") nor dropped in favour of another match."""
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n'
              + json.dumps(record) + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: ")


@pytest.mark.parametrize("line", [
    '{"query_id": "q", "retrieved": [["paris", NaN]]}',
    '{"query_id": "q", "retrieved": [{"id": "paris", "score": Infinity}]}',
    '{"query_id": "q", "retrieved": ["paris"], "scores": [-Infinity]}',
    '{"query_id": "q", "retrieved": [["paris", "nan"]]}',
    '{"query_id": "q", "retrieved": [["paris", 1e999]]}',
])
def test_jsonl_non_finite_scores_are_refused_with_line(tmp_path, city_corpus, line):
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n' + line + "\n")
    with pytest.raises(InputFormatError, match="not a finite number") as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 2


def test_jsonl_numeric_string_scores_still_read(tmp_path, city_corpus):
    """JSONL logs are loosely typed (text_ok): "0.9" is the number 0.9, as before."""
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q", "retrieved": [["paris", "0.9"]],
                                      "scores": ["0.8"]}])
    assert import_traces(f, "jsonl", city_corpus).run.results["q"] == [("paris", 0.8)]


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


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_trec_non_finite_score_is_refused_with_line(tmp_path, city_corpus, score):
    """NaN would make the ranking depend on line order (every comparison is false);
    an infinity would be written to JSON reports as a bare Infinity."""
    f = write(tmp_path / "run.trec", f"q1 Q0 paris 1 0.9 sys\nq1 Q0 tokyo 2 {score} sys\n"
                                     "q1 Q0 berlin 3 0.1 sys\n")
    with pytest.raises(InputFormatError, match="not a finite number") as info:
        import_traces(f, "trec", city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: query 'q1', doc 'tokyo': ")


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


def test_ranx_errors_name_the_line_in_a_pretty_printed_file(tmp_path, city_corpus):
    f = write(tmp_path / "run.json", '{\n  "q1": {"paris": 0.9},\n  "q2": {\n'
                                     '    "tokyo": 0.5,\n    "berlin": NaN\n  }\n}\n')
    with pytest.raises(InputFormatError, match="query 'q2', doc 'berlin': .*not a finite") \
            as info:
        import_traces(f, "ranx", city_corpus)
    assert info.value.line == 5
    assert str(info.value).startswith(f"{f}:5: ")


@pytest.mark.parametrize("text, line, message", [
    ('{"q1": {"paris": Infinity}}', 1, "not a finite number"),
    ('{\n"q1": {"paris": -Infinity}}', 2, "not a finite number"),
    ('{\n"q1": {"paris": "0.5"}}', 2, "is a string, not a number"),
    ('{\n"q1": {"paris": true}}', 2, "not a number"),
    ('{\n"": {"paris": 1}}', 2, "query id: the id is blank"),
    ('{\n"q1": {\n"paris": 1,\n" ": 0.5}}', 4, "doc id: the id is blank"),
    # json.loads would keep only the last of a repeated key, silently.
    ('{"q1": {"paris": 1},\n"q1": {"tokyo": 1}}', 2, "query 'q1' already appeared on line 1"),
    ('{"q1": {"paris": 1,\n"paris": 2}}', 2, "doc 'paris' already appeared on line 1"),
    ('{"q1": {"paris": 1}}\n{"q2": {}}', 2, "invalid JSON"),
    ('{"q1": {"paris": 1,}}', 1, "invalid JSON"),
    ('\n[1, 2]', 2, "expected a JSON object"),
])
def test_ranx_refused_values_are_located(tmp_path, city_corpus, text, line, message):
    f = write(tmp_path / "run.json", text)
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "ranx", city_corpus)
    assert info.value.line == line


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(
    st.text(min_size=1, max_size=6).filter(str.strip),
    st.dictionaries(st.sampled_from(["paris", "berlin", "madrid", "tokyo", "dividends"]),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=5),
    min_size=1, max_size=5),
    st.sampled_from([None, 0, 2]), st.booleans())
def test_ranx_located_reader_agrees_with_json(tmp_path_factory, run, indent, ascii_only):
    """The line-keeping reader reads every ranx file as json.loads does: same queries,
    same scores, ordered by score (ties in file order), whatever the layout or escapes."""
    path = tmp_path_factory.mktemp("ranx") / "run.json"
    write(path, json.dumps(run, indent=indent, ensure_ascii=ascii_only))
    traces = read_traces(path, "ranx")
    assert [t.query_id for t in traces] == list(run)
    for trace in traces:
        docs = run[trace.query_id]
        expected = sorted(docs.items(), key=lambda kv: -kv[1])  # stable: file order on ties
        assert [(i.id, i.score) for i in trace.items] == expected


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


# ------------------------------------------- OTLP values, duplicate spans
def retriever_span(trace="A", span="a1", start=1, extra=None, docs=(("paris", 0.9),)):
    """An OTLP RETRIEVER span; ``extra`` are raw OTLP attribute entries appended."""
    s = otlp_span(trace, span, start, {"openinference.span.kind": "RETRIEVER",
                                       "input.value": "q",
                                       **oi_docs("retrieval.documents", list(docs))})
    s["attributes"] += extra or []
    return s


def two_export_lines(tmp_path, second, name="spans.jsonl"):
    """Line 1 a good export; line 2 ``second`` (an export or raw JSON text)."""
    text = second if isinstance(second, str) else json.dumps(second)
    return write(tmp_path / name, json.dumps(otlp_export([retriever_span("G", "g1")])) + "\n"
                 + text + "\n")


BAD_VALUES = [
    ({"intValue": "abc"}, "intValue 'abc' is not a whole number"),
    ({"intValue": 1.5}, "intValue 1.5 is not a whole number"),
    ({"intValue": True}, "intValue True is not a whole number"),
    ({"doubleValue": "high"}, "doubleValue 'high' is not a number"),
    ({"stringValue": 5}, "stringValue 5 is not a string"),
    ({"boolValue": "yes"}, "boolValue 'yes' is not true or false"),
    ({"arrayValue": "x"}, "arrayValue 'x' is not an object"),
    ({"arrayValue": ["x"]}, r"arrayValue \['x'\] is not an object"),
    ({"arrayValue": {"values": "x"}}, "arrayValue.values is 'x', not a list"),
    ({"arrayValue": {"values": [{"intValue": "x1"}]}}, "intValue 'x1'"),
    ({"kvlistValue": {"values": [{"value": {"stringValue": "v"}}]}},
     "kvlistValue entry .* has no key"),
    ({"kvlistValue": {"values": [{"key": 3, "value": {"stringValue": "v"}}]}},
     "has a key that is not a string"),
    ({"kvlistValue": {"values": ["k"]}}, "kvlistValue entry 'k' has no key"),
    ({"kvlistValue": {"values": {"key": "k"}}}, "kvlistValue.values is .*, not a list"),
    ({"kvlistValue": "k"}, "kvlistValue 'k' is not an object"),
    ({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1e3"}}]}},
     "attribute 'extra': kvlistValue entry 'k': intValue '1e3' is not a whole number"),
]


@pytest.mark.parametrize("fmt", ["openinference", "otel"])
@pytest.mark.parametrize("value, message", BAD_VALUES)
def test_malformed_otlp_attribute_value_is_located(tmp_path, city_corpus, fmt, value, message):
    """A value that does not match its OTLP type is refused with file:line, never a
    Python traceback (ValueError, AttributeError, KeyError) nor read as something else."""
    bad = retriever_span("B", "b1", extra=[{"key": "extra", "value": value}])
    f = two_export_lines(tmp_path, otlp_export([bad]))
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, fmt, city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: span 'b1': attribute 'extra': ")


@pytest.mark.parametrize("export, message", [
    ({"resourceSpans": {"scopeSpans": []}}, "resourceSpans is .*, not a list"),
    ({"resourceSpans": ["r"]}, "a resourceSpans entry is 'r', not an object"),
    ({"resourceSpans": [{"scopeSpans": "s"}]}, "scopeSpans is 's', not a list"),
    ({"resourceSpans": [{"scopeSpans": [7]}]}, "a scopeSpans entry is 7, not an object"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": {"name": "x"}}]}]}, "spans is .*, not a list"),
    (otlp_export([{"traceId": "T", "spanId": "s", "attributes": [["k", "v"]]}]),
     r"span 's': attribute \['k', 'v'\] has no key"),
    (otlp_export([{"traceId": "T", "spanId": "s", "attributes": [{"value": {}}]}]),
     "has no key"),
    (otlp_export([{"traceId": "T", "spanId": "s", "attributes": "k=v"}]),
     "attributes 'k=v' are neither a list of key/value pairs nor an object"),
    (otlp_export([{"traceId": ["T"], "spanId": "s", "attributes": []}]),
     r"traceId: \['T'\] is not an id"),
    (otlp_export([{"traceId": "T", "spanId": "", "attributes": []}]), "spanId: the id is blank"),
])
def test_malformed_otlp_structure_is_located(tmp_path, city_corpus, export, message):
    f = two_export_lines(tmp_path, export)
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "openinference", city_corpus)
    assert info.value.line == 2


def test_cli_malformed_otlp_value_exits_1_with_one_located_line(tmp_path, city_corpus_file,
                                                                  capsys):
    bad = retriever_span("B", "b1", extra=[{"key": "retrieval.documents.1.document.score",
                                            "value": {"intValue": "abc"}}])
    f = two_export_lines(tmp_path, otlp_export([bad]))
    data = tmp_path / "d.ragcov"
    code, out, err = cli(capsys, "import", "--format", "openinference", str(f), "--corpus",
                         str(city_corpus_file), "--data-file", str(data))
    assert code == 1
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"ragcov: error: {f}:2: span 'b1': attribute ")
    assert "intValue 'abc' is not a whole number" in lines[0]
    assert not data.exists()


def test_openinference_file_concatenated_twice_counts_each_span_once(tmp_path, city_corpus):
    """An identical span (same traceId and spanId, same content) is one query however many
    times it was exported, and the duplicates are counted for the user to see."""
    once = (json.dumps(otlp_export([
        retriever_span("A", "a1", 10, docs=[("paris", 0.9), ("berlin", 0.5)]),
        otlp_span("A", "a2", 20, {"openinference.span.kind": "RERANKER",
                                  **oi_docs("reranker.output_documents", [("berlin", 2.0)])}),
    ])) + "\n" + json.dumps(otlp_export([retriever_span("B", "b1", 30, docs=[("tokyo", 1.0)])]))
        + "\n")
    f = write(tmp_path / "spans.jsonl", once + once)
    result = import_traces(f, "openinference", city_corpus)
    assert ranked_ids(result.run) == {"A": ["berlin"], "B": ["tokyo"]}  # not A:1, A:2, ...
    assert result.traces == 2
    assert result.duplicate_spans == 3
    single = write(tmp_path / "once.jsonl", once)
    assert import_traces(single, "openinference", city_corpus).duplicate_spans == 0


def test_otel_overlapping_exports_count_the_shared_span_once(tmp_path, city_corpus):
    def otel(trace, span, cid):
        return {"name": "retrieval", "context": {"trace_id": trace, "span_id": span},
                "attributes": {"gen_ai.operation.name": "retrieval",
                               "gen_ai.retrieval.query.text": cid,
                               "gen_ai.retrieval.documents": [{"id": cid, "score": 0.5}]}}
    # The second export repeats the first's last span (a retried batch), as a list.
    f = write(tmp_path / "otel.jsonl", json.dumps([otel("X", "1", "paris"), otel("Y", "2", "tokyo")])
              + "\n" + json.dumps([otel("Y", "2", "tokyo"), otel("Z", "3", "madrid")]) + "\n")
    result = import_traces(f, "otel", city_corpus)
    assert ranked_ids(result.run) == {"X": ["paris"], "Y": ["tokyo"], "Z": ["madrid"]}
    assert result.duplicate_spans == 1
    assert read_traces(f, "otel")[1].query_id == "Y"


def test_duplicate_span_id_with_different_content_names_both_lines(tmp_path, city_corpus):
    first = otlp_export([retriever_span("A", "a1", docs=[("paris", 0.9)])])
    other = otlp_export([retriever_span("A", "a1", docs=[("tokyo", 0.9)])])
    f = write(tmp_path / "spans.jsonl", json.dumps(first) + "\n"
              + json.dumps(otlp_export([retriever_span("B", "b1")])) + "\n"
              + json.dumps(other) + "\n")
    with pytest.raises(InputFormatError,
                       match="span 'a1' of trace 'A' already appeared on line 1 with "
                             "different content") as info:
        import_traces(f, "openinference", city_corpus)
    assert info.value.line == 3
    # The same span id in another trace is another span.
    ok = write(tmp_path / "ok.jsonl", json.dumps(first) + "\n" + json.dumps(
        otlp_export([retriever_span("C", "a1", docs=[("tokyo", 0.9)])])) + "\n")
    result = import_traces(ok, "openinference", city_corpus)
    assert ranked_ids(result.run) == {"A": ["paris"], "C": ["tokyo"]}
    assert result.duplicate_spans == 0


def test_cli_import_of_a_doubled_export_counts_queries_once(tmp_path, city_corpus_file, capsys):
    export = json.dumps(otlp_export([retriever_span("A", "a1", docs=[("paris", 0.9)]),
                                     retriever_span("B", "b1", 2, docs=[("tokyo", 0.8)])]))
    f = write(tmp_path / "spans.jsonl", export + "\n" + export + "\n")
    code, out, err = cli(capsys, "import", "-f", "openinference", str(f), "--corpus",
                         str(city_corpus_file), "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 0, err
    assert "Imported 2 queries" in out
    assert "Chunk coverage: 25.0% (2 of 8 chunks, 2 queries)" in out


@pytest.mark.parametrize("score", ["NaN", "Infinity", "-Infinity"])
def test_openinference_non_finite_score_is_refused_with_line(tmp_path, city_corpus, score):
    """OTLP JSON writes a non-finite double as a string; it is decoded, then refused."""
    bad = otlp_span("B", "b1", 1, {"openinference.span.kind": "RETRIEVER",
                                   "retrieval.documents.0.document.id": "tokyo"})
    bad["attributes"].append({"key": "retrieval.documents.0.document.score",
                              "value": {"doubleValue": score}})
    f = two_export_lines(tmp_path, otlp_export([bad]))
    with pytest.raises(InputFormatError, match="retrieval.documents.0: score .* is not a "
                                               "finite number") as info:
        import_traces(f, "openinference", city_corpus)
    assert info.value.line == 2


def test_otlp_numbers_written_as_strings_or_numbers_decode(tmp_path, city_corpus):
    """int64 as a JSON string or number, double as a number or numeric string: OTLP JSON."""
    span = otlp_span("A", "a1", 1, {"openinference.span.kind": "RETRIEVER",
                                    "retrieval.documents.0.document.id": "tokyo",
                                    "retrieval.documents.1.document.id": "paris"})
    span["attributes"] += [
        {"key": "retrieval.documents.0.document.score", "value": {"doubleValue": "0.75"}},
        {"key": "retrieval.documents.1.document.score", "value": {"intValue": 0}},
        {"key": "tags", "value": {"arrayValue": {}}},
        {"key": "meta", "value": {"kvlistValue": {"values": None}}}]
    f = write(tmp_path / "spans.json", json.dumps(otlp_export([span])))
    run = import_traces(f, "openinference", city_corpus).run
    assert run.results["A"] == [("tokyo", 0.75), ("paris", 0.0)]


@pytest.mark.parametrize("doc, message", [
    ({"document.id": ""}, "retrieval.documents.0: the id is blank"),
    ({"document.id": "", "document.content": "Tokyo is the capital of Japan and a huge "
                                             "metropolis."}, "the id is blank"),
    ({"document.id": True}, "retrieval.documents.0: True is not an id"),
    ({"document.id": 2.5}, "2.5 is not an id"),
])
def test_openinference_document_ids_that_are_not_ids(tmp_path, city_corpus, doc, message):
    attrs = {"openinference.span.kind": "RETRIEVER",
             **{f"retrieval.documents.0.{k}": v for k, v in doc.items()}}
    f = two_export_lines(tmp_path, otlp_export([otlp_span("B", "b1", 1, attrs)]))
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "openinference", city_corpus)
    assert info.value.line == 2


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


def otel_span(docs, trace="Q", otlp=False):
    """An OTel GenAI retrieval span whose gen_ai.retrieval.documents is ``docs``: in
    structured attributes, or (``otlp``) an OTLP attribute with ``docs`` as its AnyValue."""
    if otlp:
        return otlp_export([{
            "traceId": trace, "spanId": "s", "name": "retrieval",
            "attributes": [otlp_attr("gen_ai.operation.name", "retrieval"),
                           otlp_attr("gen_ai.retrieval.query.text", "capitals"),
                           {"key": "gen_ai.retrieval.documents", "value": docs}]}])
    return {"name": "retrieval", "context": {"trace_id": trace, "span_id": "s"},
            "attributes": {"gen_ai.operation.name": "retrieval",
                           "gen_ai.retrieval.query.text": "capitals",
                           "gen_ai.retrieval.documents": docs}}


def test_otel_documents_as_plain_ids(tmp_path, city_corpus):
    """Plain id strings, as a list or a JSON string of one, are the ranked ids (they
    used to record the query with 0 hits, and exit 0)."""
    strings = {"arrayValue": {"values": [{"stringValue": "berlin"}, {"stringValue": "madrid"}]}}
    lines = [otel_span(["paris", "tokyo"], "L"),
             otel_span(json.dumps(["tokyo", "paris", 7]), "J"),
             otel_span(strings, "A", otlp=True),
             otel_span(json.dumps([{"id": "dividends"}, "interest"]), "M"),
             otel_span([], "E")]  # retrieved nothing: an empty list is a real 0-hit query
    f = write(tmp_path / "otel.jsonl", "".join(json.dumps(s) + "\n" for s in lines))
    run = import_traces(f, "otel", city_corpus, ignore_unknown=True).run
    assert ranked_ids(run) == {"L": ["paris", "tokyo"], "J": ["tokyo", "paris"],
                               "A": ["berlin", "madrid"], "M": ["dividends", "interest"],
                               "E": []}
    assert run.results["L"] == [("paris", None), ("tokyo", None)]


@pytest.mark.parametrize("docs, otlp, message", [
    (5, False, r"is a number \(5\), not a list of documents"),
    ("5", False, r"is a number \(5\), not a list of documents"),
    (True, False, "is true, not a list"),
    ('"tokyo"', False, "is 'tokyo', not a list"),
    ("null", False, "is the JSON string 'null'"),
    ({"id": "tokyo", "score": 0.9}, False, "is an object .*, not a list of documents"),
    ('{"id": "tokyo"}', False, "is an object, not a list of documents"),
    ({"kvlistValue": {"values": [otlp_attr("id", "tokyo")]}}, True, "is an object"),
    ({"intValue": "5"}, True, r"is a number \(5\)"),
    ({"doubleValue": 0.5}, True, r"is a number \(0.5\)"),
    ("tokyo, paris", False, "is not valid JSON"),
    ([["tokyo", 0.9]], False, r"gen_ai.retrieval.documents.0: \['tokyo', 0.9\] is not an id"),
    ([True], False, "gen_ai.retrieval.documents.0: True is not an id"),
    ([""], False, "the id is blank"),
    ([{"id": ["tokyo"]}], False, r"\['tokyo'\] is not an id"),
    ([{"id": {"v": "tokyo"}}], False, "gen_ai.retrieval.documents.0.id is an object"),
    ([{"id": "tokyo", "score": {"v": 1}}], False, "documents.0.score is an object"),
    ([{"id": "tokyo", "score": "0.9"}], False, "score '0.9' is a string, not a number"),
    ([{"id": "tokyo", "score": float("inf")}], False, "not a finite number"),
])
def test_otel_unreadable_documents_are_refused_not_zero_hits(tmp_path, city_corpus, docs,
                                                            otlp, message):
    f = write(tmp_path / "otel.jsonl", json.dumps(otel_span(["paris"], "ok")) + "\n"
              + json.dumps(otel_span(docs, otlp=otlp)) + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "otel", city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: gen_ai.retrieval.documents")


def test_cli_otel_documents_as_a_bare_object_exits_1(tmp_path, city_corpus_file, capsys):
    f = write(tmp_path / "otel.jsonl", json.dumps(otel_span(["paris"], "ok")) + "\n"
              + json.dumps(otel_span(json.dumps({"id": "tokyo"}))) + "\n")
    code, out, err = cli(capsys, "import", "-f", "otel", str(f), "--corpus",
                         str(city_corpus_file), "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 1
    assert err.strip().splitlines() == [
        f"ragcov: error: {f}:2: gen_ai.retrieval.documents is an object, not a list of "
        "documents (ids, or objects with an id)"]
    assert not (tmp_path / "d.ragcov").exists()


def test_otel_trace_id_that_is_not_an_id_is_refused(tmp_path, city_corpus):
    span = otel_span(["paris"])
    span["context"]["trace_id"] = ["Q"]  # would have become the query id "['Q']"
    f = write(tmp_path / "otel.jsonl", json.dumps(span) + "\n")
    with pytest.raises(InputFormatError, match=r"trace_id: \['Q'\] is not an id") as info:
        import_traces(f, "otel", city_corpus)
    assert info.value.line == 1


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
