"""Span containers and OTLP values (ragcov.traces.otlp): malformed values and structure
located, numbers decoded, duplicate spans counted once."""

from __future__ import annotations

import json

import pytest
from trace_samples import oi_docs, otlp_export, otlp_span, ranked_ids, retriever_span, two_export_lines, write

from helpers import cli
from ragcov.errors import InputFormatError
from ragcov.traces import import_traces, read_traces

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
