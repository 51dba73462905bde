"""Trace files for the trace-import tests: writers and OTLP/OpenInference/OTel span builders.

Imported by the test modules beside it as ``from trace_samples import ...``.
"""

from __future__ import annotations

import json
from pathlib import Path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, records: list[dict]) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def ranked_ids(run) -> dict[str, list[str]]:
    return {qid: [cid for cid, _ in r] for qid, r in run.results.items()}


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
