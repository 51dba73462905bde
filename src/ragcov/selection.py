"""Ordering a query pool for testing (docs/method.md §4): coverage-guided, random, overlap-biased.

Every strategy returns a full permutation of the pool plus its coverage curve,
so "the first B tests" and "tests needed to reach X% of reachable coverage" are
read off the same object.

* ``coverage``: greedy by gain, the number of chunks a query retrieves that
  the queries picked so far have not. It is *lazy* greedy: a query's gain can
  only fall as coverage grows, so a stale gain is an upper bound and only the
  query on top of the priority queue needs re-counting. Gains are small
  integers (at most k), so the queue holds one int per query, ``(K - gain) * n
  + tie_rank``, and ties go to the lowest seeded tie-break rank. Once no query
  adds anything (saturation) the rest follow by ``after_saturation``:
  ``random`` (seeded random order, the default) or ``reset`` (clear the
  covered set and continue greedily, as in "additional" prioritisation).
* ``random``: a seeded random permutation.
* ``overlap``: the redundancy-heavy opposite. The first query is the seeded
  random pick; then each step takes the query with the largest *overlap*
  ``|R(q) ∩ covered|`` (chunks it retrieves that are already covered), ties
  to the smaller gain ``|R(q) \\ covered|`` (the one adding least), then to
  the lowest tie-break rank. Overlaps only grow, so they are kept exact by
  incrementing the queries of each newly covered chunk.

Fault-revealing orders (:mod:`ragcov.fault_orders`, docs/selection.md) are chosen the
same way: ``confmargin-gain5`` (coverage's greedy with a bonus for queries the
retriever was unsure of) and, as research options, ``coverage-lowconf``,
``interleave`` and ``lowconf``. They read the recorded scores, never a label.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import coverage_curve

STRATEGIES = ("coverage", "random", "overlap")
# Orders that move likely failures forward (ragcov.fault_orders): the recommended one first,
# then the research options docs/selection.md compares it with.
FAULT_STRATEGIES = ("confmargin-gain5", "coverage-lowconf", "interleave", "lowconf")
ALL_STRATEGIES = STRATEGIES + FAULT_STRATEGIES
AFTER_SATURATION = ("random", "reset")
DEFAULT_AFTER_SATURATION = "random"
TARGETS = (50, 80, 90, 100)


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


def _overlap_order(m: CoverageMatrix, rank: np.ndarray) -> np.ndarray:
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


def select(m: CoverageMatrix, strategy: str, seed: int = 0,
           after_saturation: str = DEFAULT_AFTER_SATURATION) -> Selection:
    """Order the whole pool by ``strategy`` (see the module docstring for the rules)."""
    if strategy not in ALL_STRATEGIES:
        raise RagcovError(f"unknown strategy {strategy!r}: expected {', '.join(ALL_STRATEGIES)}")
    if after_saturation not in AFTER_SATURATION:
        raise RagcovError(f"--after-saturation must be random or reset, got {after_saturation!r}")
    if m.n_chunks == 0:
        raise RagcovError("chunk coverage is undefined for an empty corpus")
    rank = tie_ranks(m.n_queries, seed)
    if strategy == "coverage":
        order = coverage_order(m, rank, after_saturation)
    elif strategy == "overlap":
        order = _overlap_order(m, rank)
    elif strategy in FAULT_STRATEGIES:
        from ragcov.fault_orders import fault_order

        order = fault_order(m, strategy, seed)
    else:
        order = np.argsort(rank, kind="stable").astype(np.int64)
    curve = coverage_curve(m, order)
    pool = float(np.count_nonzero(np.diff(m.hits.tocsc().indptr))) / m.n_chunks
    sat = tests_to(curve, pool, 100) if m.n_queries else 0
    return Selection(strategy, seed, order, curve, pool, sat)


def mean_curve(selections: list[Selection]) -> np.ndarray:
    return np.mean(np.stack([s.curve for s in selections]), axis=0)


def cut_order(sel: Selection, budget: int | None = None,
              target: float | None = None) -> tuple[int, str | None]:
    """How many picks to keep under ``budget`` (tests) and ``target`` (% of pool CC), and why."""
    n, why = len(sel.order), None
    if target is not None:
        t = sel.tests_to(target)
        if t is not None and t < n:
            n, why = t, f"target {target:g}% of pool coverage"
    if budget is not None:
        if budget < 0:
            raise RagcovError(f"--budget must be at least 0, got {budget}")
        if budget < n:
            n, why = budget, f"budget of {budget} tests"
    return n, why


def order_document(m: CoverageMatrix, strategy: str, budget: int | None, target: float | None,
                   seed: int, repeats: int, after_saturation: str) -> dict[str, Any]:
    """The order file's content: the order, its curve, tests-to-X% and the cut (if any)."""
    sels = [select(m, strategy, seed=seed + i, after_saturation=after_saturation)
            for i in range(repeats)]
    sel = sels[0]
    n, why = cut_order(sel, budget, target)

    def ids(order: Any) -> list[str]:
        return [m.query_ids[int(r)] for r in order]

    doc: dict[str, Any] = {
        "strategy": strategy,
        "seed": seed,
        "after_saturation": after_saturation if strategy == "coverage" else None,
        "pool_size": m.n_queries,
        "pool_coverage": sel.pool_coverage,
        "saturated_at": sel.saturated_at,
        "order": ids(sel.order[:n]),
        "curve": [float(v) for v in sel.curve[:n]],
        "tests_to": {f"{t}": sel.tests_to(t) for t in TARGETS} if n == len(sel.order)
        else {f"{t}": _within(sel.tests_to(t), n) for t in TARGETS},
        "cut": None if why is None else {"n": n, "by": why},
    }
    if repeats > 1:
        doc["runs"] = [{"seed": s.seed, "order": ids(s.order[:n]),
                        "tests_to": {f"{t}": _within(s.tests_to(t), n) for t in TARGETS}}
                       for s in sels]
        doc["mean_curve"] = [float(v) for v in mean_curve(sels)[:n]]
    doc["suite"] = [{"id": m.query_ids[int(r)], "text": m.query_texts[int(r)]}
                    for r in sel.order[:n]]
    return doc


def _within(n_to: int | None, n: int) -> int | None:
    return n_to if n_to is not None and n_to <= n else None
