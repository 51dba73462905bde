"""Ranges of chunks a person reads: ``DOC:3-5``, positions counted from 1.

A list of a corpus file's missing chunks reads best as coverage.py's missing lines:
each chunk's position in its document counted from 1, which is also its line number in
the Cobertura and lcov reports (``DOC:4`` in ``ragcov report -m`` is line 4 in
pycobertura), written as a compiler writes ``file:line``. Not ``DOC#4``: split chunk
ids are ``doc#0``, ``doc#1`` ..., and ``DOC#4`` would read as the id of another chunk.
Positions are only names for ranges of a file whose order is stable. A single chunk (a
hub, an unreachable chunk, what displaced it, a fault's shared chunk, a drift row) is
named by its id, since deleting one chunk shifts every position after it. A store's
chunks are listed by id too (its read order is the store's).
"""

from __future__ import annotations

from collections.abc import Iterable


def chunk_name(doc_id: str, position: int) -> str:
    """``DOC:N`` for the chunk at 0-based ``position`` of ``doc_id``."""
    return f"{doc_id}:{position + 1}"


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
    """(document, 0-based position) pairs as ``DOC:3-5`` runs, documents in first-seen order."""
    by_doc: dict[str, list[int]] = {}
    for doc, position in chunks:
        by_doc.setdefault(str(doc), []).append(int(position) + 1)
    return [f"{doc}:{run}" for doc, numbers in by_doc.items()
            for run in number_ranges(numbers).split(", ")]
