"""Benchmark: the data file's hit tables as ``WITHOUT ROWID`` (format 3) against rowid tables
(format 2), writing and reading the same run; and its rows written hundreds to a statement
(``data.inserts.insert_rows``) against ``executemany`` of a one-row INSERT; and its hits
written as columns (``data.inserts.insert_columns``) against rows; an append of 1,000
queries with the kept bitmap of covered chunks against a count of every hit; and the
row checks as range tests against index look-ups.

A synthetic run (N queries x k = 5 skewed hits with scores, over N / 10 chunks) is
written with ``CoverageData.write`` and read back with ``CoverageData.matrix()``
(what every report does), once with the schema as ragcov writes it and once with the
format-2 layout: the same tables with a rowid, their (query, rank) key kept in a
second b-tree that holds a copy of every hit. Both sides run in this process,
alternated, best of three; the files' sizes are compared too. Both must give the same
matrix.

Run alone: ``.venv/bin/python benchmarks/bench_datafile.py [--tiny|--quick|--full]``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row, synthetic_run  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 20_000, "quick": 200_000, "full": 1_000_000}
K = 5


def _inputs(n_queries: int):  # type: ignore[no-untyped-def]
    return synthetic_run(max(100, n_queries // 10), n_queries, K)


def main(mode: str = "full") -> list[dict]:
    import time

    from ragcov.data import CoverageData, schema

    n = SIZES[mode]
    corpus, run = _inputs(n)
    layouts = {"format 3 (WITHOUT ROWID)": schema.SCHEMA,
               "format 2 (rowid)": schema.SCHEMA.replace(") WITHOUT ROWID;", ");")}
    assert layouts["format 2 (rowid)"] != schema.SCHEMA
    best: dict[str, dict[str, float]] = {name: {"write": float("inf"), "read": float("inf")}
                                         for name in layouts}
    sizes: dict[str, int] = {}
    nnz: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(3):
            for n_layout, (name, ddl) in enumerate(layouts.items()):
                path = Path(tmp) / f"{repeat}-{n_layout}.ragcov"
                best[name]["write"] = min(best[name]["write"], _timed_with(
                    schema, {"SCHEMA": ddl}, CoverageData(path).write, corpus, run))
                t = time.perf_counter()
                m = CoverageData(path).matrix()
                best[name]["read"] = min(best[name]["read"], time.perf_counter() - t)
                sizes[name] = path.stat().st_size
                nnz[name] = int(m.hits.nnz)
                path.unlink()
    assert len(set(nnz.values())) == 1 and nnz["format 2 (rowid)"] == n * K
    by_columns, by_rows, by_one_row = _statements(corpus, run)
    appended, appended_before = _appends(corpus, run)
    checked, checked_before = _row_checks(corpus, run)
    new, old = best["format 3 (WITHOUT ROWID)"], best["format 2 (rowid)"]
    mib = {name: size / 2**20 for name, size in sizes.items()}
    label = f"{n:,} queries x k={K}"
    return [
        row(f"datafile: write {label}", new["write"], old["write"],
            note="CoverageData.write; baseline: the same with format 2's rowid hits table"),
        row(f"datafile: read -> matrix {label}", new["read"], old["read"],
            note="CoverageData.matrix(); baseline: the format-2 file"),
        row(f"datafile: file size {label}", None, None,
            note=f"{mib['format 3 (WITHOUT ROWID)']:,.1f} MiB against "
                 f"{mib['format 2 (rowid)']:,.1f} MiB "
                 f"({1 - sizes['format 3 (WITHOUT ROWID)'] / sizes['format 2 (rowid)']:.0%} "
                 "smaller)"),
        row(f"datafile: write {label}, rows hundreds to a statement", by_rows, by_one_row,
            note="CoverageData.write with its hits as rows; baseline: the same with executemany "
                 "of a one-row INSERT for its chunks, queries and hits"),
        row(f"datafile: append {APPENDED:,} queries to {label}", appended, appended_before,
            note="CoverageData.write(append=True), the covered chunks added to the kept bitmap "
                 "and only the append's ids looked up; baseline: no kept bitmap (every hit's "
                 "chunk read back) and every recorded query read"),
        row(f"datafile: row checks of {label}", checked, checked_before,
            note="data.checks.check_rows (what combine runs on each input), a range test of "
                 "each hit's chunk and query; baseline: an index look-up of each"),
        row(f"datafile: write {label}, hits as columns", by_columns, by_rows,
            note="CoverageData.write as ragcov writes (hits as columns, the covered count from "
                 "the hits written); baseline: hits as rows hundreds to a statement, the covered "
                 "count by SQL's COUNT(DISTINCT)"),
    ]


APPENDED = 1_000


def _timed_with(module, values, work, *args, **kwargs) -> float:  # type: ignore[no-untyped-def]
    """Seconds ``work(*args, **kwargs)`` takes with ``module``'s names set to ``values``
    (the way a baseline wrote or read), every name as it was again after."""
    import time

    kept = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        t = time.perf_counter()
        work(*args, **kwargs)
        return time.perf_counter() - t
    finally:
        for name, value in kept.items():
            setattr(module, name, value)


def _appends(corpus, run) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Best of three appends each way onto copies of one written file, alternated; the
    kept totals after each must be the same."""
    import shutil

    from ragcov.data import CoverageData, datafile
    from ragcov.retrieval import Run

    ways = {"now": {},
            "before": {"kept_covered": lambda con: None,
                       "_recorded_texts": lambda con, ids, start: dict(
                           con.execute("SELECT id, text FROM queries"))}}
    best = dict.fromkeys(ways, float("inf"))
    totals = set()
    with tempfile.TemporaryDirectory() as tmp:
        written = Path(tmp) / "written.ragcov"
        CoverageData(written).write(corpus, run)
        for n_repeat in range(3):
            extra = Run(k=run.k, retriever=run.retriever)
            for qid, ranked in list(run.results.items())[:APPENDED]:
                extra.add(f"more{n_repeat}-{qid}", run.queries[qid], ranked)
            for name, way in ways.items():
                path = Path(tmp) / f"{n_repeat}-{name}.ragcov"
                shutil.copy(written, path)
                best[name] = min(best[name], _timed_with(
                    datafile, way, CoverageData(path).write, corpus, extra, append=True))
                totals.add(CoverageData(path).totals())
                path.unlink()
    assert len(totals) == 1
    return best["now"], best["before"]


def _row_checks(corpus, run) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Best of three checks of one file each way, alternated."""
    import sqlite3

    from ragcov.data import CoverageData, checks

    ways = {"now": {},
            "before": {"_no_row_of": lambda con, table, ref:
                       f"NOT EXISTS (SELECT 1 FROM {table} t WHERE t.idx = {ref})"}}
    best = dict.fromkeys(ways, float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checked.ragcov"
        CoverageData(path).write(corpus, run)
        con = sqlite3.connect(path)
        for _ in range(3):
            for name, way in ways.items():
                best[name] = min(best[name], _timed_with(
                    checks, way, checks.check_rows, con, path))
        con.close()
    return best["now"], best["before"]


def _statements(corpus, run) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """Best of three writes each way, alternated: as ragcov writes (hits as columns, the
    covered count kept from them), with every table's rows hundreds to a statement and the
    covered count by SQL (the round before), and with a one-row INSERT each. The three
    files' rows must be equal."""
    import sqlite3
    from itertools import chain, repeat
    from operator import itemgetter

    from ragcov.data import CoverageData, datafile

    def one_row(con, table, width, rows):  # type: ignore[no-untyped-def]
        con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * width)})", rows)

    def hit_rows(corpus, rows, lists):  # type: ignore[no-untyped-def]
        """The round before's hits: rows made lazily by itertools, one tuple per hit (handed
        over in place of the columns; the empty second column adds nothing to ``covered``,
        which the baselines' totals do not read)."""
        counts = list(map(len, lists))
        return zip(chain.from_iterable(map(repeat, rows, counts)),
                   map(corpus.positions.__getitem__, map(itemgetter(0), chain.from_iterable(lists))),
                   chain.from_iterable(map(range, repeat(1), [n + 1 for n in counts])),
                   map(itemgetter(1), chain.from_iterable(lists))), []

    rows_way, store = datafile.insert_rows, datafile.store_totals

    def by_sql(con, covered=None):  # type: ignore[no-untyped-def]
        store(con)  # the covered count by SQL's COUNT(DISTINCT), as before

    ways = {
        "columns": {},
        "rows": {"hit_columns": hit_rows, "store_totals": by_sql,
                 "insert_columns": lambda con, table, made: rows_way(con, table, 4, made[0])},
        "one": {"insert_rows": one_row, "hit_columns": hit_rows, "store_totals": by_sql,
                "insert_columns": lambda con, table, made: one_row(con, table, 4, made[0])},
    }
    best = dict.fromkeys(ways, float("inf"))
    dumps = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n_repeat in range(3):
            for name, way in ways.items():
                path = Path(tmp) / f"{n_repeat}-{name}.ragcov"
                best[name] = min(best[name], _timed_with(
                    datafile, way, CoverageData(path).write, corpus, run))
                if n_repeat == 0:
                    con = sqlite3.connect(path)
                    dumps[name] = [con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                                   for t in ("chunks", "queries", "hits", "totals")]
                    con.close()
    assert dumps["columns"] == dumps["rows"] == dumps["one"]
    return best["columns"], best["rows"], best["one"]


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
