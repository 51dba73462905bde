"""The totals a gate reads, kept beside the rows they count (the ``totals`` table).

``ragcov report --format total`` and every ``--fail-under`` ratchet need four numbers:
the chunks, the chunks some query retrieved, the queries, and k. Reading a million
chunks back into a matrix to count them took 14 s and 850 MB; these are counted
once, by the write that changes the rows (a run, an append, an import, a combine),
in the same transaction, and read back in a few milliseconds.

A kept total is trusted only while it provably matches its rows:

* triggers on ``chunks``, ``queries`` and ``hits`` delete the totals at the first row
  any writer changes: ragcov, an older ragcov that knows nothing of them, or a
  ``sqlite3`` shell editing the file by hand;
* each row carries a key (the row counts of the three tables, k, and a digest of the
  marks of generated questions), compared on every read, for an edit made with the
  triggers dropped.

A file without totals (written before they were kept, or edited since) is counted
from its rows here, with the same SQL, never refused. Two scopes are kept: ``suite``
(questions ``ragcov generate`` wrote and no suite accepted yet left out, as every
report counts) and ``all`` (``include_generated``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ragcov.data.checks import check_rows
from ragcov.data.schema import _whole_number

SUITE, ALL = "suite", "all"

TOTALS_SCHEMA = """
CREATE TABLE IF NOT EXISTS totals (
    scope TEXT PRIMARY KEY, chunks INTEGER NOT NULL, covered INTEGER NOT NULL,
    queries INTEGER NOT NULL, k INTEGER NOT NULL, rows_key TEXT NOT NULL
)
"""

_COUNTED_TABLES = ("chunks", "queries", "hits")


@dataclass(frozen=True)
class Totals:
    """What a gate compares: ``covered`` of ``chunks`` by ``queries`` top-``k`` lists.

    ``kept`` says whether they came from the stored totals (True) or were counted
    from the rows on this read (False: an older file, or one edited since).
    """

    chunks: int
    covered: int
    queries: int
    k: int
    kept: bool = False

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0


def _triggers() -> list[str]:
    """One trigger per table and change: the first changed row empties ``totals``."""
    return [f"CREATE TRIGGER IF NOT EXISTS totals_stale_{table}_{op.lower()} AFTER {op} ON {table} "
            f"WHEN EXISTS (SELECT 1 FROM totals) BEGIN DELETE FROM totals; END"
            for table in _COUNTED_TABLES for op in ("INSERT", "UPDATE", "DELETE")]


def has_totals_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'totals'").fetchone()[0] > 0


def store_totals(con: sqlite3.Connection, covered: int | None = None) -> None:
    """Count the rows and keep the totals, inside the writer's transaction (its last step).

    The triggers are made here, after the rows went in: a new file's million chunk
    rows are not each checked against an empty table. ``covered`` is the distinct
    chunks the hits name, from a writer that wrote every hit of the file in this
    transaction and kept the set it wrote (a new file: SQLite's ``COUNT(DISTINCT)`` over
    5M hits takes longer than the numbers the writer already holds); any other writer
    leaves it to SQL.
    """
    con.execute(TOTALS_SCHEMA)
    for stmt in _triggers():
        con.execute(stmt)
    con.execute("DELETE FROM totals")
    counts = row_counts(con)
    try:
        counted = count_totals(con, counts, covered)
    except ValueError:
        return  # meta ragcov never writes (an old hand-edited file): readers count the rows
    key = rows_key(con, counts)
    con.executemany("INSERT INTO totals VALUES (?, ?, ?, ?, ?, ?)",
                    ((scope, t.chunks, t.covered, t.queries, t.k, key) for scope, t in counted.items()))


def row_counts(con: sqlite3.Connection) -> list[int]:
    """The rows of chunks, queries and hits (each count one pass over the table's smallest index)."""
    return [con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in _COUNTED_TABLES]


def rows_key(con: sqlite3.Connection, counts: list[int]) -> str:
    """What the kept totals must match: the row counts, k and the generated questions' marks."""
    k, generated = _meta(con, "k"), _meta(con, "x:generated")
    marks = hashlib.sha256((generated or "").encode()).hexdigest()[:16]
    return json.dumps({"rows": counts, "k": k, "generated": marks})


def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def count_totals(con: sqlite3.Connection, counts: list[int], covered: int | None = None
                 ) -> dict[str, Totals]:
    """Both scopes' totals counted from the rows (SQL; no Python object per chunk);
    ``covered`` in place of the count of every hit's chunks, from :func:`store_totals`.

    Raises ValueError on a meta row ragcov never writes (a k that is no whole number,
    marks that are no JSON object): the caller reads the file the long way, which
    names the damage.
    """
    k = _whole_number(_meta(con, "k"))
    if k is None:
        raise ValueError("k is not a whole number")
    raw = _meta(con, "x:generated")
    generated = json.loads(raw) if raw else {}
    if not isinstance(generated, dict):
        raise ValueError("the generated questions' marks are not an object")
    chunks, queries, _hits = counts
    if covered is None:
        covered = con.execute("SELECT COUNT(DISTINCT chunk_idx) FROM hits").fetchone()[0]
    every = Totals(chunks, covered, queries, k)
    left_out = {idx for idx, qid in con.execute("SELECT idx, id FROM queries")
                if qid in generated} if generated else set()
    if not left_out:
        return {SUITE: every, ALL: every}
    suite = {c for q, c in con.execute("SELECT query_idx, chunk_idx FROM hits") if q not in left_out}
    return {SUITE: Totals(chunks, len(suite), queries - len(left_out), k), ALL: every}


def read_totals(con: sqlite3.Connection, path: Path, include_generated: bool = False) -> Totals | None:
    """The totals of the scope asked for, inside the reader's transaction.

    The kept ones when their key matches the rows now; otherwise counted from the
    rows, once they pass the checks every reader of rows makes (a file edited by hand
    may hold rows ragcov never writes: refused in one line, as the matrix's read
    refuses them). None when the meta cannot be counted from (the full read names
    what is wrong).
    """
    scope = ALL if include_generated else SUITE
    counts = row_counts(con)
    if has_totals_table(con):
        row = con.execute("SELECT chunks, covered, queries, k, rows_key FROM totals WHERE scope = ?",
                          (scope,)).fetchone()
        if row is not None and row[4] == rows_key(con, counts):
            return Totals(*row[:4], kept=True)
    try:
        counted = count_totals(con, counts)[scope]
    except ValueError:
        return None
    check_rows(con, path)
    return counted
