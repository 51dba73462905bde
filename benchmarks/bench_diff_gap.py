"""Benchmark: ``ragcov diff`` and ``ragcov gap`` over two data files of 1M queries x k=10.

Synthetic data written straight into data files (SQLite ``executemany``): a corpus
of N chunks (10 per document), N queries with k = 10 skewed hits each (a few
chunks very popular, most never retrieved, as with a real retriever). BASE is that
run; HEAD is the same query set after "a new embedding model": the last three
ranks of every query replaced (the common case, same corpus, same queries). For
the gap, the tests are BASE and the traffic is a copy in which every other
query's hits are moved elsewhere.

Each measurement runs in a fresh subprocess, so its peak resident memory is its
own: ragcov through the API verbs (``coverage_diff``, ``traffic_gap`` with the top
100 untested chunks and their example queries), and the baseline, a plain-Python
recount (rows fetched from SQLite, one ``set`` per query, Jaccard per query in a
loop). Aim (issue 14): under 5 s and under 2 GiB each at full size.

Run alone: ``.venv/bin/python benchmarks/bench_diff_gap.py [--quick|--tiny]``
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row, skewed_hits  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 10_000, "quick": 100_000, "full": 1_000_000}
K = 10
BLOCK = 200_000


def write_file(path: Path, n: int, seed: int) -> None:
    """A data file of n chunks and n queries with K hits each, through ragcov's schema."""
    import numpy as np

    from ragcov.data.schema import new_file, new_meta
    from ragcov.files import atomic_path

    meta = new_meta(K, {"kind": "synthetic", "model": "bench"}, "bench-corpus")
    with atomic_path(path) as tmp, new_file(tmp, meta) as con:
        con.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, NULL, NULL)",
                        ((j, f"doc{j // 10}#{j % 10}", f"doc{j // 10}", j % 10, f"h{j}")
                         for j in range(n)))
        con.executemany("INSERT INTO queries VALUES (?, ?, ?, NULL)",
                        ((i, f"q{i}", f"synthetic question {i}") for i in range(n)))
        cols = skewed_hits(n, n, K, seed)
        ranks = np.arange(1, K + 1)
        for start in range(0, n, BLOCK):
            block = cols[start:start + BLOCK]
            q = np.repeat(np.arange(start, start + len(block)), K)
            con.executemany("INSERT INTO hits VALUES (?, ?, ?, NULL)",
                            zip(q.tolist(), block.ravel().tolist(),
                                np.tile(ranks, len(block)).tolist()))


def derive(src: Path, dst: Path, n: int, where: str, expr: str) -> None:
    """A copy of ``src`` with some hits moved (one UPDATE, inside SQLite)."""
    dst.write_bytes(src.read_bytes())
    con = sqlite3.connect(dst, isolation_level=None)
    # Distinct within a query: shift by a per-rank offset (rank is unique per query).
    con.execute(f"UPDATE hits SET chunk_idx = ({expr}) % {n} WHERE {where}")
    con.close()


def op_diff(base: str, head: str) -> None:
    from ragcov.api import coverage_diff

    d = coverage_diff(base, head)
    print(f"changed={d.queries_changed} delta={d.delta:.4f}", file=sys.stderr)


def op_gap(tests: str, traffic: str) -> None:
    from ragcov.api import traffic_gap

    g = traffic_gap(tests, traffic, top=100)
    print(f"twc={g.traffic_weighted_coverage:.4f}", file=sys.stderr)


def _rows(path: str) -> dict[int, set[int]]:
    con = sqlite3.connect(path)
    sets: dict[int, set[int]] = {}
    for q, c in con.execute("SELECT query_idx, chunk_idx FROM hits"):
        sets.setdefault(q, set()).add(c)
    con.close()
    return sets


def op_diff_baseline(base: str, head: str) -> None:
    a, b = _rows(base), _rows(head)
    cov_a = set().union(*a.values())
    cov_b = set().union(*b.values())
    gained, lost = cov_b - cov_a, cov_a - cov_b
    jac = {q: len(s & b.get(q, set())) / len(s | b.get(q, set())) for q, s in a.items()}
    print(f"changed={sum(j < 1 for j in jac.values())} {len(gained)} {len(lost)}",
          file=sys.stderr)


def op_gap_baseline(tests: str, traffic: str) -> None:
    tested = set().union(*_rows(tests).values())
    con = sqlite3.connect(traffic)
    counts: dict[int, int] = {}
    hit_on_tested = total = 0
    for (c,) in con.execute("SELECT chunk_idx FROM hits"):
        counts[c] = counts.get(c, 0) + 1
        total += 1
        hit_on_tested += c in tested
    untested = sorted((n, c) for c, n in counts.items() if c not in tested)[::-1][:100]
    print(f"twc={hit_on_tested / total:.4f} {len(untested)}", file=sys.stderr)


OPS = {"diff": op_diff, "gap": op_gap, "diff-baseline": op_diff_baseline,
       "gap-baseline": op_gap_baseline}


def measure(op: str, a: Path, b: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of one operation in a fresh interpreter."""
    out = subprocess.run([sys.executable, __file__, "--op", op, str(a), str(b)], check=True,
                         capture_output=True, text=True)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    return doc["seconds"], doc["peak_mib"]


def main(mode: str = "full") -> list[dict]:
    n = SIZES[mode]
    with tempfile.TemporaryDirectory(prefix="ragcov-bench-diff-") as tmp:
        base, head, traffic = Path(tmp, "base.ragcov"), Path(tmp, "head.ragcov"), Path(
            tmp, "traffic.ragcov")
        t = time.perf_counter()
        write_file(base, n, seed=1)
        derive(base, head, n, "rank > 7", "chunk_idx * 7 + rank * 104729")
        derive(base, traffic, n, "query_idx % 2 = 0", "chunk_idx + query_idx * 31 + rank")
        setup = time.perf_counter() - t
        rows = []
        for name, a, b in (("diff", base, head), ("gap", base, traffic)):
            secs, peak = measure(name, a, b)
            base_s, base_peak = measure(f"{name}-baseline", a, b)
            rows.append(row(
                f"{name}: {n:,} queries x k={K} over {n:,} chunks", secs, base_s,
                note=f"baseline: plain-Python sets (peak {base_peak:.0f} MiB); data written "
                     f"in {setup:.0f} s", aim="< 5 s, < 2 GiB" if mode == "full" else "",
                met=(secs < 5 and peak < 2048) if mode == "full" else None, peak_mib=peak))
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--op":
        start = time.perf_counter()
        OPS[sys.argv[2]](sys.argv[3], sys.argv[4])
        print(json.dumps({"seconds": time.perf_counter() - start,
                          "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    else:
        size = next((m for m in MODES if f"--{m}" in sys.argv), "full")
        for r in main(size):
            print(r)
