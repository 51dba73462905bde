"""``ragcov topics``: coverage by subject, so a report can say "the suite never asks about X"."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api import ReportScope, cli_support
from ragcov.api.cli_support import check_outputs
from ragcov.cli.console import err
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    ChunkOverlap,
    ChunkSize,
    DaskWorkers,
    DataFile,
    DocKey,
    IdKey,
    Scheduler,
    Split,
    check_precision,
    emit,
    fail,
    load_corpus_opts,
)
from ragcov.cli.report_options import scoped
from ragcov.errors import RagcovError
from ragcov.reporters.topics import check_format, how_made, render_topics

TopicCount = Annotated[int | None, typer.Option(
    "--topics", metavar="N", help="How many topics (default: chosen by silhouette, 2 to 30, "
    "at least 10 chunks a topic).")]
MinTopicCoverage = Annotated[float | None, typer.Option(
    "--min-topic-coverage", metavar="PCT", help="Exit with status 2 when any topic's chunk "
    "coverage (percent) is below this: a suite cannot pass while one subject is dark.")]
TopicPrecision = Annotated[int | None, typer.Option(
    help="Digits after the decimal point (default 0; --min-topic-coverage then compares at 2).")]


BY = ("document", "topic")


def check_by(by: str, format: str = "text", min_topic_coverage: float | None = None) -> None:
    """``--by`` of report and html, refused before the data file is read."""
    if by not in BY:
        raise RagcovError(f"--by must be document or topic, got {by!r}")
    if by == "topic" and format == "total":
        raise RagcovError("--format total prints one number; --by topic prints a table (text "
                          "or markdown)")
    if min_topic_coverage is not None and by != "topic":
        raise RagcovError("--min-topic-coverage judges each topic: give it with --by topic")
    cli_support.check_min_topic_coverage(min_topic_coverage)


@scoped
def topics(
    data_file: DataFile = DEFAULT_DATA_PATH,
    n_topics: TopicCount = None,
    seed: Annotated[int, typer.Option(help="Seed of the clustering: the same seed makes the "
                                      "same topics.")] = 0,
    vectors: Annotated[str, typer.Option(
        help="auto (the run's own: a dense run's cached embeddings, a store's vectors, else "
        "TF-IDF), dense, store or tfidf.")] = "auto",
    model: Annotated[str | None, typer.Option(
        help="Embedding model of --vectors dense (default: the dense run's).")] = None,
    corpus: Annotated[str | None, typer.Option(
        "--corpus", metavar="PATH|URL", help="The recorded corpus, to embed what the embedding "
        "cache lacks (--vectors dense) or to read a store's vectors (a store URL).")] = None,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    doc_key: DocKey = None,
    id_key: IdKey = None,
    refit: Annotated[bool, typer.Option(
        "--refit", help="Make the topics again even when the stored ones were made this way.")]
    = False,
    traffic: Annotated[Path | None, typer.Option(
        "--traffic", help="Production traces imported with `ragcov import` (same corpus): "
        "each topic's share of traffic, and topics sorted by the traffic tests miss.")] = None,
    format: Annotated[str, typer.Option("--format", help="text, markdown or json.")] = "text",
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the report here (default: stdout).")] = None,
    precision: TopicPrecision = None,
    min_topic_coverage: MinTopicCoverage = None,
    scope: ReportScope = ReportScope(),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No status line.")] = False,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (each chunk's words counted on a Dask cluster, "
        "in shards; the same topics).")] = "local",
    scheduler: Scheduler = None,
    workers: DaskWorkers = None,
) -> None:
    """Cluster the corpus into topics and report coverage per topic, what to test first on top.

    Topics are stored in the data file with the corpus digest they were made from, and
    kept while the corpus and these settings stay the same.
    """
    check_format(format)
    check_precision(precision or 0)
    cli_support.check_min_topic_coverage(min_topic_coverage)
    cli_support.check_seed(seed)
    check_outputs([output], [data_file, traffic, None if corpus is None or "://" in corpus
                             else Path(corpus)])
    corpus_obj = (None if corpus is None
                  else load_corpus_opts(corpus, chunk_size, chunk_overlap, split, doc_key, id_key,
                                        chunk_ids=cli_support.chunk_ids_of(data_file, None, "topics")))
    built = api.fit_topics(data_file, n_topics, seed, vectors, model, corpus_obj, refit,
                           engine=engine, scheduler=scheduler, workers=workers)
    if built.note and not quiet:
        err.print(f"ragcov: note: {built.note}", markup=False)
    if not quiet:
        what = how_made(built.topics.settings)
        err.print(f"Clustered {len(built.topics.chunk_ids)} chunks of {data_file}: {what}" if built.made
                  else f"Topics kept from {data_file} ({what}); --refit makes them again",
                  markup=False)
    report = api.topic_coverage(data_file, scope, traffic)
    emit(render_topics(report, format, precision or 0), output, "topic report", format)
    fail(cli_support.min_topic_failure(report, min_topic_coverage, precision))
