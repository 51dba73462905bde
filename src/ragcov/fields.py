"""One vocabulary for the fields of retrieved items and queries, and their parsers.

Retrieved items reach ragcov from recorded traces, HTTP replies and users' Python
callables. Each reader used to decide for itself which keys name an id or a score
and what counts as one; they drifted (one took booleans as 1.0, another stored a
list as its Python text). Every reader now asks this module, so the same item means
the same thing on every path, and a value that cannot be an id or a score is refused
instead of being recorded as something else.

The parsers raise :class:`FieldError` with a message and no location; the caller
knows the file and line (or the retriever) and wraps it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

from ragcov.errors import InputFormatError

T = TypeVar("T")

# Keys that name a retrieved item's id, score and text, most specific first.
ITEM_ID_KEYS = ("id", "chunk_id", "doc_id", "_id")
ITEM_SCORE_KEYS = ("score", "_score", "similarity", "relevance_score")
ITEM_TEXT_KEYS = ("text", "content", "page_content")

# Keys that name a query's id and text in suites, traces, labels and score files, most
# specific first: a record with both ``query_id`` and ``id`` (a log line's own id) is
# the query ``query_id`` names.
QUERY_ID_KEYS = ("query_id", "qid", "query-id", "id", "_id")
QUERY_TEXT_KEYS = ("query", "question", "user_input", "input", "text")

# Keys that name a chunk's id, text and document in corpus files.
CHUNK_ID_KEYS = ("id", "_id", "chunk_id")
CHUNK_TEXT_KEYS = ITEM_TEXT_KEYS
CHUNK_DOC_KEYS = ("doc_id", "document_id", "source")
# Metadata keys that name a chunk's document in a vector store, most specific first:
# ragcov's own, then LangChain loaders' (source, file_path) and LlamaIndex's (ref_doc_id,
# document_id, file_name).
STORE_DOC_KEYS = ("doc_id", "document_id", "ref_doc_id", "source", "file_path", "file_name")
# Keys that say which version of its document a chunk belongs to (a corpus that keeps old
# versions beside new ones), in a JSONL line or in a chunk's or a store row's metadata.
VERSION_KEYS = ("version", "updated_at", "last_modified", "modified_at")


# One query's retrieved list as every source hands it over: (chunk id, score or None),
# best first.
Ranked = list[tuple[str, float | None]]


class FieldError(ValueError):
    """A value that cannot be what its field says it is."""


def parse_id(value: Any) -> str:
    """A chunk or query id: a non-empty string or a whole number, as text.

    Lists, dicts, booleans, floats and blank strings are refused: stored as their
    Python text they would silently become ids that match nothing.
    """
    if type(value) is str and value and not value.isspace():  # the usual case, first
        return value
    if isinstance(value, bool) or value is None:
        raise FieldError(f"{value!r} is not an id")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, str):
        if not value.strip():
            raise FieldError("the id is blank")
        return value
    raise FieldError(f"{_short(value)} is not an id (expected a string or a whole number)")


def parse_doc_id(value: Any) -> str:
    """A document id: the same rule as a chunk id, since reports group chunks by it and
    a document named ``['d']`` or ``False`` is as wrong as a chunk named so."""
    return parse_id(value)


def parse_title(value: Any) -> str | None:
    """A chunk's or document's title: text, or None when absent or empty.

    A whole number is taken as its text (a year, a page number); an object, a list
    or a boolean is refused rather than shown in reports as its Python text.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    raise FieldError(f"title {_short(value)} is not text")


def store_doc_id(value: Any, key: str, chunk_id: str) -> str:
    """The document a stored chunk names in its metadata ``key``, refused naming the
    chunk when it cannot be an id (a store has no lines to point at)."""
    try:
        return parse_doc_id(value)
    except FieldError as exc:
        raise FieldError(f"chunk {chunk_id!r}: metadata {key!r}: {exc}") from None


def located(parse: Callable[[Any], T], value: Any, path: Any, line: int | None, what: str) -> T:
    """``parse(value)``, its refusal located by file and line for a reader that has them."""
    try:
        return parse(value)
    except FieldError as exc:
        raise InputFormatError(path, line, f"{what}: {exc}") from None


def parse_score(value: Any, *, text_ok: bool = False) -> float | None:
    """A retrieval score: a finite number, or None (no score recorded).

    NaN makes a ranking depend on line order and infinities are not JSON, so both
    are refused. Numeric strings are accepted only where the format is text
    (``text_ok``: TREC runs, CSV, loosely typed JSONL logs); a retriever that
    returns ``"0.9"`` in JSON or Python has a bug worth hearing about.
    """
    if type(value) is float and math.isfinite(value):  # the usual case, first
        return value
    if value is None or (text_ok and value == ""):
        return None
    if isinstance(value, bool):
        raise FieldError(f"score {value!r} is not a number")
    if isinstance(value, str) and not text_ok:
        raise FieldError(f"score {value!r} is a string, not a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise FieldError(f"score {_short(value)} is not a number") from exc
    if not math.isfinite(number):
        raise FieldError(f"score {value!r} is not a finite number")
    return number


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
