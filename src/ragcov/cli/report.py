"""``ragcov report`` and ``ragcov json``: read a data file like ``coverage report``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    Support,
    approximate_note,
)
from ragcov.errors import RagcovError
from ragcov.report import DEFAULT_JSON_FILE


def report(
    data_file: DataFile = DEFAULT_DATA_PATH,
    show_missing: Annotated[bool, typer.Option(
        "--show-missing/--no-show-missing", "-m",
        help="List each document's uncovered chunk ids.")] = False,
    skip_covered: Annotated[bool, typer.Option(
        "--skip-covered/--no-skip-covered", help="Leave out fully covered documents.")] = False,
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
    from ragcov.summary import display_percent

    if precision is None:
        precision = 2 if format == "total" else 0
    if precision < 0:
        raise RagcovError(f"--precision must be 0 or more, got {precision}")
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise RagcovError(f"--fail-under must be a percentage from 0 to 100, got {fail_under:g}")
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


def json_cmd(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write; - for stdout.")]
    = Path(DEFAULT_JSON_FILE),
    entropy_support: Support = "retrieved",
    gini_over: Support = "retrieved",
    pretty: Annotated[bool, typer.Option(help="Indent the JSON.")] = True,
) -> None:
    """Write the versioned JSON report."""
    import json

    from ragcov.data import CoverageData
    from ragcov.files import write_json_atomic
    from ragcov.report.jsonreport import json_report

    doc = json_report(CoverageData(data_file).matrix(), entropy_support, gini_over)  # type: ignore[arg-type]
    if str(output) == "-":
        sys.stdout.write(json.dumps(doc, indent=2 if pretty else None, ensure_ascii=False) + "\n")
    else:
        write_json_atomic(output, doc, indent=2 if pretty else None)
        out.print(f"Wrote JSON report to {output}")


