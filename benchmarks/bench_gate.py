"""Benchmark: the gate (``ragcov report --format total``, every ``--fail-under``) read from the
totals the data file keeps, against the same number read from its rows; and its start-up.

A synthetic recording (N chunks, Q queries x k = 10 skewed hits) is written with
``CoverageData.write``. In this process, best of three:

* ``CoverageData.totals()``: the kept totals (what the gate reads now);
* the same with the totals table dropped (a file written before they were kept: counted
  from the rows with SQL);
* baseline: ``load_scoped(...).summary()``, the matrix and the report's scope, what the
  gate read before (and still reads for a scope that leaves chunks out).

Then the command itself, as a fresh ``python -m ragcov`` process (median of 5, bytecode
written): ``report --format total`` against ``report --format total --include '*'`` (a
scope the totals do not answer: the rows path, as every gate was before), with each
process's CPU time (user + system, what a quiet machine's wall time would be) and peak
memory. The start-up row is the same pair on a 100-chunk file, where reading is nothing
and the time is what the command imports.

Sizes: tiny 20,000 chunks x 400 queries; quick 200,000 x 4,000 (under a minute);
full 1,000,000 x 20,000, the size of the issue's figures (a few minutes, mostly writing
the file). Run alone: ``.venv/bin/python benchmarks/bench_gate.py [--tiny|--quick|--full]``
"""

from __future__ import annotations

import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row, synthetic_run  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": (20_000, 400), "quick": (200_000, 4_000), "full": (1_000_000, 20_000)}
K = 10
ROOT = Path(__file__).resolve().parent.parent


def _write(path: Path, n_chunks: int, n_queries: int) -> None:
    from ragcov.data import CoverageData

    CoverageData(path).write(*synthetic_run(n_chunks, n_queries, K))


def _best(fn, repeats: int = 3):  # type: ignore[no-untyped-def]
    best, value = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def _command(folder: Path, args: list[str], runs: int = 5, python: bool = False
             ) -> tuple[float, float, float | None, str]:
    """Median wall and CPU seconds, and peak MiB, of ``python -m ragcov ARGS`` in ``folder``
    (``python``: of ``python ARGS``, a baseline's script).

    The peak comes from ``/usr/bin/time`` (None without it): a child's own maxrss counts
    the pages it shared with this process between fork and exec."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's install has it
    timer = ["/usr/bin/time", "-f", "@@peak %M"] if os.access("/usr/bin/time", os.X_OK) else []
    walls, cpus, peaks, out = [], [], [], ""
    for n in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([*timer, sys.executable, *([] if python else ["-m", "ragcov"]),
                               *args], cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.strip()
        if n == 0:
            continue  # the warm-up writes the bytecode
        walls.append(wall)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        peaks += [int(line.split()[-1]) / 1024.0 for line in proc.stderr.splitlines()
                  if line.startswith("@@peak ")]
    return statistics.median(walls), statistics.median(cpus), max(peaks) if peaks else None, out


def _mib(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def main(mode: str = "full") -> list[dict]:
    from ragcov.data import CoverageData
    from ragcov.scope import load_scoped

    n_chunks, n_queries = SIZES[mode]
    label = f"{n_chunks:,} chunks x {n_queries:,} queries x k={K}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        folder.mkdir()
        path = folder / ".ragcov"
        t = time.perf_counter()
        _write(path, n_chunks, n_queries)
        wrote = time.perf_counter() - t
        data = CoverageData(path)
        kept_s, kept = _best(lambda: data.totals())
        rows_s, summary = _best(lambda: load_scoped(path).summary(jaccard=False))
        assert kept is not None and kept.kept
        assert (kept.chunks, kept.covered, kept.queries) == (summary.chunks, summary.covered,
                                                             summary.queries)
        # The command, both ways; the rows' way (--include '*') before the kept totals are
        # dropped, then a file as written before totals were kept.
        fast = _command(folder, ["report", "--format", "total"])
        slow = _command(folder, ["report", "--format", "total", "--include", "*"], runs=3)
        assert fast[3] == slow[3], (fast[3], slow[3])
        with sqlite3.connect(path) as con:
            con.execute("DROP TABLE totals")
        old_s, old = _best(lambda: data.totals())
        assert old is not None and not old.kept and old == kept.__class__(
            kept.chunks, kept.covered, kept.queries, kept.k)
        rows += [
            row(f"gate: total from kept totals, {label}", kept_s, rows_s,
                note="CoverageData.totals(); baseline: load_scoped().summary(), the rows "
                     f"(file written in {wrote:,.1f} s)"),
            row(f"gate: total counted from rows (file without totals), {label}", old_s, rows_s,
                note="the SQL count an older file gets; baseline as above"),
            row(f"gate: `ragcov report --format total`, {label}", fast[0], slow[0],
                note=f"wall, median; CPU {fast[1]:.2f} s against {slow[1]:.2f} s; peak "
                     f"{_mib(fast[2])} MiB against {_mib(slow[2])} MiB; baseline: the same with "
                     "--include '*' (the rows)", aim="<= 1 s", met=fast[0] <= 1.0,
                cpu_s=fast[1], baseline_cpu_s=slow[1], peak_mib_command=fast[2],
                baseline_peak_mib_command=slow[2]),
        ]
        small = Path(tmp) / "small"
        small.mkdir()
        _write(small / ".ragcov", 100, 10)
        start = _command(small, ["report", "--format", "total"], runs=9)
        start_rows = _command(small, ["report", "--format", "total", "--include", "*"], runs=9)
        rows.append(row("gate: start-up of `ragcov report --format total` (100 chunks)", start[0],
                        start_rows[0],
                        note=f"wall, median of 9; CPU {start[1]:.2f} s against {start_rows[1]:.2f} s; "
                             "baseline: --include '*', which loads every module the report "
                             "loaded before", aim="<= 0.3 s", met=start[1] <= 0.3,
                        cpu_s=start[1], baseline_cpu_s=start_rows[1]))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
