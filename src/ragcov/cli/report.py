"""``ragcov report`` and ``ragcov json``: read a data file like ``coverage report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragcov import api
from ragcov.api import ReportScope, cli_support
from ragcov.cli.console import out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    DataFile,
    FailUnder,
    FailUnderText,
    GatePrecision,
    MaxIndexHidden,
    MinIndexRecall,
    ShowIds,
    Support,
    check_fail_under,
    check_precision,
    check_text_gate,
    fail,
    gate,
    text_gate,
)
from ragcov.cli.report_options import scoped, write_scoped, write_total
from ragcov.cli.topics import MinTopicCoverage, check_by
from ragcov.errors import RagcovError
from ragcov.reporters import DEFAULT_JSON_FILE
from ragcov.reporters.registry import REPORTERS, names_help, reporter
from ragcov.user_warnings import RetrievalWarning, warn


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
    top: Annotated[int | None, typer.Option(
        help="List the N documents with the lowest coverage and sum the rest in one row "
        "(default: 25 in markdown, every document in text; 0: every document).")] = None,
    precision: Annotated[int | None, typer.Option(
        help="Digits after the decimal point (default 0; 2 for --format total).")] = None,
    format: Annotated[str, typer.Option("--format", help=f"One of: {names_help()}.")] = "text",
    fail_under: FailUnder = None,
    fail_under_text: FailUnderText = None,
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
    by: Annotated[str, typer.Option(
        "--by", help="document (the table above) or topic (coverage per topic, from "
        "`ragcov topics`; what to test first on top).")] = "document",
    min_topic_coverage: MinTopicCoverage = None,
    min_index_recall: MinIndexRecall = None,
    max_index_hidden: MaxIndexHidden = None,
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
    check_by(by, format, min_topic_coverage)
    index_gates = min_index_recall is not None or max_index_hidden is not None
    cli_support.check_index_gates(min_index_recall, max_index_hidden)
    # The ratchet: the data file's kept totals answer it without reading its rows back.
    plain_total = format == "total" and not (qrels or min_hit_rate is not None
                                             or fail_under_text is not None or index_gates)
    if plain_total and write_total(data_file, scope, None, fail_under,
                                   lambda coverage: cli_support.display_percent(coverage, precision),
                                   "the total", gate_precision):
        return
    _report(data_file, show_missing, show_ids, skip_covered, sort, top, precision, gate_precision, format,
            fail_under, fail_under_text, redundant, qrels, qrels_level, min_hit_rate, scope, by,
            min_topic_coverage, min_index_recall, max_index_hidden)


def _report(data_file: Path, show_missing: bool, show_ids: bool, skip_covered: bool,
            sort: str | None, top: int | None, precision: int, gate_precision: int | None, format: str,
            fail_under: float | None, fail_under_text: float | None, redundant: bool,
            qrels: Path | None, qrels_level: str | None, min_hit_rate: float | None,
            scope: ReportScope, by: str, min_topic_coverage: float | None,
            min_index_recall: float | None, max_index_hidden: int | None) -> None:
    """The report read from the rows: every format, scope and gate."""
    from ragcov.api import report as report_data
    from ragcov.api.cli_support import (
        ceiling_text,
        ceiling_warning,
        display_percent,
        redundant_tests,
    )
    from ragcov.reporters.drift import drift_lines
    from ragcov.reporters.reachability import reachability_lines
    from ragcov.reporters.sections import (
        copied_gate_note,
        copied_line,
        correctness_line,
        duplicates_line,
        excluded_line,
        generated_line,
        redundant_lines,
        text_coverage_line,
        unresolved_labels_line,
    )
    from ragcov.reporters.stages import report_lines
    from ragcov.reporters.table import approximate_note, retriever_line
    from ragcov.reporters.topics import render_topics

    with cli_support.one_read(data_file):  # the report, and its topics: one snapshot of the file
        scoped = report_data(data_file, scope)
        topics = api.topic_coverage(data_file, scoped=scoped) if by == "topic" else None
    check_text_gate(scoped.text, fail_under_text)
    right = api.correctness(scoped.matrix, qrels, qrels_level)
    if min_hit_rate is not None and right is None:
        raise RagcovError("--min-hit-rate needs --qrels, or test outcomes recorded by "
                          "pytest --ragcov")
    summary = scoped.summary(jaccard=False)
    if warning := ceiling_warning(summary, fail_under):  # said before the report, not after it
        warn(warning, RetrievalWarning)
    if topics is not None:
        out.print(render_topics(topics, format, precision), markup=False)
        _gates(summary.coverage, fail_under, gate_precision, precision, right, min_hit_rate)
        text_gate(scoped.text, fail_under_text, gate_precision)
        fail(cli_support.min_topic_failure(topics, min_topic_coverage, gate_precision))
        return
    # A store's read order is not stable (a deleted chunk shifts every position after it):
    # its missing chunks are listed by id. A corpus file's order is, so positions are kept.
    show_ids = show_ids or scoped.from_store
    shown = reporter(format)  # one registry of formats: the table's, and json, xml, lcov
    if format == "text":
        # The ceiling beside the table's total: what this suite can cover at best.
        ceiling = ceiling_text(summary, precision)
        out.print(retriever_line(scoped.meta.k, scoped.meta.retriever, summary.depth)
                  + (f"; {ceiling}" if ceiling else ""), markup=False)
    out.print_text(shown.render(scoped, {"show_missing": show_missing, "skip_covered": skip_covered,
                                         "sort": sort, "precision": precision, "show_ids": show_ids,
                                         "top": top, "correctness": right}).rstrip("\n"))
    if format in ("text", "markdown"):
        ceiling = ceiling_text(summary, precision) if format == "markdown" else None
        lines = [f"Chunk coverage {display_percent(summary.coverage, precision)}% of a {ceiling}"
                 if ceiling else None, text_coverage_line(scoped.text, precision),
                 excluded_line(scoped.excluded), generated_line(scoped.generated_left_out),
                 duplicates_line(scoped.duplicates()),
                 approximate_note(scoped)]
        if lines[-1]:
            lines[-1] = f"Note: {lines[-1]}"
        if scoped.reachability is not None:
            lines += reachability_lines(scoped, show_missing, show_ids, format == "markdown")
        lines += report_lines(scoped.stages, scoped.matrix.n_chunks)  # where chunks are lost
        lines += [copied_line(scoped), copied_gate_note(scoped, fail_under)]
        if right is not None:
            lines.append(correctness_line(right, scoped.meta.k))
            lines.append(unresolved_labels_line(right))
        if redundant:
            lines += ["", *redundant_lines(redundant_tests(scoped.matrix),
                                           scoped.matrix.n_queries)]
        if scoped.drift is not None:  # a drift run recorded in the file (ragcov drift)
            lines += drift_lines(scoped.drift)
        shown_lines = [line for line in lines if line is not None]
        for line in (markdown_list(shown_lines) if format == "markdown" else shown_lines):
            out.print(line, markup=False)
    _gates(summary.coverage, fail_under, gate_precision,
           precision if format != "total" else None, right, min_hit_rate)
    text_gate(scoped.text, fail_under_text, gate_precision)
    fail(cli_support.index_failure(scoped.reachability, min_index_recall, max_index_hidden))


def markdown_list(lines: list[str]) -> list[str]:
    """The lines under the table as a Markdown list: printed one after another they would run
    together into one paragraph in a pull-request comment. An indented line is an item of the
    line above it; a line of a fenced block is kept as it is, indented into its item."""
    items = [""]
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            items.append(f"  {line.strip()}")
        elif fenced:
            items.append(f"  {line}")
        elif line.strip():
            depth = len(line) - len(line.lstrip())
            items.append(f"{'  ' if depth else ''}- {line.strip()}")
    return items


def _gates(coverage: float, fail_under: float | None, gate_precision: int | None,
           shown_precision: int | None, right: Any, min_hit_rate: float | None) -> None:
    """The total's ``--fail-under`` and ``--min-hit-rate``, after whichever table was printed."""
    gate(coverage, fail_under, gate_precision, shown_precision=shown_precision)
    if min_hit_rate is not None and right.hit_rate * 100 < min_hit_rate:
        rate = "hit rate" if right.source == "labels" else "pass rate of the recorded tests"
        fail(f"Correctness failure: {rate} of {right.hit_rate * 100:.2f}% is less than "
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
    fail_under_text: FailUnderText = None,
    precision: GatePrecision = None,
) -> None:
    """Write the versioned JSON report."""
    options = {"entropy_support": entropy_support, "gini_over": gini_over, "pretty": pretty}
    write_scoped(data_file, scope, output, fail_under,
                 lambda scoped: REPORTERS["json"].render(scoped, options), "JSON report", precision,
                 "json", fail_under_text=fail_under_text)


