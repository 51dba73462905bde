"""OpenTelemetry GenAI retrieval spans (ragcov.traces.otel): documents as lists, JSON
strings or plain ids; anything else refused, not read as zero hits."""

from __future__ import annotations

import json

import pytest
from trace_samples import otel_span, otlp_attr, otlp_export, otlp_span, ranked_ids, write

from helpers import cli
from ragcov.errors import InputFormatError
from ragcov.traces import import_traces


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
