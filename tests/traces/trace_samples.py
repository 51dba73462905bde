"""Trace files for the trace-import tests: writers and OTLP/OpenInference/OTel span builders.

Imported by the test modules beside it as ``from trace_samples import ...``.
"""

from __future__ import annotations

import json
import random
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


CITIES = ["paris", "berlin", "madrid", "tokyo", "photosynthesis", "mitochondria", "interest",
          "dividends"]


def traffic_lines(n: int = 400, seed: int = 0) -> list[str]:
    """Export lines of production-like spans: retrievers, nested retrievers split across
    lines, rerankers, LLM spans, a document known only by its content, spans without a
    trace id, and copies of earlier spans (exact), some far from their first copy."""
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(n):
        trace = f"t{i % 150}"  # traces recur: several queries per trace
        docs = [(c, round(rng.random(), 3)) for c in rng.sample(CITIES, 3)]
        spans = [retriever_span(trace, f"r{i}", start=1000 + rng.randrange(50), docs=docs)]
        if i % 7 == 0:  # a nested retriever in the next line, no list of its own
            lines.append(json.dumps(otlp_export(spans)))
            spans = [otlp_span(trace, f"n{i}", 1000, {
                "openinference.span.kind": "RETRIEVER", "input.value": "inner",
                **oi_docs("retrieval.documents", docs[:1])}, parent=f"r{i}")]
        if i % 11 == 0:
            spans.append(otlp_span(trace, f"k{i}", 2000, {
                "openinference.span.kind": "RERANKER", "reranker.query": f"query {i}",
                **oi_docs("reranker.output_documents", docs[::-1])}))
        if i % 5 == 0:
            spans.append(otlp_span(trace, f"l{i}", 3000, {"openinference.span.kind": "LLM"}))
        if i % 13 == 0:
            span = retriever_span(None, f"x{i}", start=5, docs=())
            span["attributes"].append({"key": "retrieval.documents.0.document.content",
                                       "value": {"stringValue": "The board declared quarterly "
                                                 "dividends of $0.25 per share."}})
            del span["traceId"]
            spans.append(span)
        lines.append(json.dumps(otlp_export(spans)))
    copies = [lines[j] for j in rng.sample(range(len(lines)), min(40, len(lines)))]
    return lines + copies
