"""Chunk names a person reads: ``DOC#N``, N counted from 1.

Chunk ids are whatever the store made them (often UUIDs), and nobody finds
``3f2a9c1e-...`` in a document. Every table a person reads names a chunk by its
document and its position there counted from 1, which is also its line number in
the Cobertura and lcov reports, so ``DOC#4`` in ``ragcov report`` is line 4 in
pycobertura. The ids themselves stay in JSON and behind ``--show-ids``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ragcov.summary import document_positions

if TYPE_CHECKING:
    from ragcov.matrix import CoverageMatrix


def chunk_name(doc_id: str, position: int) -> str:
    """``DOC#N`` for the chunk at 0-based ``position`` of ``doc_id``."""
    return f"{doc_id}#{position + 1}"


def number_ranges(numbers: Iterable[int]) -> str:
    """Numbers as coverage.py prints missing lines: ``1-3, 6, 8-9``."""
    parts: list[str] = []
    ordered = sorted(set(numbers))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(parts)


def chunk_ranges(chunks: Iterable[tuple[str, int]]) -> list[str]:
    """(document, 0-based position) pairs as ``DOC#3-5`` runs, documents in first-seen order."""
    by_doc: dict[str, list[int]] = {}
    for doc, position in chunks:
        by_doc.setdefault(str(doc), []).append(int(position) + 1)
    return [f"{doc}#{run}" for doc, numbers in by_doc.items()
            for run in number_ranges(numbers).split(", ")]


def matrix_names(m: CoverageMatrix, positions: Mapping[str, int] | None = None
                 ) -> dict[str, str]:
    """Chunk id -> ``DOC#N`` for every chunk of ``m``, numbered as Cobertura numbers lines."""
    pos = document_positions(m, positions)
    return {cid: chunk_name(str(doc), int(p))
            for cid, doc, p in zip(m.chunk_ids, m.doc_ids, pos)}
