"""``ragcov xml``, ``ragcov lcov`` and ``ragcov badge``: the total in the formats CI reads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import __version__
from ragcov.api import ReportScope, check_outputs
from ragcov.api import report as report_data
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    FailUnder,
    check_fail_under,
    check_precision,
    emit,
    gate,
)
from ragcov.cli.report_options import scoped
from ragcov.reporters.badge import badge_svg, colour_for, parse_thresholds
from ragcov.reporters.ci_lines import file_lines
from ragcov.reporters.cobertura import cobertura_xml
from ragcov.reporters.lcov import lcov_tracefile
from ragcov.summary import display_percent

Output = Annotated[Path, typer.Option("-o", "--output", help="Where to write; - for stdout.")]


@scoped
def xml(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Output = Path("ragcov.xml"),
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
) -> None:
    """Cobertura XML: documents as files, chunks as lines, hits = queries (like `coverage xml`)."""

    check_fail_under(fail_under)
    check_outputs([output], [data_file])
    scoped = report_data(data_file, scope)
    emit(cobertura_xml(file_lines(scoped), __version__), output, "Cobertura XML report")
    gate(scoped.summary(jaccard=False).coverage, fail_under)


@scoped
def lcov(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Output = Path("ragcov.lcov"),
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
) -> None:
    """lcov tracefile: documents as SF records, chunks as DA lines (like `coverage lcov`)."""

    check_fail_under(fail_under)
    check_outputs([output], [data_file])
    scoped = report_data(data_file, scope)
    emit(lcov_tracefile(file_lines(scoped)), output, "lcov report")
    gate(scoped.summary(jaccard=False).coverage, fail_under)


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
) -> None:
    """A shields-style SVG badge of total chunk coverage, for a README."""

    check_precision(precision or 0)
    check_fail_under(fail_under)
    check_outputs([output], [data_file])
    bands = parse_thresholds(thresholds)
    scoped = report_data(data_file, scope)
    coverage = scoped.summary(jaccard=False).coverage
    shown = display_percent(coverage, precision or 0)
    emit(badge_svg(f"{shown}%", colour_for(float(shown), bands), label), output, "badge")
    gate(coverage, fail_under, precision)
