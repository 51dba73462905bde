"""The trace formats, registered once: how each one's file becomes traces.

A record format (JSONL, TREC, ranx) reads its file into traces in one call. A
span format reads in three steps, so the middle one can run in other processes:
its :class:`~ragcov.traces.spanfile.SpanSource` yields the spans of the file,
``pick`` reads what one span recorded (a query and its documents), and
``finish`` turns the picked spans of the whole file into queries (time order,
nesting, rerankers, query ids). ``lines`` says the span objects of an export can
be cut between lines and read in parts (:mod:`.parallel`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ragcov.errors import RagcovError
from ragcov.traces.jsonl import read_jsonl
from ragcov.traces.langfuse import LangfuseSpans
from ragcov.traces.nesting import Nesting
from ragcov.traces.openinference import finish_openinference, pick_openinference
from ragcov.traces.otel import finish_otel, pick_otel
from ragcov.traces.otlp import Span
from ragcov.traces.phoenix import PhoenixSpans
from ragcov.traces.ranx import read_ranx
from ragcov.traces.records import SpanStats, Trace
from ragcov.traces.retrievals import Collected, Picked
from ragcov.traces.spanfile import SpanFile, SpanSource
from ragcov.traces.trec import read_trec


@dataclass(frozen=True)
class TraceFormat:
    """One format: ``records`` for a record format, the other three for a span format."""

    name: str
    records: Callable[[str | os.PathLike[str]], list[Trace]] | None = None
    spans: Callable[[str | os.PathLike[str]], SpanSource] | None = None
    pick: Callable[[Span, Any], Picked | None] | None = None
    finish: Callable[[Any, list[Collected], Nesting, SpanStats | None],
                     Iterator[Trace]] | None = None
    lines: bool = False


FORMATS: dict[str, TraceFormat] = {f.name: f for f in (
    TraceFormat("jsonl", records=read_jsonl),
    TraceFormat("trec", records=read_trec),
    TraceFormat("ranx", records=read_ranx),
    TraceFormat("openinference", spans=SpanFile, pick=pick_openinference,
                finish=finish_openinference, lines=True),
    TraceFormat("otel", spans=SpanFile, pick=pick_otel, finish=finish_otel, lines=True),
    TraceFormat("phoenix", spans=PhoenixSpans, pick=pick_openinference,
                finish=finish_openinference),
    TraceFormat("langfuse", spans=LangfuseSpans, pick=pick_openinference,
                finish=finish_openinference),
)}


def trace_format(name: str) -> TraceFormat:
    """The registered format ``name``; a one-line error listing them otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise RagcovError(f"unknown trace format {name!r}: expected one of "
                          f"{', '.join(FORMATS)}") from None
