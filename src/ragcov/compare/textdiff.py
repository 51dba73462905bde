"""A diff across chunkers: the same documents cut differently, compared by text span.

Chunk ids and chunk texts do not survive a re-chunk, so a diff by chunk says that nearly
everything was lost and gained (a 1000 -> 800 character change on the bundled sample:
533 gained, 485 lost, mean Jaccard 0.131). What a reader wants to know is which text of
each document the suite reaches now and did not before, and the reverse: passages
(character ranges of the document, with their text), per document; and for each query
the overlap of the text it retrieved before and after (the Jaccard of the characters,
not of chunk ids). Both files must know where their chunks lie in their documents
(``--split``, or ``--documents``); only documents whose text is the same on both sides
are compared this way, and the others are counted and said.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.textcov import Counter, TextSpans, merged, subtract

SHOWN_PASSAGES = 3     # passages shown per document in the text output
PASSAGE_CHARS = 100    # characters of a passage's text shown


@dataclass(frozen=True)
class Chunking:
    """How one side cut its corpus: chunks, their mean size, how spans were known."""

    chunks: int
    mean_chars: float
    spans: str | None        # "split", "located", or None (no spans recorded)
    unplaced: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "mean_chunk_characters": self.mean_chars,
                "spans": self.spans, "unplaced_chunks": self.unplaced}


@dataclass(frozen=True)
class PassageChange:
    """One document's passages newly covered and no longer covered (``(start, end)``)."""

    doc_id: str
    characters: int
    base_covered: int
    head_covered: int
    gained: tuple[tuple[int, int], ...]
    lost: tuple[tuple[int, int], ...]
    gained_chars: int
    lost_chars: int
    text: str = field(repr=False, default="")

    def passage(self, span: tuple[int, int], limit: int | None = PASSAGE_CHARS) -> str:
        piece = " ".join(self.text[span[0]:span[1]].split())
        return piece if limit is None or len(piece) <= limit else piece[:limit - 1] + "…"

    def as_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "characters": self.characters,
                "base_covered": self.base_covered, "head_covered": self.head_covered,
                "gained_characters": self.gained_chars, "lost_characters": self.lost_chars,
                "gained": [{"start": s, "end": e, "text": self.text[s:e]} for s, e in self.gained],
                "lost": [{"start": s, "end": e, "text": self.text[s:e]} for s, e in self.lost]}


@dataclass
class TextDiff:
    """The chunking change and, where both sides know their spans, the text-span diff."""

    base: Chunking
    head: Chunking
    rechunked_documents: int                 # documents in both whose chunks differ
    compared: list[PassageChange] = field(default_factory=list)  # documents of equal text
    text_changed: list[str] = field(default_factory=list)   # in both, their text differs
    query_overlap: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @property
    def by_span(self) -> bool:
        return self.base.spans is not None and self.head.spans is not None

    @property
    def characters(self) -> int:
        return sum(p.characters for p in self.compared)

    def coverage(self, side: str) -> float:
        total = self.characters
        got = sum(p.base_covered if side == "base" else p.head_covered for p in self.compared)
        return got / total if total else 0.0

    @property
    def gained_chars(self) -> int:
        return sum(p.gained_chars for p in self.compared)

    @property
    def lost_chars(self) -> int:
        return sum(p.lost_chars for p in self.compared)

    @property
    def mean_query_overlap(self) -> float | None:
        return float(self.query_overlap.mean()) if self.query_overlap.size else None

    def changed(self) -> list[PassageChange]:
        """Documents whose covered text changed, most changed first."""
        out = [p for p in self.compared if p.gained_chars or p.lost_chars]
        return sorted(out, key=lambda p: (-(p.gained_chars + p.lost_chars), p.doc_id))

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"base": self.base.as_dict(), "head": self.head.as_dict(),
                               "rechunked_documents": self.rechunked_documents,
                               "by_span": self.by_span}
        if self.by_span:
            doc.update({
                "compared_documents": len(self.compared), "characters": self.characters,
                "base_text_coverage": self.coverage("base"),
                "head_text_coverage": self.coverage("head"),
                "gained_characters": self.gained_chars, "lost_characters": self.lost_chars,
                "documents_with_changed_text": self.text_changed,
                "mean_query_text_overlap": self.mean_query_overlap,
                "documents": [p.as_dict() for p in self.changed()]})
        return doc


def _chunking(rec: Any, texts: dict[str, str], spans: TextSpans | None) -> Chunking:
    sizes = [len(texts.get(cid, "")) for cid in rec.chunk_ids]
    return Chunking(len(sizes), float(np.mean(sizes)) if sizes else 0.0,
                    None if spans is None else spans.method,
                    0 if spans is None else sum(1 for cid in rec.chunk_ids if cid not in spans.spans))


def _rows_by_query(rec: Any) -> list[np.ndarray]:
    order = np.argsort(rec.hit_query, kind="stable")
    cuts = np.searchsorted(rec.hit_query[order], np.arange(rec.n_queries + 1))
    chunks = rec.hit_chunk[order]
    return [chunks[cuts[i]:cuts[i + 1]] for i in range(rec.n_queries)]


def text_diff(d: Any, base_path: str | os.PathLike[str], head_path: str | os.PathLike[str]
              ) -> TextDiff | None:
    """The chunking change between two recordings of different corpora (``d`` a
    :class:`ragcov.compare.diff.CoverageDiff`); None when no document is in both."""
    from ragcov.data import CoverageData
    from ragcov.data.spans import read_text_spans

    base, head = d.base, d.head
    common = {str(x) for x in base.doc_ids} & {str(x) for x in head.doc_ids}
    if not common:
        return None
    data_b, data_h = CoverageData(base_path), CoverageData(head_path)
    spans_b, spans_h = read_text_spans(data_b), read_text_spans(data_h)
    texts_b, texts_h = data_b.chunk_texts(), data_h.chunk_texts()
    hashes_b, hashes_h = base.chunk_hashes(), head.chunk_hashes()
    seq_b: dict[str, list[str]] = {}
    seq_h: dict[str, list[str]] = {}
    for doc, digest in zip(base.doc_ids, hashes_b):
        seq_b.setdefault(str(doc), []).append(digest)
    for doc, digest in zip(head.doc_ids, hashes_h):
        seq_h.setdefault(str(doc), []).append(digest)
    rechunked = sum(1 for doc in common if seq_b[doc] != seq_h[doc])
    out = TextDiff(_chunking(base, texts_b, spans_b), _chunking(head, texts_h, spans_h), rechunked)
    if spans_b is None or spans_h is None:
        return out
    same_text = sorted(doc for doc in common if doc in spans_b.documents
                       and spans_b.documents[doc] == spans_h.documents.get(doc))
    keep = set(same_text)
    out.text_changed = sorted(doc for doc in common if doc not in keep)
    counters = {doc: Counter(spans_b.documents[doc]) for doc in same_text}

    def covered(rec: Any, spans: TextSpans) -> dict[str, list[tuple[int, int]]]:
        got: dict[str, list[tuple[int, int]]] = {}
        for j in np.flatnonzero(rec.covered()):
            cid, doc = rec.chunk_ids[j], str(rec.doc_ids[j])
            if doc in keep and cid in spans.spans:
                got.setdefault(doc, []).append(spans.spans[cid])
        return {doc: merged(v) for doc, v in got.items()}

    cov_b, cov_h = covered(base, spans_b), covered(head, spans_h)
    for doc in same_text:
        c, b, h = counters[doc], cov_b.get(doc, []), cov_h.get(doc, [])
        # A passage of whitespace only (between two chunks' trimmed edges) is no passage.
        gained = [x for x in subtract(h, b) if c.count(*x)]
        lost = [x for x in subtract(b, h) if c.count(*x)]
        text = spans_b.documents[doc]
        out.compared.append(PassageChange(
            doc, c.count(0, len(text)), c.total(b), c.total(h), tuple(gained), tuple(lost),
            c.total(gained), c.total(lost), text))
    out.query_overlap = _query_overlap(d, spans_b, spans_h, keep, counters)
    return out


def _query_overlap(d: Any, spans_b: TextSpans, spans_h: TextSpans, keep: set[str],
                   counters: dict[str, Counter]) -> np.ndarray:
    """Per query in both files: the Jaccard of the characters it retrieved before and after
    (over the documents compared; a query that retrieved none of their text on either
    side overlaps fully)."""
    rows_b, rows_h = _rows_by_query(d.base), _rows_by_query(d.head)

    def text_of(rec: Any, rows: Sequence[int], spans: TextSpans) -> dict[str, list[tuple[int, int]]]:
        got: dict[str, list[tuple[int, int]]] = {}
        for j in rows:
            cid, doc = rec.chunk_ids[j], str(rec.doc_ids[j])
            if doc in keep and cid in spans.spans:
                got.setdefault(doc, []).append(spans.spans[cid])
        return {doc: merged(v) for doc, v in got.items()}

    out = np.ones(len(d.query_base_rows))
    for n, (bq, hq) in enumerate(zip(d.query_base_rows, d.query_head_rows)):
        b = text_of(d.base, rows_b[int(bq)], spans_b)
        h = text_of(d.head, rows_h[int(hq)], spans_h)
        inter = union = 0
        for doc in set(b) | set(h):
            c = counters[doc]
            both = merged([*b.get(doc, []), *h.get(doc, [])])
            union += c.total(both)
            only_b = subtract(b.get(doc, []), h.get(doc, []))
            inter += c.total(b.get(doc, [])) - c.total(only_b)
        out[n] = inter / union if union else 1.0
    return out


def text_diff_lines(t: TextDiff, pc: Any) -> list[str]:
    """The header lines: how the chunking changed, and the text-span totals."""
    lines = [f"Chunking changed: {t.base.chunks} chunks of {t.base.mean_chars:.0f} characters "
             f"on average -> {t.head.chunks} of {t.head.mean_chars:.0f}; {t.rechunked_documents} "
             "documents in both are cut differently"]
    if not t.by_span:
        side = " and ".join(n for n, c in (("BASE", t.base), ("HEAD", t.head)) if c.spans is None)
        lines.append(f"Text not compared by span: {side} recorded no chunk spans (record with "
                     "--split, or --documents beside your chunks); chunks are matched by "
                     "equal text only")
        return lines
    line = (f"Text coverage over the {len(t.compared)} documents of equal text: "
            f"{pc(t.coverage('base'))} -> {pc(t.coverage('head'))} of {t.characters:,} "
            f"characters ({t.gained_chars:,} newly covered, {t.lost_chars:,} no longer)")
    if t.text_changed:
        line += f"; {len(t.text_changed)} documents in both changed text (not compared by span)"
    unplaced = t.base.unplaced + t.head.unplaced
    if unplaced:
        line += f"; {unplaced} chunks not placed in their documents (their text not counted)"
    lines.append(line)
    if t.mean_query_overlap is not None:
        lines.append(f"Queries by retrieved text: mean overlap {t.mean_query_overlap:.3f} "
                     f"(Jaccard of the characters each query retrieved before and after), "
                     f"{int((t.query_overlap >= 1.0).sum())} of {t.query_overlap.size} retrieve "
                     "the same text")
    return lines


def passage_lines(t: TextDiff, top: int | None = 20, markdown: bool = False) -> list[str]:
    """Per document, the passages newly covered (+) and no longer covered (-), with text;
    ``markdown`` makes each a list item whose sign survives rendering."""
    changed = t.changed()
    shown = changed if top is None else changed[:top]
    if not shown:
        return []
    lines = ["", "Passages by document (+ newly covered, - no longer covered; characters):"]
    if markdown:
        lines.append("")
    for p in shown:
        lines.append(f"{'- `' if markdown else ''}{p.doc_id}{'`' if markdown else ''}: "
                     f"+{p.gained_chars:,} -{p.lost_chars:,}")
        for sign, spans in (("+", p.gained), ("-", p.lost)):
            for span in spans[:SHOWN_PASSAGES]:
                text = p.passage(span)
                lines.append(f"  - `{sign}` {span[0]}-{span[1]}: {_md(text)}" if markdown
                             else f"  {sign} {span[0]}-{span[1]}: {text}")
            if len(spans) > SHOWN_PASSAGES:
                lines.append(f"  {'- `' + sign + '`' if markdown else sign} ... "
                             f"{len(spans) - SHOWN_PASSAGES} more passages")
    if len(shown) < len(changed):
        lines.append(f"({len(changed) - len(shown)} more documents; --format json lists every passage)")
    return lines


def _md(text: str) -> str:
    """Corpus text inside a pull-request comment: no markup of its own (a ``</details>`` or
    a table pipe in a document must not reshape the comment)."""
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "&#124;"),
                      ("`", "&#96;"), ("*", "\\*"), ("_", "\\_"), ("[", "\\[")):
        text = text.replace(raw, safe)
    return text
