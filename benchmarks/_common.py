"""Shared pieces of the benchmarks: synthetic hit data and careful timing.

The machine the figures come from may be shared, so each timing is the best of a
few repeats (wall clock), and both sides of a ratio run in the same process.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def skewed_hits(n_queries: int, n_chunks: int, k: int, seed: int = 0) -> np.ndarray:
    """(n_queries, k) distinct chunk columns per row, popularity skewed like real retrieval.

    chunk = floor(u^3 * N) for uniform u: a few chunks are retrieved very often and
    most rarely or never, as with a real retriever over a large corpus.
    """
    rng = np.random.default_rng(seed)
    cols = (rng.random((n_queries, k)) ** 3 * n_chunks).astype(np.int64)
    for _ in range(100):  # redraw repeats within a row until every row has k distinct chunks
        order = np.argsort(cols, axis=1)
        srt = np.take_along_axis(cols, order, axis=1)
        dup = np.zeros(cols.shape, dtype=bool)
        dup[:, 1:] = srt[:, 1:] == srt[:, :-1]
        if not dup.any():
            break
        r, pos = np.nonzero(dup)
        cols[r, order[r, pos]] = (rng.random(r.size) ** 3 * n_chunks).astype(np.int64)
    return cols


def synthetic_run(n_chunks: int, n_queries: int, k: int):  # type: ignore[no-untyped-def]
    """A corpus of ``n_chunks`` short chunks (10 to a document) and a run of ``n_queries``
    skewed top-k lists over it: the data file's rows without a retriever."""
    from ragcov.corpus import Chunk, Corpus
    from ragcov.retrieval import Run

    corpus = Corpus([Chunk(id=f"c{j}", doc_id=f"d{j // 10}", position=j % 10,
                           text=f"Synthetic chunk {j} of document {j // 10}.")
                     for j in range(n_chunks)])
    cols = skewed_hits(n_queries, n_chunks, k, seed=1)
    run = Run(k=k, retriever={"kind": "synthetic"})
    ids = corpus.ids
    for i in range(n_queries):
        run.add(f"q{i}", f"query {i}", [(ids[c], 1.0 / r) for r, c in enumerate(cols[i], 1)])
    return corpus, run


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall-clock seconds over ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def row(name: str, seconds: float | None, baseline: float | None = None, note: str = "",
        aim: str = "", met: bool | None = None, ratio: float | None = None,
        **extra: object) -> dict:
    """One line of the benchmark table."""
    if ratio is None and seconds and baseline:
        ratio = baseline / seconds
    out = {"name": name, "seconds": seconds, "baseline_seconds": baseline, "ratio": ratio,
           "note": note, "aim": aim, "met": met}
    out.update(extra)
    return out
