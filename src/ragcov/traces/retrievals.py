"""What both span formats read from a retrieval span, and the query ids they get.

OpenInference and OpenTelemetry GenAI name their attributes differently but
record documents the same ways: flattened (``prefix.N.<sub>``), or as one list,
structured or a JSON string of one, whose entries are objects or plain ids. Both
also need a query text and a stable query id per retrieval. Only the attribute
names live in the format modules; the reading is here, once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError, parse_id, parse_score
from ragcov.files import first_key
from ragcov.traces.nesting import Nesting
from ragcov.traces.otlp import Span, flatten
from ragcov.traces.records import Item, Trace, parse_id_at, short

#: A retrieval picked from the spans: the span it came from, its query, its list.
Retrieval = tuple[Span, str, list[Item]]
#: What a format reads from one span: its query and its documents (None: it recorded none).
Picked = tuple[str, list[Item] | None]
#: A picked span, bare (its attributes let go), with what was read from it.
Collected = tuple[Span, str, list[Item] | None]


def collect(spans: Iterable[Span], pick: Callable[[Span, Any], Picked | None],
            path: Any) -> tuple[list[Collected], Nesting]:
    """Each span's documents read as it arrives and its attributes let go (``spans`` may
    be a stream), and every span's parent noted: what a format's ``finish`` needs."""
    nesting = Nesting()
    read: list[Collected] = []
    for span in spans:
        nesting.note(span)
        picked = pick(span, path)
        if picked is not None:
            read.append((span.bare(), *picked))
    return read, nesting


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
        if n not in plain:
            items.append(_document(docs[n], path, line, prefix, n, subkeys))
            continue
        where = f"{prefix}.{n}"
        if n in docs:
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


#: prefix → attribute name → (N, <sub> or None), or None for a name outside the prefix.
#: Exports repeat the same few names in every span; each is parsed once.
_NAMES: dict[str, dict[str, tuple[int, str | None] | None]] = {}
_NAMES_KEPT = 4096  # per prefix: names past this many are parsed each time, not kept


def _document_name(key: str, prefix: str, path: Any,
                   line: int | None) -> tuple[int, str | None] | None:
    """``prefix.N`` → (N, None), ``prefix.N.<sub>`` → (N, sub), another name → None;
    ``prefix.<name>`` (an object flattened, not a list) is refused."""
    dot = prefix + "."
    if not key.startswith(dot):
        return None
    head, sep, sub = key[len(dot):].partition(".")
    # N is decimal digits; <sub> is not empty and is one line (as the regex
    # prefix\.(\d+)(?:\.(.+))? reads a key).
    if not head.isdecimal() or (sep and (not sub or "\n" in sub)):
        raise InputFormatError(path, line, f"{prefix} is an object ({key!r}), not a list "
                               "of documents (ids, or objects with an id)")
    return int(head), (sub if sep else None)


def _add_flattened(attrs: dict[str, Any], prefix: str, path: Any, line: int | None,
                   docs: dict[int, dict[str, Any]], plain: dict[int, Any]) -> None:
    """Add the ``prefix.N`` and ``prefix.N.<sub>`` attributes to ``plain`` and ``docs``
    (the list's own entries, already there, win)."""
    names = _NAMES.setdefault(prefix, {})
    for key, v in attrs.items():
        try:
            parsed = names[key]
        except KeyError:
            parsed = _document_name(key, prefix, path, line)
            if len(names) < _NAMES_KEPT:
                names[key] = parsed
        if parsed is None:
            continue
        n, sub = parsed
        if sub is None:
            plain.setdefault(n, v)
        else:
            docs.setdefault(n, {}).setdefault(sub, v)


def _document(d: dict[str, Any], path: Any, line: int | None, prefix: str, n: int,
              subkeys: tuple[str, str, str, str]) -> Item:
    """Document N under ``prefix`` (flattened): its id, score, content and metadata.

    Ids and texts are interned: a popular chunk is retrieved by many of a large
    export's spans, and each would otherwise hold its own copy of the same strings.
    """
    id_key, score_key, content_key, meta_key = subkeys
    raw_id, raw_score = d.get(id_key), d.get(score_key)
    try:
        if raw_id is None:
            _leaf(d, id_key, f"{prefix}.{n}")
        if raw_score is None:
            _leaf(d, score_key, f"{prefix}.{n}")
    except FieldError as exc:
        raise InputFormatError(path, line, str(exc)) from exc
    try:
        if type(raw_id) is str and raw_id and not raw_id.isspace():  # parse_id's usual case
            doc_id: str | None = sys.intern(raw_id)
        else:
            doc_id = None if raw_id is None else sys.intern(parse_id(raw_id))
        score = raw_score if type(raw_score) is float and raw_score - raw_score == 0.0 \
            else parse_score(raw_score)  # a finite float as is, else parse_score decides
    except FieldError as exc:
        raise InputFormatError(path, line, f"{prefix}.{n}: {exc}") from exc
    meta = d.get(meta_key)
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError:
            meta = None
    if not isinstance(meta, dict):
        meta = None
        # Keys besides the four: the metadata may be flattened (``metadata.<name>``).
        if len(d) > (id_key in d) + (score_key in d) + (content_key in d) + (meta_key in d):
            meta = {k[len(meta_key) + 1:]: v for k, v in d.items()
                    if k.startswith(meta_key + ".")} or None
    content = d.get(content_key)
    content = sys.intern(content) if type(content) is str else None
    if doc_id is None and content is None and not (meta and first_key(
            meta, ("id", "chunk_id"))):
        raise InputFormatError(path, line, f"{prefix}.{n} has neither an id nor content")
    return Item(doc_id, score, content, meta)


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


def start_time(span: Span) -> float:
    """The sort key that puts spans by start time, one without one first; sorted
    stably from file order, ties keep file order."""
    return span.start if span.start is not None else _NO_START


_NO_START = float("-inf")


def iter_traces(picked: list[Retrieval], path: Any) -> Iterator[Trace]:
    """The retrievals as traces, one at a time, emptying ``picked`` as it goes (a large
    import never holds both every retrieval and every trace). Query ids: the trace id
    when a trace holds one retrieval, else trace id:n."""
    per_trace: dict[str, int] = {}
    for span, _q, _items in picked:
        per_trace[span.trace_id or ""] = per_trace.get(span.trace_id or "", 0) + 1
    counters: dict[str, int] = {}
    used: dict[str, int | None] = {}
    picked.reverse()
    while picked:
        span, query, items = picked.pop()
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
        yield Trace(qid, query, items, span.line)
