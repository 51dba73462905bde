"""``ragcov diff BASE HEAD``: what a change did to chunk coverage, like diff-cover for code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import err, out
from ragcov.cli.options import ShowIds, check_outputs, check_precision, emit
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


def check_format(format: str, precision: int) -> None:
    if format not in FORMATS:
        raise RagcovError(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    check_precision(precision)


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
) -> None:
    """Chunks gained and lost, per-document change, queries that retrieve differently."""
    import json

    from ragcov.api import coverage_diff
    from ragcov.compare.jsondoc import diff_document
    from ragcov.compare.render import diff_markdown, diff_text, points

    check_format(format, precision)
    if fail_under_delta is not None and not 0 <= fail_under_delta <= 100:
        raise RagcovError(f"--fail-under-delta must be 0 to 100 points, got {fail_under_delta:g}")
    from ragcov.compare.html import PAGE

    check_outputs([output, None if html is None else html / PAGE], [base, head])
    d = coverage_diff(base, head, allow_different_k=allow_different_k,
                      allow_different_retriever=allow_different_retriever, match=match)
    if format == "json":
        emit(json.dumps(diff_document(d), indent=2, ensure_ascii=False), output, "JSON diff")
    elif format == "markdown":
        emit(diff_markdown(d, precision, show_ids), output, "markdown diff")
    else:
        emit(diff_text(d, precision), output, "diff")
    if html is not None:
        from ragcov.compare.html import write_diff_page

        out.print(f"Wrote HTML diff to {write_diff_page(d, html, precision)}", markup=False)
    drop = -d.delta * 100
    if fail_under_delta is not None and drop > fail_under_delta:
        err.print(f"Coverage failure: chunk coverage changed by {points(d.delta, precision)} "
                  f"points, a drop of more than fail-under-delta={fail_under_delta:g}",
                  markup=False)
        raise typer.Exit(2)
