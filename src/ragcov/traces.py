"""Import recorded retrieval traces into a Run.

A system in production already logs what it retrieved; reading those logs gives
the coverage of real traffic without running anything. Supported formats:

``jsonl``
    One retrieval per line: ``{"query_id", "query", "retrieved": [ids]}``. Items
    may be ids, ``[id, score]`` pairs or objects with ``id``/``chunk_id`` and
    ``score``; a parallel ``scores`` list is read too. RAGAS's
    ``retrieved_context_ids`` and ``user_input`` are accepted, and so are
    ``retrieved_contexts`` (texts, matched to the corpus by content).
``trec``
    A TREC run file: ``qid Q0 doc_id rank score tag`` per line. Each query's
    list is ordered by score, highest first, ties by rank (as trec_eval and ranx
    read it).
``ranx``
    ranx / pytrec_eval JSON: ``{qid: {doc_id: score}}``, ordered by score.
``openinference``
    OpenInference spans exported as JSON (OTLP JSON, one span object per line,
    or a list of spans; attributes flat or nested). Each span of kind RETRIEVER
    is one query: ``input.value`` and ``retrieval.documents.N.document.id``
    (``.score``, and ``.content`` when the id is missing). When a RERANKER span
    follows it in the same trace, the reranker's
    ``reranker.output_documents.N.document.id`` are the final list, since that is
    what reached the LLM.
``otel``
    OpenTelemetry GenAI retrieval spans: ``gen_ai.retrieval.query.text`` and
    ``gen_ai.retrieval.documents`` (a structured list or a JSON string of one;
    its entries ``{"id", "score"}`` objects or plain ids).

Ids not in the corpus are an error that lists them, unless ``ignore_unknown``,
which skips and counts them (a corpus that changed since the traces were
recorded). Lists are cut to k before that check: what ranked below k never
reached the model. Malformed records are reported with file and line, never
read as something else: ids and scores go through :mod:`ragcov.fields` (an id
is a non-blank string or a whole number; a score a finite number, numeric text
accepted only in the text-typed JSONL and TREC formats), an OTLP value must
match its declared type, and a documents attribute that is not a list is
refused rather than read as no documents. A span exported twice (same traceId
and spanId) counts once: an identical copy is dropped and counted
(``ImportResult.duplicate_spans``), a different one is an error naming both lines.
"""

from __future__ import annotations

import json
import numbers
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragcov.corpus import Corpus
from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import (
    ITEM_ID_KEYS,
    ITEM_SCORE_KEYS,
    ITEM_TEXT_KEYS,
    FieldError,
    parse_id,
    parse_score,
)
from ragcov.io import first_key, iter_jsonl, read_text
from ragcov.run import Run, validate_k

FORMATS = ("jsonl", "trec", "ranx", "openinference", "otel")

QUERY_ID_KEYS = ("query_id", "qid", "id", "_id")
QUERY_TEXT_KEYS = ("query", "user_input", "question", "input", "text")
RETRIEVED_KEYS = ("retrieved", "retrieved_ids", "retrieved_context_ids", "retrieval_context_ids",
                  "doc_ids", "chunk_ids")
CONTEXT_TEXT_KEYS = ("retrieved_contexts", "retrieval_context")
SHOW_UNKNOWN = 20


@dataclass
class Item:
    """One retrieved entry as recorded: an id, or only content to be matched."""

    id: str | None
    score: float | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass
class Trace:
    query_id: str
    query: str
    items: list[Item]
    line: int | None = None


@dataclass
class ImportResult:
    """The Run, plus what was skipped or matched indirectly, for the user to see."""

    run: Run
    traces: int
    unknown: dict[str, int] = field(default_factory=dict)
    fallbacks: dict[str, int] = field(default_factory=dict)
    #: Spans dropped as exact duplicates of an earlier one (same traceId and spanId,
    #: same content): a file concatenated twice, or overlapping exports.
    duplicate_spans: int = 0

    @property
    def skipped(self) -> int:
        return sum(self.unknown.values())


# ------------------------------------------------------------------ helpers
def _parse_id(value: Any, path: Any, line: int | None, where: str) -> str:
    """fields.parse_id, its refusal located by file and line."""
    try:
        return parse_id(value)
    except FieldError as exc:
        raise InputFormatError(path, line, f"{where}: {exc}") from exc


def _parse_score(value: Any, path: Any, line: int | None, where: str,
                 text_ok: bool) -> float | None:
    """fields.parse_score (finite numbers only), its refusal located by file and line."""
    try:
        return parse_score(value, text_ok=text_ok)
    except FieldError as exc:
        raise InputFormatError(path, line, f"{where}: {exc}") from exc


def _item_from(obj: Any, path: Any, line: int | None, where: str, text_ok: bool) -> Item:
    if obj is None or isinstance(obj, (str, numbers.Number)):
        return Item(_parse_id(obj, path, line, where))
    if isinstance(obj, (list, tuple)) and len(obj) == 2:
        return Item(_parse_id(obj[0], path, line, where),
                    _parse_score(obj[1], path, line, where, text_ok))
    if isinstance(obj, dict):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None
        raw_id = first_key(obj, ITEM_ID_KEYS)
        content = first_key(obj, ITEM_TEXT_KEYS)
        item = Item(None if raw_id is None else _parse_id(raw_id, path, line, where),
                    _parse_score(first_key(obj, ITEM_SCORE_KEYS), path, line, where, text_ok),
                    content if isinstance(content, str) else None, meta)
        if item.id is None and item.content is None:
            raise InputFormatError(path, line, f"{where}: an entry has no id "
                                   f"(expected one of {', '.join(ITEM_ID_KEYS)})")
        return item
    raise InputFormatError(path, line, f"{where}: cannot read a retrieved entry from {obj!r}")


# -------------------------------------------------------------------- JSONL
def read_jsonl(path: str | os.PathLike[str]) -> list[Trace]:
    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        qid_raw = first_key(obj, QUERY_ID_KEYS)
        qid = (f"line-{lineno}" if qid_raw is None
               else _parse_id(qid_raw, path, lineno, "query id"))
        if qid in seen:
            raise InputFormatError(path, lineno,
                                   f"query id {qid!r} already appeared on line {seen[qid]}")
        seen[qid] = lineno
        text = first_key(obj, QUERY_TEXT_KEYS)
        if text is not None and not isinstance(text, str):
            raise InputFormatError(path, lineno, "the query text is not a string")
        retrieved = first_key(obj, RETRIEVED_KEYS)
        items: list[Item]
        if retrieved is not None:
            if not isinstance(retrieved, list):
                raise InputFormatError(path, lineno, "'retrieved' is not a list")
            # JSONL logs are loosely typed: a score written as "0.9" is read as a number.
            items = [_item_from(x, path, lineno, f"retrieved[{n}]", text_ok=True)
                     for n, x in enumerate(retrieved)]
            scores = obj.get("scores")
            if scores is not None:
                if not isinstance(scores, list) or len(scores) != len(items):
                    raise InputFormatError(path, lineno,
                                           "'scores' is not a list as long as 'retrieved'")
                for n, (item, s) in enumerate(zip(items, scores)):
                    item.score = _parse_score(s, path, lineno, f"scores[{n}]", text_ok=True)
        else:
            contexts = first_key(obj, CONTEXT_TEXT_KEYS)
            if contexts is None:
                raise InputFormatError(path, lineno, "no retrieved ids (expected one of "
                                       f"{', '.join(RETRIEVED_KEYS + CONTEXT_TEXT_KEYS)})")
            if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
                raise InputFormatError(path, lineno, "retrieved contexts are not a list of texts")
            items = [Item(None, None, c) for c in contexts]
        traces.append(Trace(qid, text or "", items, lineno))
    return traces


# --------------------------------------------------------------------- TREC
def read_trec(path: str | os.PathLike[str]) -> list[Trace]:
    rows: dict[str, list[tuple[float, int, str]]] = {}
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 6:
            raise InputFormatError(path, lineno, f"expected 6 columns (qid Q0 doc_id rank score "
                                   f"tag), got {len(parts)}")
        qid, _q0, doc_id, rank_s, score_s, _tag = parts
        try:
            rank = int(rank_s)
        except ValueError as exc:
            raise InputFormatError(path, lineno, f"rank {rank_s!r} is not a whole number") \
                from exc
        # A text format: the score column is text. NaN or an infinity is refused (NaN
        # would make the order depend on the line order).
        score = _parse_score(score_s, path, lineno, f"query {qid!r}, doc {doc_id!r}",
                             text_ok=True)
        assert score is not None  # a column of split() is never empty
        rows.setdefault(qid, []).append((score, rank, doc_id))
        first_line.setdefault(qid, lineno)
    traces = []
    for qid, entries in rows.items():
        entries.sort(key=lambda e: (-e[0], e[1]))
        traces.append(Trace(qid, "", [Item(d, s) for s, _r, d in entries], first_line[qid]))
    return traces


# --------------------------------------------------------------------- ranx
class _Entries(list[tuple[str, int, Any]]):
    """A JSON object read by :class:`_LocatedJSON`: ``(key, line, value)`` in file order."""


class _LocatedJSON:
    """Decode JSON keeping the line of each key of the outer ``depth`` levels of objects.

    ranx files are one JSON document, often pretty-printed; this lets a bad score
    or a repeated id be reported at its line, and sees repeated keys, which
    ``json.loads`` would silently collapse to the last one.
    """

    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self._pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        if pos >= self._pos:
            self._line += self.text.count("\n", self._pos, pos)
        else:
            self._line = self.text.count("\n", 0, pos) + 1
        self._pos = pos
        return self._line

    def skip(self, pos: int) -> int:
        match = self._WS.match(self.text, pos)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def document(self, depth: int) -> Any:
        value, pos = self.value(self.skip(0), depth)
        pos = self.skip(pos)
        if pos != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, pos)
        return value

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        text = self.text
        if depth == 0 or not text.startswith("{", pos):
            return self.decoder.raw_decode(text, pos)
        entries = _Entries()
        pos = self.skip(pos + 1)
        if text.startswith("}", pos):
            return entries, pos + 1
        while True:
            if not text.startswith('"', pos):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes",
                                           text, pos)
            line = self.line_at(pos)
            key, pos = self.decoder.raw_decode(text, pos)
            pos = self.skip(pos)
            if not text.startswith(":", pos):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            value, pos = self.value(self.skip(pos + 1), depth - 1)
            entries.append((key, line, value))
            pos = self.skip(pos)
            if text.startswith(",", pos):
                pos = self.skip(pos + 1)
            elif text.startswith("}", pos):
                return entries, pos + 1
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


def read_ranx(path: str | os.PathLike[str]) -> list[Trace]:
    located = _LocatedJSON(read_text(path))
    try:
        data = located.document(depth=2)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
    if not isinstance(data, _Entries):
        raise InputFormatError(path, located.line_at(located.skip(0)),
                               "expected a JSON object {query_id: {doc_id: score}}")
    traces = []
    query_line: dict[str, int] = {}
    for qid_raw, qline, docs in data:
        qid = _parse_id(qid_raw, path, qline, "query id")
        if qid in query_line:
            raise InputFormatError(path, qline, f"query {qid!r} already appeared on line "
                                   f"{query_line[qid]}")
        query_line[qid] = qline
        if not isinstance(docs, _Entries):
            raise InputFormatError(path, qline, f"query {qid!r}: expected an object "
                                   "{doc_id: score}")
        scored = []
        doc_line: dict[str, int] = {}
        for n, (doc_raw, dline, score) in enumerate(docs):
            doc_id = _parse_id(doc_raw, path, dline, f"query {qid!r}, doc id")
            where = f"query {qid!r}, doc {doc_id!r}"
            if doc_id in doc_line:
                raise InputFormatError(path, dline, f"{where} already appeared on line "
                                       f"{doc_line[doc_id]}")
            doc_line[doc_id] = dline
            value = _parse_score(score, path, dline, where, text_ok=False)
            if value is None:
                raise InputFormatError(path, dline, f"{where}: no score")
            scored.append((-value, n, doc_id, value))
        scored.sort()
        traces.append(Trace(qid, "", [Item(d, v) for _neg, _n, d, v in scored], qline))
    return traces


# -------------------------------------------------------------------- spans
@dataclass
class Span:
    trace_id: str | None
    span_id: str | None
    name: str
    start: float | None
    order: int
    line: int | None
    kind: str | None
    attributes: dict[str, Any]


def _iter_json_values(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Every top-level JSON value in the file with its line: one document, JSON
    lines, or pretty-printed objects one after another (as console exporters write)."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
        yield line, value


_WHOLE = re.compile(r"[+-]?\d+")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _otlp_list(value: Any, what: str) -> list[Any]:
    """A repeated OTLP JSON field: absent or null is empty, anything but a list is refused."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(f"{what} is {_short(value)}, not a list")
    return value


def _otlp_value(value: Any) -> Any:
    """Decode an OTLP JSON AnyValue ({"stringValue": ...} and friends).

    A value that does not match its declared type raises :class:`FieldError`
    (the caller knows the file and line); an empty or bytes value is None.
    """
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise FieldError(f"stringValue {_short(text)} is not a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise FieldError(f"boolValue {_short(flag)} is not true or false")
        return flag
    if "intValue" in value:  # int64: a JSON string of digits, or a number
        number = value["intValue"]
        if isinstance(number, str) and _WHOLE.fullmatch(number.strip()):
            return int(number)
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        if isinstance(number, float) and number.is_integer():
            return int(number)
        raise FieldError(f"intValue {_short(number)} is not a whole number")
    if "doubleValue" in value:  # a JSON number, or a string ("NaN", "Infinity", "0.5")
        number = value["doubleValue"]
        if not isinstance(number, bool) and isinstance(number, (int, float, str)):
            try:
                return float(number)
            except ValueError:
                pass
        raise FieldError(f"doubleValue {_short(number)} is not a number")
    if "arrayValue" in value:
        array = value["arrayValue"]
        if not isinstance(array, dict):
            raise FieldError(f"arrayValue {_short(array)} is not an object "
                             '{"values": [...]}')
        return [_otlp_value(v) for v in _otlp_list(array.get("values"), "arrayValue.values")]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        if not isinstance(kvlist, dict):
            raise FieldError(f"kvlistValue {_short(kvlist)} is not an object "
                             '{"values": [...]}')
        return _otlp_key_values(_otlp_list(kvlist.get("values"), "kvlistValue.values"),
                                "kvlistValue entry")
    return None


def _otlp_key_values(entries: list[Any], what: str) -> dict[str, Any]:
    """OTLP KeyValue pairs ([{"key": ..., "value": {...}}]) to a dict."""
    out: dict[str, Any] = {}
    for kv in entries:
        if not isinstance(kv, dict) or kv.get("key") is None:
            raise FieldError(f"{what} {_short(kv)} has no key (expected "
                             '{"key": "...", "value": {...}})')
        if not isinstance(kv["key"], str):
            raise FieldError(f"{what} {_short(kv)} has a key that is not a string")
        try:
            out[kv["key"]] = _otlp_value(kv.get("value"))
        except FieldError as exc:
            raise FieldError(f"{what} {kv['key']!r}: {exc}") from exc
    return out


def _flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes (as Phoenix exports them) to OpenInference's dotted keys."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, value in enumerate(obj):
            _flatten(value, f"{prefix}.{i}", out)
    else:
        out[prefix] = obj


def _time(value: Any) -> float | None:
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


def _span_from(obj: dict[str, Any], order: int, line: int) -> Span:
    """One span object; a malformed id or attribute raises :class:`FieldError`."""
    context = obj.get("context") if isinstance(obj.get("context"), dict) else {}
    trace_id = _span_id(obj, context, ("traceId", "trace_id"))
    span_id = _span_id(obj, context, ("spanId", "span_id"))
    raw = obj.get("attributes")
    attributes: dict[str, Any] = {}
    try:
        if isinstance(raw, list):  # OTLP: [{"key": ..., "value": {...}}]
            _flatten(_otlp_key_values(raw, "attribute"), "", attributes)
        elif isinstance(raw, dict):
            _flatten(raw, "", attributes)
        elif raw is not None:
            raise FieldError(f"attributes {_short(raw)} are neither a list of "
                             "key/value pairs nor an object")
    except FieldError as exc:
        name = f"span {span_id!r}" if span_id is not None else "a span"
        raise FieldError(f"{name}: {exc}") from exc
    start = _time(first_key(obj, ("startTimeUnixNano", "start_time", "startTime")))
    kind = attributes.get("openinference.span.kind") or obj.get("span_kind")
    return Span(trace_id, span_id, str(obj.get("name") or ""), start, order, line,
                str(kind).upper() if kind else None, attributes)


def _same_span(a: Span, b: Span) -> bool:
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
    spans: list[Span] = []
    first: dict[tuple[str | None, str], Span] = {}
    dropped = 0

    def add(value: dict[str, Any], line: int) -> None:
        nonlocal dropped
        try:
            span = _span_from(value, len(spans), line)
        except FieldError as exc:
            raise InputFormatError(path, line, str(exc)) from exc
        if span.span_id is not None:
            key = (span.trace_id, span.span_id)
            earlier = first.get(key)
            if earlier is not None:
                if _same_span(earlier, span):
                    dropped += 1
                    return
                of_trace = f" of trace {span.trace_id!r}" if span.trace_id is not None else ""
                raise InputFormatError(path, line, f"span {span.span_id!r}{of_trace} already "
                                       f"appeared on line {earlier.line} with different "
                                       "content")
            first[key] = span
        spans.append(span)

    def visit(value: Any, line: int) -> None:
        if isinstance(value, list):
            for v in value:
                visit(v, line)
        elif isinstance(value, dict):
            if "resourceSpans" in value:
                try:
                    for rs in _otlp_list(value["resourceSpans"], "resourceSpans"):
                        if not isinstance(rs, dict):
                            raise FieldError(f"a resourceSpans entry is {_short(rs)}, "
                                             "not an object")
                        scopes = first_key(rs, ("scopeSpans", "instrumentationLibrarySpans"))
                        for ss in _otlp_list(scopes, "scopeSpans"):
                            if not isinstance(ss, dict):
                                raise FieldError(f"a scopeSpans entry is {_short(ss)}, "
                                                 "not an object")
                            visit(_otlp_list(ss.get("spans"), "spans"), line)
                except FieldError as exc:
                    raise InputFormatError(path, line, str(exc)) from exc
            elif isinstance(value.get("spans"), list):
                visit(value["spans"], line)
            elif isinstance(value.get("data"), list):
                visit(value["data"], line)
            elif "attributes" in value:
                add(value, line)
            else:
                raise InputFormatError(path, line, "not a span (no attributes), nor OTLP "
                                       "resourceSpans, nor a list of spans")
        else:
            raise InputFormatError(path, line, "expected a span object or a list of spans")

    for line, value in _iter_json_values(path):
        visit(value, line)
    return spans, dropped


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    return _short(value)


def _leaf(d: dict[str, Any], key: str, where: str) -> Any:
    """``d[key]``, refusing an object there (flattened to ``key.<sub>`` entries)."""
    value = d.get(key)
    if value is None and any(k.startswith(key + ".") for k in d):
        raise FieldError(f"{where}.{key} is an object")
    return value


def _documents(attrs: dict[str, Any], prefix: str, path: Any, line: int | None,
               subkeys: tuple[str, str, str, str]) -> list[Item] | None:
    """Read documents stored under ``prefix``: flattened (``prefix.N.<sub>``, or
    ``prefix.N`` for a plain id) or as one list, structured or a JSON string, whose
    entries are objects or plain ids. None when the span records none; a value
    that is not a list of documents is refused, never read as an empty list."""
    id_key, score_key, content_key, meta_key = subkeys
    value = attrs.get(prefix)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, line, f"{prefix} is not valid JSON ({exc.msg})") \
                from exc
        if value is None:
            raise InputFormatError(path, line, f"{prefix} is the JSON string 'null', not a "
                                   "list of documents")
    docs: dict[int, dict[str, Any]] = {}
    plain: dict[int, Any] = {}
    if value is not None:
        if not isinstance(value, list):
            raise InputFormatError(path, line, f"{prefix} is {_kind_of(value)}, not a list of "
                                   "documents (ids, or objects with an id)")
        for n, entry in enumerate(value):
            if isinstance(entry, dict):
                _flatten(entry, "", docs.setdefault(n, {}))
            else:
                plain[n] = entry
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
    if not docs and not plain:
        return None if value is None else []
    items = []
    for n in sorted(docs.keys() | plain.keys()):
        where = f"{prefix}.{n}"
        if n in plain:
            if n in docs:
                raise InputFormatError(path, line, f"{where} is both a plain id and a "
                                       "document object")
            items.append(Item(_parse_id(plain[n], path, line, where)))
            continue
        d = docs[n]
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
        item = Item(None if raw_id is None else _parse_id(raw_id, path, line, where),
                    _parse_score(raw_score, path, line, where, text_ok=False),
                    content if isinstance(content, str) else None, meta)
        if item.id is None and item.content is None and not (meta and first_key(
                meta, ("id", "chunk_id"))):
            raise InputFormatError(path, line, f"{where} has neither an id nor content")
        items.append(item)
    return items


def _query_text(attrs: dict[str, Any], keys: tuple[str, ...]) -> str:
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


def _traces_from_retrievals(picked: list[tuple[Span, str, list[Item]]],
                            path: Any) -> list[Trace]:
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


def _by_time(spans: list[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: (s.start if s.start is not None else float("-inf"),
                                        s.order))


OI_DOC = ("document.id", "document.score", "document.content", "document.metadata")


def read_openinference(path: str | os.PathLike[str]) -> list[Trace]:
    return _openinference_traces(path, read_spans(path))


def _openinference_traces(path: Any, spans: list[Span]) -> list[Trace]:
    picked: list[tuple[Span, str, list[Item]]] = []
    last_retrieval: dict[str | None, int] = {}
    for span in _by_time(spans):
        if span.kind == "RETRIEVER":
            items = _documents(span.attributes, "retrieval.documents", path, span.line, OI_DOC)
            query = _query_text(span.attributes, ("input.value",))
            last_retrieval[span.trace_id] = len(picked)
            picked.append((span, query, items or []))
        elif span.kind == "RERANKER":
            items = _documents(span.attributes, "reranker.output_documents", path, span.line,
                               OI_DOC)
            if items is None:
                continue
            i = last_retrieval.pop(span.trace_id, None) if span.trace_id else None
            if i is not None:
                retr, query, _old = picked[i]
                picked[i] = (retr, query, items)
            else:  # a reranker with no retriever span before it: its output is still final
                query = _query_text(span.attributes, ("reranker.query", "input.value"))
                picked.append((span, query, items))
    return _traces_from_retrievals(picked, path)


OTEL_DOC = ("id", "score", "content", "metadata")


def read_otel(path: str | os.PathLike[str]) -> list[Trace]:
    return _otel_traces(path, read_spans(path))


def _otel_traces(path: Any, spans: list[Span]) -> list[Trace]:
    picked: list[tuple[Span, str, list[Item]]] = []
    for span in _by_time(spans):
        op = span.attributes.get("gen_ai.operation.name")
        items = _documents(span.attributes, "gen_ai.retrieval.documents", path, span.line,
                           OTEL_DOC)
        if items is None and op not in ("retrieval", "retrieve"):
            continue
        query = _query_text(span.attributes, ("gen_ai.retrieval.query.text", "input.value"))
        picked.append((span, query, items or []))
    return _traces_from_retrievals(picked, path)


READERS = {"jsonl": read_jsonl, "trec": read_trec, "ranx": read_ranx,
           "openinference": read_openinference, "otel": read_otel}
SPAN_READERS = {"openinference": _openinference_traces, "otel": _otel_traces}


def read_traces(path: str | os.PathLike[str], fmt: str) -> list[Trace]:
    return _read_traces_counted(path, fmt)[0]


def _read_traces_counted(path: str | os.PathLike[str], fmt: str) -> tuple[list[Trace], int]:
    """The traces, and how many duplicate spans were dropped (span formats only)."""
    if fmt not in READERS:
        raise RagcovError(f"unknown trace format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not Path(path).is_file():
        raise RagcovError(f"{path}: no such file")
    if fmt in SPAN_READERS:
        spans, dropped = read_spans_counted(path)
        return SPAN_READERS[fmt](path, spans), dropped
    return READERS[fmt](path), 0


# ------------------------------------------------------------------- import
def import_traces(path: str | os.PathLike[str], fmt: str, corpus: Corpus, k: int | None = None,
                  ignore_unknown: bool = False, name: str = "traces",
                  queries: dict[str, str] | None = None) -> ImportResult:
    """Read ``path`` in format ``fmt`` into a Run over ``corpus``.

    ``k`` cuts every list to its top k; without it k is the longest list. Query
    texts missing from the traces (TREC and ranx carry none) are taken from
    ``queries`` when given.
    """
    from ragcov.retrievers.adapters import IdResolver

    traces, duplicate_spans = _read_traces_counted(path, fmt)
    if not traces:
        raise RagcovError(f"{path}: no retrievals found in this {fmt} file")
    resolver = IdResolver(corpus, f"{fmt} trace")
    resolved: list[tuple[Trace, list[tuple[str, float | None]]]] = []
    for trace in traces:
        ranked: list[tuple[str, float | None]] = []
        seen: set[str] = set()
        for item in trace.items:
            try:
                cid = resolver.resolve(item.id, item.metadata, item.content)
            except RagcovError:
                snippet = (item.content or "")[:40]
                cid = f"<no id; content {snippet!r} not in the corpus>"
            if cid not in seen:
                seen.add(cid)
                ranked.append((cid, item.score))
        resolved.append((trace, ranked))
    if k is None:
        k = max((len(r) for _t, r in resolved), default=1) or 1
    validate_k(k)
    unknown: dict[str, int] = {}
    run = Run(k=k, retriever={"kind": "traces", "name": name})
    for trace, ranked in resolved:
        top = ranked[:k]
        kept = []
        for cid, score in top:
            if cid in corpus:
                kept.append((cid, score))
            else:
                unknown[cid] = unknown.get(cid, 0) + 1
        text = trace.query or (queries or {}).get(trace.query_id, "")
        run.add(trace.query_id, text, kept)
    if unknown and not ignore_unknown:
        ids = list(unknown)
        shown = ", ".join(ids[:SHOW_UNKNOWN])
        more = f" (and {len(ids) - SHOW_UNKNOWN} more)" if len(ids) > SHOW_UNKNOWN else ""
        raise RagcovError(
            f"{path}: {len(ids)} retrieved id{'s' if len(ids) != 1 else ''} not in the corpus: "
            f"{shown}{more}; pass --ignore-unknown (ignore_unknown=True) to skip them"
        )
    return ImportResult(run, len(traces), unknown, dict(resolver.fallbacks), duplicate_spans)
