#!/usr/bin/env python3
"""Start-up of the reading commands, this checkout against an older commit, as commands.

    python benchmarks/compare_startup.py 004edfe          # in a folder holding .ragcov

Each command runs as a fresh ``python -m ragcov`` process, with ``PYTHONPATH`` at this
checkout's ``src`` or at a worktree of the given commit, interleaved, 3 warm-ups then the
median of ``--runs`` each; bytecode is written as a user's install would have it. Beside
the wall time, the CPU time (user + system) of each process: on a machine other jobs
load, the wall time grows with the load and the CPU time hardly does, so it is what a
quiet machine's wall time would be, near enough.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [["report"], ["report", "--format", "total"], ["xml", "-o", "c.xml"],
            ["lcov", "-o", "c.lcov"], ["json", "-o", "c.json"], ["badge", "-o", "b.svg"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if not Path(".ragcov").is_file():
        sys.exit("run this in a folder holding a .ragcov data file")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)
        try:
            trees = {args.base: base / "src", "this checkout": ROOT / "src"}
            for cmd in COMMANDS:
                times: dict[str, list[float]] = {name: [] for name in trees}
                cpu: dict[str, list[float]] = {name: [] for name in trees}
                for i in range(3 + args.runs):
                    for name, src in trees.items():
                        env = {**os.environ, "PYTHONPATH": str(src)}
                        env.pop("PYTHONDONTWRITEBYTECODE", None)
                        used = resource.getrusage(resource.RUSAGE_CHILDREN)
                        t = time.perf_counter()
                        subprocess.run([sys.executable, "-m", "ragcov", *cmd], env=env,
                                       capture_output=True, check=True)
                        if i >= 3:
                            times[name].append(time.perf_counter() - t)
                            now = resource.getrusage(resource.RUSAGE_CHILDREN)
                            cpu[name].append(now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime)
                before, after = (statistics.median(times[n]) for n in trees)
                cpu_before, cpu_after = (statistics.median(cpu[n]) for n in trees)
                print(f"ragcov {' '.join(cmd)}: {args.base} {before * 1000:.0f} ms (CPU "
                      f"{cpu_before * 1000:.0f} ms), this checkout {after * 1000:.0f} ms (CPU "
                      f"{cpu_after * 1000:.0f} ms), {before / after:.2f}x (medians of {args.runs})")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=False)


if __name__ == "__main__":
    main()
