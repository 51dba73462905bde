"""Chunks whose text is exactly the same: which one counts as covered is decided by ties.

A retriever scores identical chunks identically, so which of them lands in the top k
is its tie rule (ragcov's dense and BM25 retrievers take corpus order), and the
others stay uncovered however good the suite is. Reports list these groups so a
low figure caused by duplicates is recognised as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ragcov.matrix import CoverageMatrix


@dataclass(frozen=True)
class DuplicateGroup:
    chunk_ids: list[str]  # in corpus order
    doc_ids: list[str]    # distinct, in first-seen order
    covered: int          # how many of the group some test retrieved


def duplicate_groups(m: CoverageMatrix, texts: Mapping[str, str]) -> list[DuplicateGroup]:
    """Groups of two or more chunks with the same non-empty text, by first occurrence."""
    by_text: dict[str, list[int]] = {}
    for j, cid in enumerate(m.chunk_ids):
        text = texts.get(cid, "")
        if text:
            by_text.setdefault(text, []).append(j)
    covered = m.covered()
    return [DuplicateGroup([m.chunk_ids[j] for j in cols],
                           list(dict.fromkeys(str(m.doc_ids[j]) for j in cols)),
                           int(covered[cols].sum()))
            for cols in by_text.values() if len(cols) > 1]


def duplicates_line(groups: list[DuplicateGroup],
                    names: Mapping[str, str] | None = None) -> str | None:
    """One line for ``ragcov report``; None when there are no duplicates.

    ``names`` maps chunk ids to what a person reads (``DOC#N``); ids not in it are shown as ids.
    """
    if not groups:
        return None
    chunks = sum(len(g.chunk_ids) for g in groups)
    docs = len({d for g in groups for d in g.doc_ids})
    shown = [(names or {}).get(c, c) for c in groups[0].chunk_ids[:3]]
    first = ", ".join(shown) + (" ..." if len(groups[0].chunk_ids) > 3 else "")
    return (f"Duplicate chunk texts: {len(groups)} group{'s' if len(groups) != 1 else ''} "
            f"({chunks} chunks in {docs} document{'s' if docs != 1 else ''}; first: {first}); "
            "identical chunks tie, so only some of them can be covered")
