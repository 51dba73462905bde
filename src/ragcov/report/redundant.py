"""Which tests are redundant, and the test that makes each one so.

The tests listed are :func:`ragcov.metrics.redundant_tests` (no chunk of their own,
or Jaccard >= 0.8 with another test), the same count ``ragcov demo`` prints. For
each, the report names a witness a reader can check: the test whose retrieved set
contains its own (``subsumed_by``), or else the test it overlaps most
(``most_similar``, the highest Jaccard).

Subsumption ties: among supersets the smallest wins (the highest Jaccard), then the
earlier test. Two tests with identical sets subsume each other; only the later is
said to be subsumed by the earlier, so no pair names each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragcov.matrix import CoverageMatrix
from ragcov.metrics import jaccard_pairs, redundant_tests


@dataclass(frozen=True)
class Redundant:
    query_id: str
    unique_chunks: int
    subsumed_by: str | None   # a test whose retrieved set contains this one's
    most_similar: str | None  # the test with the highest Jaccard
    jaccard: float            # Jaccard with most_similar
    reasons: tuple[str, ...]

    @property
    def why(self) -> str:
        if self.subsumed_by is not None:
            return f"retrieves a subset of {self.subsumed_by}"
        if self.most_similar is not None:
            return f"Jaccard {self.jaccard:.2f} with {self.most_similar}"
        return "retrieves nothing"


def subsumers(m: CoverageMatrix) -> np.ndarray:
    """Per test, a test whose retrieved set contains its own (-1 if none); see module doc."""
    sizes = np.diff(m.hits.indptr).astype(np.float64)
    best = np.full(m.n_queries, -1, dtype=np.int64)
    best_j = np.full(m.n_queries, -1.0)
    for r, c, jac in jaccard_pairs(m.hits):
        # Intersection from Jaccard and the two sizes: |A∩B| = J (|A|+|B|) / (1+J).
        inter = np.rint(jac * (sizes[r] + sizes[c]) / (1.0 + jac))
        ok = (sizes[r] > 0) & (inter == sizes[r]) & ((sizes[c] > sizes[r]) | (c < r))
        r, c, jac = r[ok], c[ok], jac[ok]
        order = np.lexsort((c, -jac, r))
        r, c, jac = r[order], c[order], jac[order]
        first = np.ones(len(r), dtype=bool)
        first[1:] = r[1:] != r[:-1]
        for row, col, j in zip(r[first], c[first], jac[first]):
            if j > best_j[row] or (j == best_j[row] and col < best[row]):
                best[row], best_j[row] = col, j
    return best


def redundant_report(m: CoverageMatrix, jaccard_threshold: float = 0.8) -> list[Redundant]:
    listed = redundant_tests(m, jaccard_threshold)
    if not listed:
        return []
    sub = subsumers(m)
    rows = m.row_of()
    return [Redundant(t.query_id, t.unique_chunks,
                      m.query_ids[sub[rows[t.query_id]]] if sub[rows[t.query_id]] >= 0 else None,
                      t.most_similar, t.jaccard, t.reasons)
            for t in listed]


def redundant_lines(items: list[Redundant], n_queries: int) -> list[str]:
    """``ragcov report --redundant``: a heading and one line per redundant test."""
    head = (f"Redundant tests: {len(items)} of {n_queries} "
            "(no chunk of their own, or Jaccard >= 0.8 with another)")
    if not items:
        return [head]
    width = max(len(t.query_id) for t in items)
    return [head, *(f"  {t.query_id.ljust(width)}  {t.why}" for t in items)]
