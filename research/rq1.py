"""RQ1 (docs/method.md §3): does chunk coverage agree with established diversity measures?

Random suites of several sizes are drawn from the pool; for each suite CC,
normalised entropy and Gini (both over retrieved chunks and over the whole
corpus) and mean pairwise Jaccard are computed, and CC is correlated with each
measure per size (Pearson and Spearman, with p-values). The paper expects CC to
rise with entropy and fall with Gini and Jaccard, all significant.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ragcov.errors import RagcovError
from ragcov.metrics import gini, mean_pairwise_jaccard, normalized_entropy
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

# (key, label, sign the paper expects for its correlation with CC)
MEASURES: tuple[tuple[str, str, int], ...] = (
    ("entropy_retrieved", "normalised entropy (N = retrieved)", +1),
    ("entropy_corpus", "normalised entropy (N = |C|)", +1),
    ("gini_retrieved", "Gini (over retrieved)", -1),
    ("gini_corpus", "Gini (over corpus)", -1),
    ("jaccard", "mean pairwise Jaccard", -1),
)
PAPER = ("CC correlates positively with normalised entropy and negatively with Gini and "
         "Jaccard; all Pearson r significant (p < 0.05), r about 0.85 for larger suites")
CHECK = ("independent check (docs/method.md §9): CC vs entropy r = 0.79 to 0.98, vs Jaccard "
         "r = -0.83 to -0.99 (entropy and Gini over retrieved chunks)")


@dataclass
class RQ1Result:
    rows: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    markdown: str
    document: dict[str, Any]
    paths: list[Path] = field(default_factory=list)


def suite_measures(hits: sp.csr_matrix) -> dict[str, float]:
    """CC and the diversity measures of one suite's hit rows."""
    freq = np.asarray(hits.sum(axis=0, dtype=np.int64)).ravel()
    return {
        "cc": float(np.count_nonzero(freq)) / hits.shape[1],
        "entropy_retrieved": normalized_entropy(freq, "retrieved"),
        "entropy_corpus": normalized_entropy(freq, "corpus"),
        "gini_retrieved": gini(freq, "retrieved"),
        "gini_corpus": gini(freq, "corpus"),
        "jaccard": mean_pairwise_jaccard(hits),
    }


def _corr(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None, float | None,
                                                 float | None]:
    """Pearson r, p and Spearman rho, p; None where a side is constant (undefined)."""
    from scipy import stats

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None, None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr = stats.pearsonr(x, y)
        sr = stats.spearmanr(x, y)
    return float(pr[0]), float(pr[1]), float(sr[0]), float(sr[1])


def correlate(hits: sp.csr_matrix, sizes: list[int], suites: int, seed: int
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per size, draw ``suites`` random suites and correlate CC with each measure."""
    n = hits.shape[0]
    too_big = [s for s in sizes if s > n]
    if too_big:
        raise RagcovError(f"suite size(s) {too_big} exceed the pool of {n} queries")
    if suites < 3:
        raise RagcovError(f"--suites must be at least 3 to correlate, got {suites}")
    rng = np.random.default_rng(seed)
    samples: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for size in sizes:
        drawn = [suite_measures(hits[np.sort(rng.choice(n, size=size, replace=False))])
                 for _ in range(suites)]
        for i, d in enumerate(drawn):
            samples.append({"size": size, "suite": i, **d})
        cc = np.array([d["cc"] for d in drawn])
        for key, label, sign in MEASURES:
            y = np.array([d[key] for d in drawn])
            pr, pp, sr, spp = _corr(cc, y)
            rows.append({
                "size": size, "measure": key, "label": label, "expected_sign": sign,
                "pearson_r": pr, "pearson_p": pp, "spearman_rho": sr, "spearman_p": spp,
                "agrees": None if pr is None else bool(np.sign(pr) == sign and pp < 0.05),
                "mean_cc": float(cc.mean()), "mean_measure": float(y.mean()),
            })
    return rows, samples


def plot(samples: list[dict[str, Any]], sizes: list[int], title: str, path: Path) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(len(MEASURES), len(sizes), figsize=(3.2 * len(sizes),
                                                                 2.6 * len(MEASURES)),
                             squeeze=False)
    for j, size in enumerate(sizes):
        sub = [s for s in samples if s["size"] == size]
        cc = [s["cc"] * 100 for s in sub]
        for i, (key, label, _sign) in enumerate(MEASURES):
            ax = axes[i][j]
            ax.scatter([s[key] for s in sub], cc, s=8, alpha=0.6)
            if i == 0:
                ax.set_title(f"|T| = {size}")
            if j == 0:
                ax.set_ylabel("CC (%)")
            ax.set_xlabel(label, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def run_rq1(setup: ExperimentSetup, sizes: list[int], suites: int = 100, seed: int = 0,
            out_dir: Path | None = None, console: Any = None,
            prepared: Prepared | None = None) -> RQ1Result:
    out_dir = out_dir or setup.default_out("rq1")
    if console is not None:
        console.print(f"RQ1 on {setup.dataset_name} ({setup.retriever}, k={setup.k})")
    prep = prepared or prepare(setup)
    m = prep.matrix
    t0 = time.perf_counter()
    rows, samples = correlate(m.hits, sizes, suites, seed)
    seconds = time.perf_counter() - t0
    columns = ["size", "measure", "pearson_r", "pearson_p", "spearman_rho", "spearman_p",
               "mean_cc", "mean_measure", "expected_sign", "agrees"]
    table = markdown_table(
        [{**r, "measure": r["label"], "mean_cc": r["mean_cc"] * 100,
          "expected_sign": "+" if r["expected_sign"] > 0 else "−",
          "agrees": {True: "yes", False: "no", None: "–"}[r["agrees"]]} for r in rows],
        columns, ["|T|", "measure", "Pearson r", "p", "Spearman ρ", "p", "mean CC (%)",
                  "mean measure", "paper's sign", "agrees (sign, p<0.05)"])
    n_agree = sum(1 for r in rows if r["agrees"])
    head = (f"RQ1: CC vs diversity on {setup.dataset_name}: {len(prep.corpus)} chunks, "
            f"{m.n_queries} queries in the pool, {setup.retriever} retriever, k={setup.k}; "
            f"{suites} random suites per size, seed {seed}.")
    markdown = "\n\n".join([
        f"### {head}", table,
        f"{n_agree} of {len(rows)} correlations have the paper's sign and p < 0.05.",
        f"Paper: {PAPER}.", f"Expectation from the {CHECK}.",
    ])
    document = {
        "experiment": "rq1", "setup": setup.describe(), "environment": environment(),
        "corpus_chunks": len(prep.corpus), "pool_queries": m.n_queries,
        "pool_coverage": float(np.count_nonzero(m.covered())) / m.n_chunks,
        "retriever": prep.retriever_fingerprint, "sizes": sizes, "suites": suites, "seed": seed,
        "seconds": {"retrieval": prep.seconds, "analysis": seconds},
        "paper": PAPER, "independent_check": CHECK,
        "correlations": rows, "samples": samples,
    }
    paths = write_tables(out_dir, "rq1", rows, markdown, document, columns=[
        "size", "measure", "pearson_r", "pearson_p", "spearman_rho", "spearman_p", "mean_cc",
        "mean_measure", "expected_sign", "agrees"])
    paths.append(plot(samples, sizes, f"RQ1 {setup.label}: CC vs diversity", out_dir /
                      "rq1_scatter.png"))
    if console is not None:
        console.print(f"Wrote {', '.join(str(p) for p in paths)}")
    return RQ1Result(rows, samples, markdown, document, paths)
