"""``ragcov xml``, ``ragcov lcov`` and ``ragcov badge``: the total in the formats CI reads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import ReportScope
from ragcov.api.cli_support import display_percent
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    FailUnder,
    FailUnderText,
    GatePrecision,
    check_precision,
)
from ragcov.cli.report_options import scoped, write_scoped, write_total
from ragcov.reporters.badge import badge_svg, colour_for, parse_thresholds
from ragcov.reporters.registry import REPORTERS

Output = Annotated[Path, typer.Option("-o", "--output", help="Where to write; - for stdout.")]


@scoped
def xml(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Output = Path("ragcov.xml"),
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
    fail_under_text: FailUnderText = None,
    precision: GatePrecision = None,
) -> None:
    """Cobertura XML: documents as files, chunks as lines, hits = queries (like `coverage xml`)."""
    write_scoped(data_file, scope, output, fail_under,
                 lambda scoped: REPORTERS["xml"].render(scoped, {}), "Cobertura XML report",
                 precision, "xml", fail_under_text=fail_under_text)


@scoped
def lcov(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Output = Path("ragcov.lcov"),
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
    fail_under_text: FailUnderText = None,
    precision: GatePrecision = None,
) -> None:
    """lcov tracefile: documents as SF records, chunks as DA lines (like `coverage lcov`)."""
    write_scoped(data_file, scope, output, fail_under,
                 lambda scoped: REPORTERS["lcov"].render(scoped, {}), "lcov report", precision, "lcov",
                 fail_under_text=fail_under_text)


@scoped
def badge(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Output = Path("ragcov.svg"),
    thresholds: Annotated[str, typer.Option(
        help="Lower bounds (percent) of yellow, green and bright green; below the first: red.")]
    = "50,75,90",
    label: Annotated[str, typer.Option(help="The badge's left-hand text.")] = "chunk coverage",
    precision: Annotated[int | None, typer.Option(
        help="Digits after the decimal point (default 0; --fail-under then compares at 2).")]
    = None,
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
    fail_under_text: FailUnderText = None,
) -> None:
    """A shields-style SVG badge of total chunk coverage, for a README."""
    check_precision(precision or 0)
    bands = parse_thresholds(thresholds)

    def render(coverage: float) -> str:
        shown = display_percent(coverage, precision or 0)
        return badge_svg(f"{shown}%", colour_for(float(shown), bands), label)

    # The total alone: the data file's kept totals answer it without reading the rows back
    # (a text gate needs the rows' spans).
    if fail_under_text is not None or not write_total(data_file, scope, output, fail_under, render,
                                                      "badge", precision, "svg"):
        write_scoped(data_file, scope, output, fail_under,
                     lambda scoped: render(scoped.summary(jaccard=False).coverage), "badge",
                     precision, "svg", fail_under_text=fail_under_text)
