"""``ragcov html``: the htmlcov-style site."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api import ReportScope, cli_support, write_html
from ragcov.api import report as report_data
from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    FailUnder,
    FailUnderText,
    check_fail_under,
    check_precision,
    check_text_gate,
    gate,
    text_gate,
)
from ragcov.cli.report_options import scoped
from ragcov.cli.topics import check_by
from ragcov.errors import RagcovError
from ragcov.reporters import DEFAULT_HTML_DIR

Precision = Annotated[int | None, typer.Option(
    help="Digits after the decimal point in percentages (default 0; --fail-under then "
    "compares at 2).")]


@scoped
def html(
    data_file: DataFile = DEFAULT_DATA_PATH,
    directory: Annotated[Path, typer.Option(
        "-d", "--directory", help="Where to write the site (replaced whole).")]
    = Path(DEFAULT_HTML_DIR),
    order: Annotated[list[Path] | None, typer.Option(
        "--order", help="An order.json from 'ragcov select'; draws its coverage curve "
        "(repeat for several).")] = None,
    greedy: Annotated[bool, typer.Option(
        "--greedy/--no-greedy", help="Also draw the coverage-greedy ordering's curve.")] = True,
    title: Annotated[str, typer.Option(help="Title shown on every page.")]
    = "Chunk coverage report",
    precision: Precision = None,
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
    fail_under_text: FailUnderText = None,
    by: Annotated[str, typer.Option(
        "--by", help="document, or topic (the topic page is required: the data file must hold "
        "topics from `ragcov topics`). Either way the site has a topic page when it does.")]
    = "document",
) -> None:
    """Write an HTML report: documents, chunks shaded covered/uncovered, queries, curves."""

    check_precision(precision or 0)
    check_fail_under(fail_under)
    check_by(by)
    # One read (one snapshot of the file): the gate judges the numbers the site shows, and
    # the topics are those of the recording the site shows.
    with cli_support.one_read(data_file):
        site = report_data(data_file, scope)
        topics = _topics(data_file, site, by)
    check_text_gate(site.text, fail_under_text)  # a gate with no figure: refused before writing
    index = write_html(site, directory, order or [], greedy=greedy, title=title,
                       precision=precision or 0, topics=topics)
    out.print(f"Wrote HTML report to {index}")
    drift_page = api.write_drift_html(site, directory)
    if drift_page is not None:  # a drift run recorded in the file (ragcov drift)
        out.print(f"Wrote the drift page to {drift_page}", markup=False)
    if fail_under is not None:
        gate(site.summary(jaccard=False).coverage, fail_under, precision)
    text_gate(site.text, fail_under_text, precision)


def _topics(data_file: Path, site: object, by: str) -> object:
    """The topic page's report: required with ``--by topic``; else added when the data file
    holds topics, and left out with a warning when they are stale."""
    if by == "topic":
        return api.topic_coverage(data_file, scoped=site)
    try:
        return api.topic_coverage(data_file, scoped=site, missing_ok=True)
    except RagcovError as exc:
        err.print(f"ragcov: warning: {exc}; the site has no topic page", markup=False)
        return None
