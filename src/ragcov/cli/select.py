"""``ragcov select``: order the recorded query pool so the tests worth running come first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.api import select_tests
from ragcov.api.cli_support import ALL_STRATEGIES, DEFAULT_AFTER_SATURATION, check_outputs
from ragcov.cli.console import err
from ragcov.cli.console import out as _out
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile, ShowIds, to_stdout, write_output
from ragcov.errors import RagcovError
from ragcov.files import json_text, jsonl_text


def _list_strategies(value: bool) -> None:
    if value:
        typer.echo("\n".join(ALL_STRATEGIES))
        raise typer.Exit()


def select_cmd(
    data_file: DataFile = DEFAULT_DATA_PATH,
    strategy: Annotated[str, typer.Option(
        help="coverage (greedy by new chunks), random (seeded), overlap (redundancy-heavy: "
        "most already-covered chunks first), confmargin-gain5 (coverage greedy with a bonus for "
        "queries the retriever was unsure of: reveals failures earlier); research options: "
        "coverage-lowconf, interleave, lowconf. See docs/selection.md.")] = "coverage",
    budget: Annotated[int | None, typer.Option(
        help="Keep only the first N tests of the order.")] = None,
    target: Annotated[float | None, typer.Option(
        help="Stop once the order reaches PCT% of the pool's coverage.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for tie-breaks and random orders.")] = 0,
    repeats: Annotated[int, typer.Option(
        help="Runs with seeds SEED, SEED+1, ...; the JSON adds each run and the mean curve.")] = 1,
    after_saturation: Annotated[str, typer.Option(
        help="Coverage order once no query adds coverage: random (seeded random order of the "
        "rest) or reset (clear the covered set and continue greedily).")]
    = DEFAULT_AFTER_SATURATION,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Where to write the order (JSON); - for stdout. Default: "
        "order-STRATEGY.json, so orders of two strategies never overwrite each other.")]
    = None,
    suite_out: Annotated[Path | None, typer.Option(
        help="Also write the selected queries as a JSONL suite, every field of the records "
        "they were recorded from (gold labels kept); - for stdout.")]
    = None,
    pytest_args: Annotated[Path | None, typer.Option(
        "--pytest-args", help="Also write the pytest node ids of the selected tests (recorded "
        "by pytest --ragcov), one a line: `pytest @FILE` runs just them.")] = None,
    list_strategies: Annotated[bool, typer.Option(
        "--list-strategies", is_eager=True, callback=_list_strategies,
        help="Print the strategy names, one a line, and exit.")] = False,
    show_ids: ShowIds = False,
) -> None:
    """Order the recorded queries by a selection strategy; write the order and its curve."""

    # The pool's own query files too: a cut suite written over them would lose the rest.
    if output is None:
        output = Path(f"order-{strategy}.json")
    check_outputs([output, suite_out, pytest_args], [data_file])
    replaced = [p for p in (output, suite_out, pytest_args)
                if p is not None and not to_stdout(p) and p.is_file()]
    doc = select_tests(data_file, strategy, budget, target, seed, repeats, after_saturation)
    suite = doc.pop("suite")
    lost_ranges = doc.pop("lost_ranges", [])
    unread = doc.pop("unread_sources", [])
    if pytest_args is not None and not doc.get("tests"):
        raise RagcovError(f"--pytest-args: {data_file} holds no pytest node ids (record the suite "
                          "with pytest --ragcov to select tests by node id)")
    written = [output] if write_output(
        json_text(doc), output, "json") else []
    if suite_out is not None and unread:
        err.print(f"ragcov: warning: {', '.join(unread)}, recorded as the suite's source, "
                  "cannot be read now (moved or changed): its questions are written with id and "
                  "text only, without their other fields", markup=False)
    if suite_out is not None and write_output(
            jsonl_text(suite), suite_out, "jsonl"):
        written.append(suite_out)
    if pytest_args is not None and write_output("".join(f"{t}\n" for t in doc["tests"]),
                                                pytest_args, "node-ids"):
        written.append(pytest_args)
    # The order (or suite) on stdout is for a pipe: the account goes to stderr beside it.
    out = err if to_stdout(output) or (suite_out is not None and to_stdout(suite_out)) else _out
    n, pool = len(doc["order"]), doc["pool_size"]
    cc = doc["curve"][n - 1] if n else 0.0
    out.print(f"{strategy}: {pool} queries in the pool, pool coverage "
              f"{doc['pool_coverage'] * 100:.1f}%")
    out.print("tests to reach " + ", ".join(
        f"{t}%: {v if v is not None else '-'}" for t, v in doc["tests_to"].items())
        + " of pool coverage")
    if doc["cut"] is not None:
        out.print(f"Cut to the first {n} of {pool} tests by the {doc['cut']['by']} "
                  f"(coverage {cc * 100:.1f}%)")
        lost = doc["cut"]["lost_chunks"]
        if lost:
            shown = lost if show_ids else lost_ranges
            more = (f", ... (the order file lists all {len(lost)})" if len(shown) > 12 else "")
            out.print(f"The cut loses {len(lost)} chunk{'s' if len(lost) != 1 else ''} the pool "
                      f"covers: {', '.join(shown[:12])}{more}", markup=False)
    if written:
        out.print("Wrote " + " and ".join(str(p) for p in written), markup=False)
    for path in replaced:
        out.print(f"Replaced the existing {path}", markup=False)
