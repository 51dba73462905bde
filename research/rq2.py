"""RQ2 (docs/method.md §4): how many fewer tests does coverage-guided selection need?

The pool is ordered three ways (coverage greedy once, random and overlap-biased
over ``repeats`` seeds); for each the tests needed to reach 50/80/90/100% of
the pool's coverage are counted, and the speedups of coverage over random and
over overlap (ratio of tests needed) are set beside the paper's 1.7x and 4.2x.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.selection import TARGETS, Selection, select
from research.common import (
    ExperimentSetup,
    Prepared,
    environment,
    markdown_table,
    prepare,
    pyplot,
    save_figure,
    write_tables,
)

PAPER_SPEEDUP = {"random": 1.7, "overlap": 4.2}       # at 50% of pool coverage
CHECK_SPEEDUP = {"random": "1.65–1.84", "overlap": "about 3.9"}


@dataclass
class RQ2Result:
    rows: list[dict[str, Any]]
    speedups: list[dict[str, Any]]
    markdown: str
    document: dict[str, Any]
    paths: list[Path] = field(default_factory=list)


def _stats(values: list[int | None]) -> dict[str, float | None]:
    got = [v for v in values if v is not None]
    if not got or len(got) < len(values):
        return {"mean": None, "sd": None, "min": None, "max": None}
    a = np.asarray(got, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max())}


def compare(m: CoverageMatrix, repeats: int, seed: int, after_saturation: str = "random"
            ) -> tuple[dict[str, list[Selection]], list[dict[str, Any]], list[dict[str, Any]]]:
    if repeats < 1:
        raise RagcovError(f"--repeats must be at least 1, got {repeats}")
    seeds = list(range(seed, seed + repeats))
    runs = {
        "coverage": [select(m, "coverage", seed=seed, after_saturation=after_saturation)],
        "random": [select(m, "random", seed=s) for s in seeds],
        "overlap": [select(m, "overlap", seed=s) for s in seeds],
    }
    rows = []
    for name, sels in runs.items():
        row: dict[str, Any] = {"strategy": name, "runs": len(sels)}
        for t in TARGETS:
            st = _stats([s.tests_to(t) for s in sels])
            row[f"tests_to_{t}"] = st["mean"]
            row[f"tests_to_{t}_sd"] = st["sd"]
            row[f"tests_to_{t}_min"] = st["min"]
            row[f"tests_to_{t}_max"] = st["max"]
        rows.append(row)
    by = {r["strategy"]: r for r in rows}
    speedups = []
    for other in ("random", "overlap"):
        for t in TARGETS:
            cov, oth = by["coverage"][f"tests_to_{t}"], by[other][f"tests_to_{t}"]
            speedups.append({
                "versus": other, "target_pct": t, "coverage_tests": cov, "other_tests": oth,
                "speedup": (oth / cov) if cov and oth is not None else None,
                "paper": PAPER_SPEEDUP[other] if t == 50 else None,
                "independent_check": CHECK_SPEEDUP[other] if t == 50 else None,
            })
    return runs, rows, speedups


def _band(sels: list[Selection]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    curves = np.stack([s.curve for s in sels])
    return curves.mean(axis=0), np.percentile(curves, 5, axis=0), np.percentile(curves, 95, axis=0)


def plot(runs: dict[str, list[Selection]], pool_coverage: float, title: str, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    scale = 100.0 / pool_coverage if pool_coverage > 0 else 0.0
    colours = {"coverage": "tab:green", "random": "tab:blue", "overlap": "tab:red"}
    for name, sels in runs.items():
        mean, lo, hi = _band(sels)
        x = np.arange(1, mean.size + 1)
        label = name if len(sels) == 1 else f"{name} (mean of {len(sels)}, 5–95%)"
        ax.plot(x, mean * scale, color=colours[name], label=label, lw=1.6)
        if len(sels) > 1:
            ax.fill_between(x, lo * scale, hi * scale, color=colours[name], alpha=0.2, lw=0)
    ax.axhline(50, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("tests run")
    ax.set_ylabel("coverage (% of the pool's coverage)")
    ax.set_ylim(0, 102)
    ax.set_xlim(0, len(next(iter(runs.values()))[0].curve) + 1)
    ax.legend(loc="lower right")
    ax.set_title(title)
    return save_figure(fig, path)


def run_rq2(setup: ExperimentSetup, repeats: int = 30, seed: int = 0,
            after_saturation: str = "random", out_dir: Path | None = None, console: Any = None,
            prepared: Prepared | None = None) -> RQ2Result:
    out_dir = out_dir or setup.default_out("rq2")
    if console is not None:
        console.print(f"RQ2 on {setup.dataset_name} ({setup.retriever}, k={setup.k})")
    prep = prepared or prepare(setup)
    m = prep.matrix
    t0 = time.perf_counter()
    runs, rows, speedups = compare(m, repeats, seed, after_saturation)
    seconds = time.perf_counter() - t0
    pool_cc = runs["coverage"][0].pool_coverage

    def fmt(r: dict[str, Any], t: int) -> str:
        mean = r[f"tests_to_{t}"]
        if mean is None:
            return "–"
        if r["runs"] == 1:
            return f"{mean:.0f}"
        return f"{mean:.1f} ± {r[f'tests_to_{t}_sd']:.1f}"

    table1 = markdown_table(
        [{"strategy": r["strategy"], "runs": r["runs"], **{f"t{t}": fmt(r, t) for t in TARGETS}}
         for r in rows],
        ["strategy", "runs", *[f"t{t}" for t in TARGETS]],
        ["strategy", "runs", *[f"tests to {t}%" for t in TARGETS]])
    table2 = markdown_table(
        [{**s, "speedup": None if s["speedup"] is None else f"{s['speedup']:.2f}x",
          "paper": None if s["paper"] is None else f"{s['paper']}x",
          "independent_check": None if s["independent_check"] is None
          else f"{s['independent_check']}x"} for s in speedups],
        ["versus", "target_pct", "coverage_tests", "other_tests", "speedup", "paper",
         "independent_check"],
        ["coverage vs", "target (% of pool CC)", "coverage tests", "their tests (mean)",
         "measured speedup", "paper", "independent check (§9)"], digits=1)
    head = (f"RQ2: selection on {setup.dataset_name}: {len(prep.corpus)} chunks, {m.n_queries} "
            f"queries in the pool (pool coverage {pool_cc * 100:.1f}%), {setup.retriever} "
            f"retriever, k={setup.k}; random and overlap over {repeats} seeds from {seed}, "
            f"mean ± sd; coverage greedy with seed {seed}.")
    markdown = "\n\n".join([f"### {head}", table1, table2])
    document = {
        "experiment": "rq2", "setup": setup.describe(), "environment": environment(),
        "corpus_chunks": len(prep.corpus), "pool_queries": m.n_queries,
        "pool_coverage": pool_cc, "retriever": prep.retriever_fingerprint, "repeats": repeats,
        "seed": seed, "after_saturation": after_saturation,
        "seconds": {"retrieval": prep.seconds, "selection": seconds},
        "strategies": rows, "speedups": speedups,
        "paper": {"speedup_vs_random_at_50": 1.7, "speedup_vs_overlap_at_50": 4.2},
        "curves": {name: {"mean": _band(sels)[0].tolist(), "p5": _band(sels)[1].tolist(),
                          "p95": _band(sels)[2].tolist()} for name, sels in runs.items()},
        "coverage_order": [m.query_ids[int(r)] for r in runs["coverage"][0].order],
    }
    paths = write_tables(out_dir, "rq2", rows, markdown, document)
    paths += write_tables(out_dir, "rq2_speedups", speedups, table2, {"speedups": speedups})
    paths.append(plot(runs, pool_cc, f"RQ2 {setup.label}", out_dir / "rq2_curves.png"))
    if console is not None:
        console.print(f"Wrote {', '.join(str(p) for p in paths)}")
    return RQ2Result(rows, speedups, markdown, document, paths)
