"""BM25 top-k of a large batch, compiled with numba: the probe run's hot loop.

A probe run asks one query per chunk, so the sparse product that scores a batch grows
as probes x corpus: at 100,000 chunks it is about 10^10 term-score additions, most of
a probe run. This kernel makes the same additions in the same order into one float32
accumulator per thread, so every score is bit for bit the sparse product's (and
bm25s's), and keeps each query's top k as it goes (score descending, ties by corpus
order, as :meth:`BM25Retriever._top_k` orders them), on every core, without
building the (queries x chunks) score matrix.

numba is optional (``pip install 'ragcov[fast]'``): without it, or for a batch too
small to repay its compilation (about two seconds, once per machine: the compiled code
is cached), the retriever uses the sparse product. ``tests/test_bm25.py`` checks the two
give the same top-k, scores and ties.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

# Below this many (query, chunk) pairs in a batch, the sparse product is as fast.
MIN_PAIRS = 5_000_000
# numba's parallel range once numba is imported; compiled code never calls this one.
prange = range


@cache
def kernel() -> Callable[..., tuple[np.ndarray, np.ndarray]] | None:
    """The compiled top-k, or None where numba is not installed."""
    global prange
    try:
        import numba
    except ImportError:
        return None
    prange = numba.prange
    return numba.njit(parallel=True, cache=True, nogil=True)(_top_k)


def usable(n_queries: int, n_chunks: int) -> bool:
    return n_queries * n_chunks >= MIN_PAIRS and kernel() is not None


def top_k(q_indptr: np.ndarray, q_terms: np.ndarray, postings: Any, k: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """Per query, its ``k`` best chunks (-1 where fewer scored above 0) and their scores.

    ``q_indptr``/``q_terms``: each query's term ids in query order, repeats included;
    ``postings``: the (term x chunk) CSR matrix of per-term BM25 scores (float32), every
    stored score positive.
    """
    run = kernel()
    assert run is not None, "numba is not installed"
    n_threads = _threads()
    n_queries = len(q_indptr) - 1
    blocks = max(1, min(n_queries, n_threads * 4))  # a few blocks per thread: even finish
    # int32 chunk positions: the postings are streamed once per query term, so their
    # width is most of the kernel's memory traffic.
    return run(q_indptr.astype(np.int64), q_terms.astype(np.int64),
               postings.indptr.astype(np.int64), postings.indices.astype(np.int32, copy=False),
               postings.data.astype(np.float32, copy=False), postings.shape[1], k, blocks)


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _top_k(q_indptr, q_terms, p_indptr, p_indices, p_data, n_docs, k, n_blocks):  # type: ignore[no-untyped-def]
    n_q = q_indptr.size - 1
    out_docs = np.full((n_q, k), -1, np.int64)
    out_scores = np.zeros((n_q, k), np.float32)
    for b in prange(n_blocks):
        acc = np.zeros(n_docs, np.float32)  # back to zeros after each query
        touched = np.empty(n_docs + 1, np.int64)  # + 1: the slot written and not kept
        best_d = np.empty(k, np.int64)
        best_s = np.empty(k, np.float32)
        for q in range(b * n_q // n_blocks, (b + 1) * n_q // n_blocks):
            n_touched = 0
            for t in range(q_indptr[q], q_indptr[q + 1]):
                term = q_terms[t]
                for p in range(p_indptr[term], p_indptr[term + 1]):
                    d = p_indices[p]
                    # Term scores are positive (the caller leaves zeros out): a chunk at
                    # zero has not been touched by this query yet. Written without a
                    # branch: whether a chunk is new is a coin toss the CPU cannot predict.
                    touched[n_touched] = d
                    n_touched += acc[d] == 0
                    acc[d] += p_data[p]
            # The top k so far, worst last; (ws, wd) is the worst once k are held. Each
            # touched chunk's sum is read once and its accumulator cleared for the next query.
            m = 0
            ws, wd = np.float32(0.0), 0
            for i in range(n_touched):
                d = touched[i]
                s = acc[d]
                acc[d] = 0
                if m == k:
                    if s < ws or (s == ws and d > wd):
                        continue
                    j = k - 1
                else:
                    j = m
                    m += 1
                # Insert at j, moving worse entries down: score descending, then corpus order.
                while j > 0 and (best_s[j - 1] < s or (best_s[j - 1] == s and best_d[j - 1] > d)):
                    best_s[j] = best_s[j - 1]
                    best_d[j] = best_d[j - 1]
                    j -= 1
                best_s[j] = s
                best_d[j] = d
                if m == k:
                    ws, wd = best_s[k - 1], best_d[k - 1]
            for j in range(m):
                out_docs[q, j] = best_d[j]
                out_scores[q, j] = best_s[j]
    return out_docs, out_scores
