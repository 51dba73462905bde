"""``ragcov combine``: merge the data files of sharded runs, as ``coverage combine`` does.

``ragcov run --parallel-mode`` writes ``.ragcov.HOST.PID.RANDOM`` so parallel jobs
never write one file; ``ragcov combine`` with no file arguments finds those shards
beside the data file, merges them into it and deletes them (``--keep`` keeps them).
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import err, out
from ragcov.cli.options import DATA_FILE_ENV, DEFAULT_DATA_PATH
from ragcov.errors import RagcovError

# SQLite's side files of a shard being written, and its writers' lock file, are not shards.
_SIDE_SUFFIXES = ("-journal", "-wal", "-shm", "-lock")


def shard_path(data_file: Path) -> Path:
    """``DATA_FILE.HOST.PID.RANDOM``: coverage.py's parallel-mode name, unique per process."""
    host = socket.gethostname().split(".")[0] or "host"
    return data_file.with_name(f"{data_file.name}.{host}.{os.getpid()}.{secrets.token_hex(3)}")


def find_shards(data_file: Path, folder: Path | None = None) -> list[Path]:
    """The ``DATA_FILE.*`` files in ``folder`` (default: beside ``data_file``), sorted by name."""
    from ragcov.files import glob_escape

    where = folder if folder is not None else (data_file.parent if str(data_file.parent) else Path("."))
    found = [p for p in where.glob(f"{glob_escape(data_file.name)}.*")
             if p.is_file() and not p.name.endswith(_SIDE_SUFFIXES)]
    return sorted(found, key=lambda p: p.name)


def _is_data_file(path: Path) -> str | None:
    """None when ``path`` is a readable ragcov data file, else why not."""
    from ragcov.data import CoverageData

    try:
        CoverageData(path).meta()
    except RagcovError as exc:
        return str(exc)
    return None


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
    from ragcov.data import CoverageData
    from ragcov.data import combine as combine_files

    output = data_file
    explicit: list[Path] = []
    found: list[Path] = []
    for f in files or []:
        if f.is_dir():
            found += find_shards(output, f)
        else:
            explicit.append(f)
    if not files:
        found = find_shards(output)
    usable: list[Path] = []
    for shard in found:
        problem = _is_data_file(shard)
        if problem is None:
            usable.append(shard)
        elif not quiet:  # coverage.py: "Couldn't use data file ...", and goes on
            err.print(f"ragcov: warning: couldn't use data file {shard}: {problem}", markup=False)
    inputs = explicit + usable
    if not inputs:
        raise RagcovError("No data to combine")
    had_output = append and CoverageData(output).exists()
    n = combine_files(inputs, output, append=append, shards=[] if keep else usable)
    if not keep:
        for shard in usable:
            shard.unlink(missing_ok=True)
    if not quiet:
        for f in explicit + usable:
            out.print(f"Combined data file {f}", markup=False)
        out.print(f"Combined {len(inputs) + had_output} data files into {output} ({n} queries)",
                  markup=False)
