"""RQ1: correlations recomputed independently, undefined and impossible cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage, mean_pairwise_jaccard, normalized_entropy
from research.rq1 import correlate
from research.tests.helpers import random_matrix


def test_rq1_correlations_match_an_independent_recount():
    m = random_matrix()
    rows, samples = correlate(m.hits, [5, 10], suites=20, seed=4)
    assert len(samples) == 40 and len(rows) == 2 * 5
    # Redraw the same suites and recompute every measure through the matrix API.
    rng = np.random.default_rng(4)
    for size in (5, 10):
        drawn = [np.sort(rng.choice(m.n_queries, size=size, replace=False)) for _ in range(20)]
        mine = [s for s in samples if s["size"] == size]
        cc, ent, jac = [], [], []
        for idx, s in zip(drawn, mine):
            sub = m.select_rows(idx)
            cc.append(chunk_coverage(sub))
            ent.append(normalized_entropy(sub.chunk_frequencies(), "retrieved"))
            jac.append(mean_pairwise_jaccard(sub))
            assert s["cc"] == pytest.approx(cc[-1])
            assert s["jaccard"] == pytest.approx(jac[-1])
        by = {r["measure"]: r for r in rows if r["size"] == size}
        assert by["entropy_retrieved"]["pearson_r"] == pytest.approx(stats.pearsonr(cc, ent)[0])
        assert by["jaccard"]["spearman_rho"] == pytest.approx(stats.spearmanr(cc, jac)[0])
        assert by["jaccard"]["pearson_p"] == pytest.approx(stats.pearsonr(cc, jac)[1])


def test_rq1_constant_measures_give_no_correlation():
    # Every query retrieves its own two chunks: all suites of a size have the same CC.
    m = CoverageMatrix.from_sets([[2 * i, 2 * i + 1] for i in range(10)], 20)
    rows, _ = correlate(m.hits, [3], suites=5, seed=0)
    assert all(r["pearson_r"] is None and r["agrees"] is None for r in rows)


def test_rq1_rejects_suites_larger_than_the_pool():
    m = random_matrix(n=8)
    with pytest.raises(RagcovError, match="exceed the pool"):
        correlate(m.hits, [5, 10], suites=10, seed=0)
