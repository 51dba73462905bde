"""What both span formats read from a retrieval span, and the query ids they get.

OpenInference and OpenTelemetry GenAI name their attributes differently but
record documents the same ways: flattened (``prefix.N.<sub>``), or as one list,
structured or a JSON string of one, whose entries are objects or plain ids. Both
also need a query text and a stable query id per retrieval. Only the attribute
names live in the format modules; the reading is here, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError
from ragcov.files import first_key
from ragcov.traces.otlp import Span, flatten
from ragcov.traces.records import Item, Trace, parse_id_at, parse_score_at, short

#: A retrieval picked from the spans: the span it came from, its query, its list.
Retrieval = tuple[Span, str, list[Item]]


def _kind_of(value: Any) -> str:
    """What a value is, for a message saying it is not a list of documents."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    return short(value)


def _leaf(d: dict[str, Any], key: str, where: str) -> Any:
    """``d[key]``, refusing an object there (flattened to ``key.<sub>`` entries)."""
    value = d.get(key)
    if value is None and any(k.startswith(key + ".") for k in d):
        raise FieldError(f"{where}.{key} is an object")
    return value


def read_documents(attrs: dict[str, Any], prefix: str, path: Any, line: int | None,
                   subkeys: tuple[str, str, str, str]) -> list[Item] | None:
    """Read documents stored under ``prefix``: flattened (``prefix.N.<sub>``, or
    ``prefix.N`` for a plain id) or as one list, structured or a JSON string, whose
    entries are objects or plain ids. None when the span records none; a value
    that is not a list of documents is refused, never read as an empty list."""
    value = _decoded(attrs.get(prefix), prefix, path, line)
    docs: dict[int, dict[str, Any]] = {}
    plain: dict[int, Any] = {}
    if value is not None:
        if not isinstance(value, list):
            raise InputFormatError(path, line, f"{prefix} is {_kind_of(value)}, not a list of "
                                   "documents (ids, or objects with an id)")
        for n, entry in enumerate(value):
            if isinstance(entry, dict):
                flatten(entry, "", docs.setdefault(n, {}))
            else:
                plain[n] = entry
    _add_flattened(attrs, prefix, path, line, docs, plain)
    if not docs and not plain:
        return None if value is None else []
    items = []
    for n in sorted(docs.keys() | plain.keys()):
        where = f"{prefix}.{n}"
        if n not in plain:
            items.append(_document(docs[n], path, line, where, subkeys))
        elif n in docs:
            raise InputFormatError(path, line, f"{where} is both a plain id and a "
                                   "document object")
        else:
            items.append(Item(parse_id_at(plain[n], path, line, where)))
    return items


def _decoded(value: Any, prefix: str, path: Any, line: int | None) -> Any:
    """The documents attribute itself, a JSON string decoded (``"null"`` refused)."""
    if not isinstance(value, str):
        return value
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, line, f"{prefix} is not valid JSON ({exc.msg})") from exc
    if decoded is None:
        raise InputFormatError(path, line, f"{prefix} is the JSON string 'null', not a "
                               "list of documents")
    return decoded


def _add_flattened(attrs: dict[str, Any], prefix: str, path: Any, line: int | None,
                   docs: dict[int, dict[str, Any]], plain: dict[int, Any]) -> None:
    """Add the ``prefix.N`` and ``prefix.N.<sub>`` attributes to ``plain`` and ``docs``
    (the list's own entries, already there, win)."""
    pattern = re.compile(rf"{re.escape(prefix)}\.(\d+)(?:\.(.+))?")
    for key, v in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        m = pattern.fullmatch(key)
        if m is None:  # prefix.<name>: an object flattened, not a list
            raise InputFormatError(path, line, f"{prefix} is an object ({key!r}), not a list "
                                   "of documents (ids, or objects with an id)")
        n = int(m.group(1))
        if m.group(2) is None:
            plain.setdefault(n, v)
        else:
            docs.setdefault(n, {}).setdefault(m.group(2), v)


def _document(d: dict[str, Any], path: Any, line: int | None, where: str,
              subkeys: tuple[str, str, str, str]) -> Item:
    """One document object (flattened): its id, score, content and metadata."""
    id_key, score_key, content_key, meta_key = subkeys
    try:
        raw_id = _leaf(d, id_key, where)
        raw_score = _leaf(d, score_key, where)
    except FieldError as exc:
        raise InputFormatError(path, line, str(exc)) from exc
    meta = d.get(meta_key)
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError:
            meta = None
    if not isinstance(meta, dict):
        nested = {k[len(meta_key) + 1:]: v for k, v in d.items()
                  if k.startswith(meta_key + ".")}
        meta = nested or None
    content = d.get(content_key)
    item = Item(None if raw_id is None else parse_id_at(raw_id, path, line, where),
                parse_score_at(raw_score, path, line, where, text_ok=False),
                content if isinstance(content, str) else None, meta)
    if item.id is None and item.content is None and not (meta and first_key(
            meta, ("id", "chunk_id"))):
        raise InputFormatError(path, line, f"{where} has neither an id nor content")
    return item


def query_text(attrs: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first of ``keys`` that is text; a JSON ``input.value`` gives its query field."""
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str):
            if attrs.get("input.mime_type") == "application/json" and key == "input.value":
                try:
                    decoded = json.loads(value)
                except json.JSONDecodeError:
                    return value
                if isinstance(decoded, dict):
                    inner = first_key(decoded, ("query", "input", "question", "query_str"))
                    if isinstance(inner, str):
                        return inner
                return value
            return value
    return ""


def by_time(spans: list[Span]) -> list[Span]:
    """Spans by start time, file order on ties; a span without one sorts first."""
    return sorted(spans, key=lambda s: (s.start if s.start is not None else float("-inf"),
                                        s.order))


def traces_from_retrievals(picked: list[Retrieval], path: Any) -> list[Trace]:
    """Query ids: the trace id when a trace holds one retrieval, else trace id:n."""
    per_trace: dict[str, int] = {}
    for span, _q, _items in picked:
        per_trace[span.trace_id or ""] = per_trace.get(span.trace_id or "", 0) + 1
    counters: dict[str, int] = {}
    used: dict[str, int | None] = {}
    traces = []
    for span, query, items in picked:
        if span.trace_id is None:
            qid = span.span_id or f"span-{span.order + 1}"
        elif per_trace[span.trace_id] == 1:
            qid = span.trace_id
        else:
            counters[span.trace_id] = counters.get(span.trace_id, 0) + 1
            qid = f"{span.trace_id}:{counters[span.trace_id]}"
        if qid in used:  # e.g. spans without a traceId sharing a spanId
            raise InputFormatError(path, span.line, f"query id {qid!r} is already taken by the "
                                   f"span on line {used[qid]}")
        used[qid] = span.line
        traces.append(Trace(qid, query, items, span.line))
    return traces
