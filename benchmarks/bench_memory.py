"""Benchmark: memory at 1,000,000 chunks x 100,000 queries x k = 10 (aim: within 4 GiB).

The whole post-retrieval path in one process, stage by stage: the hit matrix
built from 1M (query, chunk, rank, score) triples; the full summary a report
prints (CC, per-document CC and missing chunks, entropy, Gini, mean pairwise
Jaccard); coverage-guided selection (the whole greedy order and its curve);
and the data file: writing the corpus (1M chunks with text), the 100k queries
and their hits to SQLite, then reading the matrix back. Chunk popularity is
skewed (chunk = floor(u^3 N)) as in the selection benchmark, which gives hub
chunks retrieved by thousands of queries: the hard case for the pairwise
Jaccard product. Peak resident memory is read from getrusage after each stage
(it only grows, so a jump names the stage that caused it).

Run alone: ``.venv/bin/python benchmarks/bench_memory.py [--quick|--tiny]``
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row, skewed_hits  # noqa: E402

from ragcov.corpus import Chunk, Corpus  # noqa: E402
from ragcov.data import CoverageData  # noqa: E402
from ragcov.matrix import CoverageMatrix  # noqa: E402
from ragcov.metrics import mean_pairwise_jaccard  # noqa: E402
from ragcov.retrieval import Run  # noqa: E402
from ragcov.summary import summarize  # noqa: E402

K = 10
LIMIT_MIB = 4096


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


MODES = ("tiny", "quick", "full")
SIZES = {"tiny": (2_000, 20_000), "quick": (10_000, 100_000), "full": (100_000, 1_000_000)}


def main(mode: str = "full") -> list[dict]:
    quick = mode != "full"
    n_queries, n_chunks = SIZES[mode]
    size = f"{n_queries:,} q x k={K} over {n_chunks:,} chunks"
    stages: list[tuple[str, float, float]] = []

    def stage(name: str, fn):
        t = time.perf_counter()
        out = fn()
        stages.append((name, time.perf_counter() - t, peak_mib()))
        return out

    cols = skewed_hits(n_queries, n_chunks, K, seed=1)
    base_mib = peak_mib()
    m = stage("hit matrix", lambda: CoverageMatrix.from_triples(
        np.repeat(np.arange(n_queries), K), cols.ravel(), np.tile(np.arange(1, K + 1), n_queries),
        np.random.default_rng(0).random(n_queries * K),
        query_ids=[f"q{i}" for i in range(n_queries)],
        chunk_ids=[f"c{j}" for j in range(n_chunks)],
        doc_ids=[f"d{j // 10}" for j in range(n_chunks)], k=K))
    stage("summary without Jaccard (CC, per-doc + missing, entropy, Gini)",
          lambda: summarize(m, jaccard=False))
    stage("mean pairwise Jaccard (sparse product)", lambda: mean_pairwise_jaccard(m))
    try:
        from ragcov.selection import select
    except ImportError:
        select = None
    if select is not None:
        stage("greedy selection (order + curve)", lambda: select(m, "coverage", seed=0))
    corpus = stage("corpus of chunks in memory", lambda: Corpus(
        [Chunk(id=f"c{j}", doc_id=f"d{j // 10}", position=j % 10,
               text=f"Synthetic chunk {j} of document {j // 10}, standing in for real text.")
         for j in range(n_chunks)]))

    def make_run() -> Run:
        run = Run(k=K, retriever={"kind": "synthetic"})
        ids = corpus.ids
        for i in range(n_queries):
            run.add(f"q{i}", f"query {i}", [(ids[c], 1.0 / r) for r, c in enumerate(cols[i], 1)])
        return run

    run = stage("run object (100k ranked lists)" if not quick else "run object", make_run)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.ragcov"
        stage("data file write (SQLite)", lambda: CoverageData(path).write(corpus, run))
        run = None  # noqa: F841 - freed before the read, as a separate report process would
        m2 = stage("data file read -> matrix", lambda: CoverageData(path).matrix())
    assert m2.hits.nnz == m.hits.nnz
    peak = peak_mib()
    rows = [row(f"memory: {size}: {name}", secs, None, note=f"peak RSS so far {mib:,.0f} MiB",
                peak_mib=mib) for name, secs, mib in stages]
    rows.append(row(f"memory: peak of all stages above ({size})", None, None,
                    aim=f"<= {LIMIT_MIB} MiB" if not quick else "",
                    met=(peak <= LIMIT_MIB) if not quick else None,
                    note=f"process peak RSS (getrusage); synthetic input arrays alone "
                         f"{base_mib:,.0f} MiB", peak_mib=peak))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
