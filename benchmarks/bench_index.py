"""Benchmark: retrieval throughput of the exact (flat) and approximate (HNSW) index.

The dense retriever's two faiss indexes with its own parameters (IndexFlatIP;
IndexHNSWFlat with M = 32, efSearch = 128, faiss's default efConstruction), at
100,000 and 1,000,000 chunks, searching 1,000 queries for the top 10.

The vectors are synthetic, dimension 384 (all-MiniLM-L6-v2's), unit-normalised,
drawn with the structure real sentence embeddings have: a mixture of 2,000
clusters in a 32-dimensional latent space mapped into 384 dimensions, plus
isotropic noise; queries are drawn the same way. (Uniform random directions in
384 dimensions have no neighbourhood structure at all and give a graph index a
recall far below what it gets on embeddings; docs/performance.md gives that
figure too.) Recall@10 is measured against the flat index's exact top 10.

Build time is reported beside search time: a coverage run builds the index once
per corpus, so HNSW pays off only once the suite is large enough to recover the
build. The break-even suite size is printed.

The HNSW graph is saved beside the embedding cache and loaded on the next run
(ragcov.retrievers.hnsw_cache): "load persisted HNSW vs build" times the whole load a
run pays (hash of the embeddings, checksum of the file, faiss read, the checks on
the read index) against the build, and asserts the loaded index returns the same
ids and scores as the built one for every query.

Run alone: ``.venv/bin/python benchmarks/bench_index.py [--quick|--tiny]``
"""

from __future__ import annotations

import gc
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402

DIM, LATENT, CLUSTERS = 384, 32, 2_000
K = 10
M, EF_SEARCH = 32, 128


def embedding_like(n: int, seed: int, uniform: bool = False) -> np.ndarray:
    """Unit vectors with cluster structure in a low-dimensional latent space (or uniform)."""
    shared = np.random.default_rng(12345)  # the same space for corpus and queries
    proj = shared.standard_normal((LATENT, DIM), dtype=np.float32) / np.sqrt(LATENT)
    centres = shared.standard_normal((CLUSTERS, LATENT), dtype=np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, 100_000):  # in blocks: no float64 copy of the whole set
        b = min(100_000, n - s)
        if uniform:
            x = rng.standard_normal((b, DIM), dtype=np.float32)
        else:
            z = centres[rng.integers(0, CLUSTERS, b)] + \
                0.5 * rng.standard_normal((b, LATENT), dtype=np.float32)
            x = z @ proj + 0.3 * rng.standard_normal((b, DIM), dtype=np.float32)
        out[s:s + b] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def one_size(n: int, n_queries: int) -> list[dict]:
    import faiss

    from ragcov.retrievers.dense import DenseRetriever

    # The retriever's own defaults, read from its signature so the two cannot drift.
    params = inspect.signature(DenseRetriever).parameters
    assert (params["hnsw_m"].default, params["ef_search"].default) == (M, EF_SEARCH)
    xb = embedding_like(n, 0)
    xq = embedding_like(n_queries, 1)
    flat = faiss.IndexFlatIP(DIM)
    t = time.perf_counter()
    flat.add(xb)
    t_flat_build = time.perf_counter() - t
    t = time.perf_counter()
    _, exact = flat.search(xq, K)
    t_flat = time.perf_counter() - t
    flat.reset()
    hnsw = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efSearch = EF_SEARCH
    t = time.perf_counter()
    hnsw.add(xb)
    t_build = time.perf_counter() - t
    t = time.perf_counter()
    d_approx, approx = hnsw.search(xq, K)
    t_hnsw = time.perf_counter() - t
    persisted = persist_and_load(hnsw, xb, xq, t_build, d_approx, approx)
    hnsw.reset()
    gc.collect()
    recall = float(np.mean([len(set(a) & set(e)) / K
                            for a, e in zip(approx.tolist(), exact.tolist())]))
    gain = t_flat / n_queries - t_hnsw / n_queries
    breakeven = t_build / gain if gain > 0 else float("inf")
    return [
        row(f"index search: HNSW vs flat, {n:,} chunks, {n_queries:,} queries, k={K}",
            t_hnsw, t_flat,
            note=f"queries/s flat {n_queries / t_flat:,.0f}, HNSW {n_queries / t_hnsw:,.0f}; "
                 f"recall@{K} {recall:.3f} (synthetic embedding-like vectors)",
            recall=recall, n=n),
        row(f"index build time: HNSW (flat in baseline column), {n:,} chunks", t_build,
            t_flat_build, ratio=float("nan"),
            note=f"HNSW pays off from ~{breakeven:,.0f} queries per run at this size "
                 f"(build time / per-query search saving)", breakeven_queries=breakeven, n=n),
        persisted,
    ]


LOAD_AIM = 20.0


def persist_and_load(built, xb: np.ndarray, xq: np.ndarray, t_build: float,
                     d_built: np.ndarray, i_built: np.ndarray) -> dict:
    """Save the built index as a run does, then time what the next run pays to load it."""
    from ragcov.retrievers import hnsw_cache

    with tempfile.TemporaryDirectory(prefix="ragcov-bench-index-") as cache:
        before = os.environ.get("RAGCOV_CACHE_DIR")
        os.environ["RAGCOV_CACHE_DIR"] = cache
        try:
            t = time.perf_counter()
            key = hnsw_cache.hnsw_key(xb, M, built.hnsw.efConstruction)
            path = hnsw_cache.hnsw_cache_path(key)
            hnsw_cache.save_hnsw(path, built, key)
            t_save = time.perf_counter() - t
            size = path.stat().st_size
            real_new = hnsw_cache.new_hnsw

            def no_build(dim: int, m: int, ef_search: int):
                index = real_new(dim, m, ef_search)
                index.add = None  # a rebuild here would be a failed load: fail loudly
                return index

            hnsw_cache.new_hnsw = no_build
            try:
                t = time.perf_counter()
                loaded = hnsw_cache.hnsw_index(xb, M, EF_SEARCH)
                t_load = time.perf_counter() - t
            finally:
                hnsw_cache.new_hnsw = real_new
        finally:
            if before is None:
                os.environ.pop("RAGCOV_CACHE_DIR", None)
            else:
                os.environ["RAGCOV_CACHE_DIR"] = before
    d_loaded, i_loaded = loaded.search(xq, K)
    identical = bool(np.array_equal(i_loaded, i_built) and np.array_equal(d_loaded, d_built))
    assert identical, "the loaded index answers differently from the built one"
    loaded.reset()
    n = xb.shape[0]
    ratio = t_build / t_load
    return row(f"load persisted HNSW vs build, {n:,} chunks", t_load, t_build,
               aim=f">= {LOAD_AIM:g}x", met=ratio >= LOAD_AIM,
               note=f"load = hash of embeddings + checksum + faiss read + checks; save "
                    f"{t_save:.1f} s once, file {size / 2**20:,.0f} MiB; {len(xq):,} queries' "
                    f"top-{K} ids and scores identical: {identical}",
               save_seconds=t_save, file_bytes=size, identical=identical, n=n)


MODES = ("tiny", "quick", "full")
SIZES = {"tiny": ((5_000,), 50), "quick": ((10_000, 100_000), 200),
         "full": ((100_000, 1_000_000), 1_000)}


def main(mode: str = "full") -> list[dict]:
    sizes, n_queries = SIZES[mode]
    out: list[dict] = []
    for n in sizes:
        out += one_size(n, n_queries)
    return out


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
