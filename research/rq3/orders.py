"""The orders RQ3 compares: the paper's three and the research orders (see :mod:`research.rq3`)."""

from __future__ import annotations

import numpy as np

from ragcov.matrix import CoverageMatrix
from ragcov.selection import select, tie_ranks

BASELINES = ("coverage", "random", "overlap")
RESEARCH = ("coverage-reset", "coverage-lowconf", "interleave", "dissimilar", "lowconf")


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


def interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Alternate picks from two orders of the same rows, skipping rows already taken."""
    n = len(first)
    taken = np.zeros(n, dtype=bool)
    out: list[int] = []
    i = j = 0
    turn = 0
    while len(out) < n:
        src, pos = (first, i) if turn == 0 else (second, j)
        while pos < n and taken[src[pos]]:
            pos += 1
        if pos < n:
            out.append(int(src[pos]))
            taken[src[pos]] = True
            pos += 1
        if turn == 0:
            i = pos
        else:
            j = pos
        turn ^= 1
    return np.asarray(out, dtype=np.int64)


def top_scores(m: CoverageMatrix) -> np.ndarray:
    """Each query's best (rank-1) retrieval score; -inf when it retrieved nothing, NaN if unscored."""
    out = np.full(m.n_queries, -np.inf)
    r = m.ranks.tocoo()
    first = r.data == 1
    s = m.scores.tocoo()
    out[r.row[first]] = s.data[first]
    return out


def confidence_priority(m: CoverageMatrix, seed: int) -> np.ndarray | None:
    """Rank of each query by ascending best score (seeded ties); None when scores are missing."""
    top = top_scores(m)
    if np.isnan(top).any():
        return None
    ties = tie_ranks(m.n_queries, seed)
    order = np.lexsort((ties, top))
    prio = np.empty(m.n_queries, dtype=np.int64)
    prio[order] = np.arange(m.n_queries)
    return prio


def build_orders(m: CoverageMatrix, repeats: int, seed: int) -> tuple[dict[str, list[np.ndarray]],
                                                                       list[str]]:
    """Every order family, ``repeats`` runs each (seeds ``seed``, ``seed + 1``, ...)."""
    seeds = [seed + i for i in range(repeats)]
    orders: dict[str, list[np.ndarray]] = {name: [] for name in BASELINES + RESEARCH}
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
    return orders, notes

