"""Commands raced against one data file, for tests/test_trust_datafile.py and test_trust_races.py.

A pool of worker processes forked from the test process runs ``ragcov ARGS`` in
process (no interpreter start per command), each after a chosen delay, and reports
its exit status and when it started and ended (``time.monotonic``: one clock for
every process on the machine), so a test can tell which commands overlapped.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

K = 3
CHUNKS = [{"id": f"c{i}", "doc_id": f"d{i % 3}", "text": f"chunk {i} about topic{i} and more"}
          for i in range(12)]


class FixedRetriever:
    """A deterministic retriever recorded under the name the imports use (``--name race``).

    ``run --append`` and ``import --append`` then record into one file (same k, corpus
    and retriever), as a team does that adds production traces to its suite's data.
    """

    def __init__(self, corpus: Any) -> None:
        self.ids = list(corpus.ids)

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "traces", "name": "race"}

    def retrieve(self, texts: Sequence[str], k: int) -> list[list[tuple[str, float | None]]]:
        n = len(self.ids)
        return [[(self.ids[(len(t) + j) % n], None) for j in range(k)] for t in texts]


RUN = ["--retriever", "datafile_race:FixedRetriever", "-k", str(K), "-q"]


@dataclass(frozen=True)
class Outcome:
    args: tuple[str, ...]
    code: int
    start: float
    end: float
    err: str


def write_corpus(folder: Path) -> Path:
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CHUNKS), encoding="utf-8")
    return path


def write_queries(path: Path, ids: Sequence[str]) -> Path:
    path.write_text("".join(json.dumps({"id": q, "text": f"what about {q}?"}) + "\n" for q in ids),
                    encoding="utf-8")
    return path


def write_traces(path: Path, ids: Sequence[str]) -> Path:
    """Recorded retrievals of ``ids``, K chunks each (``ragcov import`` jsonl)."""
    path.write_text("".join(json.dumps({
        "id": q, "query": f"traced {q}",
        "retrieved": [CHUNKS[(n + j) % len(CHUNKS)]["id"] for j in range(K)]}) + "\n"
        for n, q in enumerate(ids)), encoding="utf-8")
    return path


def recorded(path: Path) -> set[str]:
    """The query ids of a data file, read with sqlite3 alone; the file must pass integrity_check."""
    import sqlite3

    if not path.exists() or path.stat().st_size == 0:
        return set()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0] for row in con.execute("SELECT id FROM queries")}
    finally:
        con.close()


def _command(cwd: str, args: Sequence[str], delay: float) -> Outcome:
    from ragcov.cli import main

    os.chdir(cwd)
    time.sleep(delay)
    err = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Outcome(tuple(args), code, start, time.monotonic(), err.getvalue())


@contextlib.contextmanager
def workers(n: int) -> Iterator[Any]:
    """``n`` forked processes that have ragcov imported already."""
    import ragcov.cli  # noqa: F401  (imported once, before the fork)

    pool = multiprocessing.get_context("fork").Pool(n)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def race(pool: Any, cwd: Path, commands: Sequence[tuple[Sequence[str], float]]) -> list[Outcome]:
    """Start every ``(args, delay)`` at once on ``pool``; their outcomes, in the same order."""
    pending = [pool.apply_async(_command, (str(cwd), list(args), delay)) for args, delay in commands]
    return [p.get(timeout=120) for p in pending]
