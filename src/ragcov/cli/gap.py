"""``ragcov gap --tests T --traffic P``: what production retrieves that the tests never do."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import err
from ragcov.cli.diff import AllowK, AllowRetriever, Format, Output, Precision, check_format
from ragcov.cli.options import check_fail_under, check_outputs, emit
from ragcov.errors import RagcovError


def gap(
    tests: Annotated[Path, typer.Option("--tests", help="The test run's data file.")],
    traffic: Annotated[Path, typer.Option(
        "--traffic", help="Production traces imported with `ragcov import`, same corpus.")],
    format: Format = "text",
    output: Output = None,
    top: Annotated[int, typer.Option(
        help="Untested chunks listed (with example queries), most retrieved first.")] = 100,
    fail_under: Annotated[float | None, typer.Option(
        help="Exit with status 2 when traffic-weighted coverage (percent) is below this.")]
    = None,
    allow_different_k: AllowK = False,
    allow_different_retriever: AllowRetriever = False,
    precision: Precision = 1,
) -> None:
    """Traffic-weighted coverage and the untested chunks production retrieves most."""
    import json

    from ragcov.api import fails_under, traffic_gap
    from ragcov.compare.jsondoc import gap_document
    from ragcov.compare.render import gap_markdown, gap_text
    from ragcov.summary import display_percent

    check_format(format, precision)
    if top < 1:
        raise RagcovError(f"--top must be at least 1, got {top}")
    check_fail_under(fail_under)
    check_outputs([output], [tests, traffic])
    g = traffic_gap(tests, traffic, top=top, allow_different_k=allow_different_k,
                    allow_different_retriever=allow_different_retriever)
    if format == "json":
        emit(json.dumps(gap_document(g), indent=2, ensure_ascii=False), output, "JSON gap")
    elif format == "markdown":
        emit(gap_markdown(g, precision), output, "markdown gap")
    else:
        emit(gap_text(g, precision), output, "gap")
    if fail_under is not None and fails_under(g.traffic_weighted_coverage, fail_under, precision):
        err.print(f"Coverage failure: traffic-weighted coverage of "
                  f"{display_percent(g.traffic_weighted_coverage, precision)}% is less than "
                  f"fail-under={fail_under:g}", markup=False)
        raise typer.Exit(2)
