"""``ragcov experiment rq3``: APFD of coverage-guided, random and overlap orders (docs/method.md §6)."""

from __future__ import annotations

from typing import Annotated

import typer

from ragcov.cli import K, Model, RetrieverName, out
from ragcov.commands.experiment import (
    DataPath,
    DatasetSpec,
    ExpChunkOverlap,
    ExpChunkSize,
    OutDir,
    Seed,
    experiment_app,
)


@experiment_app.command("rq3")
def rq3(
    dataset: DatasetSpec,
    data: DataPath = None,
    retriever: RetrieverName = "dense",
    model: Model = None,
    k: K = 5,
    repeats: Annotated[int, typer.Option(
        help="Seeded runs of each order (random, overlap, coverage tie-breaks).")] = 30,
    taus: Annotated[str, typer.Option(
        help="Jaccard thresholds for grouping failures into faults, comma-separated.")]
    = "0.6,0.7,0.8,0.9",
    metrics: Annotated[str, typer.Option(
        help="Failure definitions from the labels: hit (fails at 0) and/or "
        "context_relevance<X (fails below X), comma-separated.")] = "hit,context_relevance<0.4",
    budgets: Annotated[str, typer.Option(
        help="Budgeted suites as fractions of the pool (NAPFD of the first B tests).")]
    = "0.1,0.25,0.5",
    seed: Seed = 0,
    chunk_size: ExpChunkSize = 1000,
    chunk_overlap: ExpChunkOverlap = 100,
    out_dir: OutDir = None,
) -> None:
    """RQ3: do coverage-guided orders reveal distinct faults earlier (APFD) than random?"""
    from ragcov.experiments.common import ExperimentSetup
    from ragcov.experiments.rq3 import parse_failure_defs, parse_floats, run_rq3

    setup = ExperimentSetup(dataset, data, retriever, model, k, chunk_size, chunk_overlap)
    result = run_rq3(setup, repeats=repeats, taus=parse_floats(taus, "--taus", 0.0, 1.0),
                     failure_defs=parse_failure_defs(metrics),
                     budgets=parse_floats(budgets, "--budgets", 0.0, 1.0), seed=seed,
                     out_dir=out_dir, console=out)
    out.print(result.markdown, markup=False)
