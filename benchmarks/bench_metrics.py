"""Benchmark: CC, entropy, Gini and per-document CC over 10M synthetic hits.

1,000,000 queries x k = 10 over 1,000,000 chunks (10 chunks per document,
skewed chunk popularity), through the public functions of ragcov.metrics, against
a plain-Python baseline in the same process: the union of the per-query chunk
sets for CC, a Counter of chunk frequencies for entropy and Gini (both
variants), and a dict count per document. Aim (issue 2): under 1 s.

Run alone: ``.venv/bin/python benchmarks/bench_metrics.py [--quick|--tiny]``
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, row, skewed_hits  # noqa: E402

from ragcov.matrix import CoverageMatrix  # noqa: E402
from ragcov.metrics import chunk_coverage, gini, normalized_entropy, per_document  # noqa: E402

K = 10
CHUNKS_PER_DOC = 10


def build(n_queries: int, n_chunks: int) -> tuple[CoverageMatrix, np.ndarray]:
    cols = skewed_hits(n_queries, n_chunks, K, seed=0)
    rows = np.repeat(np.arange(n_queries), K)
    ranks = np.tile(np.arange(1, K + 1), n_queries)
    m = CoverageMatrix.from_triples(
        rows, cols.ravel(), ranks, np.full(n_queries * K, np.nan),
        query_ids=[f"q{i}" for i in range(n_queries)],
        chunk_ids=[f"c{j}" for j in range(n_chunks)],
        doc_ids=[f"d{j // CHUNKS_PER_DOC}" for j in range(n_chunks)], k=K)
    return m, cols


def ragcov_metrics(m: CoverageMatrix) -> tuple:
    cc = chunk_coverage(m)
    freq = m.chunk_frequencies()
    return (cc, normalized_entropy(freq, "retrieved"), normalized_entropy(freq, "corpus"),
            gini(freq, "retrieved"), gini(freq, "corpus"), per_document(m))


def python_metrics(sets: list[list[int]], doc_of: list[str]) -> tuple:
    n = len(doc_of)
    covered: set[int] = set()
    for s in sets:
        covered.update(s)
    cc = len(covered) / n
    freq = Counter()
    for s in sets:
        freq.update(s)
    total = sum(freq.values())
    h = -sum(c / total * math.log(c / total) for c in freq.values())
    ent_ret, ent_cor = h / math.log(len(freq)), h / math.log(n)

    def gini_of(values: list[int]) -> float:
        xs = sorted(values)
        m = len(xs)
        return 2 * sum(i * x for i, x in enumerate(xs, 1)) / (m * sum(xs)) - (m + 1) / m

    g_ret = gini_of(list(freq.values()))
    g_cor = gini_of(list(freq.values()) + [0] * (n - len(freq)))
    chunks: dict[str, int] = {}
    cov: dict[str, int] = {}
    for j, d in enumerate(doc_of):
        chunks[d] = chunks.get(d, 0) + 1
        if j in covered:
            cov[d] = cov.get(d, 0) + 1
    docs = {d: (c, cov.get(d, 0)) for d, c in chunks.items()}
    return cc, ent_ret, ent_cor, g_ret, g_cor, docs


MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 20_000, "quick": 100_000, "full": 1_000_000}


def main(mode: str = "full") -> list[dict]:
    quick = mode != "full"
    n_queries = n_chunks = SIZES[mode]
    m, cols = build(n_queries, n_chunks)
    sets = cols.tolist()
    doc_of = [str(d) for d in m.doc_ids]
    fast = ragcov_metrics(m)
    slow = python_metrics(sets, doc_of)
    # Same numbers both ways, or the timing means nothing.
    assert fast[5] == slow[5] and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                                      for a, b in zip(fast[:5], slow[:5])), (fast[:5], slow[:5])
    t = best_of(lambda: ragcov_metrics(m), 3)
    base = best_of(lambda: python_metrics(sets, doc_of), 1)
    hits = n_queries * K
    return [row(f"metrics: CC+entropy+Gini (both variants)+per-doc CC, {hits / 1e6:g}M hits "
                f"({n_queries:,} q x k={K} over {n_chunks:,} chunks)",
                t, base, aim="< 1 s" if not quick else "", met=(t < 1.0) if not quick else None,
                note="baseline: plain-Python set union + Counter + dicts, same process; "
                     "best of 3 (ragcov), 1 (baseline)")]


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
