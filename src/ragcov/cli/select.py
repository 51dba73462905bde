"""``ragcov select``: order the recorded query pool so the tests worth running come first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli.console import out
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile
from ragcov.selection import DEFAULT_AFTER_SATURATION


def select_cmd(
    data_file: DataFile = DEFAULT_DATA_PATH,
    strategy: Annotated[str, typer.Option(
        help="coverage (greedy by new chunks), random (seeded) or overlap (redundancy-heavy: "
        "most already-covered chunks first).")] = "coverage",
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
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the order (JSON).")]
    = Path("order.json"),
    suite_out: Annotated[Path | None, typer.Option(
        help="Also write the selected queries as a JSONL suite (id, text).")] = None,
) -> None:
    """Order the recorded queries by a selection strategy; write the order and its curve."""
    from ragcov.data import CoverageData
    from ragcov.errors import RagcovError
    from ragcov.io import write_json_atomic, write_jsonl_atomic
    from ragcov.selection import TARGETS, cut_order, mean_curve, select

    if repeats < 1:
        raise RagcovError(f"--repeats must be at least 1, got {repeats}")
    if target is not None and not 0 < target <= 100:
        raise RagcovError(f"--target must be a percentage in (0, 100], got {target:g}")
    data = CoverageData(data_file)
    if not data.exists():
        raise RagcovError(f"{data_file}: no coverage data (run `ragcov run` first)")
    m = data.matrix()
    if m.n_queries == 0:
        raise RagcovError(f"{data_file}: no queries recorded")
    sels = [select(m, strategy, seed=seed + i, after_saturation=after_saturation)
            for i in range(repeats)]
    sel = sels[0]
    n, why = cut_order(sel, budget, target)

    def ids(order) -> list[str]:
        return [m.query_ids[int(r)] for r in order]

    doc = {
        "strategy": strategy,
        "seed": seed,
        "after_saturation": after_saturation if strategy == "coverage" else None,
        "pool_size": m.n_queries,
        "pool_coverage": sel.pool_coverage,
        "saturated_at": sel.saturated_at,
        "order": ids(sel.order[:n]),
        "curve": [float(v) for v in sel.curve[:n]],
        "tests_to": {f"{t}": sel.tests_to(t) for t in TARGETS} if n == len(sel.order)
        else {f"{t}": _within(sel.tests_to(t), n) for t in TARGETS},
        "cut": None if why is None else {"n": n, "by": why},
    }
    if repeats > 1:
        doc["runs"] = [{"seed": s.seed, "order": ids(s.order[:n]),
                        "tests_to": {f"{t}": _within(s.tests_to(t), n) for t in TARGETS}}
                       for s in sels]
        doc["mean_curve"] = [float(v) for v in mean_curve(sels)[:n]]
    write_json_atomic(output, doc)
    if suite_out is not None:
        write_jsonl_atomic(suite_out, [{"id": m.query_ids[int(r)], "text": m.query_texts[int(r)]}
                                       for r in sel.order[:n]])
    cc = sel.curve[n - 1] if n else 0.0
    out.print(f"{strategy}: {m.n_queries} queries in the pool, pool coverage "
              f"{sel.pool_coverage * 100:.1f}%")
    out.print("tests to reach " + ", ".join(
        f"{t}%: {v if v is not None else '-'}" for t, v in doc["tests_to"].items())
        + " of pool coverage")
    if why is not None:
        out.print(f"Cut to the first {n} of {m.n_queries} tests by the {why} "
                  f"(coverage {cc * 100:.1f}%)")
    out.print(f"Wrote {output}" + (f" and {suite_out}" if suite_out is not None else ""))


def _within(n_to: int | None, n: int) -> int | None:
    return n_to if n_to is not None and n_to <= n else None
