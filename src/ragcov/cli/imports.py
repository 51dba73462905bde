"""``ragcov import``: recorded retrieval traces into a data file, no retriever run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import cli_support
from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    ChunkIds,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DataFile,
    Documents,
    Scheduler,
    Split,
    load_corpus_opts,
)


def import_cmd(
    file: Annotated[Path, typer.Argument(
        help="The trace file, or a folder or glob of shards read as one export.")],
    corpus: CorpusPath,
    format: Annotated[str, typer.Option(
        "--format", "-f", help="auto (from the file), jsonl, trec, ranx, openinference, otel, phoenix "
        "(spans parquet) or langfuse (observations JSON).")] = "auto",
    k: Annotated[int | None, typer.Option(
        "--k", "-k", help="Count the top k of each list (default: the longest list).")] = None,
    data_file: DataFile = DEFAULT_DATA_PATH,
    ignore_unknown: Annotated[bool, typer.Option(
        "--ignore-unknown", help="Skip and count ids not in the corpus instead of failing.")]
    = False,
    queries: Annotated[Path | None, typer.Option(
        help="Query texts by id (.jsonl/.csv/.json suite) for formats that carry none.")] = None,
    name: Annotated[str, typer.Option(
        help="Name of the traced system, recorded as the retriever (combine compares it).")]
    = "traces",
    append: Annotated[bool, typer.Option(
        help="Add to the data file (same k, corpus and name) instead of replacing it.")] = False,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    chunk_ids: ChunkIds = None,
    documents: Documents = None,
    engine: Annotated[str, typer.Option(
        help="local (this machine; a large JSON-lines span file is read by several "
        "processes) or dask (the shards read on a Dask cluster).")] = "local",
    scheduler: Scheduler = None,
    workers: Annotated[int | None, typer.Option(
        help="Processes that read spans (local) or LocalCluster workers (dask); "
        "default: one per core.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary.")] = False,
) -> None:
    """Import recorded retrievals (production traces, TREC/ranx runs) and record coverage."""
    from ragcov.api import record_traces
    from ragcov.api.cli_support import summarize
    from ragcov.reporters.table import render_headline

    if append:  # the ids the file recorded, so an append finds the same corpus
        chunk_ids = cli_support.chunk_ids_of(data_file, chunk_ids, "an --append")
    corpus_obj = load_corpus_opts(corpus, chunk_size, chunk_overlap, split, documents=documents,
                                  chunk_ids=chunk_ids)
    texts = None
    if queries is not None:
        from ragcov.api import load_suite

        texts = {q.id: q.text for q in load_suite(queries)}
    done = record_traces(file, format, corpus_obj, data_file, k=k, append=append,
                         ignore_unknown=ignore_unknown, name=name, queries=texts,
                         engine=engine, scheduler=scheduler, workers=workers)
    result = done.result
    if format == "auto" and not quiet:
        err.print(f"ragcov: detected format: {result.format}", markup=False)
    if result.skipped:
        err.print(f"Skipped {result.skipped} retrieved id(s) not in the corpus "
                  f"({len(result.unknown)} distinct)", markup=False)
    if result.duplicate_spans:
        err.print(f"Dropped {result.duplicate_spans} duplicate span(s) (same traceId and spanId, "
                  "identical content)", markup=False)
    if result.merged_spans:
        err.print(f"Merged {result.merged_spans} nested RETRIEVER span(s) into the retrieval "
                  "that encloses them (one query each)", markup=False)
    if result.empty_spans:
        err.print(f"ragcov: warning: {result.empty_spans} retrieval span(s) recorded no "
                  "documents; imported as queries with no hits", markup=False)
    for how, n in result.fallbacks.items():
        err.print(f"Matched {n} retrieved entries to chunks by {how}", markup=False)
    twins = result.matching.line()
    if twins:
        err.print(twins, markup=False)
    again = len(result.run.queries) - done.added
    if again:  # only with --append, and only when they gave the hits already recorded
        err.print(f"ragcov: note: {again} of the imported queries were recorded in {data_file} "
                  "already, with the same hits; kept once", markup=False)
    if not quiet:
        out.print(f"Imported {done.added} queries from {file} ({result.format}, "
                  f"k={result.run.k}) "
                  f"into {data_file}", markup=False)
        data = done.data
        del done, result  # the Run goes before the file is read back for the summary
        out.print(render_headline(summarize(data.matrix())))
