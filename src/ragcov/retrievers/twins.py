"""Hits matched by their text alone: which of several identical chunks each one is.

Identical chunk texts are common (a disclaimer, a table header, a footer repeated in
every document), and a hit that carries no id can only be placed by its text. The
resolver (:mod:`ragcov.retrievers.resolver`) finds the chunks holding a hit's text;
this module picks one of them and counts how (:class:`MatchCounts`): the item's
metadata first (a stored key with another value rules a twin out; its document or
position agreeing points at one), never a chunk the same result list already has,
and where nothing tells twins apart the first free one in corpus order, counted as
ambiguous so summaries and reports can say so.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ragcov.fields import STORE_DOC_KEYS

if TYPE_CHECKING:
    from ragcov.corpus import Chunk

#: Metadata keys that give a chunk's place in its document (compared with the corpus
#: chunk's position when the stored metadata does not hold the key itself).
POSITION_KEYS = ("position", "chunk_index", "chunk_position")
#: How a hit whose twins nothing tells apart is placed: said in summaries and reports.
AMBIGUOUS_RULE = "corpus order: the first twin not already taken by the same result list"
#: The data-file annotation (and JSON report meta key) holding :class:`MatchCounts`.
ID_MATCHING = "id_matching"


@dataclass
class MatchCounts:
    """Hits placed by their text because they carried no usable id, and how twins were told apart.

    ``shared_text`` of the ``by_content`` hits have a text several corpus chunks
    share: ``by_metadata`` of them were placed by their metadata, ``ambiguous`` ones
    by :data:`AMBIGUOUS_RULE`, and the rest were the one twin the list had left.
    """

    by_content: int = 0
    shared_text: int = 0
    by_metadata: int = 0
    ambiguous: int = 0

    def add(self, other: MatchCounts) -> None:
        self.by_content += other.by_content
        self.shared_text += other.shared_text
        self.by_metadata += other.by_metadata
        self.ambiguous += other.ambiguous

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ambiguous_resolved_by": AMBIGUOUS_RULE}

    @classmethod
    def from_json(cls, value: Any) -> MatchCounts:
        """Counts read back from a data file (anything unreadable counts as none)."""
        counts = cls()
        if isinstance(value, dict):
            for key in asdict(counts):
                n = value.get(key)
                if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                    setattr(counts, key, n)
        return counts

    def line(self) -> str | None:
        """One line for a command's summary; None when no twin had to be told apart."""
        if not self.shared_text:
            return None
        rest = self.shared_text - self.by_metadata - self.ambiguous
        parts = [f"{self.by_metadata} told apart by metadata"]
        if rest:
            parts.append(f"{rest} the only twin left in their list")
        parts.append(f"{self.ambiguous} ambiguous, placed by {AMBIGUOUS_RULE}")
        return (f"{self.shared_text} of {self.by_content} hit(s) matched by content share their "
                f"text with other corpus chunks: {'; '.join(parts)}")


def record_matching(data: Any, counts: MatchCounts | None, append: bool = False) -> None:
    """Keep ``counts`` in the data file (``meta.id_matching`` of the JSON report), added to
    what earlier appends recorded; nothing when no hit was matched by content."""
    if counts is None or not counts.by_content:
        return
    total = MatchCounts()
    if append:
        total.add(MatchCounts.from_json(data.annotation(ID_MATCHING)))
    total.add(counts)
    data.annotate(ID_MATCHING, total.as_json())


def resolver_counts(retriever: Any) -> MatchCounts | None:
    """The counts of an adapter's id resolver (None for a retriever without one)."""
    counts = getattr(getattr(retriever, "resolver", None), "matching", None)
    return counts if isinstance(counts, MatchCounts) else None


def _same(a: Any, b: Any) -> bool:
    """Equal, or the same scalar written differently (``3`` and ``"3"`` from a trace)."""
    if a == b:
        return True
    scalar = (str, numbers.Number)
    return isinstance(a, scalar) and isinstance(b, scalar) and str(a) == str(b)


def agreement(metadata: dict[str, Any], chunk: Chunk) -> int | None:
    """How many of ``metadata``'s keys point at ``chunk``; None when one rules it out.

    A key the chunk's stored metadata holds must have the same value. A document
    key (source, doc_id, ...) or position key it does not hold can only agree with
    the chunk's document or position: those come from the corpus's own reading and
    may be spelt differently (a relative path for an absolute one), so a mismatch
    there is no proof.
    """
    agree = 0
    stored = chunk.metadata
    for key, value in metadata.items():
        if key in stored:
            if not _same(value, stored[key]):
                return None
            agree += 1
        elif ((key in STORE_DOC_KEYS and _same(value, chunk.doc_id))
              or (key in POSITION_KEYS and _same(value, chunk.position))):
            agree += 1
    return agree


def fits(chunks: Sequence[Chunk], twins: list[int], metadata: Any) -> list[tuple[int, int]]:
    """The twins (corpus positions) ``metadata`` leaves possible, each with how many of its
    keys point at it. Metadata that rules out every twin describes none of them (another
    corpus's, or a framework's own keys): it is not used."""
    if len(twins) == 1:
        return [(twins[0], 0)]
    meta = metadata if isinstance(metadata, dict) else {}
    scored = [(i, agreement(meta, chunks[i])) for i in twins]
    return [(i, a) for i, a in scored if a is not None] or [(i, 0) for i in twins]


def pick_twin(chunks: Sequence[Chunk], pool: list[tuple[int, int]], twins: int,
              taken: set[str], counts: MatchCounts) -> str:
    """The chunk a hit matched by text is: of the ``pool`` its metadata left (out of
    ``twins`` chunks holding the text), the one its metadata points at most, never one
    in ``taken`` (the hit's list has it already), else the first in corpus order.
    ``counts`` is told which way it was decided."""
    counts.by_content += 1
    if twins == 1:
        return chunks[pool[0][0]].id
    counts.shared_text += 1
    free = [(i, a) for i, a in pool if chunks[i].id not in taken]
    if not free:
        # More hits with this text than chunks hold it: the repeat is the same chunk.
        return chunks[pool[0][0]].id
    best = max(a for _, a in free)
    top = [i for i, a in free if a == best]
    if len(top) > 1:
        counts.ambiguous += 1
    elif len(free) == 1 and best == 0 and len(pool) == twins:
        pass  # nothing told the twins apart but the list: the only one it had left
    else:
        counts.by_metadata += 1
    return chunks[top[0]].id
