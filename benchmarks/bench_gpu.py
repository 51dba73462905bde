"""benchmarks/gpu.py inside `benchmarks/run` (``--only gpu``): the same rows, as seconds.

Sizes: tiny 48 chunks (the smoke test: no bare encode as a fresh process), quick
5,000 on the GPU and 1,000 on the CPU, full 100,000 and 5,000. Each row's seconds are
the chunks it embedded over its rate, so "ratio" reads as in every other benchmark
(baseline seconds / ragcov seconds).
"""

from __future__ import annotations

import gpu
from _common import row

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": (48, 48), "quick": (5_000, 1_000), "full": (100_000, 5_000)}


def main(mode: str = "full") -> list[dict]:
    n, cpu = SIZES[mode]
    fig = gpu.measure(n, cpu, bare_process=mode != "tiny")
    out = []
    for r in gpu.rows(fig):
        chunks = fig["chunks"] if r["name"].startswith("GPU") else fig["cpu_chunks"]
        seconds = chunks / r["rate"]
        baseline = seconds * r["ratio"] if "ratio" in r else None
        note = f"{r['rate']:,.1f} chunks/s" + (f"; baseline: {r['versus']}" if "versus" in r else "")
        out.append(row(r["name"], seconds, baseline, note, r.get("aim", ""), r.get("met"),
                       ratio=r.get("ratio"), chunks_per_s=r["rate"]))
    if fig.get("gpu_skipped"):
        out.append(row("GPU rows skipped", None, note=fig["gpu_skipped"]))
    return out
