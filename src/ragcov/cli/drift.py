"""``ragcov drift``: metamorphic testing of retrieval under corpus change."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api import cli_support
from ragcov.api.cli_support import check_outputs
from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    Backend,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DaskWorkers,
    DataFile,
    DocKey,
    IdKey,
    Index,
    K,
    Model,
    RetrieverName,
    Scheduler,
    Split,
    emit,
    fail,
)
from ragcov.errors import RagcovError
from ragcov.files import json_text
from ragcov.reporters.drift import DRIFT_PAGE, drift_json, drift_markdown, drift_text

FORMATS = ("text", "json", "markdown")


def drift(
    corpus: CorpusPath,
    queries: Annotated[Path | None, typer.Option(
        help="Test queries: .jsonl, .csv or RAGAS/DeepEval .json (their baseline is recorded "
        "in the data file as `run --append` records it). Default: the queries the data file "
        "recorded (a pytest --ragcov session's).")] = None,
    retriever: RetrieverName = None,
    model: Model = None,
    backend: Backend = None,
    k: K = 5,
    index: Index = "flat",
    data_file: DataFile = DEFAULT_DATA_PATH,
    relation: Annotated[list[str] | None, typer.Option(
        "--relation", metavar="RELATION", help="noise, format (or one form: format:rows, format:markdown, "
        "format:csv, format:whitespace, format:case), stale, distractors, duplicate, identity "
        "(repeatable or comma-separated; default: all but identity).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every transform (the same seed, the same "
                                      "copies).")] = 0,
    noise_rate: Annotated[float, typer.Option(
        help="Share of characters the noise relation misreads (0 to 1).")] = 0.02,
    # A string, not a Path: a Path folds "http://host" to "http:/host" before any message.
    distractors: Annotated[str | None, typer.Option(
        metavar="PATH|URL", help="Chunks (or documents, chunked as the corpus is) of an "
        "unrelated corpus for the distractors relation. Default: the bundled PubMedQA sample.")]
    = None,
    max_violation_rate: Annotated[list[str] | None, typer.Option(
        "--max-violation-rate", metavar="[RELATION=]RATE",
        help="Exit with status 2 when a relation's violation rate is above RATE (0 to 1): "
        "for every relation, or RELATION=RATE for one (format covers its forms); repeatable.")]
    = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples of each interval.")] = 2000,
    confidence: Annotated[float, typer.Option(help="Confidence of each interval.")] = 0.95,
    format: Annotated[str, typer.Option("--format", help="text, json or markdown.")] = "text",
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the report here (default: stdout).")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Also write the drift page (drift.html) into this HTML report folder.")]
    = None,
    show: Annotated[int, typer.Option(help="Worst tests, chunks and documents listed per "
                                      "relation in text and markdown.")] = 5,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    doc_key: DocKey = None,
    id_key: IdKey = None,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (the copies made, searched and judged on a Dask "
        "cluster, each worker building the retriever once; recorded here).")] = "local",
    scheduler: Scheduler = None,
    workers: DaskWorkers = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or report.")] = False,
) -> None:
    """Run the suite on transformed copies of the corpus and report each metamorphic relation.

    Copies are deterministic by --seed: OCR noise, tables and text in other forms,
    updated versions beside old ones (or the corpus's own versions), unrelated
    distractors, duplicated chunks. Each relation gives its violation rate with a
    bootstrap interval, the worst tests, and the chunks and documents that break.
    Results are stored in the data file (`ragcov report` and `diff` show them); rerun
    to resume an interrupted run.
    """
    if format not in FORMATS:
        raise RagcovError(f"unknown --format {format!r}: expected text, json or markdown")
    if show < 0:
        raise RagcovError(f"--show must be 0 or more, got {show}")
    limits = cli_support.drift_limits(max_violation_rate or [], relation)
    check_outputs([output, None if html is None else html / DRIFT_PAGE],
                  [data_file, corpus, queries, distractors])
    done = api.corpus_drift(
        corpus, queries, retriever=retriever, model=model, backend=backend, k=k, index=index,
        data_file=data_file, relations=relation, seed=seed, noise_rate=noise_rate,
        distractors=distractors, resamples=resamples, confidence=confidence,
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split, doc_key=doc_key, id_key=id_key,
        progress=not quiet, notify=lambda line: err.print(line, markup=False, highlight=False),
        engine=engine, scheduler=scheduler, workers=workers)
    s = done.summary
    if not quiet:
        embedded = f"; {done.embedded} changed chunks embedded" if done.embedded else ""
        err.print(f"Drift in {done.data_file}: {done.copies} copies ({done.searched} searched now, "
                  f"{done.resumed} already recorded{embedded})", markup=False, highlight=False)
    if format == "json":
        text = json_text(drift_json(s), indent=2)
    elif format == "markdown":
        text = drift_markdown(s, show)
    else:
        text = drift_text(s, show)
    if not quiet or output is not None:
        emit(text, output, "the drift report", format)
    if html is not None:
        page = api.write_drift_html(data_file, html)
        if not quiet:
            out.print(f"Wrote the drift page to {page}", markup=False)
    failures = cli_support.drift_gate(s, limits)
    fail("\n".join(failures) if failures else None)
