"""Text coverage: the share of a corpus's text that lies in some retrieved chunk.

Chunk coverage counts chunks, so two chunkings of the same documents give two
denominators that cannot be compared: cut the corpus finer and the figure moves
though the suite reached the same text. Text coverage counts characters of the
documents themselves, from each chunk's character span in its document: known
exactly when ragcov splits the documents, located where the team chunked and gave
the documents beside the chunks (``--documents``). Characters held by several
chunks (sliding windows) are counted once; whitespace is not counted at all (a
splitter trims what it cuts at, and one that trims differently must not move the
figure). What cannot be placed is counted and said, never guessed: a chunk whose
text is not in its document (cleaned, rewritten), a chunk whose document was not
given, and document text that lies in no chunk (a chunker that dropped it).

The same passages drive the HTML document page's highlight, so the page shows the
characters the figure counts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# The kinds of spans: known from the splitter, or found by looking for each chunk's text.
SPLIT, LOCATED = "split", "located"
NOT_FOUND = "its text is not in its document"
NO_DOCUMENT = "its document was not given"


@dataclass(frozen=True)
class TextSpans:
    """Where each chunk's text lies in its document, and what could not be placed.

    ``documents`` maps a document id to its text; ``spans`` a chunk id to its
    ``(start, end)`` character offsets in it; ``unlocated`` a chunk id to why it has
    no span; ``method`` is :data:`SPLIT` or :data:`LOCATED`.
    """

    documents: Mapping[str, str]
    spans: Mapping[str, tuple[int, int]]
    method: str = SPLIT
    unlocated: Mapping[str, str] = field(default_factory=dict)


def _loose(text: str) -> re.Pattern[str] | None:
    """A pattern matching ``text`` with any run of whitespace standing for any other:
    a chunker that collapsed newlines or trimmed still finds its place."""
    words = text.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def locate_one(document: str, text: str, start: int = 0) -> tuple[int, int] | None:
    """``text``'s span in ``document``: exactly from ``start``, then anywhere, then with
    whitespace taken loosely; None when it is not there."""
    if not text.strip():
        return None
    for at in (start, 0):
        found = document.find(text, at)
        if found != -1:
            return found, found + len(text)
    pattern = _loose(text)
    if pattern is None:
        return None
    for at in (start, 0):
        match = pattern.search(document, at)
        if match is not None:
            return match.start(), match.end()
    return None


def locate(documents: Mapping[str, str],
           chunks: Iterable[tuple[str, str, str]]) -> TextSpans:
    """Each ``(chunk id, document id, text)``'s span, looked for in its document.

    Chunks are taken in corpus order: each is looked for first after where the
    previous chunk of its document began, so a sentence repeated in a document is
    placed at the occurrence the chunk order points to, and overlapping windows
    are found where they overlap.
    """
    spans: dict[str, tuple[int, int]] = {}
    unlocated: dict[str, str] = {}
    cursor: dict[str, int] = {}
    for cid, doc_id, text in chunks:
        document = documents.get(doc_id)
        if document is None:
            unlocated[cid] = NO_DOCUMENT
            continue
        span = locate_one(document, text, cursor.get(doc_id, 0))
        if span is None:
            unlocated[cid] = NOT_FOUND
            continue
        spans[cid] = span
        cursor[doc_id] = span[0] + 1  # the next chunk begins after this one begins
    return TextSpans(dict(documents), spans, LOCATED, unlocated)


def merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of ``(start, end)`` intervals, sorted and disjoint."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def subtract(intervals: Sequence[tuple[int, int]], cut: Sequence[tuple[int, int]]
             ) -> list[tuple[int, int]]:
    """``intervals`` less ``cut`` (both sorted and disjoint)."""
    out: list[tuple[int, int]] = []
    j = 0
    for s, e in intervals:
        while j < len(cut) and cut[j][1] <= s:
            j += 1
        k, at = j, s
        while k < len(cut) and cut[k][0] < e:
            if cut[k][0] > at:
                out.append((at, cut[k][0]))
            at = max(at, cut[k][1])
            k += 1
        if at < e:
            out.append((at, e))
    return out


class Counter:
    """Non-whitespace characters of one text between any two offsets, in O(log n).

    Holds the offsets of the text's whitespace runs, not a count per character:
    documents are mostly words."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.before: list[int] = []  # whitespace characters before each run
        total = 0
        for m in re.finditer(r"\s+", text):
            self.starts.append(m.start())
            self.ends.append(m.end())
            self.before.append(total)
            total += m.end() - m.start()
        self.length = len(text)

    def _spaces_before(self, at: int) -> int:
        i = bisect_right(self.starts, at) - 1
        if i < 0:
            return 0
        return self.before[i] + min(at, self.ends[i]) - self.starts[i]

    def count(self, start: int, end: int) -> int:
        """Non-whitespace characters in ``text[start:end]``."""
        start, end = max(0, start), min(self.length, end)
        if end <= start:
            return 0
        return (end - start) - (self._spaces_before(end) - self._spaces_before(start))

    def total(self, intervals: Iterable[tuple[int, int]]) -> int:
        return sum(self.count(s, e) for s, e in intervals)


@dataclass(frozen=True)
class DocumentText:
    """One document's text coverage, in non-whitespace characters.

    ``characters`` is the denominator: the document's text less what lies only in
    excluded chunks. ``passages`` are the covered ``(start, end)`` ranges (merged),
    ``outside`` the characters no chunk holds (counted, never covered).
    """

    doc_id: str
    characters: int
    covered: int
    passages: tuple[tuple[int, int], ...]
    outside: int = 0
    excluded: int = 0
    unlocated: int = 0

    @property
    def coverage(self) -> float:
        return self.covered / self.characters if self.characters else 0.0

    def as_dict(self) -> dict[str, int | float]:
        return {"characters": self.characters, "covered": self.covered,
                "coverage": self.coverage, "outside_chunks": self.outside,
                "unlocated_chunks": self.unlocated}


@dataclass(frozen=True)
class TextCoverage:
    """Text coverage of a report's documents, with what could not be counted."""

    documents: tuple[DocumentText, ...]
    method: str
    unlocated: Mapping[str, int]   # why -> chunks with no span
    overlapping: int               # chunks sharing characters with another of their document
    no_text: tuple[str, ...] = ()  # documents reported whose text is not known
    no_chunks: tuple[str, ...] = ()  # documents given whose text no chunk of the corpus holds

    @property
    def characters(self) -> int:
        return sum(d.characters for d in self.documents)

    @property
    def covered(self) -> int:
        return sum(d.covered for d in self.documents)

    @property
    def outside(self) -> int:
        return sum(d.outside for d in self.documents)

    @property
    def coverage(self) -> float:
        return self.covered / self.characters if self.characters else 0.0

    @property
    def unlocated_chunks(self) -> int:
        return sum(self.unlocated.values())

    def of(self, doc_id: str) -> DocumentText | None:
        index = self.__dict__.get("_index")
        if index is None:  # built once: the HTML site asks for every document
            index = {d.doc_id: d for d in self.documents}
            object.__setattr__(self, "_index", index)
        return index.get(doc_id)

    def caveats(self) -> list[str]:
        """What the figure leaves out, in a reader's words (empty when nothing)."""
        out = []
        for why, n in sorted(self.unlocated.items()):
            out.append(f"{n} chunk{'s' if n != 1 else ''} not placed ({why}): "
                       f"{'their' if n != 1 else 'its'} text is not counted")
        if self.no_text:
            n = len(self.no_text)
            out.append(f"{n} document{'s' if n != 1 else ''} without text: not counted")
        if self.no_chunks:
            n = len(self.no_chunks)
            out.append(f"{n} document{'s' if n != 1 else ''} given with no chunk in the corpus "
                       f"(first: {self.no_chunks[0]}): not counted")
        if self.overlapping:
            out.append(f"{self.overlapping} chunks overlap another (each character counted once)")
        if self.outside:
            out.append(f"{self.outside:,} characters lie in no chunk (counted, never covered)")
        return out

    def totals(self) -> dict[str, object]:
        """The JSON ``totals.text_coverage`` object."""
        return {"method": self.method, "characters": self.characters, "covered": self.covered,
                "coverage": self.coverage, "documents": len(self.documents),
                "outside_chunks": self.outside, "overlapping_chunks": self.overlapping,
                "unlocated_chunks": dict(sorted(self.unlocated.items())),
                "documents_without_text": list(self.no_text),
                "documents_without_chunks": list(self.no_chunks)}


def text_coverage(spans: TextSpans, chunk_ids: Sequence[str], doc_ids: Sequence[object],
                  covered: Sequence[bool], excluded: Iterable[tuple[str, str]] = (),
                  corpus_documents: Iterable[object] | None = None) -> TextCoverage:
    """Text coverage of the documents of ``chunk_ids`` (the report's chunks, ``covered``
    telling which a test retrieved) and of ``excluded`` ``(chunk id, document id)``.

    A character counts as covered when a covered chunk's span holds it; it leaves the
    denominator when only excluded chunks hold it (as an excluded chunk leaves chunk
    coverage's); whitespace never counts. ``corpus_documents`` (every document id of the
    corpus, before any scope) names the given documents no chunk came from.
    """
    by_doc: dict[str, list[tuple[tuple[int, int] | None, bool, str]]] = {}
    for cid, doc, hit in zip(chunk_ids, doc_ids, covered):
        by_doc.setdefault(str(doc), []).append((spans.spans.get(cid), bool(hit), cid))
    gone: dict[str, list[tuple[int, int]]] = {}
    for cid, doc in excluded:
        by_doc.setdefault(str(doc), [])
        if cid in spans.spans:
            gone.setdefault(str(doc), []).append(spans.spans[cid])
    unlocated: dict[str, int] = {}
    for cid, _doc in excluded:
        if cid in spans.unlocated:
            unlocated[spans.unlocated[cid]] = unlocated.get(spans.unlocated[cid], 0) + 1
    docs: list[DocumentText] = []
    no_text: list[str] = []
    overlapping = 0
    for doc_id, rows in by_doc.items():
        if not rows:
            # Every chunk of it excluded (--exclude-docs, a rule): the document is out of
            # the report, and so are its characters, gaps included, and its overlaps.
            continue
        text = spans.documents.get(doc_id)
        missing = [cid for span, _h, cid in rows if span is None]
        for cid in missing:
            why = spans.unlocated.get(cid, NO_DOCUMENT if text is None else NOT_FOUND)
            unlocated[why] = unlocated.get(why, 0) + 1
        if text is None:
            no_text.append(doc_id)
            continue
        counter = Counter(text)
        placed = [(span, hit) for span, hit, _c in rows if span is not None]
        overlapping += _overlapping([s for s, _h in placed] + gone.get(doc_id, []))
        kept = merged(s for s, _h in placed)
        only_excluded = subtract(merged(gone.get(doc_id, [])), kept)
        passages = merged(s for s, hit in placed if hit)
        anywhere = merged([*kept, *only_excluded])
        outside = counter.count(0, len(text)) - counter.total(anywhere)
        excluded_chars = counter.total(only_excluded)
        docs.append(DocumentText(
            doc_id=doc_id, characters=counter.count(0, len(text)) - excluded_chars,
            covered=counter.total(passages), passages=tuple(passages), outside=outside,
            excluded=excluded_chars, unlocated=len(missing)))
    known = {str(d) for d in corpus_documents} if corpus_documents is not None else None
    no_chunks = () if known is None else tuple(sorted(d for d in spans.documents if d not in known))
    return TextCoverage(tuple(docs), spans.method, unlocated, overlapping, tuple(no_text), no_chunks)


def _overlapping(spans: Sequence[tuple[int, int]]) -> int:
    """How many of a document's chunk spans share a character with another."""
    order = sorted(range(len(spans)), key=lambda i: spans[i])
    hit = set()
    reach, holder = -1, -1
    for i in order:
        s, e = spans[i]
        if s < reach:
            hit.update((i, holder))
        if e > reach:
            reach, holder = e, i
    return len(hit)
