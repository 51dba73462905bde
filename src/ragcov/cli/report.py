"""``ragcov report`` and ``ragcov json``: read a data file like ``coverage report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api import ReportScope, approximate_note, duplicate_groups, redundant_tests
from ragcov.api import report as report_data
from ragcov.cli.console import out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    FailUnder,
    GatePrecision,
    ShowIds,
    Support,
    check_fail_under,
    check_precision,
    fail,
    gate,
)
from ragcov.cli.report_options import scoped, write_scoped
from ragcov.errors import RagcovError
from ragcov.files import json_text
from ragcov.reporters import DEFAULT_JSON_FILE
from ragcov.reporters.drift import drift_json, drift_lines
from ragcov.reporters.jsonreport import json_report
from ragcov.reporters.reachability import reachability_lines
from ragcov.reporters.sections import (
    correctness_line,
    duplicates_line,
    excluded_line,
    generated_line,
    redundant_lines,
)
from ragcov.reporters.table import render_table, retriever_line


@scoped
def report(
    data_file: DataFile = DEFAULT_DATA_PATH,
    show_missing: Annotated[bool, typer.Option(
        "--show-missing/--no-show-missing", "-m",
        help="List each document's uncovered chunks (positions from 1; ids with --show-ids).")]
    = False,
    show_ids: ShowIds = False,
    skip_covered: Annotated[bool, typer.Option(
        "--skip-covered/--no-skip-covered", help="Leave out fully covered documents.")] = False,
    sort: Annotated[str | None, typer.Option(
        help="Sort by name, chunks, covered, missing or cover; prefix - to reverse.")] = None,
    precision: Annotated[int | None, typer.Option(
        help="Digits after the decimal point (default 0; 2 for --format total).")] = None,
    format: Annotated[str, typer.Option("--format", help="text, markdown or total.")] = "text",
    fail_under: FailUnder = None,
    redundant: Annotated[bool, typer.Option(
        "--redundant/--no-redundant",
        help="List redundant tests, each with the test that subsumes it or overlaps it most.")]
    = False,
    qrels: Annotated[Path | None, typer.Option(
        help="Relevance labels (JSONL, TREC or BEIR TSV): show the hit rate and recall@k "
        "beside coverage. Without it, the test outcomes pytest --ragcov recorded give the "
        "pass rate.")] = None,
    qrels_level: Annotated[str | None, typer.Option(
        help="doc or chunk (default: detected).")] = None,
    min_hit_rate: Annotated[float | None, typer.Option(
        "--min-hit-rate", help="Exit with status 2 when the hit rate (percent of labelled "
        "queries retrieving a relevant chunk; with no --qrels, of recorded tests that passed) "
        "is below this: coverage bought with vague questions cannot pass.")] = None,
    scope: ReportScope = ReportScope(),
) -> None:
    """Per-document coverage table with a TOTAL row (like `coverage report`)."""

    # The gate compares at the precision `--format total` prints, whatever this table shows.
    gate_precision = precision
    if precision is None:
        precision = 2 if format == "total" else 0
    check_precision(precision)
    check_fail_under(fail_under)
    if min_hit_rate is not None and not 0 <= min_hit_rate <= 100:
        raise RagcovError(f"--min-hit-rate must be a percentage from 0 to 100, got {min_hit_rate:g}")
    scoped = report_data(data_file, scope)
    right = api.correctness(scoped.matrix, qrels, qrels_level)
    if min_hit_rate is not None and right is None:
        raise RagcovError("--min-hit-rate needs --qrels, or test outcomes recorded by "
                          "pytest --ragcov")
    summary = scoped.summary(jaccard=False)
    # A store's read order is not stable (a deleted chunk shifts every position after it):
    # its missing chunks are listed by id. A corpus file's order is, so positions are kept.
    show_ids = show_ids or scoped.from_store
    if format == "text":
        out.print(retriever_line(scoped.meta.k, scoped.meta.retriever, summary.depth), markup=False)
    out.print(render_table(summary, format, show_missing, skip_covered, sort, precision,
                           show_ids), markup=False)
    if format != "total":
        lines = [excluded_line(scoped.excluded), generated_line(scoped.generated_left_out),
                 duplicates_line(duplicate_groups(scoped.matrix, scoped.texts)),
                 approximate_note(scoped)]
        if lines[3]:
            lines[3] = f"Note: {lines[3]}"
        if scoped.reachability is not None:
            lines += reachability_lines(scoped, show_missing, show_ids)
        if right is not None:
            lines.append(correctness_line(right, scoped.meta.k))
        if redundant:
            lines += ["", *redundant_lines(redundant_tests(scoped.matrix),
                                           scoped.matrix.n_queries)]
        drifted = api.drift_summary(data_file)
        if drifted is not None:
            lines += drift_lines(drifted)
        for line in lines:
            if line is not None:
                out.print(line, markup=False)
    gate(summary.coverage, fail_under, gate_precision,
         shown_precision=precision if format != "total" else None)
    if min_hit_rate is not None and right.hit_rate * 100 < min_hit_rate:
        fail(f"Correctness failure: hit rate of {right.hit_rate * 100:.2f}% is less than "
             f"min-hit-rate={min_hit_rate:g}")


@scoped
def json_cmd(
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write; - for stdout.")]
    = Path(DEFAULT_JSON_FILE),
    entropy_support: Support = "retrieved",
    gini_over: Support = "retrieved",
    pretty: Annotated[bool, typer.Option(help="Indent the JSON.")] = True,
    scope: ReportScope = ReportScope(),
    fail_under: FailUnder = None,
    precision: GatePrecision = None,
) -> None:
    """Write the versioned JSON report."""
    def render(scoped) -> str:  # type: ignore[no-untyped-def]
        doc = json_report(scoped.matrix, entropy_support, gini_over, scoped=scoped)  # type: ignore[arg-type]
        drifted = api.drift_summary(data_file)
        if drifted is not None:  # a drift run recorded in the file (ragcov drift)
            doc["drift"] = drift_json(drifted)
        return json_text(doc, indent=2 if pretty else None)

    write_scoped(data_file, scope, output, fail_under, render, "JSON report", precision)


