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

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import orjson

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError
from ragcov.files import first_key
from ragcov.traces.jsontext import iter_json_lines, iter_json_values
from ragcov.traces.otlp import Span, otlp_list, span_from
from ragcov.traces.records import short


def fingerprint(span: Span) -> int:
    """A 64-bit hash of what the readers use: name, start, kind, parent and attributes.

    The same span gives the same number in every process, on every machine (a
    BLAKE2 digest of the span's JSON, attributes in their order, not Python's
    salted ``hash``), so spans read in parallel are compared with one another.
    NaN is written as JSON ``NaN``, distinct from ``null``.
    """
    # No field but an attribute value is ever null here (an absent start, kind or parent
    # is written as ""), so a null in the JSON is an attribute's null or NaN.
    what = [span.name, "" if span.start is None else span.start, span.kind or "",
            span.parent_id or "", span.attributes]
    try:
        blob = orjson.dumps(what)
    except TypeError:  # an integer past 64 bits
        blob = b"null"
    if b"null" in blob:  # orjson writes NaN as null too: json tells them apart
        blob = json.dumps(what, default=repr).encode()
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "big")


_LINE_BITS = 48
_LINE_MASK = (1 << _LINE_BITS) - 1


def _mark(fingerprint: int, line: int) -> int:
    """A fingerprint and a line number as one int: fingerprint in the high bits."""
    return (fingerprint << _LINE_BITS) | (line & _LINE_MASK)


class SpanCopies:
    """Which spans repeat an earlier one: an identical copy is dropped and counted, one
    with different content is an error naming both places (``unit``: line or row).

    Every span reader asks this, so a span exported twice means the same in an OTLP
    file, a Phoenix dataframe and a Langfuse export, read in one process or in many.
    """

    def __init__(self, path: str | os.PathLike[str], unit: str = "line") -> None:
        self.path = path
        self.unit = unit
        self.dropped = 0
        #: (traceId, spanId) → the fingerprint and line of its first copy, in one int
        #: (:func:`_mark`): a million-span file keeps a million of them while it is read.
        self._first: dict[tuple[str | None, str], int] = {}
        #: Where each shard's lines start (folders of shards: one place per shard file).
        self._places: list[tuple[int, Any]] = []

    def forget(self) -> None:
        """Let the first copies go once every span has been seen (the count stays)."""
        self._first = {}

    def keep(self, span: Span, line: int) -> bool:
        """Whether ``span`` (at ``line``) is new; False for an identical copy."""
        if span.span_id is None:
            return True
        return self.keep_mark(span.trace_id, span.span_id, fingerprint(span), line, self.path)

    def keep_mark(self, trace_id: str | None, span_id: str, fingerprint: int, line: int,
                  path: Any) -> bool:
        """:meth:`keep` for a span already fingerprinted (in a worker process); ``line``
        counts on across shards, ``path`` is the shard it is in."""
        key = (trace_id, span_id)
        mark = _mark(fingerprint, line)
        earlier = self._first.get(key)
        if earlier is None:
            self._first[key] = mark
            return True
        if earlier >> _LINE_BITS == mark >> _LINE_BITS:
            self.dropped += 1
            return False
        of_trace = f" of trace {trace_id!r}" if trace_id is not None else ""
        where, base = self.place(earlier & _LINE_MASK)
        in_file = f" of {where}" if where != path else ""
        raise InputFormatError(path, self.local(line), f"span {span_id!r}{of_trace} already "
                               f"appeared on {self.unit} {(earlier & _LINE_MASK) - base}"
                               f"{in_file} with different content")

    def starts(self, path: Any, base: int) -> None:
        """Lines from ``base + 1`` on are in the shard ``path``."""
        self._places.append((base, path))

    def place(self, line: int) -> tuple[Any, int]:
        """The shard of a counted-on ``line`` and the lines before it."""
        for base, path in reversed(self._places):
            if line > base:
                return path, base
        return self.path, 0

    def local(self, line: int) -> int:
        return line - self.place(line)[1]


class SpanSource:
    """The spans of one export, in file order, each (traceId, spanId) once.

    A format says where its span objects are (:meth:`located`: every span with its
    line or row, copies included); iterating drops the identical copies (counted
    in ``dropped``, complete once the iteration has ended) and numbers the spans
    kept. Iterated as it is read: a million-span export is never held whole.
    """

    unit = "line"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self._copies = SpanCopies(path, self.unit)

    @property
    def dropped(self) -> int:
        return self._copies.dropped

    def located(self) -> Iterator[tuple[int, Span]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Span]:
        self._copies = copies = SpanCopies(self.path, self.unit)
        kept = 0
        for line, span in self.located():
            if copies.keep(span, line):
                span.order = kept
                kept += 1
                yield span
        copies.forget()  # read to the end: nothing left to compare with


class SpanFile(SpanSource):
    """The spans of an exported JSON file: OTLP exports, span objects or lists of them.

    ``part`` (its bytes, and whether it starts the file) reads one part of a file
    whose lines are each whole JSON values, for a worker process; line numbers then
    count from the part's start (:class:`ragcov.traces.jsontext.NotLines` when a
    line is not whole).
    """

    def __init__(self, path: str | os.PathLike[str],
                 part: tuple[bytes, bool] | None = None) -> None:
        super().__init__(path)
        self.part = part

    def located(self) -> Iterator[tuple[int, Span]]:
        values = (iter_json_values(self.path) if self.part is None
                  else iter_json_lines(*self.part))
        for line, value in values:
            spans: list[Span] = []
            self._visit(value, line, spans)
            for span in spans:
                yield line, span

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
        """One span object (numbered when kept: see :class:`SpanSource`)."""
        try:
            out.append(span_from(value, 0, line))
        except FieldError as exc:
            raise InputFormatError(self.path, line, str(exc)) from exc


def read_spans(path: str | os.PathLike[str]) -> list[Span]:
    """Every span in the file, each (traceId, spanId) once: see :func:`read_spans_counted`."""
    return read_spans_counted(path)[0]


def read_spans_counted(path: str | os.PathLike[str]) -> tuple[list[Span], int]:
    """Every span in the file, in file order, and how many identical copies were dropped."""
    spans = SpanFile(path)
    return list(spans), spans.dropped
