"""Spans written by the real OpenInference instrumentors, over real retrievers.

A LangChain InMemoryVectorStore retriever and a LlamaIndex VectorIndexRetriever,
both embedding with the offline MiniLM model, traced by
openinference-instrumentation-langchain / -llama-index into an OpenTelemetry SDK
InMemorySpanExporter; the finished spans are then written as the SDK's console
exporter writes them (``span.to_json()``) or as OTLP JSON (the OTLP exporter's
own encoder, printed with protobuf's JSON printer).

Imported by the test modules beside it as ``from instrumented import ...``.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def traced():
    """Both instrumentors on, into an in-memory exporter; yields the exporter."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [LangChainInstrumentor(), LlamaIndexInstrumentor()]
    for inst in instrumentors:
        inst.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        for inst in instrumentors:
            inst.uninstrument()


def write_console(spans, path: Path) -> Path:
    """As ConsoleSpanExporter writes them: each span's to_json(), one after another."""
    path.write_text("".join(s.to_json() + "\n" for s in spans), encoding="utf-8")
    return path


def write_otlp_json(spans, path: Path) -> Path:
    """One OTLP JSON export, encoded by the OTLP exporter's own encoder."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(spans))) + "\n", encoding="utf-8")
    return path
