"""The orders RQ3 compares: the paper's three and the research orders (see :mod:`research.rq3`)."""

from __future__ import annotations

import numpy as np

from ragcov.matrix import CoverageMatrix
from ragcov.selection import select, tie_ranks
from ragcov.selection.fault import fault_order, interleave, priority, top_scores

BASELINES = ("coverage", "random", "overlap")
RESEARCH = ("coverage-reset", "coverage-lowconf", "interleave", "dissimilar", "lowconf")
# The orders steered by self-query probes and score margins (ragcov.selection.fault):
# each risk signal alone, as the greedy's tie-break, as a bonus on the gain, as a share
# of the picks, and the two combined.
PROBED = ("margin", "coverage-margin", "margin-gain2", "margin-gain3", "margin-gain4",
          "margin-gain5", "margin-share2", "margin-share4", "confmargin", "confmargin-gain4",
          "confmargin-gain5", "lowconf-gain5", "lowconf-share4",
          "hub", "coverage-hub", "hub-gain3", "hub-gain5", "hub-share4", "hubconf",
          "coverage-hubconf", "hubconf-gain5", "hubconf-share4")
NEEDS_PROBES = tuple(name for name in PROBED if "hub" in name)


def greedy_order(m: CoverageMatrix, priority: np.ndarray) -> np.ndarray:
    """Coverage greedy (most new chunks first); ties and the saturated tail by ascending priority.

    ``priority`` is a permutation of the rows; with ``tie_ranks(n, seed)`` this is
    ``select(m, "coverage", seed)``'s order.
    """
    from ragcov.selection import coverage_order

    return coverage_order(m, np.asarray(priority, dtype=np.int64))


def dissimilar_order(m: CoverageMatrix, priority: np.ndarray) -> np.ndarray:
    """Farthest-first on Jaccard distance: next = the query least similar to all picked so far."""
    n = m.n_queries
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    h = m.hits.astype(np.int32).tocsr()
    ht = h.T.tocsc()
    sizes = np.diff(h.indptr).astype(np.float64)
    closest = np.full(n, -1.0)              # max Jaccard to any picked query
    picked = np.zeros(n, dtype=bool)
    order = []
    r = int(np.argmin(priority))
    for _ in range(n):
        order.append(r)
        picked[r] = True
        inter = np.asarray((h @ ht[:, r]).todense()).ravel().astype(np.float64)
        union = sizes + sizes[r] - inter
        jac = np.divide(inter, union, out=np.zeros(n), where=union > 0)
        np.maximum(closest, jac, out=closest)
        if picked.all():
            break
        key = np.where(picked, np.inf, closest)
        low = np.flatnonzero(key == key.min())
        r = int(low[np.argmin(priority[low])])
    return np.asarray(order, dtype=np.int64)


def confidence_priority(m: CoverageMatrix, seed: int) -> np.ndarray | None:
    """Rank of each query by ascending best score (seeded ties); None when scores are missing."""
    top = top_scores(m)
    if np.isnan(top).any():
        return None
    return priority(-top, seed)


def build_orders(m: CoverageMatrix, repeats: int, seed: int,
                 k_occurrence: np.ndarray | None = None) -> tuple[dict[str, list[np.ndarray]],
                                                                   list[str]]:
    """Every order family, ``repeats`` runs each (seeds ``seed``, ``seed + 1``, ...).

    ``k_occurrence`` is each chunk's k-occurrence among the self-query probes; without
    it (or without scores) the orders that need it are left out, with a note.
    """
    seeds = [seed + i for i in range(repeats)]
    orders: dict[str, list[np.ndarray]] = {name: [] for name in BASELINES + RESEARCH + PROBED}
    notes: list[str] = []
    for s in seeds:
        for strategy in BASELINES:
            orders[strategy].append(select(m, strategy, seed=s).order)
        orders["coverage-reset"].append(select(m, "coverage", seed=s, after_saturation="reset").order)
        orders["dissimilar"].append(dissimilar_order(m, tie_ranks(m.n_queries, s)))
    for s in seeds:
        prio = confidence_priority(m, s)
        if prio is None:
            notes.append("the retriever recorded no scores: lowconf orders left out")
            for name in ("coverage-lowconf", "interleave", "lowconf"):
                del orders[name]
            break
        lowconf = np.argsort(prio, kind="stable").astype(np.int64)
        orders["coverage-lowconf"].append(greedy_order(m, prio))
        orders["lowconf"].append(lowconf)
        orders["interleave"].append(interleave(orders["coverage"][s - seed], lowconf))
    probed = k_occurrence is not None and bool(np.any(k_occurrence))
    if not probed:
        notes.append("no self-query probes: the hub orders left out")
    for name in PROBED:
        if name not in orders or (name in NEEDS_PROBES and not probed):
            orders.pop(name, None)
            continue
        if "lowconf" not in orders and ("margin" in name or "conf" in name):
            del orders[name]        # no scores: no margin, no confidence
            continue
        orders[name] = [fault_order(m, name, s, k_occurrence) for s in seeds]
    return orders, notes

