"""``ragcov run`` and ``ragcov index``: retrieval into a data file; embeddings into the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api.cli_support import summarize
from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    Backend,
    ChunkIds,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DataFile,
    Device,
    DocKey,
    Documents,
    Dtype,
    HnswEfSearch,
    HnswM,
    IdKey,
    Index,
    K,
    Model,
    Rerank,
    RerankDepth,
    RetrieverName,
    Scheduler,
    Split,
)
from ragcov.reporters.table import render_headline


def run(
    corpus: CorpusPath,
    queries: Annotated[Path, typer.Option(help="Test queries: .jsonl, .csv or RAGAS/DeepEval .json.")],
    retriever: RetrieverName = None,
    model: Model = None,
    backend: Backend = None,
    k: K = 5,
    index: Index = "flat",
    data_file: DataFile = DEFAULT_DATA_PATH,
    append: Annotated[bool, typer.Option(
        help="Keep what the data file holds and retrieve only queries not yet recorded.")] = False,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    chunk_ids: ChunkIds = None,
    doc_key: DocKey = None,
    documents: Documents = None,
    id_key: IdKey = None,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (shard embedding and retrieval over a Dask cluster)."
    )] = "local",
    scheduler: Scheduler = None,
    partitions: Annotated[int | None, typer.Option(
        help="Shards for --engine dask (default: one per worker).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")] = False,
    parallel_mode: Annotated[bool, typer.Option(
        "--parallel-mode", "-p", help="Write DATA_FILE.HOST.PID.RANDOM, for `ragcov combine`."
    )] = False,
    device: Device = "auto",
    dtype: Dtype = "auto",
    rerank: Rerank = None,
    rerank_depth: RerankDepth = None,
    hnsw_m: HnswM = None,
    hnsw_ef_search: HnswEfSearch = None,
) -> None:
    """Run a suite through a retriever and record what it retrieved."""
    # The settings of the run, checked once here and carried whole (api.RunSettings).
    settings = api.RunSettings.checked(
        corpus, queries, retriever, data_file=data_file, parallel_mode=parallel_mode,
        model=model, backend=backend, k=k, index=index, append=append, chunk_size=chunk_size,
        chunk_overlap=chunk_overlap, split=split, doc_key=doc_key, documents=documents,
        id_key=id_key, chunk_ids=chunk_ids, engine=engine,
        scheduler=scheduler, partitions=partitions, device=device, dtype=dtype, rerank=rerank,
        rerank_depth=rerank_depth, hnsw_m=hnsw_m, hnsw_ef_search=hnsw_ef_search)
    done = api.run(settings, progress=not quiet,
                   notify=lambda line: err.print(line, markup=False, highlight=False))
    if not quiet:
        m = done.matrix
        out.print(f"Wrote {done.data_file}: {m.n_queries} queries, k={k}, {done.chunks} chunks")
        out.print(render_headline(summarize(m)))


def index(
    corpus: CorpusPath,
    model: Model = None,
    backend: Backend = None,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    chunk_ids: ChunkIds = None,
    device: Device = "auto",
    dtype: Dtype = "auto",
) -> None:
    """Embed the corpus for the dense retriever and cache the embeddings (runs reuse them)."""
    done = api.index(corpus, model=model, backend=backend, chunk_size=chunk_size,
                     chunk_overlap=chunk_overlap, split=split, device=device, dtype=dtype,
                     chunk_ids=chunk_ids)
    state = "embedded" if done.embedded else "already cached"
    how = done.backend if done.placement.dtype == "fp32" else f"{done.backend}, {done.placement.dtype}"
    out.print(f"{done.chunks} chunks {state} with {done.model} ({how}) on {done.placement.device} "
              f"in {done.cache}")
