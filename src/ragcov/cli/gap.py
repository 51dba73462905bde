"""``ragcov gap --tests T --traffic P``: what production retrieves that the tests never do."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import traffic_gap
from ragcov.api.cli_support import check_outputs, fail_under_message
from ragcov.cli.compare_options import (
    AllowK,
    AllowRetriever,
    Format,
    Output,
    Precision,
    check_format,
    write_comparison,
)
from ragcov.cli.options import Scheduler, ShowIds, check_fail_under, fail
from ragcov.errors import RagcovError


def gap(
    tests: Annotated[Path, typer.Option("--tests", help="The test run's data file.")],
    traffic: Annotated[Path, typer.Option(
        "--traffic", help="Production traces imported with `ragcov import`, same corpus.")],
    format: Format = "text",
    output: Output = None,
    top: Annotated[int, typer.Option(
        help="Untested chunks and documents the text and markdown list, most retrieved "
        "first (JSON lists them all).")] = 20,
    fail_under: Annotated[float | None, typer.Option(
        help="Exit with status 2 when traffic-weighted coverage (percent) is below this.")]
    = None,
    allow_different_k: AllowK = False,
    allow_different_retriever: AllowRetriever = False,
    precision: Precision = 1,
    show_ids: ShowIds = False,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (the traffic's hits counted on a Dask cluster; "
        "the data files on storage its workers see).")] = "local",
    scheduler: Scheduler = None,
) -> None:
    """Traffic-weighted coverage and the untested chunks production retrieves most."""
    check_format(format, precision)
    if top < 1:
        raise RagcovError(f"--top must be at least 1, got {top}")
    check_fail_under(fail_under)
    check_outputs([output], [tests, traffic])
    # A machine output is whole; --top only shortens what a person reads.
    g = traffic_gap(tests, traffic, top=None if format == "json" else top,
                    allow_different_k=allow_different_k,
                    allow_different_retriever=allow_different_retriever, engine=engine,
                    scheduler=scheduler)
    write_comparison(g, "gap", format, output, precision, show_ids, top)
    if g.traffic_weighted_coverage is None:
        if fail_under is not None:  # nothing to judge: a broken input, not a passing one
            raise RagcovError(f"{traffic}: the traffic holds no production hits, so there is "
                              "no traffic-weighted coverage for --fail-under to judge")
        return
    fail(fail_under_message(g.traffic_weighted_coverage, fail_under, precision,
                            "traffic-weighted coverage"))
