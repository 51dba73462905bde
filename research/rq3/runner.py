"""``run_rq3``: orders -> failures -> faults -> APFD tables, then the files (see :mod:`research.rq3`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.faults import (
    apfd,
    cluster_faults,
    failing_mask,
    failure_rate_by_segment,
    fault_of_row,
    first_reveals,
    label_metric,
)
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import coverage_curve
from ragcov.qrels import Qrels
from ragcov.selection import tests_to
from research.common import ExperimentSetup, Prepared, environment, write_tables
from research.rq3.design import (
    DEFAULT_BUDGETS,
    DEFAULT_METRICS,
    DEFAULT_TAUS,
    PAPER_IMPROVEMENT,
    SEGMENTS,
    FailureDef,
    budget_sizes,
    main_tau,
    parse_failure_defs,
)
from research.rq3.orders import build_orders, top_scores
from research.rq3.plots import box_plot, detection_plot, segment_plot
from research.rq3.probes import prepare_with_probes
from research.rq3.report import render_markdown
from research.rq3.stats import a12, detection_curve, finite_mean, mann_whitney_p, summary

Orders = dict[str, list[np.ndarray]]


@dataclass
class RQ3Result:
    setup: ExperimentSetup
    document: dict[str, Any]
    markdown: str
    files: list[Path] = field(default_factory=list)


@dataclass
class Tables:
    """What the analysis collects, each list in the order it is written out."""
    apfd: list[dict[str, Any]] = field(default_factory=list)
    improvements: list[dict[str, Any]] = field(default_factory=list)
    multiplicity: list[dict[str, Any]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    explain: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)          # every run's APFD
    curves: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def dataset_qrels(prep: Prepared) -> Qrels:
    ds = prep.dataset
    if ds.relevant_chunks:
        return Qrels("chunk", {q: set(v) for q, v in ds.relevant_chunks.items()})
    if ds.relevant_docs:
        return Qrels("doc", {q: set(v) for q, v in ds.relevant_docs.items()})
    raise RagcovError(f"{ds.name}: the dataset has no relevance labels; RQ3 needs them")


def run_rq3(setup: ExperimentSetup, repeats: int = 30, taus: Sequence[float] = DEFAULT_TAUS,
            failure_defs: Sequence[FailureDef] | None = None,
            budgets: Sequence[float] = DEFAULT_BUDGETS, seed: int = 0,
            out_dir: Path | None = None, console: Any = None,
            prepared: Prepared | None = None, k_occurrence: np.ndarray | None = None
            ) -> RQ3Result:
    """RQ3's tables for ``setup``. Without ``prepared`` the pool and its self-query probes
    are recorded (or read back from the cache, :mod:`research.rq3.probes`); with it,
    ``k_occurrence`` is the probes' per-chunk k-occurrence (None: no hub orders)."""
    defs, taus = _checked(repeats, taus, failure_defs)
    if prepared is None:
        prepared, k_occurrence = prepare_with_probes(setup)
    prep = prepared
    m = prep.matrix
    qrels = dataset_qrels(prep)
    t0 = time.perf_counter()
    orders, notes = build_orders(m, repeats, seed, k_occurrence)
    t_orders = time.perf_counter() - t0
    sizes = budget_sizes(budgets, m.n_queries)
    exploration = exploration_rows(m, orders)
    tables = analyse(m, qrels, orders, defs, taus, sizes, k_occurrence)
    document = {
        "experiment": "rq3", "setup": setup.describe(), "environment": environment(),
        "pool": {"queries": m.n_queries, "chunks": m.n_chunks, "labels": qrels.level,
                 "labelled": int(sum(q in qrels.relevant for q in m.query_ids))},
        "repeats": repeats, "seed": seed, "taus": taus,
        "failure_definitions": [fd.name for fd in defs],
        "budgets": sizes, "paper_improvement": list(PAPER_IMPROVEMENT),
        "notes": notes, "exploration": exploration, "explain": tables.explain,
        "multiplicity": tables.multiplicity, "failure_rate_by_fifth": tables.segments,
        "apfd": tables.apfd, "improvements": tables.improvements, "runs": tables.raw,
        "seconds": {"retrieval": prep.seconds, "orders": t_orders,
                    "analysis": time.perf_counter() - t0 - t_orders},
    }
    result = RQ3Result(setup, document, render_markdown(document))
    result.files = write_outputs(out_dir or setup.default_out("rq3"), result, tables, defs,
                                 list(orders))
    if console is not None:
        console.print(f"Wrote {', '.join(str(p) for p in result.files)}")
    return result


def _checked(repeats: int, taus: Sequence[float], failure_defs: Sequence[FailureDef] | None
             ) -> tuple[list[FailureDef], list[float]]:
    """The arguments checked before anything is retrieved, failure definitions defaulted."""
    if repeats < 1:
        raise RagcovError(f"--repeats must be at least 1, got {repeats}")
    defs = list(failure_defs or parse_failure_defs(",".join(DEFAULT_METRICS)))
    taus = list(taus)
    for t in taus:
        if not 0 <= t <= 1:
            raise RagcovError(f"tau must be between 0 and 1, got {t}")
    return defs, taus


def exploration_rows(m: CoverageMatrix, orders: Orders) -> list[dict[str, Any]]:
    """Per order: mean tests to 50% and 80% of the pool's coverage, and CC after 10% of the pool."""
    n = m.n_queries
    rows = []
    for name, runs in orders.items():
        curves_cc = [coverage_curve(m, o) for o in runs]
        pool_cc = float(np.count_nonzero(m.chunk_frequencies())) / m.n_chunks
        row: dict[str, Any] = {"order": name}
        for pct in (50, 80):
            vals = [tests_to(c, pool_cc, pct) for c in curves_cc]
            row[f"tests_to_{pct}"] = (None if any(v is None for v in vals)
                                      else float(np.mean(vals)))
        row["cc_at_10pct"] = float(np.mean([c[max(0, n // 10 - 1)] for c in curves_cc])) if n else None
        rows.append(row)
    return rows


def analyse(m: CoverageMatrix, qrels: Qrels, orders: Orders, defs: Sequence[FailureDef],
            taus: list[float], budgets: list[int], k_occurrence: np.ndarray | None = None
            ) -> Tables:
    """Every table, for each failure definition and then each tau."""
    from ragcov.selection.fault import hub_exposure

    freq = m.chunk_frequencies()
    popularity = np.asarray(m.hits.astype(np.float64) @ freq).ravel() / np.maximum(
        np.diff(m.hits.indptr), 1)
    top = top_scores(m)
    hub = (hub_exposure(m, k_occurrence) if k_occurrence is not None
           else np.full(m.n_queries, np.nan))
    tables = Tables()
    for fd in defs:
        values = label_metric(m, qrels, fd.metric)
        failing = failing_mask(values, fd.fail_below)
        labelled = ~np.isnan(values)
        tables.explain.append(explain_row(fd, failing, labelled, popularity, top, hub))
        tables.segments += segment_rows(fd, failing, orders)
        for tau in taus:
            fault_tables(tables, m, orders, fd, np.flatnonzero(failing), tau, budgets,
                         curves=tau == main_tau(taus))
    return tables


def explain_row(fd: FailureDef, failing: np.ndarray, labelled: np.ndarray,
                popularity: np.ndarray, top: np.ndarray, hub: np.ndarray) -> dict[str, Any]:
    """Failing against passing queries: how popular their chunks are (among the pool's
    queries and among the probes), how well they score."""
    passing = labelled & ~failing
    fin = np.isfinite(hub)
    return {
        "failure": fd.name, "labelled": int(labelled.sum()), "failing": int(failing.sum()),
        "failure_rate": float(failing.sum() / max(labelled.sum(), 1)),
        "popularity_failing": finite_mean(popularity[failing]),
        "popularity_passing": finite_mean(popularity[passing]),
        "popularity_p": mann_whitney_p(list(popularity[failing]), list(popularity[passing])),
        "top_score_failing": finite_mean(top[failing]), "top_score_passing": finite_mean(top[passing]),
        "top_score_p": mann_whitney_p(list(top[failing & np.isfinite(top)]),
                                      list(top[passing & np.isfinite(top)])),
        "hub_failing": finite_mean(hub[failing]), "hub_passing": finite_mean(hub[passing]),
        "hub_p": (mann_whitney_p(list(hub[failing & fin]), list(hub[passing & fin]))
                  if fin.any() else None),
    }


def segment_rows(fd: FailureDef, failing: np.ndarray, orders: Orders) -> list[dict[str, Any]]:
    """The failure rate in each fifth of each order, mean over its runs."""
    rows = []
    for name, runs in orders.items():
        rates = np.mean([failure_rate_by_segment(o, failing, SEGMENTS) for o in runs], axis=0)
        rows.append({"failure": fd.name, "order": name,
                     **{f"fifth_{i + 1}": float(r) for i, r in enumerate(rates)}})
    return rows


def fault_tables(tables: Tables, m: CoverageMatrix, orders: Orders, fd: FailureDef,
                 fail_rows: np.ndarray, tau: float, budgets: list[int], curves: bool) -> None:
    """Group the failures at ``tau`` and add their multiplicity, APFDs and (if asked) curves."""
    n = m.n_queries
    faults = cluster_faults(m, fail_rows, tau)
    fault_of = fault_of_row(n, faults)
    sizes = np.array([f.size for f in faults])
    tables.multiplicity.append({
        "failure": fd.name, "tau": tau, "failures": int(fail_rows.size),
        "faults": len(faults), "singletons": int((sizes == 1).sum()) if sizes.size else 0,
        "mean_size": float(sizes.mean()) if sizes.size else None,
        "largest": int(sizes.max()) if sizes.size else 0})
    per_order: dict[str, dict[str, list[float | None]]] = {}
    for name, runs in orders.items():
        per_order[name] = {"all": [apfd(o, fault_of, len(faults)) for o in runs]}
        for b in budgets:
            per_order[name][str(b)] = [apfd(o[:b], fault_of, len(faults)) for o in runs]
        if curves and faults:
            tf = np.stack([first_reveals(o, fault_of, len(faults)) for o in runs])
            tables.curves.setdefault(fd.name, {})[name] = detection_curve(tf, n)
    tables.raw[f"{fd.name}|tau={tau:g}"] = {
        name: {b: [None if v is None else round(v, 6) for v in vals] for b, vals in per.items()}
        for name, per in per_order.items()}
    for budget in ["all", *map(str, budgets)]:
        compare_to_random(tables, fd, tau, n if budget == "all" else int(budget), len(faults),
                          {name: per[budget] for name, per in per_order.items()},
                          improvements=budget == "all")


def compare_to_random(tables: Tables, fd: FailureDef, tau: float, tests: int, faults: int,
                      values: dict[str, list[float | None]], improvements: bool) -> None:
    """One APFD row per order at one budget: its summary, and its difference from random."""
    rand = summary(values["random"])
    rvals = [v for v in values["random"] if v is not None]
    for name, runs in values.items():
        s = summary(runs)
        vals = [v for v in runs if v is not None]
        rel = (None if s["mean"] is None or not rand["mean"]
               else (s["mean"] - rand["mean"]) / rand["mean"])
        tables.apfd.append({
            "failure": fd.name, "tau": tau, "tests": tests, "faults": faults, "order": name,
            **{f"apfd_{k}": v for k, v in s.items()}, "vs_random": rel,
            "a12_vs_random": a12(vals, rvals) if name != "random" else None,
            "p_vs_random": mann_whitney_p(vals, rvals) if name != "random" else None})
        if improvements and name != "random":
            tables.improvements.append({"failure": fd.name, "tau": tau, "order": name,
                                        "apfd": s["mean"], "random": rand["mean"],
                                        "vs_random": rel})


def write_outputs(out: Path, result: RQ3Result, tables: Tables, defs: Sequence[FailureDef],
                  names: list[str]) -> list[Path]:
    """``rq3.md/.csv/.json`` and the three figures (detection only when there are faults)."""
    doc, label, taus = result.document, result.setup.label, result.document["taus"]
    files = write_tables(out, "rq3", tables.apfd, result.markdown, doc)
    files.append(box_plot(tables.raw, taus, defs, names, out / "rq3-apfd-box.png", label))
    if tables.curves:
        files.append(detection_plot(tables.curves, main_tau(taus), out / "rq3-detection.png", label))
    files.append(segment_plot(tables.segments, defs, out / "rq3-failure-rate.png", label))
    return files
