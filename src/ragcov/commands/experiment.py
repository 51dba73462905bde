"""``ragcov experiment``: one-command reproductions of the paper's research questions.

Other modules add their own research questions to :data:`experiment_app`
(``from ragcov.commands.experiment import experiment_app``); the options every
experiment shares are defined here so they read the same everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli import K, Model, RetrieverName, app, out

experiment_app = typer.Typer(
    help="Reproduce the paper's research questions on a dataset (FinQA, ConvFinQA, a BEIR folder).",
    no_args_is_help=True,
)
app.add_typer(experiment_app, name="experiment")

DatasetSpec = Annotated[str, typer.Option(
    "--dataset", help="finqa, convfinqa, pubmedqa, or the path of a BEIR-style folder "
    "(corpus.jsonl, queries.jsonl, optional qrels).")]
DataPath = Annotated[Path | None, typer.Option(
    "--data", help="Where the named dataset's files are (a file or folder); not needed for a "
    "BEIR folder.")]
OutDir = Annotated[Path | None, typer.Option(
    "--out", help="Folder for the tables (Markdown, CSV, JSON) and plots (PNG); "
    "default results/<rq>-<dataset>-<retriever>-k<k>.")]
Seed = Annotated[int, typer.Option(help="Seed for every random draw (results are reproducible).")]
ExpChunkSize = Annotated[int, typer.Option(
    help="Characters per chunk when the dataset gives whole documents (FinQA/ConvFinQA pages).")]
ExpChunkOverlap = Annotated[int, typer.Option(help="Characters of overlap between chunks.")]


def _ints(text: str, what: str) -> list[int]:
    from ragcov.errors import RagcovError

    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise RagcovError(f"{what} must be comma-separated whole numbers, got {text!r}") from exc
    if not values or any(v < 1 for v in values):
        raise RagcovError(f"{what} must be whole numbers of at least 1, got {text!r}")
    return values


@experiment_app.command("rq1")
def rq1(
    dataset: DatasetSpec,
    data: DataPath = None,
    retriever: RetrieverName = "dense",
    model: Model = None,
    k: K = 5,
    sizes: Annotated[str, typer.Option(help="Suite sizes, comma-separated.")] = "10,25,50,100",
    suites: Annotated[int, typer.Option(help="Random suites drawn per size.")] = 100,
    seed: Seed = 0,
    chunk_size: ExpChunkSize = 1000,
    chunk_overlap: ExpChunkOverlap = 100,
    out_dir: OutDir = None,
) -> None:
    """RQ1: does chunk coverage agree with diversity measures (entropy, Gini, Jaccard)?"""
    from ragcov.experiments.common import ExperimentSetup
    from ragcov.experiments.rq1 import run_rq1

    setup = ExperimentSetup(dataset, data, retriever, model, k, chunk_size, chunk_overlap)
    result = run_rq1(setup, sizes=_ints(sizes, "--sizes"), suites=suites, seed=seed,
                     out_dir=out_dir, console=out)
    out.print(result.markdown, markup=False)


@experiment_app.command("rq2")
def rq2(
    dataset: DatasetSpec,
    data: DataPath = None,
    retriever: RetrieverName = "dense",
    model: Model = None,
    k: K = 5,
    repeats: Annotated[int, typer.Option(
        help="Seeded runs of the random and overlap-biased strategies, averaged.")] = 30,
    seed: Seed = 0,
    after_saturation: Annotated[str, typer.Option(
        help="Greedy order once nothing adds coverage: random or reset.")] = "random",
    chunk_size: ExpChunkSize = 1000,
    chunk_overlap: ExpChunkOverlap = 100,
    out_dir: OutDir = None,
) -> None:
    """RQ2: how many fewer tests does coverage-guided selection need than random and overlap?"""
    from ragcov.experiments.common import ExperimentSetup
    from ragcov.experiments.rq2 import run_rq2

    setup = ExperimentSetup(dataset, data, retriever, model, k, chunk_size, chunk_overlap)
    result = run_rq2(setup, repeats=repeats, seed=seed, after_saturation=after_saturation,
                     out_dir=out_dir, console=out)
    out.print(result.markdown, markup=False)
