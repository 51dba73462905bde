"""CoverageMatrix's numpy CSR arrays against scipy's canonical CSR, on the same triples.

The reading commands count and slice the matrix with numpy alone (no scipy import);
everything else asks for the scipy views. Both must describe one matrix: the
arrays, the views and every slicing helper are checked against scipy built the way
it always was, on random triples, repeated hits included.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.matrix import CoverageMatrix


@st.composite
def triples(draw, repeats: bool = False):  # type: ignore[no-untyped-def]
    n_q = draw(st.integers(0, 7))
    n_c = draw(st.integers(1, 9))
    lists = []
    for _ in range(n_q):
        if repeats:
            cols = draw(st.lists(st.integers(0, n_c - 1), max_size=5))
        else:
            cols = draw(st.lists(st.integers(0, n_c - 1), max_size=min(5, n_c), unique=True))
        lists.append(cols)
    rows = [i for i, cols in enumerate(lists) for _ in cols]
    cols = [c for cs in lists for c in cs]
    ranks = [r for cs in lists for r in range(1, len(cs) + 1)]
    scores = draw(st.lists(st.one_of(st.floats(-5, 5), st.just(float("nan"))),
                           min_size=len(cols), max_size=len(cols)))
    # Hits arrive in any order (a data file's rows are not sorted).
    perm = draw(st.permutations(range(len(cols))))
    pick = lambda xs: np.array([xs[i] for i in perm])  # noqa: E731
    return n_q, n_c, pick(rows), pick(cols), pick(ranks), pick(scores)


def _build(t):  # type: ignore[no-untyped-def]
    n_q, n_c, rows, cols, ranks, scores = t
    return CoverageMatrix.from_triples(
        rows, cols, ranks, scores.astype(np.float64) if scores.size else np.zeros(0),
        query_ids=[f"q{i}" for i in range(n_q)], chunk_ids=[f"c{j}" for j in range(n_c)],
        doc_ids=[f"d{j % 3}" for j in range(n_c)])


def _scipy(t, data):  # type: ignore[no-untyped-def]
    """The matrix exactly as it was built before the arrays: scipy's canonical CSR."""
    n_q, n_c, rows, cols, _ranks, _scores = t
    m = sp.csr_matrix((data, (rows.astype(np.int64), cols.astype(np.int64))), shape=(n_q, n_c))
    m.sort_indices()
    return m


def _same(a: sp.csr_matrix, b: sp.csr_matrix) -> None:
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)  # NaN == NaN here


@settings(max_examples=200, deadline=None)
@given(triples(repeats=True))
def test_views_are_scipys_canonical_csr_of_the_triples(t) -> None:  # type: ignore[no-untyped-def]
    m = _build(t)
    ranks, scores = t[4].astype(np.int32), t[5].astype(np.float64)
    _same(m.ranks, _scipy(t, ranks))
    _same(m.scores, _scipy(t, scores))
    ref = _scipy(t, ranks)
    _same(m.hits, sp.csr_matrix((np.ones(ref.nnz, np.uint8), ref.indices, ref.indptr),
                                shape=ref.shape))
    np.testing.assert_array_equal(m.chunk_frequencies(),
                                  np.asarray(m.hits.sum(axis=0, dtype=np.int64)).ravel())


@settings(max_examples=200, deadline=None)
@given(triples(), st.data())
def test_slicing_helpers_agree_with_scipy(t, data) -> None:  # type: ignore[no-untyped-def]
    m = _build(t)
    h = m.hits
    csc = h.tocsc()
    assert m.queries_for_chunk() == [csc.indices[csc.indptr[j]:csc.indptr[j + 1]].tolist()
                                     for j in range(m.n_chunks)]
    rows = data.draw(st.lists(st.integers(0, max(m.n_queries - 1, 0)), max_size=8)
                     if m.n_queries else st.just([]))
    sub = m.select_rows(rows)
    _same(sub.ranks, m.ranks[np.asarray(rows, dtype=np.int64)])
    _same(sub.scores, m.scores[np.asarray(rows, dtype=np.int64)])
    assert sub.query_ids == [m.query_ids[i] for i in rows]
    cols = data.draw(st.lists(st.integers(0, m.n_chunks - 1), unique=True, max_size=m.n_chunks))
    part = m.select_columns(cols)
    _same(part.ranks, m.ranks[:, np.asarray(cols, dtype=np.int64)].tocsr().sorted_indices()
          if cols else sp.csr_matrix((m.n_queries, 0), dtype=np.int32))
    assert list(part.doc_ids) == [m.doc_ids[j] for j in cols]
    for i in range(m.n_queries):
        order = np.argsort(m.ranks[i].toarray().ravel()[m.ranks[i].indices], kind="stable")
        assert m.retrieved(i) == m.ranks[i].indices[order].tolist()


def test_a_hand_worked_matrix() -> None:
    """q0 retrieved c2 then c0; q1 retrieved c0; given out of order, as a data file holds them."""
    m = CoverageMatrix.from_triples(np.array([1, 0, 0]), np.array([0, 0, 2]), np.array([1, 2, 1]),
                                    np.array([0.5, 0.25, 0.75]), query_ids=["q0", "q1"],
                                    chunk_ids=["c0", "c1", "c2"])
    assert m.indptr.tolist() == [0, 2, 3] and m.indices.tolist() == [0, 2, 0]
    assert m.rank_data.tolist() == [2, 1, 1] and m.score_data.tolist() == [0.25, 0.75, 0.5]
    assert m.retrieved(0) == [2, 0] and m.retrieved_scores(0) == [0.75, 0.25]
    assert m.chunk_frequencies().tolist() == [2, 0, 1]
    assert m.queries_for_chunk() == [[0, 1], [], [0]]
    assert m.select_rows([1, 1, 0]).retrieved(2) == [2, 0]


def test_a_hit_outside_the_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="out of range"):
        CoverageMatrix.from_triples(np.array([0]), np.array([3]), np.array([1]), np.array([0.0]),
                                    query_ids=["q"], chunk_ids=["a", "b"])
