"""Spans out of exported JSON: OTLP values decoded into flat attributes.

Both span formats (OpenInference and OpenTelemetry GenAI) arrive in the same
containers (OTLP JSON exports, span objects, lists of spans: see
:mod:`.spanfile`). This module turns one span object into a :class:`Span` with
flat, decoded attributes, so the format readers only interpret attribute names.

An OTLP value that does not match its declared type raises :class:`FieldError`
here and becomes a located :class:`InputFormatError` at the span: never a Python
traceback, never read as something else. Exports hold millions of attributes,
almost all plain strings and doubles, so those two are decoded on a fast path
that gives the same result as the general one.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragcov.fields import FieldError, parse_id
from ragcov.files import first_key
from ragcov.traces.records import short


@dataclass(slots=True)
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

    def bare(self) -> Span:
        """This span without its attributes: what is kept once its documents are read,
        so a large import does not hold every attribute of every span."""
        return Span(self.trace_id, self.span_id, self.name, self.start, self.order,
                    self.line, self.kind, NO_ATTRIBUTES, self.parent_id)


#: The attributes of every bare span: one empty dict, never written, rather than one each.
NO_ATTRIBUTES: dict[str, Any] = {}


_WHOLE = re.compile(r"[+-]?\d+")
#: Every NaN attribute is this one object, so two copies of a span that records a NaN
#: compare (and hash) equal: see :func:`ragcov.traces.spanfile.fingerprint`.
NAN = float("nan")


def _double(number: float) -> float:
    return NAN if number != number else number


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
                return _double(float(number))
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
        # The fast path: a string (read first, as the general path reads it), or a
        # double that is the only member of its AnyValue.
        if type(kv) is dict:
            key, value = kv.get("key"), kv.get("value")
            if type(key) is str and type(value) is dict and key not in out:
                plain = value.get("stringValue")
                if type(plain) is str:
                    out[key] = plain
                    continue
                if len(value) == 1:
                    plain = value.get("doubleValue")
                    if type(plain) is float:
                        out[key] = _double(plain)
                        continue
        if not isinstance(kv, dict) or kv.get("key") is None:
            raise FieldError(f"{what} {short(kv)} has no key (expected "
                             '{"key": "...", "value": {...}})')
        if not isinstance(kv["key"], str):
            raise FieldError(f"{what} {short(kv)} has a key that is not a string")
        if kv["key"] in out:  # OTLP keys are unique; a dict would keep the last silently
            raise FieldError(f"{what} {kv['key']!r} is given more than once")
        try:
            out[kv["key"]] = otlp_value(kv.get("value"))
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
        out[prefix] = NAN if type(obj) is float and obj != obj else obj


def _time(value: Any) -> float | None:
    """A start time in seconds: OTLP nanoseconds or ISO 8601; None when unreadable,
    since it only orders spans (file order breaks ties)."""
    if value is None or value == "":
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN or Infinity orders nothing
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
            for key, value in otlp_key_values(raw, "attribute").items():
                if type(value) is dict or type(value) is list:  # a kvlist or an array
                    flatten(value, key, attributes)
                else:
                    attributes[key] = value
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
    # Names and kinds are interned: a large export repeats a few of them in every span.
    return Span(trace_id, span_id, sys.intern(str(obj.get("name") or "")), start, order, line,
                sys.intern(str(kind).upper()) if kind else None, attributes,
                parent if isinstance(parent, str) and parent else None)
