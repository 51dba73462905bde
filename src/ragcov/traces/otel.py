"""OpenTelemetry GenAI retrieval spans.

A span is a retrieval when ``gen_ai.operation.name`` says so or when it records
``gen_ai.retrieval.documents`` (a structured list or a JSON string of one; its
entries ``{"id", "score"}`` objects or plain ids). The query is
``gen_ai.retrieval.query.text``. A retrieval span without documents is still a
query, with no hits.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from ragcov.traces.nesting import Nesting
from ragcov.traces.otlp import Span
from ragcov.traces.records import SpanStats, Trace
from ragcov.traces.retrievals import (
    Collected,
    Picked,
    Retrieval,
    collect,
    iter_traces,
    query_text,
    read_documents,
    start_time,
)
from ragcov.traces.spanfile import read_spans

OTEL_DOC = ("id", "score", "content", "metadata")


def read_otel(path: str | os.PathLike[str]) -> list[Trace]:
    return otel_traces(path, read_spans(path))


def pick_otel(span: Span, path: Any) -> Picked | None:
    """A retrieval span's query and documents (None when it recorded none); None for a
    span that is no retrieval."""
    items = read_documents(span.attributes, "gen_ai.retrieval.documents", path, span.line,
                           OTEL_DOC)
    if items is None and span.attributes.get("gen_ai.operation.name") not in (
            "retrieval", "retrieve"):
        return None
    return query_text(span.attributes, ("gen_ai.retrieval.query.text", "input.value")), items


def finish_otel(path: Any, read: list[Collected], nesting: Nesting,
                stats: SpanStats | None = None) -> Iterator[Trace]:
    """The retrieval spans in start-time order (nesting plays no part); ``stats`` counts
    those that recorded no documents."""
    picked: list[Retrieval] = []
    for span, query, items in read:
        if items is None and stats is not None:
            stats.empty += 1
        picked.append((span, query, items or []))
    del read
    picked.sort(key=lambda r: start_time(r[0]))  # stable: file order on ties
    return iter_traces(picked, path)


def otel_traces(path: Any, spans: Iterable[Span], stats: SpanStats | None = None) -> list[Trace]:
    """The retrieval spans among ``spans``: see :func:`finish_otel`."""
    return list(iter_otel_traces(path, spans, stats))


def iter_otel_traces(path: Any, spans: Iterable[Span],
                     stats: SpanStats | None = None) -> Iterator[Trace]:
    """:func:`otel_traces` one at a time; ``spans`` may be a stream (see
    :func:`ragcov.traces.openinference.iter_openinference_traces`)."""
    return finish_otel(path, *collect(spans, pick_otel, path), stats)
