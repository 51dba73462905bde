"""RQ3's research orders against references written out by hand."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.matrix import CoverageMatrix
from ragcov.selection import select, tie_ranks
from research.rq3.orders import (
    confidence_priority,
    dissimilar_order,
    greedy_order,
    interleave,
    top_scores,
)

set_lists = st.lists(st.sets(st.integers(0, 9), max_size=4), min_size=1, max_size=15)


@settings(max_examples=60, deadline=None)
@given(set_lists, st.integers(0, 50))
def test_greedy_order_with_tie_ranks_is_the_selection_order(sets, seed: int) -> None:
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 10)
    mine = greedy_order(m, tie_ranks(m.n_queries, seed))
    assert mine.tolist() == select(m, "coverage", seed=seed).order.tolist()


def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@settings(max_examples=60, deadline=None)
@given(set_lists, st.integers(0, 50))
def test_dissimilar_order_is_farthest_first(sets, seed: int) -> None:
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 10)
    prio = tie_ranks(m.n_queries, seed)
    # Reference: the first pick is the lowest priority; then the query whose highest Jaccard
    # with any picked query is smallest, ties to the lowest priority.
    left = set(range(len(sets)))
    ref = [min(left, key=lambda r: prio[r])]
    left.remove(ref[0])
    while left:
        nxt = min(left, key=lambda r: (max(_jaccard(sets[r], sets[p]) for p in ref), prio[r]))
        ref.append(nxt)
        left.remove(nxt)
    assert dissimilar_order(m, prio).tolist() == ref


def test_interleave() -> None:
    assert interleave(np.array([0, 1, 2, 3]), np.array([3, 2, 1, 0])).tolist() == [0, 3, 1, 2]
    assert interleave(np.array([2, 0, 1]), np.array([2, 1, 0])).tolist() == [2, 1, 0]


def test_confidence_priority_puts_low_scores_first() -> None:
    m = CoverageMatrix.from_triples(
        rows=[0, 0, 1, 2, 2], cols=[0, 1, 1, 2, 0], ranks=[1, 2, 1, 1, 2],
        scores=[0.9, 0.5, 0.2, 0.6, 0.1], query_ids=["a", "b", "c", "d"],
        chunk_ids=["x", "y", "z"])
    assert top_scores(m).tolist() == [0.9, 0.2, 0.6, -np.inf]
    prio = confidence_priority(m, seed=0)
    assert np.argsort(prio).tolist() == [3, 1, 2, 0]
    unscored = CoverageMatrix.from_sets([[0], [1]], 2)
    assert confidence_priority(unscored, 0) is None
