"""``ragcov faults``: failing queries -> faults -> APFD of given orders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import find_faults
from ragcov.api.cli_support import check_outputs
from ragcov.cli.console import err
from ragcov.cli.console import out as _out
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile, to_stdout, write_output
from ragcov.files import json_text

SHOW = 8   # members / chunks listed per fault in the table


def _short(items: list[str] | tuple[str, ...], limit: int = SHOW) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def faults(
    data_file: DataFile = DEFAULT_DATA_PATH,
    qrels: Annotated[Path | None, typer.Option(
        help="Relevance labels: JSONL {query_id, doc_id|chunk_id}, TREC or BEIR qrels.")] = None,
    qrels_level: Annotated[str | None, typer.Option(
        help="doc or chunk: what the ids of TREC/BEIR qrels name (JSONL says it itself).")] = None,
    scores: Annotated[Path | None, typer.Option(
        help="Per-query scores (.csv/.jsonl/.json) with a query id or query text column. With "
        "neither --qrels nor --scores: the test outcomes pytest --ragcov recorded.")] = None,
    metric: Annotated[str | None, typer.Option(
        help="With --qrels: hit (default) or context_relevance. With --scores: the column.")] = None,
    fail_below: Annotated[float | None, typer.Option(
        help="A query fails when the metric is below this (default: at its minimum, <= 0).")]
    = None,
    tau: Annotated[float, typer.Option(
        help="Two failures share a fault when the Jaccard of their retrieved sets exceeds this.")]
    = 0.8,
    clustering: Annotated[str, typer.Option(
        help="components (connected components) or leader (no chaining).")] = "components",
    order: Annotated[list[Path] | None, typer.Option(
        "--order", help="An order.json from 'ragcov select' (repeatable); its APFD is reported.")]
    = None,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the faults as JSON here; - for stdout.")] = None,
    show_ids: Annotated[bool, typer.Option(
        "--show-ids", hidden=True, help="Accepted for older scripts: chunks are named by id.")]
    = False,
) -> None:
    """Group failing queries into faults and score orderings by APFD."""

    from rich.markup import escape
    from rich.table import Table

    check_outputs([output], [data_file, qrels, scores, *(order or [])])
    # The JSON on stdout is for a pipe: the tables go to stderr beside it.
    out = err if output is not None and to_stdout(output) else _out
    found = find_faults(data_file, qrels=qrels, qrels_level=qrels_level, scores=scores,
                        metric=metric, fail_below=fail_below, tau=tau, clustering=clustering,
                        orders=order or [])
    for warning in found.warnings:
        err.print(f"warning: {warning}", markup=False)
    failures, report = found.failures, found.report
    # The file first: a closed stdout (``| head``) must not cost the report asked for.
    wrote = output is not None and write_output(
        json_text(report.as_dict()),
        output, "json")
    rule = f"< {fail_below:g}" if fail_below is not None else "at its minimum (<= 0)"
    out.print(f"{len(failures.query_ids)} queries, {failures.n_labelled} with a {failures.metric} "
              f"value; {len(failures.rows)} fail ({failures.metric} {rule}); "
              f"{len(report.faults)} faults (Jaccard > {tau:g}, {clustering})", markup=False)
    if failures.unlabelled:
        err.print(f"note: {len(failures.unlabelled)} queries have no {failures.metric} value and "
                  f"are left out of the failures (first: {failures.unlabelled[0]})", markup=False)
    if failures.unmatched:
        err.print(f"note: {failures.unmatched} labelled/scored queries are not in the data file",
                  markup=False)
    if report.faults:
        table = Table(box=None, pad_edge=False)
        for col in ("fault", "size", "queries", "shared chunks"):
            table.add_column(col, overflow="fold")
        for f in report.faults:
            shared = list(f.shared_chunks)  # ids: a position names another chunk once one is deleted
            table.add_row(escape(f.id), str(f.size), escape(_short(f.queries)),
                          escape(_short(shared)))
        out.print(table)
    if report.apfd:
        table = Table(box=None, pad_edge=False)
        for col in ("order", "tests", "faults revealed", "APFD"):
            table.add_column(col)
        for name, value in report.apfd.items():
            table.add_row(escape(name), str(report.order_sizes[name]),
                          f"{report.revealed[name]}/{len(report.faults)}",
                          "undefined" if value is None else f"{value:.4f}")
        out.print(table)
    if wrote:
        out.print(f"Wrote {output}", markup=False)
