"""``ragcov combine``: merge the data files of sharded runs, as ``coverage combine`` does.

``ragcov run --parallel-mode`` writes ``.ragcov.HOST.PID.RANDOM`` so parallel jobs
never write one file; ``ragcov combine`` with no file arguments finds those shards
beside the data file, merges them into it and deletes them (``--keep`` keeps them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.cli.console import err, out
from ragcov.cli.options import DATA_FILE_ENV, DEFAULT_DATA_PATH


def combine(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Data files or folders to merge (default: the DATA_FILE.* shards of "
             "`ragcov run --parallel-mode` beside the output).")] = None,
    data_file: Annotated[Path, typer.Option(
        "-o", "--output", "--data-file", envvar=DATA_FILE_ENV, readable=False,
        help="The combined data file (the shards are looked for beside it).")] = DEFAULT_DATA_PATH,
    keep: Annotated[bool, typer.Option(
        "--keep", help="Keep the shards found by name after combining them.")] = False,
    append: Annotated[bool, typer.Option(
        "--append", "-a", help="Combine with the data the output file already holds.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No messages.")] = False,
) -> None:
    """Merge data files from sharded runs (same k, corpus and retriever)."""
    done = api.combine(files or [], data_file, keep=keep, append=append)
    if quiet:
        return
    for shard, problem in done.skipped:  # coverage.py: "Couldn't use data file ...", and goes on
        err.print(f"ragcov: warning: couldn't use data file {shard}: {problem}", markup=False)
    for f in done.inputs:
        out.print(f"Combined data file {f}", markup=False)
    out.print(f"Combined {len(done.inputs) + done.had_output} data files into {data_file} "
              f"({done.queries} queries)", markup=False)
