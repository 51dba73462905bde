"""``ragcov run`` and ``ragcov index``: retrieval into a data file; embeddings into the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    Backend,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DataFile,
    DocKey,
    Index,
    K,
    Model,
    RetrieverName,
    Split,
    default_retriever,
    load_corpus_opts,
)
from ragcov.errors import RagcovError


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
    doc_key: DocKey = None,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (shard embedding and retrieval over a Dask cluster)."
    )] = "local",
    scheduler: Annotated[str | None, typer.Option(
        help="Dask scheduler address; default: a LocalCluster on 127.0.0.1.")] = None,
    partitions: Annotated[int | None, typer.Option(
        help="Shards for --engine dask (default: one per worker).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")] = False,
    parallel_mode: Annotated[bool, typer.Option(
        "--parallel-mode", "-p", help="Write DATA_FILE.HOST.PID.RANDOM, for `ragcov combine`."
    )] = False,
) -> None:
    """Run a suite through a retriever and record what it retrieved."""
    from ragcov.api import measure
    from ragcov.data import CoverageData
    from ragcov.report.table import render_headline
    from ragcov.retrieval import validate_k
    from ragcov.retrievers import make_retriever
    from ragcov.suite import load_suite
    from ragcov.summary import summarize

    validate_k(k)
    if parallel_mode:
        if append:
            raise RagcovError("--append and --parallel-mode do not go together: a shard is new")
        from ragcov.cli.combine import shard_path

        data_file = shard_path(data_file)
    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown engine {engine!r}: expected local or dask")
    from ragcov.retrievers.onnx_encoder import check_backend

    check_backend(backend)
    retriever = default_retriever(retriever, corpus)
    if engine == "dask" and retriever == "store":
        raise RagcovError("--retriever store (the default for a store URL) searches the store from "
                          "this process: use --engine local, or name another --retriever")
    # Before the corpus is embedded: a destination that cannot take the run fails now.
    CoverageData(data_file).check_destination()
    corpus_obj = load_corpus_opts(corpus, chunk_size, chunk_overlap, split, doc_key)
    suite = load_suite(queries)
    if engine == "dask":
        from ragcov.distributed import measure_dask

        if retriever == "dense" and corpus_obj.store is not None:
            # The workers build their own retrievers; the store's model is checked here, once.
            from ragcov.retrievers.store import settle_model

            model = settle_model(corpus_obj, model).model

        m = measure_dask(corpus_obj, suite, retriever=retriever, model=model, index=index, k=k,
                         data_file=data_file, append=append, scheduler=scheduler,
                         partitions=partitions, progress=not quiet, backend=backend)
    else:
        from ragcov.progress import status

        # dense and bm25 draw their own bars, a URL builds nothing (and may hold a
        # secret); a module:attr factory shows a spinner while it builds its store.
        factory = retriever not in ("dense", "bm25") and "://" not in retriever
        with status(f"Building retriever {retriever} ...", enabled=not quiet and factory):
            r = make_retriever(retriever, corpus_obj, model=model, index=index,
                               progress=not quiet, backend=backend)
        from ragcov.retrievers.store import store_run_line

        if line := store_run_line(corpus_obj, retriever, r, k):
            err.print(line, markup=False, highlight=False)
        m = measure(corpus_obj, suite, r, k=k, data_file=data_file, append=append,
                    progress=not quiet)
        from ragcov.retrievers.twins import resolver_counts

        twins = resolver_counts(r)
        if twins is not None and twins.line():
            err.print(twins.line(), markup=False)
    if not quiet:
        out.print(f"Wrote {data_file}: {m.n_queries} queries, k={k}, {len(corpus_obj)} chunks")
        out.print(render_headline(summarize(m)))



def index(
    corpus: CorpusPath,
    model: Model = None,
    backend: Backend = None,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
) -> None:
    """Embed the corpus for the dense retriever and cache the embeddings (runs reuse them)."""
    from ragcov.files import cache_dir
    from ragcov.retrievers.dense import DenseRetriever
    from ragcov.retrievers.onnx_encoder import check_backend

    check_backend(backend)  # before the corpus is read
    corpus_obj = load_corpus_opts(corpus, chunk_size, chunk_overlap, split)
    r = DenseRetriever(corpus_obj, model=model, backend=backend)
    state = "embedded" if r.chunks_embedded else "already cached"
    out.print(f"{len(corpus_obj)} chunks {state} with {r.model_name} ({r.backend}) in {cache_dir()}")


