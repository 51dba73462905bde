"""The spans of an exported file, streamed in file order, each span read once.

Span exports come as OTLP JSON exports (one per line, as a collector's file
exporter writes them), span objects one per line or back to back (console
exporters), or lists of spans. :class:`SpanFile` yields the spans of any of them
one line's worth at a time, so a reader can take what it needs from each span
and let the rest go: a million-span export is never held whole.

A span exported twice (same traceId and spanId: a file concatenated twice,
overlapping exports, a retried batch) is kept once. An identical copy is dropped
and counted; one with different content is an error naming both lines. To tell
them apart without keeping every span, each first copy leaves only its
:func:`fingerprint`, a hash of everything a reader uses. Two different spans with
the same ids and the same 64-bit hash would be taken for copies; with the ids
equal already, that is a chance far below any other failure of the machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError
from ragcov.files import first_key
from ragcov.traces.jsontext import iter_json_values
from ragcov.traces.otlp import Span, otlp_list, span_from
from ragcov.traces.records import short


def fingerprint(span: Span) -> int:
    """A hash of what the readers use: name, start, kind, parent and attributes.

    Attribute values are text, numbers and flags (NaN always the one object
    :data:`ragcov.traces.otlp.NAN`), hashed as they are; a span holding a list
    value is hashed through its canonical JSON instead.
    """
    try:
        return hash((span.name, span.start, span.kind, span.parent_id,
                     tuple(span.attributes.items())))
    except TypeError:  # a list (an OTLP arrayValue) among the values
        return hash(json.dumps([span.name, span.start, span.kind, span.parent_id,
                                span.attributes], sort_keys=True, default=repr))


_LINE_BITS = 48
_LINE_MASK = (1 << _LINE_BITS) - 1


def _mark(fingerprint: int, line: int) -> int:
    """A fingerprint and a line number as one int: fingerprint in the high bits."""
    return (fingerprint << _LINE_BITS) | (line & _LINE_MASK)


class SpanCopies:
    """Which spans repeat an earlier one: an identical copy is dropped and counted, one
    with different content is an error naming both places (``unit``: line or row).

    Every span reader asks this, so a span exported twice means the same in an OTLP
    file, a Phoenix dataframe and a Langfuse export.
    """

    def __init__(self, path: str | os.PathLike[str], unit: str = "line") -> None:
        self.path = path
        self.unit = unit
        self.dropped = 0
        #: (traceId, spanId) → the fingerprint and line of its first copy, in one int
        #: (:func:`_mark`): a million-span file keeps a million of them while it is read.
        self._first: dict[tuple[str | None, str], int] = {}

    def forget(self) -> None:
        """Let the first copies go once every span has been seen (the count stays)."""
        self._first = {}

    def keep(self, span: Span, line: int) -> bool:
        """Whether ``span`` (at ``line``) is new; False for an identical copy."""
        if span.span_id is None:
            return True
        key = (span.trace_id, span.span_id)
        mark = _mark(fingerprint(span), line)
        earlier = self._first.get(key)
        if earlier is None:
            self._first[key] = mark
            return True
        if earlier >> _LINE_BITS == mark >> _LINE_BITS:
            self.dropped += 1
            return False
        of_trace = f" of trace {span.trace_id!r}" if span.trace_id is not None else ""
        raise InputFormatError(self.path, line, f"span {span.span_id!r}{of_trace} already "
                               f"appeared on {self.unit} {earlier & _LINE_MASK} with different "
                               "content")


class SpanFile:
    """Iterate the spans of ``path``; ``dropped`` counts the identical copies skipped
    (complete once the iteration has ended)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self._kept = 0
        self._copies = SpanCopies(path)

    @property
    def dropped(self) -> int:
        return self._copies.dropped

    def __iter__(self) -> Iterator[Span]:
        self._kept, self._copies = 0, SpanCopies(self.path)
        for line, value in iter_json_values(self.path):
            spans: list[Span] = []
            self._visit(value, line, spans)
            yield from spans
        self._copies.forget()  # read to the end: nothing left to compare with

    def _visit(self, value: Any, line: int, out: list[Span]) -> None:
        """A top-level value: an OTLP export, a span, or a list (or ``spans``/``data``
        holder) of them."""
        if isinstance(value, list):
            for v in value:
                self._visit(v, line, out)
        elif isinstance(value, dict):
            if "resourceSpans" in value:
                self._export(value, line, out)
            elif isinstance(value.get("spans"), list):
                self._visit(value["spans"], line, out)
            elif isinstance(value.get("data"), list):
                self._visit(value["data"], line, out)
            elif "attributes" in value:
                self._add(value, line, out)
            else:
                raise InputFormatError(self.path, line, "not a span (no attributes), nor OTLP "
                                       "resourceSpans, nor a list of spans")
        else:
            raise InputFormatError(self.path, line, "expected a span object or a list of spans")

    def _export(self, value: dict[str, Any], line: int, out: list[Span]) -> None:
        """An OTLP export: resourceSpans → scopeSpans → spans, each level a list."""
        try:
            for rs in otlp_list(value["resourceSpans"], "resourceSpans"):
                if not isinstance(rs, dict):
                    raise FieldError(f"a resourceSpans entry is {short(rs)}, not an object")
                scopes = first_key(rs, ("scopeSpans", "instrumentationLibrarySpans"))
                for ss in otlp_list(scopes, "scopeSpans"):
                    if not isinstance(ss, dict):
                        raise FieldError(f"a scopeSpans entry is {short(ss)}, not an object")
                    self._visit(otlp_list(ss.get("spans"), "spans"), line, out)
        except FieldError as exc:
            raise InputFormatError(self.path, line, str(exc)) from exc

    def _add(self, value: dict[str, Any], line: int, out: list[Span]) -> None:
        """One span object, unless it repeats an earlier one exactly."""
        try:
            span = span_from(value, self._kept, line)
        except FieldError as exc:
            raise InputFormatError(self.path, line, str(exc)) from exc
        if self._copies.keep(span, line):
            self._kept += 1
            out.append(span)


def read_spans(path: str | os.PathLike[str]) -> list[Span]:
    """Every span in the file, each (traceId, spanId) once: see :func:`read_spans_counted`."""
    return read_spans_counted(path)[0]


def read_spans_counted(path: str | os.PathLike[str]) -> tuple[list[Span], int]:
    """Every span in the file, in file order, and how many identical copies were dropped."""
    spans = SpanFile(path)
    return list(spans), spans.dropped
