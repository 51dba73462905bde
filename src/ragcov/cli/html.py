"""``ragcov html``: the htmlcov-style site."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import out
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile

Precision = Annotated[int, typer.Option(help="Digits after the decimal point in percentages.")]


def html(
    data_file: DataFile = DEFAULT_DATA_PATH,
    directory: Annotated[Path, typer.Option(
        "-d", "--directory", help="Where to write the site (replaced whole).")]
    = Path("ragcov-html"),
    order: Annotated[list[Path] | None, typer.Option(
        "--order", help="An order.json from 'ragcov select'; draws its coverage curve "
        "(repeat for several).")] = None,
    greedy: Annotated[bool, typer.Option(
        "--greedy/--no-greedy", help="Also draw the coverage-greedy ordering's curve.")] = True,
    title: Annotated[str, typer.Option(help="Title shown on every page.")]
    = "Chunk coverage report",
    precision: Precision = 0,
) -> None:
    """Write an HTML report: documents, chunks shaded covered/uncovered, queries, curves."""
    from ragcov.data import CoverageData
    from ragcov.io import load_json
    from ragcov.report.html import (
        curve_from_order_file,
        greedy_curve,
        html_report,
        recorded_curve,
    )

    data = CoverageData(data_file)
    m = data.matrix()
    curves = [curve_from_order_file(m, load_json(p), str(p)) for p in order or []]
    if greedy:
        g = greedy_curve(m)
        # An order file from `ragcov select --strategy coverage` already draws this line.
        if g is not None and all(c.values != g.values for c in curves):
            curves.append(g)
    if curves:
        # The suite as recorded is the baseline an ordering is judged against.
        curves.append(recorded_curve(m))
    index = html_report(m, data.chunk_texts(), directory, curves=curves, precision=precision,
                        title=title)
    out.print(f"Wrote HTML report to {index}")
