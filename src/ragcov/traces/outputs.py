"""Retrieved documents serialized in a span's ``output.value``.

openinference-instrumentation-langchain records ``retrieval.documents.N`` with the
content and metadata of each Document but not its ``id``; the id is only in
``output.value``, where the retriever's output is serialized whole
(``{"documents": [{"id", "metadata", "page_content", "type"}]}``, or the
``{"lc": 1, "kwargs": {...}}`` form of older versions). LlamaIndex's
instrumentor writes ``output.value`` as the reprs of its NodeWithScore objects
(``<NodeWithScore(node=TextNode(id_=X), score=S)>``). Reading these gives the
chunk ids the application set, where otherwise only a content match would be
left (and identical texts would collapse onto one chunk).

Anything here that cannot be read is not an error: ``output.value`` is free
text for most span kinds, so an unreadable one is simply no documents.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ragcov.fields import FieldError, parse_id, parse_score
from ragcov.traces.records import Item

_NODE_REPR = re.compile(r"<NodeWithScore\(node=\w+\(id_=(?P<id>.+)\), score=(?P<score>[^)]*)\)>")


def output_documents(attrs: dict[str, Any]) -> list[Item] | None:
    """The documents in ``output.value``, in order; None when there are none to read."""
    value = attrs.get("output.value")
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError:
        return None
    if isinstance(decoded, dict):
        decoded = decoded.get("documents", decoded.get("nodes"))
    if not isinstance(decoded, list):
        return None
    items = [_entry(e) for e in decoded]
    if any(i is None for i in items):
        return None
    return [i for i in items if i is not None]  # [] is a retrieval that found nothing


def documents_in(value: Any) -> list[Any] | None:
    """The entries of a structured output that holds a list of documents: the list
    itself, or its ``documents``/``nodes``; None when it holds no list."""
    if isinstance(value, dict):
        value = value.get("documents", value.get("nodes"))
    return value if isinstance(value, list) else None


def looks_like_documents(entries: list[Any]) -> bool:
    """Whether every entry is a serialized document (an object with an id or page
    content, or a NodeWithScore repr): what a retriever's output is, not a chain's."""
    return bool(entries) and all(
        (isinstance(e, dict) and not _DOC_KEYS.isdisjoint(e))
        or (isinstance(e, str) and _NODE_REPR.fullmatch(e) is not None) for e in entries)


_DOC_KEYS = frozenset(("id", "id_", "page_content", "text", "kwargs"))


def strict_documents(value: Any) -> list[Item]:
    """A retriever's structured output read as documents, or :class:`FieldError` saying
    why it is not: where the output is known to be a retrieval's (a Langfuse RETRIEVER
    observation), an unreadable one is an error, not a retrieval that found nothing."""
    entries = documents_in(value)
    if entries is None:
        raise FieldError(f"output {_short(value)} is not a list of documents")
    items = []
    for n, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("kwargs"), dict) and "lc" in entry:
            entry = entry["kwargs"]
        if isinstance(entry, dict):
            raw_id = entry.get("id", entry.get("id_"))
            try:
                if raw_id is not None:
                    parse_id(raw_id)
                if entry.get("score") is not None:
                    parse_score(entry["score"], text_ok=True)
            except FieldError as exc:
                raise FieldError(f"output[{n}]: {exc}") from None
        item = _entry(entry)
        if item is None:
            raise FieldError(f"output[{n}] {_short(entry)} is not a document (an object with "
                             "an id or page_content)")
        items.append(item)
    return items


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _entry(entry: Any) -> Item | None:
    """One serialized document, or None when it is not one."""
    if isinstance(entry, str):
        m = _NODE_REPR.fullmatch(entry)
        if m is None:
            return None
        return Item(_id(m.group("id")), _score(m.group("score")))
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("kwargs"), dict) and "lc" in entry:  # langchain dumpd form
        entry = entry["kwargs"]
    content = entry.get("page_content", entry.get("text"))
    meta = entry.get("metadata")
    raw_id = entry.get("id", entry.get("id_"))
    item = Item(_id(raw_id), _score(entry.get("score")),
                content if isinstance(content, str) else None,
                meta if isinstance(meta, dict) else None)
    if item.id is None and item.content is None:
        return None
    return item


def _id(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse_id(value)
    except FieldError:
        return None


def _score(value: Any) -> float | None:
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if math.isfinite(score) else None


def fill_ids(items: list[Item], serialized: list[Item] | None) -> list[Item]:
    """``items`` with each missing id taken from ``output.value``'s document at the
    same position, when both lists have the same length and the texts (where both
    have one) agree, so an id is never borrowed from another document."""
    if not serialized or len(serialized) != len(items):
        return items
    for item, other in zip(items, serialized):
        if item.content is not None and other.content is not None \
                and item.content != other.content:
            return items
    for item, other in zip(items, serialized):
        if item.id is None and other.id is not None:
            item.id = other.id
        if item.metadata is None and other.metadata is not None:
            item.metadata = other.metadata
        if item.score is None and other.score is not None:
            item.score = other.score
    return items
