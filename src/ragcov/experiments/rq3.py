"""RQ3 (docs/method.md §6, §9): do coverage-guided orders reveal distinct faults earlier?

One pool is retrieved once; every order is a permutation of its rows. Failures
come from the dataset's relevance labels (``hit`` = 0, or ``context_relevance``
below a threshold); faults are the failing queries grouped by Jaccard > tau; each
order gets APFD, and NAPFD on budgeted prefixes (the first B tests, faults not
revealed counting as in NAPFD, see :mod:`ragcov.faults`).

Orders compared, all oracle-free (none looks at the labels):

* the paper's three: ``coverage`` (greedy, random after saturation), ``random``
  and ``overlap``, each over ``repeats`` seeds;
* research orders, tried because the held-back check (docs/method.md §9) found greedy
  defers failures: ``coverage-reset`` (the "additional" rule),
  ``coverage-lowconf`` (the same greedy gain at every step, but ties and the
  post-saturation tail go to the query whose best retrieval score is lowest:
  coverage's exploration is kept exactly, only the choice among equals changes),
  ``dissimilar`` (farthest-first on the Jaccard distance of retrieved *sets*:
  a new combination of popular chunks counts as new behaviour, which greedy on
  chunks ignores), and ``lowconf`` (ascending best score alone, the signal
  without coverage), and ``interleave`` (coverage and lowconf picks in turn,
  each skipping what the other already took).

Because every research order gives up some of coverage's exploration, the
tests each order needs to reach 50% and 80% of the pool's coverage are
reported beside its APFD.

Explanations written beside the APFD table: fault multiplicity per tau, the
failure rate in each fifth of each order, and the popularity and retrieval score
of failing against passing queries.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.experiments.common import (
    ExperimentSetup,
    Prepared,
    environment,
    markdown_table,
    prepare,
    pyplot,
    save_figure,
    write_tables,
)
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
from ragcov.selection import select, tests_to, tie_ranks

PAPER_IMPROVEMENT = (0.10, 0.25)          # coverage over random, docs/method.md §6
BASELINES = ("coverage", "random", "overlap")
RESEARCH = ("coverage-reset", "coverage-lowconf", "interleave", "dissimilar", "lowconf")
DEFAULT_TAUS = (0.6, 0.7, 0.8, 0.9)
DEFAULT_METRICS = ("hit", "context_relevance<0.4")
DEFAULT_BUDGETS = (0.1, 0.25, 0.5)
SEGMENTS = 5


# ----------------------------------------------------------------- failure definitions
@dataclass(frozen=True)
class FailureDef:
    metric: str                  # hit | context_relevance
    fail_below: float | None     # None: fails at the minimum (<= 0)

    @property
    def name(self) -> str:
        return self.metric if self.fail_below is None else f"{self.metric}<{self.fail_below:g}"


def parse_failure_defs(text: str) -> list[FailureDef]:
    """``hit,context_relevance<0.4``: a metric name, optionally ``<X`` for --fail-below."""
    defs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, below = part.partition("<")
        name = name.strip()
        if name not in ("hit", "context_relevance"):
            raise RagcovError(f"unknown failure metric {name!r}: expected hit or context_relevance")
        try:
            fb = float(below) if below.strip() else None
        except ValueError as exc:
            raise RagcovError(f"bad threshold in {part!r}: expected NAME<NUMBER") from exc
        defs.append(FailureDef(name, fb))
    if not defs:
        raise RagcovError("give at least one failure metric (hit, context_relevance<0.4)")
    return defs


def parse_floats(text: str, what: str, low: float, high: float) -> list[float]:
    try:
        values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise RagcovError(f"{what} must be comma-separated numbers, got {text!r}") from exc
    if not values or any(not (low <= v <= high) for v in values):
        raise RagcovError(f"{what} must be numbers between {low:g} and {high:g}, got {text!r}")
    return values


# ----------------------------------------------------------------- research orders
def greedy_order(m: CoverageMatrix, priority: np.ndarray) -> np.ndarray:
    """Coverage greedy (most new chunks first); ties and the saturated tail by ascending priority.

    ``priority`` is a permutation of the rows; with ``tie_ranks(n, seed)`` this is
    ``select(m, "coverage", seed)``'s order.
    """
    from ragcov.selection import coverage_order

    return coverage_order(m, np.asarray(priority, dtype=np.int64))


def dissimilar_order(m: CoverageMatrix, priority: np.ndarray) -> np.ndarray:
    """Farthest-first on Jaccard distance: next = the query least similar to all picked so far."""
    n = m.n_queries
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    h = m.hits.astype(np.int32).tocsr()
    ht = h.T.tocsc()
    sizes = np.diff(h.indptr).astype(np.float64)
    closest = np.full(n, -1.0)              # max Jaccard to any picked query
    picked = np.zeros(n, dtype=bool)
    order = []
    r = int(np.argmin(priority))
    for _ in range(n):
        order.append(r)
        picked[r] = True
        inter = np.asarray((h @ ht[:, r]).todense()).ravel().astype(np.float64)
        union = sizes + sizes[r] - inter
        jac = np.divide(inter, union, out=np.zeros(n), where=union > 0)
        np.maximum(closest, jac, out=closest)
        if picked.all():
            break
        key = np.where(picked, np.inf, closest)
        low = np.flatnonzero(key == key.min())
        r = int(low[np.argmin(priority[low])])
    return np.asarray(order, dtype=np.int64)


def interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Alternate picks from two orders of the same rows, skipping rows already taken."""
    n = len(first)
    taken = np.zeros(n, dtype=bool)
    out: list[int] = []
    i = j = 0
    turn = 0
    while len(out) < n:
        src, pos = (first, i) if turn == 0 else (second, j)
        while pos < n and taken[src[pos]]:
            pos += 1
        if pos < n:
            out.append(int(src[pos]))
            taken[src[pos]] = True
            pos += 1
        if turn == 0:
            i = pos
        else:
            j = pos
        turn ^= 1
    return np.asarray(out, dtype=np.int64)


def top_scores(m: CoverageMatrix) -> np.ndarray:
    """Each query's best (rank-1) retrieval score; -inf when it retrieved nothing, NaN if unscored."""
    out = np.full(m.n_queries, -np.inf)
    r = m.ranks.tocoo()
    first = r.data == 1
    s = m.scores.tocoo()
    out[r.row[first]] = s.data[first]
    return out


def confidence_priority(m: CoverageMatrix, seed: int) -> np.ndarray | None:
    """Rank of each query by ascending best score (seeded ties); None when scores are missing."""
    top = top_scores(m)
    if np.isnan(top).any():
        return None
    ties = tie_ranks(m.n_queries, seed)
    order = np.lexsort((ties, top))
    prio = np.empty(m.n_queries, dtype=np.int64)
    prio[order] = np.arange(m.n_queries)
    return prio


def build_orders(m: CoverageMatrix, repeats: int, seed: int) -> tuple[dict[str, list[np.ndarray]],
                                                                       list[str]]:
    """Every order family, ``repeats`` seeded runs each (deterministic ones once)."""
    seeds = [seed + i for i in range(repeats)]
    orders: dict[str, list[np.ndarray]] = {name: [] for name in BASELINES + RESEARCH}
    notes: list[str] = []
    for s in seeds:
        for strategy in BASELINES:
            orders[strategy].append(select(m, strategy, seed=s).order)
        orders["coverage-reset"].append(select(m, "coverage", seed=s, after_saturation="reset").order)
        orders["dissimilar"].append(dissimilar_order(m, tie_ranks(m.n_queries, s)))
    for s in seeds:
        prio = confidence_priority(m, s)
        if prio is None:
            notes.append("the retriever recorded no scores: lowconf orders left out")
            for name in ("coverage-lowconf", "interleave", "lowconf"):
                del orders[name]
            break
        lowconf = np.argsort(prio, kind="stable").astype(np.int64)
        orders["coverage-lowconf"].append(greedy_order(m, prio))
        orders["lowconf"].append(lowconf)
        orders["interleave"].append(interleave(orders["coverage"][s - seed], lowconf))
    return orders, notes


# ----------------------------------------------------------------- statistics
def a12(x: Sequence[float], y: Sequence[float]) -> float:
    """Vargha–Delaney A12: probability that a run of x beats a run of y (ties half)."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xa.size == 0 or ya.size == 0:
        return math.nan
    gt = (xa[:, None] > ya[None, :]).sum()
    eq = (xa[:, None] == ya[None, :]).sum()
    return float((gt + 0.5 * eq) / (xa.size * ya.size))


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import mannwhitneyu

    if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0 and x[0] == y[0]):
        return math.nan
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def _summary(values: list[float | None]) -> dict[str, Any]:
    v = np.array([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return {"mean": None, "sd": None, "median": None, "min": None, "max": None, "runs": 0}
    spread = v.size > 1 and np.ptp(v) > 0          # identical runs: sd exactly 0, not 1e-17
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if spread else 0.0,
            "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
            "runs": int(v.size)}


def _pct(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x * 100:+.1f}%"


# ----------------------------------------------------------------- the experiment
@dataclass
class RQ3Result:
    setup: ExperimentSetup
    document: dict[str, Any]
    markdown: str
    files: list[Path] = field(default_factory=list)


def dataset_qrels(prep: Prepared) -> Qrels:
    ds = prep.dataset
    if ds.relevant_chunks:
        return Qrels("chunk", {q: set(v) for q, v in ds.relevant_chunks.items()})
    if ds.relevant_docs:
        return Qrels("doc", {q: set(v) for q, v in ds.relevant_docs.items()})
    raise RagcovError(f"{setup_name(prep)}: the dataset has no relevance labels; RQ3 needs them")


def setup_name(prep: Prepared) -> str:
    return prep.dataset.name


def run_rq3(setup: ExperimentSetup, repeats: int = 30, taus: Sequence[float] = DEFAULT_TAUS,
            failure_defs: Sequence[FailureDef] | None = None,
            budgets: Sequence[float] = DEFAULT_BUDGETS, seed: int = 0,
            out_dir: Path | None = None, console: Any = None,
            prepared: Prepared | None = None) -> RQ3Result:
    if repeats < 1:
        raise RagcovError(f"--repeats must be at least 1, got {repeats}")
    failure_defs = list(failure_defs or parse_failure_defs(",".join(DEFAULT_METRICS)))
    taus = list(taus)
    for t in taus:
        if not 0 <= t <= 1:
            raise RagcovError(f"tau must be between 0 and 1, got {t}")
    prep = prepared or prepare(setup)
    m = prep.matrix
    qrels = dataset_qrels(prep)
    n = m.n_queries
    t0 = time.perf_counter()
    orders, notes = build_orders(m, repeats, seed)
    t_orders = time.perf_counter() - t0

    exploration = []
    for name, runs in orders.items():
        curves_cc = [coverage_curve(m, o) for o in runs]
        pool_cc = float(np.count_nonzero(m.chunk_frequencies())) / m.n_chunks
        row: dict[str, Any] = {"order": name}
        for pct in (50, 80):
            vals = [tests_to(c, pool_cc, pct) for c in curves_cc]
            row[f"tests_to_{pct}"] = (None if any(v is None for v in vals)
                                      else float(np.mean(vals)))
        row["cc_at_10pct"] = float(np.mean([c[max(0, n // 10 - 1)] for c in curves_cc])) if n else None
        exploration.append(row)

    freq = m.chunk_frequencies()
    row_pop = np.asarray(m.hits.astype(np.float64) @ freq).ravel() / np.maximum(
        np.diff(m.hits.indptr), 1)
    top = top_scores(m)

    apfd_rows: list[dict[str, Any]] = []
    raw: dict[str, Any] = {}
    multiplicity: list[dict[str, Any]] = []
    segments: list[dict[str, Any]] = []
    explain: list[dict[str, Any]] = []
    improvements: list[dict[str, Any]] = []
    curves: dict[str, dict[str, np.ndarray]] = {}
    budget_sizes = sorted({max(1, int(round(b * n))) for b in budgets if b * n >= 1 and b < 1})

    for fd in failure_defs:
        values = label_metric(m, qrels, fd.metric)
        failing = failing_mask(values, fd.fail_below)
        labelled = ~np.isnan(values)
        fail_rows = np.flatnonzero(failing)
        passing = labelled & ~failing
        explain.append({
            "failure": fd.name, "labelled": int(labelled.sum()), "failing": int(failing.sum()),
            "failure_rate": float(failing.sum() / max(labelled.sum(), 1)),
            "popularity_failing": _mean(row_pop[failing]), "popularity_passing": _mean(row_pop[passing]),
            "popularity_p": mann_whitney_p(list(row_pop[failing]), list(row_pop[passing])),
            "top_score_failing": _mean(top[failing]), "top_score_passing": _mean(top[passing]),
            "top_score_p": mann_whitney_p(list(top[failing & np.isfinite(top)]),
                                          list(top[passing & np.isfinite(top)])),
        })
        for name, runs in orders.items():
            rates = np.mean([failure_rate_by_segment(o, failing, SEGMENTS) for o in runs], axis=0)
            segments.append({"failure": fd.name, "order": name,
                             **{f"fifth_{i + 1}": float(r) for i, r in enumerate(rates)}})
        for tau in taus:
            faults = cluster_faults(m, fail_rows, tau)
            fault_of = fault_of_row(n, faults)
            sizes = np.array([f.size for f in faults])
            multiplicity.append({
                "failure": fd.name, "tau": tau, "failures": int(fail_rows.size),
                "faults": len(faults), "singletons": int((sizes == 1).sum()) if sizes.size else 0,
                "mean_size": float(sizes.mean()) if sizes.size else None,
                "largest": int(sizes.max()) if sizes.size else 0})
            per_order: dict[str, dict[str, list[float | None]]] = {}
            for name, runs in orders.items():
                per_order[name] = {"all": [apfd(o, fault_of, len(faults)) for o in runs]}
                for b in budget_sizes:
                    per_order[name][str(b)] = [apfd(o[:b], fault_of, len(faults)) for o in runs]
                if tau == _main_tau(taus) and faults:
                    tf = np.stack([first_reveals(o, fault_of, len(faults)) for o in runs])
                    curves.setdefault(fd.name, {})[name] = _detection_curve(tf, n)
            raw[f"{fd.name}|tau={tau:g}"] = {
                name: {b: [None if v is None else round(v, 6) for v in vals]
                       for b, vals in per.items()} for name, per in per_order.items()}
            for budget in ["all", *map(str, budget_sizes)]:
                rand = _summary(per_order["random"][budget])
                for name in orders:
                    s = _summary(per_order[name][budget])
                    vals = [v for v in per_order[name][budget] if v is not None]
                    rvals = [v for v in per_order["random"][budget] if v is not None]
                    rel = (None if s["mean"] is None or not rand["mean"]
                           else (s["mean"] - rand["mean"]) / rand["mean"])
                    apfd_rows.append({
                        "failure": fd.name, "tau": tau, "tests": n if budget == "all" else int(budget),
                        "faults": len(faults), "order": name, **{f"apfd_{k}": v for k, v in s.items()},
                        "vs_random": rel,
                        "a12_vs_random": a12(vals, rvals) if name != "random" else None,
                        "p_vs_random": mann_whitney_p(vals, rvals) if name != "random" else None})
                    if budget == "all" and name != "random":
                        improvements.append({"failure": fd.name, "tau": tau, "order": name,
                                             "apfd": s["mean"], "random": rand["mean"],
                                             "vs_random": rel})

    document = {
        "experiment": "rq3", "setup": setup.describe(), "environment": environment(),
        "pool": {"queries": n, "chunks": m.n_chunks, "labels": qrels.level,
                 "labelled": int(sum(q in qrels.relevant for q in m.query_ids))},
        "repeats": repeats, "seed": seed, "taus": taus,
        "failure_definitions": [fd.name for fd in failure_defs],
        "budgets": budget_sizes, "paper_improvement": list(PAPER_IMPROVEMENT),
        "notes": notes, "exploration": exploration, "explain": explain, "multiplicity": multiplicity,
        "failure_rate_by_fifth": segments, "apfd": apfd_rows, "improvements": improvements,
        "runs": raw,
        "seconds": {"retrieval": prep.seconds, "orders": t_orders,
                    "analysis": time.perf_counter() - t0 - t_orders},
    }
    markdown = render_markdown(document)
    result = RQ3Result(setup, document, markdown)
    out = out_dir or setup.default_out("rq3")
    result.files = write_tables(out, "rq3", apfd_rows, markdown, document)
    result.files.append(box_plot(raw, taus, failure_defs, list(orders), out / "rq3-apfd-box.png",
                                 setup.label))
    if curves:
        result.files.append(detection_plot(curves, _main_tau(taus), out / "rq3-detection.png",
                                           setup.label))
    result.files.append(segment_plot(segments, failure_defs, out / "rq3-failure-rate.png",
                                     setup.label))
    if console is not None:
        console.print(f"Wrote {', '.join(str(p) for p in result.files)}")
    return result


def _mean(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else None


def _main_tau(taus: Sequence[float]) -> float:
    return 0.8 if 0.8 in taus else taus[len(taus) // 2]


def _detection_curve(tf: np.ndarray, n: int) -> np.ndarray:
    """Mean fraction of faults revealed after each test (runs x faults -> n values)."""
    m = tf.shape[1]
    curve = np.zeros(n)
    for row in tf:
        counts = np.bincount(row[row > 0] - 1, minlength=n)[:n]
        curve += np.cumsum(counts) / m
    return curve / tf.shape[0]


# ----------------------------------------------------------------- output
def render_markdown(doc: dict[str, Any]) -> str:
    s = doc["setup"]
    n = doc["pool"]["queries"]
    tau0 = _main_tau(doc["taus"])
    rows = doc["apfd"]
    lines = [f"# RQ3 on {s['dataset']} ({s['retriever']}, k={s['k']})", "",
             f"Pool: {n} queries ({doc['pool']['labelled']} labelled, "
             f"{doc['pool']['labels']}-level), {doc['pool']['chunks']} chunks; "
             f"{doc['repeats']} seeded runs per order; paper: coverage beats random by "
             f"{PAPER_IMPROVEMENT[0]:.0%} to {PAPER_IMPROVEMENT[1]:.0%} APFD.", ""]
    lines += [f"Note: {note}" for note in doc["notes"]]
    random_mean = {(r["failure"], r["tau"], r["tests"]): r["apfd_mean"] for r in rows
                   if r["order"] == "random"}
    cov = [{**r, "vs_random": _pct(r["vs_random"]),
            "random": random_mean[(r["failure"], r["tau"], r["tests"])]} for r in rows
           if r["order"] == "coverage" and r["tests"] == n]
    lines += ["## Coverage-guided against random, next to the paper's +10% to +25%", "",
              markdown_table(cov, ["failure", "tau", "faults", "apfd_mean", "random", "vs_random",
                                   "a12_vs_random", "p_vs_random"],
                             ["failure", "tau", "faults", "coverage APFD", "random APFD",
                              "vs random", "A12", "p (Mann-Whitney)"]), ""]
    budgets = doc["budgets"]
    table = []
    for r in rows:
        if r["tau"] != tau0 or r["tests"] != n:
            continue
        row = {**r, "vs_random": _pct(r["vs_random"])}
        for b in budgets:
            match = next(x for x in rows if x["failure"] == r["failure"] and x["tau"] == tau0
                         and x["tests"] == b and x["order"] == r["order"])
            row[f"b{b}"] = _pct(match["vs_random"])
        table.append(row)
    lines += [f"## Every order at tau = {tau0:g} (first B: NAPFD of the first B tests, vs random)",
              "", markdown_table(table, ["failure", "order", "apfd_mean", "apfd_sd", "vs_random",
                                         "a12_vs_random", *[f"b{b}" for b in budgets]],
                                 ["failure", "order", "APFD", "sd", "vs random", "A12",
                                  *[f"first {b}" for b in budgets]]), ""]
    pivot: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if r["tests"] == n:
            pivot.setdefault((r["failure"], r["order"]), {"failure": r["failure"],
                                                          "order": r["order"]})[
                f"tau {r['tau']:g}"] = _pct(r["vs_random"])
    lines += ["## APFD against random for each tau", "",
              markdown_table(list(pivot.values())), ""]
    lines += ["## Exploration each order keeps (tests to 50% / 80% of the pool's coverage, "
              "coverage after the first 10% of the suite)", "",
              markdown_table(doc["exploration"], ["order", "tests_to_50", "tests_to_80",
                                                  "cc_at_10pct"],
                             ["order", "tests to 50%", "tests to 80%", "CC at 10%"]), ""]
    lines += ["## Fault multiplicity", "",
              markdown_table(doc["multiplicity"], ["failure", "tau", "failures", "faults",
                                                   "singletons", "mean_size", "largest"]), ""]
    lines += ["## Failure rate in each fifth of the order (mean over runs)", "",
              markdown_table(doc["failure_rate_by_fifth"]), ""]
    lines += ["## Failing against passing queries", "",
              "popularity = mean number of pool queries that retrieved each of a query's chunks; "
              "top score = the query's best retrieval score; p = Mann-Whitney.", "",
              markdown_table(doc["explain"], ["failure", "labelled", "failing", "failure_rate",
                                              "popularity_failing", "popularity_passing",
                                              "popularity_p", "top_score_failing",
                                              "top_score_passing", "top_score_p"]), ""]
    return "\n".join(lines)


def box_plot(raw: dict[str, Any], taus: Sequence[float], defs: Sequence[FailureDef],
             names: list[str], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(len(defs), len(taus), figsize=(3.2 * len(taus) + 1, 3.4 * len(defs)),
                             squeeze=False, sharey="row")
    for i, fd in enumerate(defs):
        for j, tau in enumerate(taus):
            ax = axes[i][j]
            per = raw[f"{fd.name}|tau={tau:g}"]
            data = [[v for v in per[name]["all"] if v is not None] for name in names]
            if any(data):
                ax.boxplot([d if d else [np.nan] for d in data], showmeans=True)
            ax.set_xticks(range(1, len(names) + 1), names, rotation=60, ha="right", fontsize=7)
            ax.set_title(f"{fd.name}, tau={tau:g}", fontsize=9)
            if j == 0:
                ax.set_ylabel("APFD")
    fig.suptitle(f"RQ3 APFD by order: {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def detection_plot(curves: dict[str, dict[str, np.ndarray]], tau: float, path: Path,
                   title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.8), squeeze=False)
    for ax, (fname, per) in zip(axes[0], curves.items()):
        for name, curve in per.items():
            x = np.arange(1, len(curve) + 1) / len(curve)
            ax.plot(x, curve, label=name, linewidth=1.2,
                    linestyle="-" if name in BASELINES else "--")
        ax.set_xlabel("fraction of the suite run")
        ax.set_ylabel("fraction of faults revealed")
        ax.set_title(f"{fname}, tau={tau:g}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Fault detection along each order (mean over runs): {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def segment_plot(segments: list[dict[str, Any]], defs: Sequence[FailureDef], path: Path,
                 title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(defs), figsize=(5 * len(defs), 3.6), squeeze=False)
    for ax, fd in zip(axes[0], defs):
        for row in (r for r in segments if r["failure"] == fd.name):
            ys = [row[f"fifth_{i + 1}"] for i in range(SEGMENTS)]
            ax.plot(range(1, SEGMENTS + 1), ys, marker="o", label=row["order"],
                    linestyle="-" if row["order"] in BASELINES else "--")
        ax.set_xlabel("fifth of the order")
        ax.set_ylabel("failure rate")
        ax.set_xticks(range(1, SEGMENTS + 1))
        ax.set_title(fd.name, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Failure rate along each order: {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)
