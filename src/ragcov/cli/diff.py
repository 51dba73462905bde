"""``ragcov diff BASE HEAD``: what a change did to chunk coverage, like diff-cover for code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import coverage_diff
from ragcov.api.cli_support import check_outputs, diff_gate_failures
from ragcov.cli.compare_options import (
    AllowK,
    AllowRetriever,
    Format,
    MaxGiniRise,
    MinQueryOverlap,
    Output,
    Precision,
    check_diff_gates,
    check_format,
    write_comparison,
)
from ragcov.cli.console import out
from ragcov.cli.options import ShowIds, fail
from ragcov.compare.html import PAGE, write_diff_page
from ragcov.compare.render import delta_failure
from ragcov.errors import RagcovError


def diff(
    base: Annotated[Path, typer.Argument(help="The data file before the change.")],
    head: Annotated[Path, typer.Argument(help="The data file after it.")],
    format: Format = "text",
    output: Output = None,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Also write the diff page (diff.html) into this HTML report folder.")]
    = None,
    fail_under_delta: Annotated[float | None, typer.Option(
        help="Exit with status 2 when chunk coverage drops by more than this many points.")]
    = None,
    allow_different_k: AllowK = False,
    allow_different_retriever: AllowRetriever = False,
    precision: Precision = 1,
    show_ids: ShowIds = False,
    match: Annotated[str, typer.Option(
        "--match", help="Pair the two runs' queries by id or by text (a test run against "
        "imported traces: their ids differ).")] = "id",
    max_gini_rise: MaxGiniRise = None,
    min_query_overlap: MinQueryOverlap = None,
) -> None:
    """Chunks gained and lost, per-document change, queries that retrieve differently."""
    check_format(format, precision)
    if fail_under_delta is not None and not 0 <= fail_under_delta <= 100:
        raise RagcovError(f"--fail-under-delta must be 0 to 100 points, got {fail_under_delta:g}")
    check_diff_gates(max_gini_rise, min_query_overlap)

    check_outputs([output, None if html is None else html / PAGE], [base, head])
    d = coverage_diff(base, head, allow_different_k=allow_different_k,
                      allow_different_retriever=allow_different_retriever, match=match)
    write_comparison(d, "diff", format, output, precision, show_ids)
    if html is not None:

        out.print(f"Wrote HTML diff to {write_diff_page(d, html, precision)}", markup=False)
    failures = [delta_failure(d.delta, fail_under_delta, precision),
                *diff_gate_failures(d, max_gini_rise, min_query_overlap)]
    fail("\n".join(f for f in failures if f) or None)
