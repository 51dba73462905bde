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

Beside them, the covered chunks themselves, as a bitmap of chunk idx (``covered_chunks``,
with the same triggers and key): an ``--append`` of a few queries to a file of millions of
hits adds its own chunks to it instead of counting every hit again (1.3 s at 5M hits).

A file without totals (written before they were kept, or edited since) is counted
from its rows here, with the same SQL, never refused. Two scopes are kept: ``suite``
(questions ``ragcov generate`` wrote and no suite accepted yet left out, as every
report counts) and ``all`` (``include_generated``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
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

COVERED_SCHEMA = """
CREATE TABLE IF NOT EXISTS covered_chunks (rows_key TEXT NOT NULL, bits BLOB NOT NULL)
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
    """One trigger per kept table, counted table and change: the first changed row empties
    ``totals`` and ``covered_chunks``."""
    return [f"CREATE TRIGGER IF NOT EXISTS {kept}_stale_{table}_{op.lower()} AFTER {op} ON {table} "
            f"WHEN EXISTS (SELECT 1 FROM {kept}) BEGIN DELETE FROM {kept}; END"
            for kept in ("totals", "covered_chunks")
            for table in _COUNTED_TABLES for op in ("INSERT", "UPDATE", "DELETE")]


def has_totals_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'totals'").fetchone()[0] > 0


def store_totals(con: sqlite3.Connection, covered: set[int] | bytes | None = None) -> None:
    """Count the rows and keep the totals, inside the writer's transaction (its last step).

    The triggers are made here, after the rows went in: a new file's million chunk
    rows are not each checked against an empty table. ``covered`` is every chunk idx
    the file's hits name, from a writer that knows them without reading the hits back:
    a new file's writer, as the set it wrote (SQLite's ``COUNT(DISTINCT)`` over 5M hits
    takes longer than the numbers the writer already holds), or an append, as the kept
    bitmap (:func:`kept_covered`) with its own chunks added (:func:`with_chunks`).
    Without them (an append to a file that kept none), the distinct chunk idx are read
    back with SQL, and kept from then on.
    """
    con.execute(TOTALS_SCHEMA)
    con.execute(COVERED_SCHEMA)
    for stmt in _triggers():
        con.execute(stmt)
    con.execute("DELETE FROM totals")
    con.execute("DELETE FROM covered_chunks")
    counts = row_counts(con)
    if covered is None:  # read back: the chunk idx the hits name, each once
        covered = {c for (c,) in con.execute(
            "SELECT DISTINCT chunk_idx FROM hits WHERE chunk_idx IS NOT NULL")}
    if isinstance(covered, set):
        n_covered = len(covered)  # as COUNT(DISTINCT chunk_idx) counts them
        bits = chunk_bitmap(covered, counts[0]) \
            if all(type(c) is int for c in covered) else None
    else:
        n_covered, bits = _popcount(covered), covered
    try:
        counted = count_totals(con, counts, n_covered)
    except ValueError:
        return  # meta ragcov never writes (an old hand-edited file): readers count the rows
    key = rows_key(con, counts)
    con.executemany("INSERT INTO totals VALUES (?, ?, ?, ?, ?, ?)",
                    ((scope, t.chunks, t.covered, t.queries, t.k, key) for scope, t in counted.items()))
    if bits is not None and _numbered_by_position(con, counts[0]):
        con.execute("INSERT INTO covered_chunks VALUES (?, ?)", (key, bits))


def chunk_bitmap(idx: Iterable[int], n_chunks: int) -> bytes | None:
    """Chunk idx as a bitmap of ``n_chunks`` bits, bit i of byte i // 8 for idx i; None
    when one is not an idx from 0 to ``n_chunks - 1``."""
    import numpy as np

    flat = np.fromiter(idx, dtype=np.int64)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= n_chunks):
        return None
    flags = np.zeros(n_chunks, dtype=bool)
    flags[flat] = True
    return np.packbits(flags, bitorder="little").tobytes()


def with_chunks(bits: bytes, idx: Iterable[int], n_chunks: int) -> bytes | None:
    """The bitmap with these chunk idx added (None when one is no chunk's idx)."""
    added = chunk_bitmap(idx, n_chunks)
    if added is None:
        return None
    return (int.from_bytes(bits, "little") | int.from_bytes(added, "little")).to_bytes(
        len(bits), "little")


def kept_covered(con: sqlite3.Connection) -> bytes | None:
    """The covered chunks' bitmap kept for the rows as they are now, or None.

    Trusted only as the kept totals are, and only with them: its key is the rows' key
    now, the ``all`` totals carry the same key, and it holds exactly their covered count
    in exactly the chunks' bits. Anything else is None, and the writer counts the rows
    with SQL, as before: an older file, rows another writer changed (the triggers), an
    edit made with the triggers dropped that changes a row count (the key), a damaged
    value. What neither the triggers nor the key see (an edit with the triggers dropped
    that keeps every count, such as moving a hit to another chunk) the kept totals
    already report until the next count; an append then builds on it, where it used to
    count every hit again.
    """
    names = {row[0] for row in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('totals', 'covered_chunks')")}
    if names != {"totals", "covered_chunks"}:
        return None
    rows = con.execute("SELECT rows_key, bits FROM covered_chunks").fetchall()
    if len(rows) != 1 or type(rows[0][1]) is not bytes:
        return None
    (key, bits), = rows
    counts = row_counts(con)
    if key != rows_key(con, counts) or len(bits) != (counts[0] + 7) // 8:
        return None
    kept = con.execute("SELECT covered, rows_key FROM totals WHERE scope = ?", (ALL,)).fetchone()
    if kept is None or kept[1] != key or kept[0] != _popcount(bits):
        return None
    if counts[0] % 8 and bits[-1] >> (counts[0] % 8):  # a bit past the last chunk
        return None
    return bits


def _popcount(bits: bytes) -> int:
    return int.from_bytes(bits, "little").bit_count()


def _numbered_by_position(con: sqlite3.Connection, n_chunks: int) -> bool:
    """Whether the chunks' idx are 0..n-1, the positions the bitmap's bits stand for."""
    low, high = con.execute("SELECT MIN(idx), MAX(idx) FROM chunks").fetchone()
    return n_chunks == 0 or (low == 0 and high == n_chunks - 1)


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
