"""A document's text shown once, with the spans its covered chunks hold highlighted.

With ``chunk_overlap > 0`` consecutive chunks repeat each other's edges, so a page
listing chunks one after another shows much of the text twice and hides which
characters some test actually reached. The data file keeps chunk texts, not the
document, so the document is stitched back from its chunks in position order: a
chunk that begins with the end of the previous one (at least ``MIN_OVERLAP``
characters) continues it there; otherwise it follows after a space (the splitter
trims the whitespace it cut at). The page says the text is rebuilt from chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_OVERLAP = 8  # shorter shared edges are taken for chance, not overlap


@dataclass(frozen=True)
class Segment:
    text: str
    state: str               # "covered", "missing", "excluded"; "gap" between chunks
    chunks: tuple[int, ...]  # indices into the chunk list given


def _overlap(prev: str, nxt: str) -> int:
    """The longest end of ``prev`` that ``nxt`` begins with (0 if under MIN_OVERLAP).

    Only the places where ``nxt``'s first characters occur in ``prev`` are tried, so
    the cost is one scan of ``prev`` rather than one comparison per possible length.
    """
    head = nxt[:MIN_OVERLAP]
    if len(head) < MIN_OVERLAP:
        return 0
    start = prev.find(head)
    while start != -1:
        if nxt.startswith(prev[start:]):
            return len(prev) - start
        start = prev.find(head, start + 1)
    return 0


def stitch(texts: Sequence[str]) -> tuple[str, list[tuple[int, int]]] | None:
    """The rebuilt text and each chunk's (start, end) in it; None when no two chunks overlap."""
    doc, spans, overlapped = "", [], False
    for i, t in enumerate(texts):
        o = _overlap(texts[i - 1], t) if i else 0
        if o:
            overlapped = True
            start = len(doc) - o
            doc += t[o:]
        else:
            if doc:
                doc += " "
            start = len(doc)
            doc += t
        spans.append((start, start + len(t)))
    return (doc, spans) if overlapped else None


def segments(texts: Sequence[str], states: Sequence[str]) -> list[Segment] | None:
    """The rebuilt text cut at every chunk edge; a piece is covered if any chunk holding it is."""
    stitched = stitch(texts)
    if stitched is None:
        return None
    doc, spans = stitched
    return cut(doc, spans, states)


def cut(doc: str, spans: Sequence[tuple[int, int] | None], states: Sequence[str],
        passages: Sequence[tuple[int, int]] | None = None) -> list[Segment]:
    """``doc`` cut at every chunk edge. A piece is covered if it lies in one of
    ``passages`` (the covered ranges text coverage counts, so the page highlights
    exactly the characters its figure counts), or, without them, if a covered chunk
    holds it; a chunk without a span (None) holds nothing."""
    placed = [(i, s) for i, s in enumerate(spans) if s is not None]
    cuts = sorted({0, len(doc), *(p for _i, s in placed for p in s),
                   *(p for s in passages or () for p in s)})
    out: list[Segment] = []
    for a, b in zip(cuts, cuts[1:]):
        holders = tuple(i for i, (s, e) in placed if s <= a and b <= e)
        held = {states[i] for i in holders}
        if passages is not None:
            inside = any(s <= a and b <= e for s, e in passages)
            state = ("covered" if inside else "missing" if "missing" in held or "covered" in held
                     else "excluded" if held else "gap")
        else:
            state = ("covered" if "covered" in held else "missing" if "missing" in held
                     else "excluded" if held else "gap")
        out.append(Segment(doc[a:b], state, holders))
    return out
