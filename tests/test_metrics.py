"""The metrics of docs/method.md §2–3 against hand-worked examples and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import (
    chunk_coverage,
    coverage_curve,
    gini,
    mean_pairwise_jaccard,
    normalized_entropy,
    per_document,
    redundant_tests,
    unique_contributions,
)

# Hand-worked suite over 6 chunks c0..c5 in two documents (A: c0-c2, B: c3-c5), k = 2.
#   q0 -> {c0, c1}
#   q1 -> {c1, c2}
#   q2 -> {c0, c1}
# covered: c0, c1, c2 -> CC = 3/6 = 0.5; document A 3/3, document B 0/3.
# frequencies f = [2, 3, 1, 0, 0, 0], sum 6, p = [1/3, 1/2, 1/6]
# H = -(1/3 ln 1/3 + 1/2 ln 1/2 + 1/6 ln 1/6) = 1.011404...
#   over retrieved (N=3): H / ln 3 = 0.920619...
#   over corpus    (N=6): H / ln 6 = 0.564575...
# Gini over retrieved, sorted x = [1, 2, 3], n=3:
#   G = 2*(1*1 + 2*2 + 3*3)/(3*6) - 4/3 = 28/18 - 24/18 = 4/18 = 0.2222...
# Gini over corpus, x = [0,0,0,1,2,3], n=6:
#   G = 2*(4*1 + 5*2 + 6*3)/(6*6) - 7/6 = 64/36 - 42/36 = 22/36 = 0.6111...
# Jaccard: J(q0,q1) = 1/3, J(q0,q2) = 1, J(q1,q2) = 1/3 -> mean = (5/3)/3 = 5/9.
SETS = [[0, 1], [1, 2], [0, 1]]
DOCS = ["A", "A", "A", "B", "B", "B"]


@pytest.fixture
def hand() -> CoverageMatrix:
    return CoverageMatrix.from_sets(SETS, 6, doc_ids=DOCS)


def test_chunk_coverage_hand_worked(hand: CoverageMatrix) -> None:
    assert chunk_coverage(hand) == pytest.approx(0.5)


def test_per_document_hand_worked(hand: CoverageMatrix) -> None:
    assert per_document(hand) == {"A": (3, 3), "B": (3, 0)}


def test_entropy_both_supports(hand: CoverageMatrix) -> None:
    f = hand.chunk_frequencies()
    assert f.tolist() == [2, 3, 1, 0, 0, 0]
    h = -(1 / 3 * math.log(1 / 3) + 1 / 2 * math.log(1 / 2) + 1 / 6 * math.log(1 / 6))
    assert normalized_entropy(f, "retrieved") == pytest.approx(h / math.log(3))
    assert normalized_entropy(f, "corpus") == pytest.approx(h / math.log(6))
    assert normalized_entropy(f, "retrieved") == pytest.approx(0.920619, abs=1e-6)


def test_gini_both_variants(hand: CoverageMatrix) -> None:
    f = hand.chunk_frequencies()
    assert gini(f, "retrieved") == pytest.approx(4 / 18)
    assert gini(f, "corpus") == pytest.approx(22 / 36)


def test_mean_pairwise_jaccard_hand_worked(hand: CoverageMatrix) -> None:
    assert mean_pairwise_jaccard(hand) == pytest.approx(5 / 9)


def test_edge_cases_are_defined() -> None:
    assert normalized_entropy(np.array([0, 0, 0])) == 0.0
    assert normalized_entropy(np.array([5, 0, 0])) == 0.0      # one chunk: no spread
    assert gini(np.array([0, 0])) == 0.0
    assert gini(np.array([4, 4, 4, 4])) == pytest.approx(0.0)  # perfectly even
    single = CoverageMatrix.from_sets([[0, 1]], 3)
    assert mean_pairwise_jaccard(single) == 0.0
    disjoint = CoverageMatrix.from_sets([[0], [1], [2]], 3)
    assert mean_pairwise_jaccard(disjoint) == 0.0
    with pytest.raises(RagcovError, match="empty corpus"):
        chunk_coverage(CoverageMatrix.from_sets([[]], 0))


def test_uniform_retrieval_has_entropy_one() -> None:
    m = CoverageMatrix.from_sets([[0, 1], [2, 3]], 4)
    assert normalized_entropy(m.chunk_frequencies(), "corpus") == pytest.approx(1.0)
    assert gini(m.chunk_frequencies(), "corpus") == pytest.approx(0.0)


def test_redundant_tests_hand_worked(hand: CoverageMatrix) -> None:
    # Only q1 retrieves c2 alone -> unique contributions [0, 1, 0].
    assert unique_contributions(hand).tolist() == [0, 1, 0]
    red = {r.query_id: r for r in redundant_tests(hand, jaccard_threshold=0.8)}
    assert set(red) == {"q0", "q2"}
    assert red["q0"].most_similar == "q2" and red["q0"].jaccard == pytest.approx(1.0)
    assert set(red["q0"].reasons) == {"no-unique-contribution", "near-duplicate"}
    # Identical sets: only the later is said to be subsumed, by the earlier.
    assert red["q0"].subsumed_by is None and red["q2"].subsumed_by == "q0"
    assert red["q2"].why == "retrieves a subset of q0" and red["q0"].why == "Jaccard 1.00 with q2"


def test_queries_for_each_chunk(hand: CoverageMatrix) -> None:
    assert [[hand.query_ids[r] for r in rows] for rows in hand.queries_for_chunk()] == \
        [["q0", "q2"], ["q0", "q1", "q2"], ["q1"], [], [], []]


def test_coverage_curve_hand_worked(hand: CoverageMatrix) -> None:
    # order q1, q0, q2: {1,2} -> 2/6, +{0} -> 3/6, +nothing -> 3/6
    assert coverage_curve(hand, [1, 0, 2]).tolist() == pytest.approx([2 / 6, 3 / 6, 3 / 6])


# ---------------------------------------------------------------- properties
suites = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.lists(st.integers(0, n - 1), max_size=5, unique=True), min_size=1, max_size=12),
    )
)


@given(suites)
@settings(max_examples=200, deadline=None)
def test_cc_bounds(data) -> None:
    n, sets = data
    m = CoverageMatrix.from_sets(sets, n)
    cc = chunk_coverage(m)
    k = max(len(s) for s in sets)
    assert 0.0 <= cc <= min(1.0, k * len(sets) / n) + 1e-12


@given(suites, st.lists(st.integers(0, 29), max_size=5, unique=True))
@settings(max_examples=200, deadline=None)
def test_cc_never_drops_when_a_query_is_added(data, extra) -> None:
    n, sets = data
    extra = [c for c in extra if c < n]
    before = chunk_coverage(CoverageMatrix.from_sets(sets, n))
    after = chunk_coverage(CoverageMatrix.from_sets([*sets, extra], n))
    assert after >= before


@given(suites)
@settings(max_examples=150, deadline=None)
def test_jaccard_matches_pairwise_loop(data) -> None:
    n, sets = data
    m = CoverageMatrix.from_sets(sets, n)
    pairs = []
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            a, b = set(sets[i]), set(sets[j])
            pairs.append(len(a & b) / len(a | b) if a | b else 0.0)
    expected = sum(pairs) / len(pairs) if pairs else 0.0
    assert mean_pairwise_jaccard(m) == pytest.approx(expected)
    assert mean_pairwise_jaccard(m, block=3) == pytest.approx(expected)  # row blocks agree


@given(st.lists(st.integers(0, 50), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_entropy_and_gini_ranges(freq) -> None:
    f = np.array(freq)
    for support in ("retrieved", "corpus"):
        assert -1e-12 <= normalized_entropy(f, support) <= 1 + 1e-12
        assert -1e-12 <= gini(f, support) < 1


@given(suites)
@settings(max_examples=100, deadline=None)
def test_curve_ends_at_cc(data) -> None:
    n, sets = data
    m = CoverageMatrix.from_sets(sets, n)
    curve = coverage_curve(m, list(range(len(sets))))
    assert curve[-1] == pytest.approx(chunk_coverage(m))
    assert np.all(np.diff(curve) >= 0)


def test_jaccard_is_estimated_from_random_pairs_past_the_budget(monkeypatch) -> None:
    """Past the co-retrieved pair budget the mean comes from 200,000 seeded random pairs:
    within four standard errors (4 x 0.5/sqrt(200,000) = 0.0045) of the exact mean, the
    same on every run, and the summary and its headline say it was estimated."""
    import ragcov.metrics as metrics
    from ragcov.reporters.table import render_headline
    from ragcov.summary import summarize

    rng = np.random.default_rng(7)
    sets = [sorted({int(rng.random() ** 2 * 60) for _ in range(4)}) for _ in range(600)]
    m = CoverageMatrix.from_sets(sets, 60)
    exact, sampled = metrics.pairwise_jaccard(m)
    assert sampled == 0 and exact == pytest.approx(mean_pairwise_jaccard(m))
    monkeypatch.setattr(metrics, "EXACT_PAIR_BUDGET", 0)
    estimate, sampled = metrics.pairwise_jaccard(m)
    assert sampled == metrics.SAMPLED_PAIRS
    assert abs(estimate - exact) < 4 * 0.5 / math.sqrt(sampled)
    assert estimate != exact  # really the sampled path
    assert metrics.pairwise_jaccard(m) == (estimate, sampled)  # seeded
    s = summarize(m)
    assert (s.mean_pairwise_jaccard, s.jaccard_sampled_pairs) == (estimate, sampled)
    assert "(estimated from 200,000 random pairs)" in render_headline(s)


# ------------------------------------------------------------ droppable together
def test_an_identical_pair_is_not_dropped_whole() -> None:
    """Both tests of an identical pair are redundant one by one; removing both lost their
    chunks (191 -> 188 covered). One set that can go together keeps one of them."""
    from ragcov.metrics import droppable_together, redundant_tests

    m = CoverageMatrix.from_sets([[0, 1], [0, 1], [2], [2, 3], [4]], n_chunks=5)
    listed = {t.query_id: t for t in redundant_tests(m)}
    assert {"q0", "q1", "q2"} <= set(listed)
    drop = droppable_together(m)
    assert drop.tolist() == [False, True, True, False, False]
    assert listed["q1"].droppable and not listed["q0"].droppable


@given(st.lists(st.lists(st.integers(0, 11), max_size=4), min_size=1, max_size=14))
@settings(max_examples=200, deadline=None)
def test_dropping_the_set_keeps_every_covered_chunk(sets: list[list[int]]) -> None:
    from ragcov.metrics import droppable_together, unique_contributions

    m = CoverageMatrix.from_sets(sets, n_chunks=12)
    drop = droppable_together(m)
    kept = [set(s) for s, d in zip(sets, drop) if not d]
    assert set().union(*kept) == set().union(*map(set, sets))  # nothing lost
    assert not drop[unique_contributions(m) > 0].any()          # no test with a chunk of its own
    for i, s in enumerate(kept):                                 # minimal: none of the rest can go
        others = set().union(*(t for j, t in enumerate(kept) if j != i))
        assert not s or not s <= others
