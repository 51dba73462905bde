"""The ``ragcov`` command line: thin typer commands over :mod:`ragcov.api`.

Habits follow coverage.py: ``run`` records into a data file, ``report``/``json``
read it, ``combine`` merges shards, ``--fail-under`` exits 2. User errors print
one line and exit 1, without a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragcov.errors import RagcovError

app = typer.Typer(
    name="ragcov",
    help="Chunk Coverage for RAG retrievers: how much of the corpus does your test suite retrieve?",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Reusable option types -------------------------------------------------------
DataFile = Annotated[Path, typer.Option("--data-file", help="The coverage data file.")]
CorpusPath = Annotated[Path, typer.Option(
    "--corpus", help="Chunks (.jsonl, BEIR folder) or a folder of .txt/.md documents.")]
ChunkSize = Annotated[int, typer.Option(help="Characters per chunk when ragcov does the chunking.")]
ChunkOverlap = Annotated[int, typer.Option(help="Characters of overlap between chunks.")]
Split = Annotated[bool, typer.Option(
    "--split/--no-split", help="Read a .jsonl corpus as whole documents and chunk them.")]
K = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved per query (top-k).")]
RetrieverName = Annotated[str, typer.Option(
    help="dense, bm25, module:attr (your own retriever) or an http(s) URL.")]
Model = Annotated[str | None, typer.Option(
    help="Embedding model for the dense retriever: a sentence-transformers name or path.")]
Index = Annotated[str, typer.Option(help="Dense index: flat (exact) or hnsw (approximate).")]
Support = Annotated[str, typer.Option(help="retrieved or corpus.")]


def load_corpus_opts(corpus: Path, chunk_size: int, chunk_overlap: int, split: bool):
    from ragcov.corpus import load_corpus

    return load_corpus(corpus, chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split)


def approximate_note(data_file: Path) -> str | None:
    from ragcov.api import INDEX_RECALL
    from ragcov.data import CoverageData
    from ragcov.report.table import approximate_index_note

    data = CoverageData(data_file)
    return approximate_index_note(data.meta().retriever, data.annotation(INDEX_RECALL))


@app.callback()
def _main(ctx: typer.Context) -> None:
    """Apply [tool.ragcov] / ragcov.toml settings as defaults for every command."""
    from ragcov.config import default_map, find_config

    found = find_config()
    if found is None:
        return
    path, settings = found
    group = ctx.command
    commands = {name: [p.name for p in cmd.params if p.name]
                for name, cmd in getattr(group, "commands", {}).items()}
    ctx.default_map = default_map(settings, commands, path)


@app.command()
def run(
    corpus: CorpusPath,
    queries: Annotated[Path, typer.Option(help="Test queries: .jsonl, .csv or RAGAS/DeepEval .json.")],
    retriever: RetrieverName = "dense",
    model: Model = None,
    k: K = 5,
    index: Index = "flat",
    data_file: DataFile = Path(".ragcov"),
    append: Annotated[bool, typer.Option(
        help="Keep what the data file holds and retrieve only queries not yet recorded.")] = False,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (shard embedding and retrieval over a Dask cluster)."
    )] = "local",
    scheduler: Annotated[str | None, typer.Option(
        help="Dask scheduler address; default: a LocalCluster on 127.0.0.1.")] = None,
    partitions: Annotated[int | None, typer.Option(
        help="Shards for --engine dask (default: one per worker).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")] = False,
) -> None:
    """Run a suite through a retriever and record what it retrieved."""
    from ragcov.api import measure
    from ragcov.data import CoverageData
    from ragcov.report.table import render_headline
    from ragcov.results import summarize
    from ragcov.retrievers import make_retriever
    from ragcov.run import validate_k
    from ragcov.suite import load_suite

    validate_k(k)
    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown engine {engine!r}: expected local or dask")
    # Before the corpus is embedded: a destination that cannot take the run fails now.
    CoverageData(data_file).check_destination()
    corpus_obj = load_corpus_opts(corpus, chunk_size, chunk_overlap, split)
    suite = load_suite(queries)
    if engine == "dask":
        from ragcov.distributed import measure_dask

        m = measure_dask(corpus_obj, suite, retriever=retriever, model=model, index=index, k=k,
                         data_file=data_file, append=append, scheduler=scheduler,
                         partitions=partitions, progress=not quiet)
    else:
        r = make_retriever(retriever, corpus_obj, model=model, index=index, progress=not quiet)
        m = measure(corpus_obj, suite, r, k=k, data_file=data_file, append=append,
                    progress=not quiet)
    if not quiet:
        out.print(f"Wrote {data_file}: {m.n_queries} queries, k={k}, {len(corpus_obj)} chunks")
        out.print(render_headline(summarize(m)))


@app.command()
def report(
    data_file: DataFile = Path(".ragcov"),
    show_missing: Annotated[bool, typer.Option(
        "--show-missing", "-m", help="List each document's uncovered chunk ids.")] = False,
    skip_covered: Annotated[bool, typer.Option(help="Leave out fully covered documents.")] = False,
    sort: Annotated[str | None, typer.Option(
        help="Sort by name, chunks, covered, missing or cover; prefix - to reverse.")] = None,
    precision: Annotated[int | None, typer.Option(
        help="Digits after the decimal point (default 0; 2 for --format total).")] = None,
    format: Annotated[str, typer.Option("--format", help="text, markdown or total.")] = "text",
    fail_under: Annotated[float | None, typer.Option(
        help="Exit with status 2 when total chunk coverage (percent) is below this.")] = None,
) -> None:
    """Per-document coverage table with a TOTAL row (like `coverage report`)."""
    from ragcov.api import coverage_summary, fails_under
    from ragcov.report.table import render_table
    from ragcov.results import display_percent

    if precision is None:
        precision = 2 if format == "total" else 0
    if precision < 0:
        raise RagcovError(f"--precision must be 0 or more, got {precision}")
    summary = coverage_summary(data_file, jaccard=False)
    out.print(render_table(summary, format, show_missing, skip_covered, sort, precision),
              markup=False)
    note = approximate_note(data_file)
    if note and format != "total":
        out.print(f"Note: {note}", markup=False)
    if fail_under is not None and fails_under(summary.coverage, fail_under, precision):
        err.print(f"Coverage failure: total of {display_percent(summary.coverage, precision)}% "
                  f"is less than fail-under={fail_under:g}")
        raise typer.Exit(2)


@app.command("json")
def json_cmd(
    data_file: DataFile = Path(".ragcov"),
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write; - for stdout.")]
    = Path("ragcov.json"),
    entropy_support: Support = "retrieved",
    gini_over: Support = "retrieved",
    pretty: Annotated[bool, typer.Option(help="Indent the JSON.")] = True,
) -> None:
    """Write the versioned JSON report."""
    import json

    from ragcov.data import CoverageData
    from ragcov.io import write_json_atomic
    from ragcov.report.jsonreport import json_report

    doc = json_report(CoverageData(data_file).matrix(), entropy_support, gini_over)  # type: ignore[arg-type]
    if str(output) == "-":
        sys.stdout.write(json.dumps(doc, indent=2 if pretty else None, ensure_ascii=False) + "\n")
    else:
        write_json_atomic(output, doc, indent=2 if pretty else None)
        out.print(f"Wrote JSON report to {output}")


@app.command()
def combine(
    files: Annotated[list[Path], typer.Argument(help="Data files to merge.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The combined data file.")]
    = Path(".ragcov"),
) -> None:
    """Merge data files from sharded runs (same k, corpus and retriever)."""
    from ragcov.data import combine as combine_files

    n = combine_files(files, output)
    out.print(f"Combined {len(files)} data files into {output} ({n} queries)")


@app.command()
def index(
    corpus: CorpusPath,
    model: Model = None,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
) -> None:
    """Embed the corpus for the dense retriever and cache the embeddings (runs reuse them)."""
    from ragcov.io import cache_dir
    from ragcov.retrievers.dense import DenseRetriever

    corpus_obj = load_corpus_opts(corpus, chunk_size, chunk_overlap, split)
    r = DenseRetriever(corpus_obj, model=model)
    state = "embedded" if r.chunks_embedded else "already cached"
    out.print(f"{len(corpus_obj)} chunks {state} with {r.model_name} in {cache_dir()}")


@app.command()
def demo(
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the demo's files.")]
    = Path("ragcov-demo"),
    retriever: RetrieverName = "dense",
    k: K = 5,
) -> None:
    """The whole story on the bundled FinQA sample, offline."""
    from ragcov.demo import run_demo

    run_demo(directory, retriever=retriever, k=k, console=out)


def _load_command_modules() -> None:
    import ragcov.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        importlib.import_module(f"{pkg.__name__}.{info.name}")


if __name__ != "__main__":
    _load_command_modules()


def _os_error(exc: OSError) -> str:
    """An OSError as the line a user can act on: the file, then what went wrong."""
    where = exc.filename if exc.filename is not None else None
    what = exc.strerror or str(exc)
    return f"{where}: {what}" if where is not None else what


INTERRUPTED = "ragcov: interrupted (the data file keeps what was committed; rerun to resume)"


def _interrupted(exc: SystemExit) -> bool:
    """typer turns Ctrl-C into a silent exit 130; find the KeyboardInterrupt behind it."""
    inner = exc.__context__
    return isinstance(inner, typer.Exit) and isinstance(inner.__cause__, KeyboardInterrupt)


def main(argv: list[str] | None = None) -> None:
    import sqlite3

    try:
        app(args=argv, prog_name="ragcov")
    except SystemExit as exc:
        if _interrupted(exc):
            err.print(INTERRUPTED, markup=False)
        raise
    except RagcovError as exc:
        err.print(f"ragcov: error: {exc}", markup=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print(INTERRUPTED, markup=False)
        sys.exit(130)
    except sqlite3.Error as exc:  # a data file damaged in a way the readers did not foresee
        err.print(f"ragcov: error: data file: {exc}", markup=False)
        sys.exit(1)
    except OSError as exc:
        err.print(f"ragcov: error: {_os_error(exc)}", markup=False)
        sys.exit(1)
    except RecursionError:
        err.print("ragcov: error: input nested too deeply to read", markup=False)
        sys.exit(1)


if __name__ == "__main__":
    # Run as ``python -m ragcov.cli`` this file is ``__main__``, a second copy of the
    # module; the commands registered themselves on ``ragcov.cli.app``, so run that.
    from ragcov.cli import main as registered_main

    registered_main()
