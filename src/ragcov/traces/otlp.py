"""Spans out of exported JSON: OTLP values decoded, each span read once.

Both span formats (OpenInference and OpenTelemetry GenAI) arrive in the same
containers: OTLP JSON exports (one per line, as a collector's file exporter
writes them), span objects one per line or back to back (console exporters), or
lists of spans. This module turns any of them into :class:`Span` objects with
flat, decoded attributes, so the format readers only interpret attribute names.

An OTLP value that does not match its declared type raises :class:`FieldError`
here and becomes a located :class:`InputFormatError` at the span: never a Python
traceback, never read as something else. A span exported twice (same traceId
and spanId) is kept once: an identical copy is dropped and counted, a different
one is an error naming both lines.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError, parse_id
from ragcov.files import first_key
from ragcov.traces.jsontext import iter_json_values
from ragcov.traces.records import short


@dataclass
class Span:
    """One span: ids, start time, kind and flattened attributes.

    ``order`` is its position in the file, the tie-break when start times are
    equal or missing; ``line`` is where its export or object starts.
    """

    trace_id: str | None
    span_id: str | None
    name: str
    start: float | None
    order: int
    line: int | None
    kind: str | None
    attributes: dict[str, Any]
    #: The parent span's id (OTLP ``parentSpanId``), None for a root or when not exported.
    parent_id: str | None = None


_WHOLE = re.compile(r"[+-]?\d+")


def otlp_list(value: Any, what: str) -> list[Any]:
    """A repeated OTLP JSON field: absent or null is empty, anything but a list is refused."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(f"{what} is {short(value)}, not a list")
    return value


def otlp_value(value: Any) -> Any:
    """Decode an OTLP JSON AnyValue ({"stringValue": ...} and friends).

    A value that does not match its declared type raises :class:`FieldError`
    (the caller knows the file and line); an empty or bytes value is None.
    """
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise FieldError(f"stringValue {short(text)} is not a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise FieldError(f"boolValue {short(flag)} is not true or false")
        return flag
    if "intValue" in value:
        return _otlp_int(value["intValue"])
    if "doubleValue" in value:  # a JSON number, or a string ("NaN", "Infinity", "0.5")
        number = value["doubleValue"]
        if not isinstance(number, bool) and isinstance(number, (int, float, str)):
            try:
                return float(number)
            except ValueError:
                pass
        raise FieldError(f"doubleValue {short(number)} is not a number")
    if "arrayValue" in value:
        array = value["arrayValue"]
        if not isinstance(array, dict):
            raise FieldError(f"arrayValue {short(array)} is not an object "
                             '{"values": [...]}')
        return [otlp_value(v) for v in otlp_list(array.get("values"), "arrayValue.values")]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        if not isinstance(kvlist, dict):
            raise FieldError(f"kvlistValue {short(kvlist)} is not an object "
                             '{"values": [...]}')
        return otlp_key_values(otlp_list(kvlist.get("values"), "kvlistValue.values"),
                               "kvlistValue entry")
    return None


def _otlp_int(number: Any) -> int:
    """An OTLP intValue (int64): a JSON string of digits, or a whole number."""
    if isinstance(number, str) and _WHOLE.fullmatch(number.strip()):
        return int(number)
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise FieldError(f"intValue {short(number)} is not a whole number")


def otlp_key_values(entries: list[Any], what: str) -> dict[str, Any]:
    """OTLP KeyValue pairs ([{"key": ..., "value": {...}}]) to a dict."""
    out: dict[str, Any] = {}
    for kv in entries:
        if not isinstance(kv, dict) or kv.get("key") is None:
            raise FieldError(f"{what} {short(kv)} has no key (expected "
                             '{"key": "...", "value": {...}})')
        if not isinstance(kv["key"], str):
            raise FieldError(f"{what} {short(kv)} has a key that is not a string")
        try:
            # Interned: every span repeats the same attribute names, and a large export
            # would otherwise hold a copy of each name per span.
            out[sys.intern(kv["key"])] = otlp_value(kv.get("value"))
        except FieldError as exc:
            raise FieldError(f"{what} {kv['key']!r}: {exc}") from exc
    return out


def flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes (as Phoenix exports them) to OpenInference's dotted keys."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, value in enumerate(obj):
            flatten(value, f"{prefix}.{i}", out)
    else:
        out[sys.intern(prefix)] = obj


def _time(value: Any) -> float | None:
    """A start time in seconds: OTLP nanoseconds or ISO 8601; None when unreadable,
    since it only orders spans (file order breaks ties)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.isdigit()):
        return int(value) / 1e9  # OTLP nanoseconds
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _span_id(obj: dict[str, Any], context: dict[str, Any], keys: tuple[str, str]) -> str | None:
    """The span's trace or span id (on the span, else in its ``context``), or None."""
    for source in (obj, context):
        for key in keys:
            if source.get(key) is not None:
                try:
                    return parse_id(source[key])
                except FieldError as exc:
                    raise FieldError(f"{key}: {exc}") from exc
    return None


def span_from(obj: dict[str, Any], order: int, line: int) -> Span:
    """One span object; a malformed id or attribute raises :class:`FieldError`."""
    context = obj.get("context") if isinstance(obj.get("context"), dict) else {}
    trace_id = _span_id(obj, context, ("traceId", "trace_id"))
    span_id = _span_id(obj, context, ("spanId", "span_id"))
    raw = obj.get("attributes")
    attributes: dict[str, Any] = {}
    try:
        if isinstance(raw, list):  # OTLP: [{"key": ..., "value": {...}}]
            flatten(otlp_key_values(raw, "attribute"), "", attributes)
        elif isinstance(raw, dict):
            flatten(raw, "", attributes)
        elif raw is not None:
            raise FieldError(f"attributes {short(raw)} are neither a list of "
                             "key/value pairs nor an object")
    except FieldError as exc:
        name = f"span {span_id!r}" if span_id is not None else "a span"
        raise FieldError(f"{name}: {exc}") from exc
    start = _time(first_key(obj, ("startTimeUnixNano", "start_time", "startTime")))
    kind = attributes.get("openinference.span.kind") or obj.get("span_kind")
    parent = first_key(obj, ("parentSpanId", "parent_span_id", "parent_id"))
    return Span(trace_id, span_id, str(obj.get("name") or ""), start, order, line,
                str(kind).upper() if kind else None, attributes,
                parent if isinstance(parent, str) and parent else None)


def same_span(a: Span, b: Span) -> bool:
    """The same recorded span: what the readers use is identical (NaN equals NaN)."""
    def content(s: Span) -> str:
        return json.dumps([s.name, s.start, s.kind, s.attributes], sort_keys=True, default=repr)
    return content(a) == content(b)


def read_spans(path: str | os.PathLike[str]) -> list[Span]:
    """Every span in the file, each (traceId, spanId) once: see :func:`read_spans_counted`."""
    return read_spans_counted(path)[0]


def read_spans_counted(path: str | os.PathLike[str]) -> tuple[list[Span], int]:
    """Every span in the file and how many identical duplicates were dropped.

    A span exported twice (a file concatenated twice, overlapping exports) has the
    same traceId and spanId: an identical copy is dropped, one with different
    content is an error naming both lines.
    """
    collector = _SpanCollector(path)
    for line, value in iter_json_values(path):
        collector.visit(value, line)
    return collector.spans, collector.dropped


class _SpanCollector:
    """The spans of one file in file order, each (traceId, spanId) kept once."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self.spans: list[Span] = []
        self.first: dict[tuple[str | None, str], Span] = {}
        self.dropped = 0

    def visit(self, value: Any, line: int) -> None:
        """A top-level value: an OTLP export, a span, or a list (or ``spans``/``data``
        holder) of them."""
        if isinstance(value, list):
            for v in value:
                self.visit(v, line)
        elif isinstance(value, dict):
            if "resourceSpans" in value:
                self._export(value, line)
            elif isinstance(value.get("spans"), list):
                self.visit(value["spans"], line)
            elif isinstance(value.get("data"), list):
                self.visit(value["data"], line)
            elif "attributes" in value:
                self.add(value, line)
            else:
                raise InputFormatError(self.path, line, "not a span (no attributes), nor OTLP "
                                       "resourceSpans, nor a list of spans")
        else:
            raise InputFormatError(self.path, line, "expected a span object or a list of spans")

    def _export(self, value: dict[str, Any], line: int) -> None:
        """An OTLP export: resourceSpans → scopeSpans → spans, each level a list."""
        try:
            for rs in otlp_list(value["resourceSpans"], "resourceSpans"):
                if not isinstance(rs, dict):
                    raise FieldError(f"a resourceSpans entry is {short(rs)}, not an object")
                scopes = first_key(rs, ("scopeSpans", "instrumentationLibrarySpans"))
                for ss in otlp_list(scopes, "scopeSpans"):
                    if not isinstance(ss, dict):
                        raise FieldError(f"a scopeSpans entry is {short(ss)}, not an object")
                    self.visit(otlp_list(ss.get("spans"), "spans"), line)
        except FieldError as exc:
            raise InputFormatError(self.path, line, str(exc)) from exc

    def add(self, value: dict[str, Any], line: int) -> None:
        """One span object, unless it repeats an earlier one exactly."""
        try:
            span = span_from(value, len(self.spans), line)
        except FieldError as exc:
            raise InputFormatError(self.path, line, str(exc)) from exc
        if span.span_id is not None:
            key = (span.trace_id, span.span_id)
            earlier = self.first.get(key)
            if earlier is not None:
                if same_span(earlier, span):
                    self.dropped += 1
                    return
                of_trace = f" of trace {span.trace_id!r}" if span.trace_id is not None else ""
                raise InputFormatError(self.path, line, f"span {span.span_id!r}{of_trace} "
                                       f"already appeared on line {earlier.line} with "
                                       "different content")
            self.first[key] = span
        self.spans.append(span)
