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
