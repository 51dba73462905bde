"""What ``ragcov diff`` and ``ragcov gap`` share: their options and their output.

Both compare two data files and print the comparison as text, markdown or JSON; the
options and the format dispatch are declared here once (the gate is ``options.fail``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragcov.cli.options import check_precision, emit
from ragcov.compare.render import render_comparison
from ragcov.errors import RagcovError

FORMATS = ("text", "markdown", "json")
AllowK = Annotated[bool, typer.Option(
    "--allow-different-k", help="Compare recordings made with different k (did raising k "
    "help?).")]
AllowRetriever = Annotated[bool, typer.Option(
    "--allow-different-retriever", help="Compare recordings made with different retrievers "
    "(a new embedding model, a new index).")]
Format = Annotated[str, typer.Option("--format", help="text, markdown or json.")]
Output = Annotated[Path | None, typer.Option(
    "-o", "--output", help="Write the report here instead of stdout.")]
Precision = Annotated[int, typer.Option(help="Digits after the decimal point.")]
MaxGiniRise = Annotated[float | None, typer.Option(
    "--max-gini-rise", help="Exit with status 2 when the exposure Gini (retrievals over every "
    "chunk, 0 to 1) rises by more than this.")]
MinQueryOverlap = Annotated[float | None, typer.Option(
    "--min-query-overlap", help="Exit with status 2 when fewer than this percent of the tests "
    "in both files retrieve the same top-k set.")]


def check_diff_gates(max_gini_rise: float | None, min_query_overlap: float | None) -> None:
    if max_gini_rise is not None and not 0 <= max_gini_rise <= 1:
        raise RagcovError(f"--max-gini-rise must be 0 to 1 (Gini points), got {max_gini_rise:g}")
    if min_query_overlap is not None and not 0 <= min_query_overlap <= 100:
        raise RagcovError(f"--min-query-overlap must be a percentage from 0 to 100, got "
                          f"{min_query_overlap:g}")

_WHAT = {"json": "JSON {}", "markdown": "markdown {}", "text": "{}"}


def check_format(format: str, precision: int) -> None:
    if format not in FORMATS:
        raise RagcovError(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    check_precision(precision)


def write_comparison(result: Any, name: str, format: str, output: Path | None, precision: int,
                     show_ids: bool, top: int = 20) -> None:
    """The comparison in ``format``, to stdout or ``output`` (``name``: diff or gap).

    Text and markdown hold query texts and ids as they came: their control characters
    are written escaped, as on every line ragcov prints (an ``ESC[2J`` in a query would
    clear the terminal; a bidi override would reorder the table). JSON escapes its own.
    """
    emit(render_comparison(result, format, precision, show_ids, top), output,
         _WHAT[format].format(name), format)
