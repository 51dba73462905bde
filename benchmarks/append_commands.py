#!/usr/bin/env python3
"""`ragcov run --append` of one question against the first run, as a user types them.

    python benchmarks/append_commands.py                       # the bundled sample, dense
    python benchmarks/append_commands.py --interleave OLD/src  # start-up: this tree vs another

Default: a fresh cache and data file; the first run over the bundled sample (218 pages
split into 1,184 chunks, 300 questions, dense, k = 5), then five appends of one new
question each, every one a fresh ``python -m ragcov`` process; prints the first run, the
median append and their ratio (issue 37's aim: >= 50x). Extra arguments after ``--`` go
to every ``ragcov run`` (``-- --backend torch``).

``--interleave SRC``: what an append costs when it is nothing but start-up (an 8-chunk
corpus), this checkout's ``src`` and ``SRC`` alternated, eight appends each; the median
CPU time (user + system) and wall time of each, so a loaded machine still compares them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "src" / "ragcov" / "data_sample"
CITY = ["Paris is the capital of France and sits on the Seine.",
        "Berlin is Germany's capital and its largest city.",
        "Madrid, the Spanish capital, lies in the centre of Spain.",
        "Tokyo is the capital of Japan and a huge metropolis.",
        "Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar.",
        "Mitochondria produce most of the chemical energy that powers a cell.",
        "Interest expense rose in 2009 because the company issued new long-term debt.",
        "The board declared quarterly dividends of $0.25 per share."]


def _env(src: Path, cache: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src), RAGCOV_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed ragcov runs: bytecode cached
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    wall = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime


def _question(i: int) -> str:
    return json.dumps({"id": f"new-{i}", "question": f"what was the change in total operating "
                                                     f"revenue in {2000 + i}?"})


def on_the_sample(extra: list[str]) -> str:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        questions = (SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
        env = _env(ROOT / "src", tmp / "cache")
        base = [sys.executable, "-m", "ragcov", "run", "--corpus", str(SAMPLE / "finqa_pages.jsonl"),
                "--split", "--k", "5", "-q", "--data-file", str(tmp / "d.ragcov"),
                "--queries", str(tmp / "q.jsonl"), *extra]
        (tmp / "q.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
        first = _timed(base, env)[0]
        appends = []
        for i in range(5):
            questions.append(_question(i))
            (tmp / "q.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
            appends.append(_timed([*base, "--append"], env)[0])
    median = statistics.median(appends)
    return (f"first run {first:.1f} s; append of one question: median {median:.2f} s of "
            f"{[round(a, 2) for a in appends]}; ratio {first / median:.1f}x")


def interleaved(other: Path, runs: int = 8) -> str:
    trees = {"this checkout": ROOT / "src", str(other): other}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus = tmp / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": f"c{i}", "doc_id": "d", "text": t}) + "\n"
                                  for i, t in enumerate(CITY)), encoding="utf-8")
        asked = {name: [json.dumps({"id": "q0", "question": "capital of Japan"})] for name in trees}
        seen: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}

        def run(name: str, append: bool) -> tuple[float, float]:
            queries = tmp / f"q-{len(asked[name])}-{abs(hash(name))}.jsonl"
            queries.write_text("\n".join(asked[name]) + "\n", encoding="utf-8")
            cmd = [sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus), "--queries",
                   str(queries), "--k", "2", "-q", "--data-file",
                   str(tmp / f"{abs(hash(name))}.ragcov"), *(["--append"] if append else [])]
            return _timed(cmd, _env(trees[name], tmp / f"cache-{abs(hash(name))}"))

        for name in trees:
            run(name, False)
        for i in range(runs):
            for name in trees:
                asked[name].append(_question(i))
                wall, cpu = run(name, True)
                seen[name][0].append(wall)
                seen[name][1].append(cpu)
    return "\n".join(f"{name}: append CPU median {statistics.median(c):.2f} s, wall median "
                     f"{statistics.median(w):.2f} s ({runs} appends)" for name, (w, c) in seen.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interleave", type=Path, metavar="SRC",
                    help="another tree's src folder: compare the start-up of an append")
    ap.add_argument("extra", nargs="*", help="after --: options for every ragcov run")
    args = ap.parse_args()
    print(interleaved(args.interleave) if args.interleave else on_the_sample(args.extra))


if __name__ == "__main__":
    main()
