"""Where a chunk is lost, in the data file: the stages behind each list, in tables of their own.

``ragcov probe`` asks every probe (and every test) twice with the same query vector:
through the index, and by exact search over the vectors the index holds. With a
reranker the first stage's candidates are kept too. These rows say why a list is what
it is; they are not retrievals of the suite, so they live apart from ``hits`` and
``probe_hits`` (no reader of the tests' matrix counts them), in tables created on first
write. A file without them has no stage data; older readers ignore them.

``stage_hits``: per row (``side`` ``probe`` or ``test``, ``row_idx`` its ``probes.idx`` or
``queries.idx``) and ``stage`` (``exact``: exact search's top-d; ``first``: the first
stage's candidates before a reranker), the chunks in rank order; ``sure`` says an exact
chunk outscores the first one outside the top-d, so no tie-break decided it.
``stage_recall``: per row the exact chunks the index list found and could find
(recall@d = found / expected); a row here is a row the exact check has done.
``stage_meta``: JSON by key (``exact``: the check's outcome, source, metric, depth and the
index's settings and remedy; ``rerank``: the reranker and its depth).

Probe rows are written in the probe batch's transaction; a test's when its check is
done. ``combine`` does not carry them (as drift results): a rerun of ``ragcov probe``
on the merged file does the exact check again.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcov.data.inserts import insert_rows
from ragcov.data.locking import write_lock
from ragcov.data.schema import rows_in
from ragcov.errors import RagcovError

if TYPE_CHECKING:
    import sqlite3

    from ragcov.data.datafile import CoverageData

PROBE, TEST = "probe", "test"
EXACT, FIRST = "exact", "first"
STAGE_TABLES = ("stage_meta", "stage_hits", "stage_recall")
STAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS stage_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stage_hits (
    side TEXT NOT NULL, stage TEXT NOT NULL, row_idx INTEGER NOT NULL, rank INTEGER NOT NULL,
    chunk_idx INTEGER NOT NULL, score REAL, sure INTEGER NOT NULL,
    PRIMARY KEY (side, stage, row_idx, rank)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stage_recall (
    side TEXT NOT NULL, row_idx INTEGER NOT NULL, found INTEGER NOT NULL,
    expected INTEGER NOT NULL, PRIMARY KEY (side, row_idx)
) WITHOUT ROWID;
"""
_ROW_TABLES = {PROBE: "probes", TEST: "queries"}
_HIT_TABLES = {PROBE: ("probe_hits", "probe_idx"), TEST: ("hits", "query_idx")}


@dataclass(frozen=True)
class StageRow:
    """What the stages gave for one probe or test, by its id: chunks as corpus positions."""

    id: str
    first: Sequence[tuple[int, float | None]] | None = None      # before the reranker
    exact: Sequence[tuple[int, float, bool]] | None = None       # (position, score, sure)
    found: int | None = None
    expected: int | None = None


@dataclass
class StageHits:
    """One side's rows of one stage, flat: the matrix row, the chunk, and ``sure``."""

    rows: np.ndarray
    chunks: np.ndarray
    sure: np.ndarray

    @classmethod
    def empty(cls) -> StageHits:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))


@dataclass
class StageRecord:
    """A file's stage rows, placed on the rows of the matrices a report reads."""

    meta: dict[str, Any]
    exact: dict[str, StageHits] = field(default_factory=dict)
    first: dict[str, StageHits] = field(default_factory=dict)
    found: dict[str, np.ndarray] = field(default_factory=dict)      # per row, -1: not checked
    expected: dict[str, np.ndarray] = field(default_factory=dict)


def _ensure(con: sqlite3.Connection) -> None:
    for stmt in STAGE_SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def _has_tables(con: sqlite3.Connection) -> bool:
    marks = ",".join("?" * len(STAGE_TABLES))
    row = con.execute(f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                      f"({marks})", STAGE_TABLES).fetchone()
    return row[0] == len(STAGE_TABLES)


def write_rows(con: sqlite3.Connection, side: str, rows: Sequence[StageRow],
               idx_of: Mapping[str, int]) -> None:
    """Record ``rows`` (inside the caller's transaction); ``idx_of`` maps ids to row idx.
    A row's earlier stage data is replaced, so a check done again is recorded once."""
    _ensure(con)
    for row in rows:
        idx = idx_of.get(row.id)
        if idx is None:
            continue
        for stage, items in ((FIRST, row.first), (EXACT, row.exact)):
            if items is None:
                continue
            con.execute("DELETE FROM stage_hits WHERE side = ? AND stage = ? AND row_idx = ?",
                        (side, stage, idx))
            insert_rows(con, "stage_hits", 7, (
                (side, stage, idx, rank, int(item[0]), None if item[1] is None else float(item[1]),
                 int(bool(item[2])) if len(item) > 2 else 1)
                for rank, item in enumerate(items, start=1)))
        if row.found is not None and row.expected is not None:
            con.execute("INSERT OR REPLACE INTO stage_recall VALUES (?, ?, ?, ?)",
                        (side, idx, int(row.found), int(row.expected)))


def probe_rows_writer(rows: Sequence[StageRow]) -> Callable[[sqlite3.Connection, dict[str, int]], None]:
    """A hook for :func:`ragcov.data.probes.append_probes`: the batch's stage rows go in
    its own transaction, so a probe is never recorded without what its check found."""
    def write(con: sqlite3.Connection, idx_of: dict[str, int]) -> None:
        if rows:
            write_rows(con, PROBE, rows, idx_of)
    return write


def record_rows(data: CoverageData, side: str, rows: Sequence[StageRow],
                check: Callable[[sqlite3.Connection], None]) -> None:
    """Record one batch of ``side``'s rows in one transaction; ``check`` runs first in it
    (the file's k, corpus and retriever), as every writer of a probe run checks them."""
    if not rows:
        return
    with write_lock(data.path) as con:
        if con is None:
            raise RagcovError(f"{data.path}: no coverage data (removed while probing?)")
        check(con)
        table = _ROW_TABLES[side]
        idx_of = _ids_to_idx(con, table, [r.id for r in rows])
        write_rows(con, side, rows, idx_of)


def _ids_to_idx(con: sqlite3.Connection, table: str, ids: Sequence[str]) -> dict[str, int]:
    return {str(i): int(x) for x, i in rows_in(
        con, f"SELECT idx, id FROM {table} WHERE id IN ({{marks}})", ids)}


def write_meta(data: CoverageData, key: str, value: Any) -> None:
    """One ``stage_meta`` entry, in its own transaction."""
    with write_lock(data.path) as con:
        if con is None:
            raise RagcovError(f"{data.path}: no coverage data (removed while probing?)")
        _ensure(con)
        con.execute("INSERT OR REPLACE INTO stage_meta VALUES (?, ?)",
                    (key, json.dumps(value, sort_keys=True)))


def read_meta(data: CoverageData) -> dict[str, Any]:
    with data.reading() as con:
        if not _has_tables(con):
            return {}
        return _meta(con)


def _meta(con: sqlite3.Connection) -> dict[str, Any]:
    out = {}
    for key, value in con.execute("SELECT key, value FROM stage_meta"):
        try:
            out[str(key)] = json.loads(value)
        except (TypeError, ValueError):
            out[str(key)] = None
    return out


def pending(data: CoverageData, side: str) -> list[tuple[str, str, list[int]]]:
    """The rows of ``side`` whose exact check is not recorded: (id, text, the index's list
    as corpus positions: the first stage's when a reranker kept it, else the recorded hits).
    Only those rows' lists are read: a file already checked costs one query."""
    table = _ROW_TABLES[side]
    hits, key = _HIT_TABLES[side]
    with data.reading() as con:
        if not con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]:
            return []
        staged = _has_tables(con)
        done = ("AND idx NOT IN (SELECT row_idx FROM stage_recall WHERE side = ?)"
                if staged else "")
        rows = [(int(i), str(q), str(t)) for i, q, t in con.execute(
            f"SELECT idx, id, text FROM {table} WHERE TRIM(COALESCE(text, '')) != '' {done} "
            "ORDER BY idx", (side,) if staged else ())]
        todo = [r[0] for r in rows]
        lists: dict[int, list[int]] = {}
        for idx, chunk in rows_in(con, f"SELECT {key}, chunk_idx FROM {hits} WHERE {key} IN "
                                  f"({{marks}}) ORDER BY {key}, rank", todo):
            lists.setdefault(int(idx), []).append(int(chunk))
        first: dict[int, list[int]] = {}
        if staged:
            for idx, chunk in rows_in(con, "SELECT row_idx, chunk_idx FROM stage_hits WHERE side = "
                                      "? AND stage = ? AND row_idx IN ({marks}) ORDER BY row_idx, "
                                      "rank", todo, (side, FIRST)):
                first.setdefault(int(idx), []).append(int(chunk))
        lists.update(first)
    return [(qid, text, lists.get(idx, [])) for idx, qid, text in rows]


def read_stages(data: CoverageData, n_chunks: int, probe_rows: Mapping[str, int],
                test_rows: Mapping[str, int]) -> StageRecord | None:
    """The file's stage rows on the rows of its matrices (``probe_rows`` and ``test_rows``
    map an id to its row; rows of ids they lack are left out); None when the file has none."""
    with data.reading() as con:
        if not _has_tables(con):
            return None
        record = StageRecord(meta=_meta(con))
        for side, mapping in ((PROBE, probe_rows), (TEST, test_rows)):
            table = _ROW_TABLES[side]
            known = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                                "name = ?", (table,)).fetchone()[0]
            pairs = [(int(idx), mapping.get(str(i), -1))
                     for idx, i in con.execute(f"SELECT idx, id FROM {table}")] if known else []
            row_of = np.full(max((p for p, _ in pairs), default=-1) + 2, -1, dtype=np.int64)
            for idx, row in pairs:
                row_of[idx] = row
            place = functools.partial(_place, row_of)

            for stage, into in ((EXACT, record.exact), (FIRST, record.first)):
                got = np.fromiter(con.execute(
                    "SELECT row_idx, chunk_idx, sure FROM stage_hits WHERE side = ? AND stage = ?",
                    (side, stage)), dtype=[("r", np.int64), ("c", np.int64), ("s", np.int64)])
                rows = place(got["r"])
                keep = rows >= 0
                chunks = got["c"][keep]
                if chunks.size and (chunks.min() < 0 or chunks.max() >= n_chunks):
                    raise RagcovError(f"{data.path}: damaged stage_hits table (a chunk position "
                                      f"outside 0..{n_chunks - 1}); run `ragcov probe` again on "
                                      "a new recording")
                into[side] = StageHits(rows[keep], chunks, got["s"][keep].astype(bool))
            got = np.fromiter(con.execute(
                "SELECT row_idx, found, expected FROM stage_recall WHERE side = ?", (side,)),
                dtype=[("r", np.int64), ("f", np.int64), ("e", np.int64)])
            size = max(mapping.values(), default=-1) + 1
            found = np.full(size, -1, dtype=np.int64)
            expected = np.full(size, -1, dtype=np.int64)
            rows = place(got["r"])
            keep = rows >= 0
            found[rows[keep]] = got["f"][keep]
            expected[rows[keep]] = got["e"][keep]
            record.found[side], record.expected[side] = found, expected
    return record


def _place(row_of: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Row idx to matrix rows (-1: a row the matrices do not hold)."""
    inside = (idx >= 0) & (idx < row_of.size - 1)
    return np.where(inside, row_of[np.where(inside, idx, row_of.size - 1)], -1)


def read_stages_of(data: CoverageData, tests: Any, probes: Any) -> StageRecord | None:
    """:func:`read_stages` on the rows of a tests matrix and a probe matrix as read."""
    ids = probes.ids if probes is not None else []
    return read_stages(data, tests.n_chunks, {pid: i for i, pid in enumerate(ids)},
                       {qid: i for i, qid in enumerate(tests.query_ids)})
