"""What every trace reader produces, and the located parsing they all share.

Readers differ in how a file is laid out, not in what a retrieval is: each turns
its file into :class:`Trace` objects (a query and the items it retrieved, as
recorded), and the importer turns those into a Run. Ids and scores are parsed by
:mod:`ragcov.fields`, so a value means the same in every format; the wrappers
here add the file and line, which only the reader knows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragcov.collector import cyclic_gc_paused as cyclic_gc_paused  # where the importers find it
from ragcov.errors import InputFormatError
from ragcov.fields import FieldError, parse_id, parse_score
from ragcov.retrieval import Distinct, Run

if TYPE_CHECKING:
    from ragcov.retrievers.twins import MatchCounts


@dataclass(slots=True)
class Item:
    """One retrieved entry as recorded: an id, or only content to be matched."""

    id: str | None
    score: float | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class Trace:
    """One recorded retrieval: the query and its items in ranked order.

    ``line`` is where the record starts, so a later error (a repeated query id)
    can point at it.
    """

    query_id: str
    query: str
    items: list[Item]
    line: int | None = None


class Resolved(list):  # type: ignore[type-arg]
    """A span's documents as read in a worker process when every id is a corpus chunk:
    (id, score) pairs in the span's order, repeats kept (the Run cuts to k first, then
    drops them), what the importer would make of the same :class:`Item` list."""


class DistinctResolved(Resolved, Distinct):
    """A :class:`Resolved` list its reader found no id repeated in, its scores finite
    floats or None: :meth:`ragcov.retrieval.Run.add` takes it whole."""


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
    #: RETRIEVER spans folded into the enclosing RETRIEVER span of their query.
    merged_spans: int = 0
    #: Retrieval spans that recorded no documents: imported as queries with no hits.
    empty_spans: int = 0
    #: The format read (the detected one when ``"auto"`` was asked for).
    format: str = ""
    #: Hits placed by their text (no usable id), and how identical texts were told apart.
    matching: MatchCounts = field(default_factory=lambda: _counts())
    #: Spans of kind RERANKER in the export (0 for a record format); None when not counted.
    #: With none, the export holds no first stage and is not read a second time for it.
    reranker_spans: int | None = None

    @property
    def skipped(self) -> int:
        return sum(self.unknown.values())


def _counts() -> MatchCounts:
    # Imported when called: reading traces never loads the retrievers package.
    from ragcov.retrievers.twins import MatchCounts

    return MatchCounts()


def parse_id_at(value: Any, path: Any, line: int | None, where: str) -> str:
    """fields.parse_id, its refusal located by file and line."""
    try:
        return parse_id(value)
    except FieldError as exc:
        raise InputFormatError(path, line, f"{where}: {exc}") from exc


def parse_score_at(value: Any, path: Any, line: int | None, where: str,
                   text_ok: bool) -> float | None:
    """fields.parse_score (finite numbers only), its refusal located by file and line."""
    try:
        return parse_score(value, text_ok=text_ok)
    except FieldError as exc:
        raise InputFormatError(path, line, f"{where}: {exc}") from exc


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message quotes a value, not a file."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class SpanStats:
    """What reading spans into queries folded or could not fill, for the summary."""

    #: RETRIEVER spans folded into an enclosing RETRIEVER span of the same query.
    merged: int = 0
    #: Retrieval spans that recorded no documents anywhere: queries with no hits.
    empty: int = 0
    #: Spans of kind RERANKER read (copies included): none, and the export has no first
    #: stage to read again (:func:`ragcov.traces.importer.first_stage_lists`).
    rerankers: int = 0


