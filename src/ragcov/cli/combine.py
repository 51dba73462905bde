"""``ragcov combine``: merge the data files of sharded runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
)


def combine(
    files: Annotated[list[Path], typer.Argument(help="Data files to merge.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The combined data file.")]
    = DEFAULT_DATA_PATH,
) -> None:
    """Merge data files from sharded runs (same k, corpus and retriever)."""
    from ragcov.data import combine as combine_files

    n = combine_files(files, output)
    out.print(f"Combined {len(files)} data files into {output} ({n} queries)")


