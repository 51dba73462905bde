"""The pool orders of coverage itself: greedy by new chunks, random, overlap-biased.

The rules of each are in :mod:`ragcov.selection`'s docstring; this module holds the
orders and the pieces the fault-revealing orders build on (``tie_ranks``,
``coverage_order``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix

STRATEGIES = ("coverage", "random", "overlap")
AFTER_SATURATION = ("random", "reset")
DEFAULT_AFTER_SATURATION = "random"


@dataclass
class Selection:
    strategy: str
    seed: int | None
    order: np.ndarray          # row indices into the matrix, full permutation of the pool
    curve: np.ndarray          # CC after each pick (0..1), len == len(order)
    pool_coverage: float       # CC of the whole pool
    saturated_at: int | None   # picks after which nothing adds coverage

    def tests_to(self, pct: float) -> int | None:
        """Smallest n with CC(first n) >= pct% of CC(pool); None if the order never gets there."""
        return tests_to(self.curve, self.pool_coverage, pct)


def tests_to(curve: np.ndarray, pool_coverage: float, pct: float) -> int | None:
    """Smallest n with ``curve[n-1] >= pct/100 * pool_coverage`` (0 when the target is 0).

    A relative tolerance of 1e-9 absorbs float rounding, so 100% of the pool's
    coverage is reached exactly when the curve reaches CC(pool).
    """
    if not 0 < pct <= 100:
        raise RagcovError(f"a coverage target must be a percentage in (0, 100], got {pct!r}")
    target = pct / 100.0 * pool_coverage
    if target <= 0:
        return 0
    curve = np.asarray(curve, dtype=np.float64)
    hit = np.flatnonzero(curve >= target * (1 - 1e-9))
    return int(hit[0]) + 1 if hit.size else None


def tie_ranks(n: int, seed: int) -> np.ndarray:
    """Each row's seeded tie-break rank (a random permutation of 0..n-1)."""
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def _row_lists(m: CoverageMatrix) -> list[list[int]]:
    indptr = m.hits.indptr.tolist()
    indices = m.hits.indices.tolist()
    return [indices[indptr[i]:indptr[i + 1]] for i in range(m.n_queries)]


def _greedy(rows: list[list[int]], candidates: list[int], rank: list[int], n: int,
            covered: bytearray) -> tuple[list[int], list[int]]:
    """Lazy greedy over ``candidates`` until no gain is left: (picked, rest)."""
    width = max((len(rows[r]) for r in candidates), default=0) + 1
    row_at = {rank[r]: r for r in candidates}
    heap = [(width - len(rows[r])) * n + rank[r] for r in candidates]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    picked: list[int] = []
    while heap:
        p = pop(heap)
        stale = width - p // n
        if stale == 0:
            push(heap, p)
            break
        r = row_at[p % n]
        cols = rows[r]
        gain = 0
        for c in cols:
            if not covered[c]:
                gain += 1
        if gain == stale:
            picked.append(r)
            for c in cols:
                covered[c] = 1
        elif gain > 0:
            push(heap, (width - gain) * n + p % n)
        else:
            push(heap, width * n + p % n)
    rest = [row_at[p % n] for p in sorted(heap)]
    return picked, rest


def coverage_order(m: CoverageMatrix, rank: np.ndarray,
                   after_saturation: str = DEFAULT_AFTER_SATURATION) -> np.ndarray:
    """The greedy order with ``rank`` (a permutation of the rows) breaking ties.

    ``select(m, "coverage", seed)`` uses ``tie_ranks(n, seed)``; any other
    permutation (e.g. by retrieval confidence) changes only which of several
    equal-gain queries goes first, and the order of the saturated tail.
    """
    n = m.n_queries
    rows = _row_lists(m)
    rank_l = rank.tolist()
    covered = bytearray(m.n_chunks)
    picked, rest = _greedy(rows, list(range(n)), rank_l, n, covered)
    order = picked
    if after_saturation == "reset":
        while rest:
            more, rest = _greedy(rows, rest, rank_l, n, bytearray(m.n_chunks))
            if not more:
                break
            order += more
    # Whatever is left adds nothing: seeded random order (ascending tie rank).
    order += sorted(rest, key=rank_l.__getitem__)
    return np.asarray(order, dtype=np.int64)


def overlap_order(m: CoverageMatrix, rank: np.ndarray) -> np.ndarray:
    n = m.n_queries
    rows = _row_lists(m)
    rank_l = rank.tolist()
    row_at = [0] * n
    for r, k in enumerate(rank_l):
        row_at[k] = r
    csc = m.hits.tocsc()
    cptr, crows = csc.indptr.tolist(), csc.indices.tolist()
    size = [len(r) for r in rows]
    width = max(size, default=0) + 1
    overlap = [0] * n
    done = bytearray(n)
    covered = bytearray(m.n_chunks)

    def prio(r: int) -> int:
        # Largest overlap first, then smallest gain, then lowest tie rank.
        return ((width - overlap[r]) * width + (size[r] - overlap[r])) * n + rank_l[r]

    first = row_at[0] if n else None
    heap = [prio(r) for r in range(n) if r != first]
    heapq.heapify(heap)
    order: list[int] = []

    def take(r: int) -> None:
        done[r] = 1
        order.append(r)
        for c in rows[r]:
            if covered[c]:
                continue
            covered[c] = 1
            for q in crows[cptr[c]:cptr[c + 1]]:
                if not done[q]:
                    overlap[q] += 1
                    heapq.heappush(heap, prio(q))

    if first is not None:
        take(first)
    while heap:
        p = heapq.heappop(heap)
        r = row_at[p % n]
        if done[r] or p != prio(r):
            continue  # an outdated entry: the query was picked or its overlap grew since
        take(r)
    return np.asarray(order, dtype=np.int64)
