"""OpenInference spans (ragcov.traces.openinference): retrievers, rerankers, Phoenix and
console exports, and the document values refused."""

from __future__ import annotations

import json

import pytest
from trace_samples import (
    oi_docs,
    otlp_export,
    otlp_span,
    ranked_ids,
    retriever_span,
    two_export_lines,
    write,
)

from ragcov.errors import InputFormatError
from ragcov.retrievers import AdapterWarning
from ragcov.traces import import_traces, read_traces


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


@pytest.mark.parametrize("workers", [1, 2])
def test_a_lone_surrogate_in_a_span_is_refused_with_its_line(tmp_path, city_corpus, workers):
    """JSON may escape half a UTF-16 pair alone ("\\ud800"); no data file can store it. It
    is refused at its line, as the corpus and suite loaders refuse it, read in one process
    or in parts by worker processes."""
    bad = json.dumps(otlp_export([retriever_span("B", "b1")])).replace('"q"', '"q \\ud800"')
    f = two_export_lines(tmp_path, bad)
    with pytest.raises(InputFormatError, match="holds a lone UTF-16 surrogate") as info:
        import_traces(f, "openinference", city_corpus, workers=workers)
    assert info.value.line == 2
