"""Tests that copy their chunk: a question holding a long run of a retrieved chunk's words.

A test whose question is a sentence lifted from a chunk retrieves that chunk, raises
coverage, and tests nothing a user would ask: the words that reach the chunk were
copied from it. Such tests are flagged "copied" (a run of :data:`MIN_RUN` words or more
in a row, after the text rule :func:`ragcov.analyzer.tokens`, shared with a chunk the
test retrieves), and a report shows coverage with and without them, so a gate that
rose by copies is seen to.

Only each test's own top-k is compared (what it retrieved), and a chunk's words are
read once however many tests retrieved it; a question shorter than the run is never
read against a chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragcov.analyzer import tokens
from ragcov.matrix import CoverageMatrix

#: Words in a row a question must share with a chunk it retrieves to count as copied.
MIN_RUN = 8


@dataclass(frozen=True)
class CopiedTest:
    """One test flagged copied: the chunk it copies and the longest run of words shared."""

    row: int
    query_id: str
    chunk_id: str
    run: int

    def as_dict(self) -> dict[str, object]:
        return {"query_id": self.query_id, "chunk_id": self.chunk_id, "words": self.run}


def longest_run(a: Sequence[str], b: Sequence[str]) -> int:
    """The longest run of words ``a`` and ``b`` share in a row (longest common substring
    over words; ``a`` is the short side, a question)."""
    best = 0
    prev = [0] * (len(a) + 1)
    for word in b:
        cur = [0] * (len(a) + 1)
        for i, x in enumerate(a, start=1):
            if x == word:
                cur[i] = prev[i - 1] + 1
                if cur[i] > best:
                    best = cur[i]
        prev = cur
    return best


def copied_tests(m: CoverageMatrix, texts: Mapping[str, str], min_run: int = MIN_RUN,
                 read: Callable[[list[str]], Mapping[str, str]] | None = None
                 ) -> list[CopiedTest]:
    """Every test of ``m`` whose question shares ``min_run`` or more words in a row with a
    chunk it retrieves (``texts``: chunk id -> text), with the chunk of the longest run.
    ``read``, given, takes the place of ``texts``: it is asked once for the texts of the
    chunks the questions long enough to copy retrieve.

    Each run of ``min_run`` words of the question is looked for in the chunk's words as
    one string (``" w1 w2 ... "``, searched in C), so a pair costs a few substring
    searches, not a walk over the chunk's runs; the exact longest run is counted only for
    a pair that shares one."""
    if m.query_texts is None:
        return []
    asked = [(row, q) for row, q in enumerate(tokens(text or "") for text in m.query_texts)
             if len(q) >= min_run]
    if not asked:
        return []
    if read is not None:  # only the texts of the chunks these questions retrieve
        texts = read([m.chunk_ids[int(col)] for row, _ in asked for col in m.retrieved(row)])
    words: dict[int, tuple[list[str], str]] = {}
    out = []
    for row, q in asked:
        grams = {" " + " ".join(q[i:i + min_run]) + " " for i in range(len(q) - min_run + 1)}
        best: tuple[int, int] | None = None
        for col in m.retrieved(row):
            col = int(col)
            if col not in words:
                c = tokens(texts.get(m.chunk_ids[col], "") or "")
                words[col] = (c, " " + " ".join(c) + " ")
            c, joined = words[col]
            if any(g in joined for g in grams):
                run = longest_run(q, c)
                if best is None or run > best[0]:
                    best = (run, col)
        if best is not None:
            out.append(CopiedTest(row, m.query_ids[row], m.chunk_ids[best[1]], best[0]))
    return out


def coverage_without(m: CoverageMatrix, copied: Sequence[CopiedTest]) -> tuple[int, float]:
    """Chunks covered, and chunk coverage, by the tests that copy nothing."""
    flagged = {c.row for c in copied}
    keep = np.asarray([i for i in range(m.n_queries) if i not in flagged], dtype=np.int64)
    covered = int(m.select_rows(keep).covered().sum()) if keep.size else 0
    return covered, covered / m.n_chunks if m.n_chunks else 0.0
