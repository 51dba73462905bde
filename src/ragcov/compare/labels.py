"""Relevance labels across a re-chunk: which still hold, which can move, which are lost.

A qrels file keyed by chunk ids names the chunks of one chunking; cut the documents
again and every id may name another text or nothing. Each label of the old chunking
is sorted by the text it labelled (its character span in its document), never by
its id alone:

* **valid**: the id is in the new corpus with the same text;
* **re-anchorable**: the same text (same content hash) is one new chunk, under a new id;
* **merged**: the labelled text now lies inside one new chunk (inside each of several
  overlapping windows: every one holds it whole, and every one is written);
* **split**: the labelled text is spread over several new chunks (or copied into
  several): no single chunk holds it, and which one a relevance grade belongs to is
  a judgement, so it is never repaired;
* **orphaned**: the text, or part of it, is in no new chunk (or its document is gone).

A repaired file keeps only the sound kinds (valid, re-anchorable, merged). Where a
document's text is known (ragcov split it, or ``--documents`` gave it) spans are
exact; otherwise the document is rebuilt from its new chunks in order, and the page
of the report says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcov.corpus import Chunk, Corpus
from ragcov.errors import RagcovError
from ragcov.qrels import iter_judgements
from ragcov.reporters.overlap import stitch
from ragcov.textcov import Counter, locate, locate_one, merged

VALID, REANCHORED, MERGED, SPLIT, ORPHANED = "valid", "re-anchorable", "merged", "split", "orphaned"
KINDS = (VALID, REANCHORED, MERGED, SPLIT, ORPHANED)
SOUND = frozenset({VALID, REANCHORED, MERGED})


@dataclass(frozen=True)
class Fate:
    """What became of one label (one line of the qrels file)."""

    line: int
    query_id: str
    old_id: str
    relevance: float
    level: str
    kind: str
    new_ids: tuple[str, ...] = ()
    why: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "query_id": self.query_id, "old_id": self.old_id,
                "relevance": self.relevance, "level": self.level, "kind": self.kind,
                "new_ids": list(self.new_ids), "why": self.why}


@dataclass
class LabelCheck:
    """Every label's fate, and how the documents were read (``rebuilt``: documents whose
    text was rebuilt from their new chunks, not known)."""

    source: str
    fates: list[Fate]
    old_source: str
    rebuilt: list[str] = field(default_factory=list)
    missing_documents: list[str] = field(default_factory=list)  # old documents not in the new corpus
    new_documents: list[str] = field(default_factory=list)      # new documents not in the old one
    written: Path | None = None
    kept: int = 0

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for f in self.fates:
            out[f.kind] += 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"qrels": self.source, "old_corpus": self.old_source, "counts": self.counts(),
                "labels": [f.as_dict() for f in self.fates],
                "rebuilt_documents": self.rebuilt, "missing_documents": self.missing_documents,
                "new_documents": self.new_documents,
                "written": None if self.written is None else str(self.written),
                "written_labels": self.kept}


class _Side:
    """One document as both chunkings are read against it: its text and the new chunks'
    spans in it."""

    def __init__(self, doc_id: str, new: Corpus, chunks: list[Chunk], old: Corpus) -> None:
        self.rebuilt = False
        known = new.text_spans
        old_known = old.text_spans
        if known is not None and doc_id in known.documents:
            self.text = known.documents[doc_id]
            self.spans = {c.id: known.spans[c.id] for c in chunks if c.id in known.spans}
        elif old_known is not None and doc_id in old_known.documents:
            self.text = old_known.documents[doc_id]
            self.spans = dict(locate({doc_id: self.text},
                                     ((c.id, doc_id, c.text) for c in chunks)).spans)
        else:
            texts = [c.text for c in chunks]
            stitched = stitch(texts)
            if stitched is None:  # no overlap: the chunks follow one another
                text, spans, at = "", [], 0
                for t in texts:
                    if text:
                        text += " "
                    at = len(text)
                    text += t
                    spans.append((at, at + len(t)))
                stitched = (text, spans)
            self.text = stitched[0]
            self.spans = {c.id: s for c, s in zip(chunks, stitched[1])}
            self.rebuilt = True
        self.counter = Counter(self.text)


def check_labels(qrels: str | os.PathLike[str], new: Corpus, old: Corpus,
                 level: str | None = None) -> LabelCheck:
    """Sort every label of ``qrels`` (made on ``old``'s chunks) against ``new``."""
    by_hash: dict[str, list[Chunk]] = {}
    for c in new:
        by_hash.setdefault(c.hash, []).append(c)
    new_docs = new.documents()
    old_docs = {c.doc_id for c in old}
    sides: dict[str, _Side] = {}
    fates: list[Fate] = []
    for line, qid, item, rel, line_level in iter_judgements(qrels):
        kind = line_level or level or ("chunk" if item in old or item in new else "doc")
        if kind == "doc":
            fates.append(Fate(line, qid, item, rel, "doc", VALID, (item,)) if item in new_docs
                         else Fate(line, qid, item, rel, "doc", ORPHANED,
                                   why="the document is not in the new corpus"))
            continue
        fates.append(_chunk_fate(line, qid, item, rel, new, old, by_hash, new_docs, sides))
    return LabelCheck(str(qrels), fates, str(old.source or "the recorded corpus"),
                      rebuilt=sorted(d for d, s in sides.items() if s.rebuilt),
                      missing_documents=sorted(old_docs - set(new_docs)),
                      new_documents=sorted(set(new_docs) - old_docs))


def _chunk_fate(line: int, qid: str, item: str, rel: float, new: Corpus, old: Corpus,
                by_hash: dict[str, list[Chunk]], new_docs: dict[str, list[Chunk]],
                sides: dict[str, _Side]) -> Fate:
    def fate(kind: str, ids: Sequence[str] = (), why: str = "") -> Fate:
        return Fate(line, qid, item, rel, "chunk", kind, tuple(ids), why)

    if item not in old:
        if item in new:
            return fate(VALID, [item], "not in the old corpus; the new one has it")
        return fate(ORPHANED, why="the id is in neither corpus")
    was = old.get(item)
    if item in new and new.get(item).hash == was.hash:
        return fate(VALID, [item])
    same = by_hash.get(was.hash, [])
    same_doc = [c for c in same if c.doc_id == was.doc_id] or same
    if len(same_doc) == 1:
        return fate(REANCHORED, [same_doc[0].id], "same text under a new id")
    if len(same_doc) > 1:
        return fate(SPLIT, [c.id for c in same_doc], "its text is copied in several new chunks")
    chunks = new_docs.get(was.doc_id)
    if not chunks:
        return fate(ORPHANED, why="its document is not in the new corpus")
    side = sides.get(was.doc_id)
    if side is None:
        side = sides[was.doc_id] = _Side(was.doc_id, new, chunks, old)
    span = _old_span(was, old, side)
    if span is None:
        return fate(ORPHANED, why="its text is no longer in its document")
    s, e = span
    holders = [cid for cid, (a, b) in side.spans.items() if a <= s and e <= b]
    if holders:
        return fate(MERGED, holders, "its text lies inside the new chunk"
                    + ("s (overlapping windows)" if len(holders) > 1 else ""))
    touching = [(cid, (a, b)) for cid, (a, b) in side.spans.items() if a < e and s < b]
    held = merged((max(a, s), min(b, e)) for _c, (a, b) in touching)
    if touching and side.counter.total(held) == side.counter.count(s, e):
        return fate(SPLIT, [cid for cid, _ in touching],
                    f"its text is spread over {len(touching)} new chunks")
    return fate(ORPHANED, [cid for cid, _ in touching], "part of its text is in no new chunk")


def _old_span(was: Chunk, old: Corpus, side: _Side) -> tuple[int, int] | None:
    """The labelled chunk's span in the document text ``side`` reads: its recorded span when
    the old corpus knew the same text, else found by its text."""
    known = old.text_spans
    if known is not None and known.documents.get(was.doc_id) == side.text and was.id in known.spans:
        return known.spans[was.id]
    return locate_one(side.text, was.text)


def fixed_text(check: LabelCheck) -> tuple[str, int]:
    """The repaired qrels and its number of lines: the sound labels under their new ids, in
    the input's format (JSONL stays JSONL; TREC and BEIR columns are written as TREC
    lines). A query's label that two old labels now point at is written once, at the
    higher grade."""
    jsonl = Path(check.source).suffix.lower() in (".jsonl", ".json") or \
        _first_line(check.source).lstrip().startswith("{")
    best: dict[tuple[str, str, str], float] = {}
    for f in check.fates:
        if f.kind not in SOUND:
            continue
        for new_id in f.new_ids:
            key = (f.query_id, f.level, new_id)
            best[key] = max(best.get(key, f.relevance), f.relevance)
    lines = []
    for (qid, level, new_id), rel in best.items():
        grade: float | int = int(rel) if float(rel).is_integer() else rel
        if jsonl:
            lines.append(json.dumps({"query_id": qid, f"{level}_id": new_id, "relevance": grade}))
        else:
            lines.append(f"{qid} 0 {new_id} {grade}")
    return "".join(line + "\n" for line in lines), len(lines)


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return line
    except OSError as exc:
        raise RagcovError(f"{path}: {exc.strerror}") from None
    return ""
