"""Reachability: `ragcov probe` with bm25 over a large corpus, and the status summary at 1M.

1. `ragcov probe --retriever bm25` as a user runs it (a fresh process, `-q`) over
   N chunks (100,000 full; aim: under 60 s). Baseline: the same self-queries through
   bm25s's own `retrieve` on the same index, in this process, with its numba backend
   on every core where numba is installed (the floor any tool pays for BM25 scoring).
2. The status/hubs/Lorenz summary (`ragcov.reachability.audit`) over 1M chunks, 1M
   test retrievals and 1M probe retrievals (aim: under 2 s, under 2 GiB). Baseline:
   the same statuses and k-occurrences counted with Python sets and dicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import best_of, row, skewed_hits

SIZES = {"tiny": (2_000, 100_000), "quick": (20_000, 200_000), "full": (100_000, 1_000_000)}
K = 5


def _corpus(path: Path, n: int, seed: int = 0) -> None:
    """n chunks of sample-like prose: shared financial words plus rarer ones per chunk."""
    import ragcov
    from ragcov.corpus import load_corpus

    sample = load_corpus(Path(ragcov.__file__).parent / "data_sample" / "finqa_pages.jsonl",
                         split=True)
    rng = np.random.default_rng(seed)
    vocab = sorted({w for c in sample for w in c.text.split() if w.isalpha() and len(w) > 3})
    rare = [f"{a}{b}" for a in ("zor", "vel", "quin", "brax", "tal", "mur") for b in vocab[:4000]]
    with path.open("w") as f:
        for i in range(n):
            base = sample[i % len(sample)].text.split()
            start = int(rng.integers(0, max(1, len(base) - 60)))
            words = base[start:start + 60] + [rare[j] for j in rng.integers(0, len(rare), 6)]
            f.write(json.dumps({"id": f"c{i}", "doc_id": f"d{i // 10}",
                                "text": " ".join(words)}) + "\n")


def _probe_command(n_chunks: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "chunks.jsonl"
        _corpus(corpus, n_chunks)
        queries = folder / "q.jsonl"
        queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in
                                   enumerate(["net revenue growth", "impairment of goodwill",
                                              "operating lease obligations"] * 100)))
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        ragcov = [sys.executable, "-c", "from ragcov.cli import main; main()"]
        subprocess.run([*ragcov, "run", "--corpus", str(corpus), "--queries", str(queries),
                        "--retriever", "bm25", "--data-file", str(folder / ".ragcov"), "-q"],
                       check=True, env=env, cwd=folder)
        t = time.perf_counter()
        subprocess.run([*ragcov, "probe", "--corpus", str(corpus), "--retriever", "bm25",
                        "--data-file", str(folder / ".ragcov"), "-q"], check=True, env=env,
                       cwd=folder)
        seconds = time.perf_counter() - t
        import sqlite3

        probes = sqlite3.connect(folder / ".ragcov").execute(
            "SELECT COUNT(*) FROM probes").fetchone()[0]
        baseline = _bm25s_floor(corpus)
    return [row(f"probe: `ragcov probe` bm25, {n_chunks:,} chunks ({probes:,} probes)", seconds,
                baseline, note=f"baseline: bm25s index + its own retrieve ({FLOOR_BACKEND} backend, "
                "every core) of the same self-queries", aim="< 60 s at 100,000 chunks",
                met=(seconds < 60) if n_chunks >= 100_000 else None)]


def _probe_dask(n_chunks: int, workers: int = 2) -> list[dict]:
    """`ragcov probe` in one process against `--engine dask --workers N` (a LocalCluster
    started by the command, its start counted), same corpus, same machine and cores."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "chunks.jsonl"
        _corpus(corpus, n_chunks)
        queries = folder / "q.jsonl"
        queries.write_text(json.dumps({"id": "q0", "text": "net revenue growth"}) + "\n")
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        ragcov = [sys.executable, "-c", "from ragcov.cli import main; main()"]
        times = {}
        for engine in ("local", "dask"):
            data = folder / f"{engine}.ragcov"
            subprocess.run([*ragcov, "run", "--corpus", str(corpus), "--queries", str(queries),
                            "--retriever", "bm25", "--data-file", str(data), "-q"],
                           check=True, env=env, cwd=folder)
            extra = ["--engine", "dask", "--workers", str(workers)] if engine == "dask" else []
            t = time.perf_counter()
            subprocess.run([*ragcov, "probe", "--corpus", str(corpus), "--data-file", str(data),
                            "-q", *extra], check=True, env=env, cwd=folder)
            times[engine] = time.perf_counter() - t
    return [row(f"probe: `ragcov probe --engine dask --workers {workers}` bm25, {n_chunks:,} chunks",
                times["dask"], times["local"],
                note=f"baseline: `ragcov probe` in one process on the same {os.cpu_count()} cores; "
                "the LocalCluster's start counted",
                aim="2-worker LocalCluster >= 1.7x one process", met=times["local"] / times["dask"] >= 1.7)]


def _bm25s_floor(corpus_path: Path) -> float:
    import bm25s

    from ragcov.corpus import load_corpus
    from ragcov.reachability.selfquery import build_probes

    corpus = load_corpus(corpus_path)
    t = time.perf_counter()
    texts = corpus.texts
    probes = [p for p in build_probes(texts, corpus.ids, range(len(corpus))) if p.text]
    model = bm25s.BM25(backend=FLOOR_BACKEND)
    model.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize([p.text for p in probes], stopwords="en", show_progress=False)
    model.retrieve(tokens, k=K, show_progress=False, n_threads=-1)
    return time.perf_counter() - t


def _floor_backend() -> str:
    """bm25s's fastest retrieval here: its numba backend on every core where numba is
    installed (as ragcov's compiled scorer then is), else numpy."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return "numpy"
    return "numba"


FLOOR_BACKEND = _floor_backend()


def _summary(n_chunks: int, n_retrievals: int) -> list[dict]:
    from ragcov.data.probes import ProbeMatrix
    from ragcov.matrix import CoverageMatrix
    from ragcov.reachability.audit import audit

    n_queries = n_retrievals // K
    test_cols = skewed_hits(n_queries, n_chunks, K, seed=1)
    probe_cols = skewed_hits(n_queries, n_chunks, K, seed=2)
    rows = np.repeat(np.arange(n_queries), K)
    ranks = np.tile(np.arange(1, K + 1), n_queries)
    ids = [f"c{i}" for i in range(n_chunks)]
    tests = CoverageMatrix.from_triples(rows, test_cols.ravel(), ranks, np.zeros(rows.size),
                                        [f"q{i}" for i in range(n_queries)], ids, k=K)
    import scipy.sparse as sp

    probe_ranks = sp.csr_matrix((ranks.astype(np.int32), (rows, probe_cols.ravel())),
                                shape=(n_queries, n_chunks))
    probe_ranks.sort_indices()
    probes = ProbeMatrix(ids=[f"p{i}" for i in range(n_queries)],
                         source=np.random.default_rng(3).integers(0, n_chunks, n_queries),
                         kinds=["terms"] * n_queries, n_chunks=n_chunks,
                         indptr=probe_ranks.indptr, indices=probe_ranks.indices,
                         rank_data=probe_ranks.data)
    seconds = best_of(lambda: audit(tests, probes), repeats=3)

    def python_sets() -> None:
        tested = {int(c) for c in test_cols.ravel()}
        reached = {int(c) for c in probe_cols.ravel()}
        probed = {int(c) for c in probes.source}
        occ: dict[int, int] = {}
        for c in probe_cols.ravel():
            occ[int(c)] = occ.get(int(c), 0) + 1
        [("covered" if i in tested else "untested" if i in reached
          else "unreachable" if i in probed else None) for i in range(n_chunks)]

    baseline = best_of(python_sets, repeats=1)
    return [row(f"probe: status + hubs + Lorenz, {n_chunks:,} chunks x {n_retrievals:,} test "
                f"and probe retrievals", seconds, baseline,
                note="baseline: statuses and k-occurrence with Python sets and dicts",
                aim="< 2 s, < 2 GiB at 1M", met=(seconds < 2) if n_chunks >= 1_000_000 else None)]


def main(mode: str = "full") -> list[dict]:
    n_probe, n_summary = SIZES[mode]
    return _probe_command(n_probe) + _probe_dask(n_probe) + _summary(n_summary, n_summary)


MODES = ("tiny", "quick", "full")

if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "quick"
    for r in main(mode):
        print(json.dumps(r, default=float))
