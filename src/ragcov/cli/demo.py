"""``ragcov demo``: the whole story on the bundled sample."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import out
from ragcov.cli.options import (
    K,
    RetrieverName,
)


def demo(
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the demo's files.")]
    = Path("ragcov-demo"),
    retriever: RetrieverName = "dense",
    k: K = 5,
) -> None:
    """The whole story on the bundled FinQA sample, offline."""
    from ragcov.demo import run_demo

    run_demo(directory, retriever=retriever, k=k, console=out)


