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

Fault-revealing orders (:mod:`ragcov.selection.fault`, docs/selection.md) are chosen the
same way: ``confmargin-gain5`` (coverage's greedy with a bonus for queries the
retriever was unsure of) and, as research options, ``coverage-lowconf``,
``interleave`` and ``lowconf``. They read the recorded scores, never a label.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import coverage_curve
from ragcov.selection.fault import fault_order
from ragcov.selection.greedy import (
    AFTER_SATURATION,
    DEFAULT_AFTER_SATURATION,
    Selection,
    coverage_order,
    overlap_order,
    tests_to,
    tie_ranks,
)
from ragcov.selection.greedy import (
    STRATEGIES as STRATEGIES,
)

# Orders that move likely failures forward (ragcov.selection.fault): the recommended one first,
# then the research options docs/selection.md compares it with.
FAULT_STRATEGIES = ("confmargin-gain5", "coverage-lowconf", "interleave", "lowconf")

def _fault(name: str, m: CoverageMatrix, rank: np.ndarray, seed: int, after: str) -> np.ndarray:
    return fault_order(m, name, seed)


# The one registry of orders: name -> (matrix, seeded tie ranks, seed, after saturation) ->
# the order of the pool. A strategy added here is a `ragcov select --strategy` at once
# (docs/extending.md).
Order = Callable[[CoverageMatrix, np.ndarray, int, str], np.ndarray]
ORDERS: dict[str, Order] = {
    "coverage": lambda m, rank, seed, after: coverage_order(m, rank, after),
    "random": lambda m, rank, seed, after: np.argsort(rank, kind="stable").astype(np.int64),
    "overlap": lambda m, rank, seed, after: overlap_order(m, rank),
    **{name: functools.partial(_fault, name) for name in FAULT_STRATEGIES},
}
ALL_STRATEGIES = tuple(ORDERS)
TARGETS = (50, 80, 90, 100)


def select(m: CoverageMatrix, strategy: str, seed: int = 0,
           after_saturation: str = DEFAULT_AFTER_SATURATION) -> Selection:
    """Order the whole pool by ``strategy`` (see the module docstring for the rules)."""
    if strategy not in ALL_STRATEGIES:
        raise RagcovError(f"unknown strategy {strategy!r}: expected {', '.join(ALL_STRATEGIES)}")
    if after_saturation not in AFTER_SATURATION:
        raise RagcovError(f"--after-saturation must be random or reset, got {after_saturation!r}")
    if m.n_chunks == 0:
        raise RagcovError("chunk coverage is undefined for an empty corpus")
    order = ORDERS[strategy](m, tie_ranks(m.n_queries, seed), seed, after_saturation)
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
        "cut": None if why is None else {"n": n, "by": why,
                                         "lost_chunks": _lost_by_cut(m, sel.order[:n])},
    }
    if repeats > 1:
        doc["runs"] = [{"seed": s.seed, "order": ids(s.order[:n]),
                        "tests_to": {f"{t}": _within(s.tests_to(t), n) for t in TARGETS}}
                       for s in sels]
        doc["mean_curve"] = [float(v) for v in mean_curve(sels)[:n]]
    return doc


def _lost_by_cut(m: CoverageMatrix, kept: Any) -> list[str]:
    """The chunks the whole pool covers and the kept tests do not: what the cut costs."""
    mine = np.zeros(m.n_chunks, dtype=bool)
    for r in kept:
        mine[m.indices[m.indptr[int(r)]:m.indptr[int(r) + 1]]] = True
    return [m.chunk_ids[j] for j in np.flatnonzero(m.covered() & ~mine)]


def _within(n_to: int | None, n: int) -> int | None:
    return n_to if n_to is not None and n_to <= n else None
