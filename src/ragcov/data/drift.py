"""A drift run's results in the data file, in tables of their own (``drift_*``).

``ragcov drift`` runs the recorded suite again on transformed copies of the corpus;
what each copy did to each test is a fact about the retriever under corpus change,
not a retrieval of the suite, so it lives apart from ``hits`` where no reader of the
tests' matrix can count it (as probes do, :mod:`ragcov.data.probes`). The tables are
created on first use; a file without them has no drift run, and older readers
ignore them.

One drift run per file: its settings (seed, noise rate, relations, distractors ...)
are a key, and a run with other settings replaces the recorded one. Each copy's
results are written in one transaction with the copy's own row, so a copy is either
recorded whole or not at all, and an interrupted run resumes at the first copy it
did not finish.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragcov.data.inserts import insert_rows
from ragcov.data.locking import write_lock
from ragcov.data.schema import check_compatible, read_meta, rows_in
from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.data.datafile import CoverageData

DRIFT_TABLES = ("drift_settings", "drift_copies", "drift_results")
DRIFT_SCHEMA = """
CREATE TABLE IF NOT EXISTS drift_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS drift_copies (
    name TEXT PRIMARY KEY, relation TEXT NOT NULL, changed INTEGER NOT NULL,
    added INTEGER NOT NULL, detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS drift_results (
    copy TEXT NOT NULL, query_idx INTEGER NOT NULL, value REAL NOT NULL,
    violated INTEGER NOT NULL, detail TEXT NOT NULL,
    PRIMARY KEY (copy, query_idx)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class DriftRow:
    """What one copy of the corpus did to one test."""

    query: int        # the query's idx in the data file
    value: float
    violated: bool
    detail: dict[str, Any]


@dataclass(frozen=True)
class DriftCopy:
    """One transformed copy: its relation, how many chunks it changed and added."""

    name: str
    relation: str
    changed: int
    added: int
    detail: dict[str, Any]


@dataclass
class DriftRecord:
    """A data file's drift run as recorded, with the names its rows point at."""

    settings: dict[str, Any]
    finished: bool
    copies: list[DriftCopy]
    rows: dict[str, list[DriftRow]]            # copy name -> its rows
    queries: dict[int, tuple[str, str]]        # query idx -> (id, text)
    chunk_ids: list[str]                       # by chunk idx
    doc_ids: list[str]
    positions: dict[str, int]                  # chunk id -> recorded position in its document
    texts: dict[int, str]                      # chunk idx -> text, for the chunks rows name
    file_queries: int = 0                      # the queries the file holds now (run --append adds)


def _ensure(con) -> None:  # type: ignore[no-untyped-def]
    for stmt in DRIFT_SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def _has_tables(con) -> bool:  # type: ignore[no-untyped-def]
    marks = ",".join("?" * len(DRIFT_TABLES))
    row = con.execute(f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
                      DRIFT_TABLES).fetchone()
    return row[0] == len(DRIFT_TABLES)


@contextmanager
def _drift_turn(data: CoverageData, k: int, corpus_hash: str, retriever: dict[str, Any]
                ) -> Iterator[sqlite3.Connection]:
    """The writers' turn on a file whose run this drift run is about, with its tables.

    The file's k, corpus and retriever are checked inside the transaction, so drift
    results never land in a file another process re-recorded meanwhile.
    """
    with write_lock(data.path) as con:
        if con is None:
            raise RagcovError(f"{data.path}: no coverage data (removed meanwhile?); run "
                              "`ragcov drift` again")
        check_compatible(read_meta(con, data.path), k, corpus_hash, retriever, str(data.path),
                         "this drift run")
        _ensure(con)
        yield con


def start_drift(data: CoverageData, key: str, settings: dict[str, Any], k: int, corpus_hash: str,
                retriever: dict[str, Any]) -> tuple[set[str], bool]:
    """Begin (or resume) the drift run ``key``: the names of the copies already recorded,
    and whether a run with other settings was replaced."""
    with _drift_turn(data, k, corpus_hash, retriever) as con:
        row = con.execute("SELECT value FROM drift_settings WHERE key = 'key'").fetchone()
        replaced = row is not None and row[0] != key
        if row is None or replaced:
            for table in DRIFT_TABLES:
                con.execute(f"DELETE FROM {table}")
            con.executemany("INSERT INTO drift_settings VALUES (?, ?)",
                            [("key", key), ("settings", json.dumps(settings, sort_keys=True)),
                             ("finished", "false")])
            return set(), replaced
        return {r[0] for r in con.execute("SELECT name FROM drift_copies")}, False


def record_copy(data: CoverageData, key: str, k: int, corpus_hash: str, retriever: dict[str, Any],
                copy: DriftCopy, rows: Sequence[DriftRow]) -> None:
    """One copy and its rows, in one transaction: recorded whole or not at all, and only
    while the file's drift run is still ``key``."""
    with _drift_turn(data, k, corpus_hash, retriever) as con:
        row = con.execute("SELECT value FROM drift_settings WHERE key = 'key'").fetchone()
        if row is None or row[0] != key:
            raise RagcovError(f"{data.path}: another drift run replaced this one meanwhile; "
                              "run `ragcov drift` again")
        con.execute("DELETE FROM drift_results WHERE copy = ?", (copy.name,))
        con.execute("INSERT OR REPLACE INTO drift_copies VALUES (?, ?, ?, ?, ?)",
                    (copy.name, copy.relation, copy.changed, copy.added,
                     json.dumps(copy.detail, sort_keys=True)))
        insert_rows(con, "drift_results", 5, (
            (copy.name, r.query, float(r.value), int(r.violated),
             json.dumps(r.detail, separators=(",", ":"))) for r in rows))


def finish_drift(data: CoverageData, key: str) -> None:
    with write_lock(data.path) as con:
        if con is None:
            return
        con.execute("UPDATE drift_settings SET value = 'true' WHERE key = 'finished' AND "
                    "(SELECT value FROM drift_settings WHERE key = 'key') = ?", (key,))


def query_indexes(data: CoverageData, ids: Sequence[str]) -> dict[str, int]:
    """Query id -> its idx in the file, for the ids given (the suite a drift run tests)."""
    wanted = set(ids)
    with data.reading() as con:
        return {qid: idx for idx, qid in con.execute("SELECT idx, id FROM queries")
                if qid in wanted}


def has_drift(data: CoverageData) -> bool:
    with data.reading() as con:
        return _has_tables(con) and con.execute(
            "SELECT COUNT(*) FROM drift_settings WHERE key = 'key'").fetchone()[0] > 0


def read_drift(data: CoverageData) -> DriftRecord | None:
    """The file's drift run, or None when none was recorded."""
    with data.reading() as con:
        if not _has_tables(con):
            return None
        settings_rows = dict(con.execute("SELECT key, value FROM drift_settings").fetchall())
        if "key" not in settings_rows:
            return None
        try:
            settings = json.loads(settings_rows.get("settings", "{}"))
            copies = [DriftCopy(n, r, int(c), int(a), json.loads(d)) for n, r, c, a, d in
                      con.execute("SELECT name, relation, changed, added, detail FROM drift_copies "
                                  "ORDER BY rowid")]
            rows: dict[str, list[DriftRow]] = {c.name: [] for c in copies}
            for name, q, value, violated, detail in con.execute(
                    "SELECT copy, query_idx, value, violated, detail FROM drift_results "
                    "ORDER BY copy, query_idx"):
                rows.setdefault(name, []).append(
                    DriftRow(int(q), float(value), bool(violated), json.loads(detail)))
        except (TypeError, ValueError) as exc:
            raise RagcovError(f"{data.path}: damaged drift tables ({exc}); run `ragcov drift` "
                              "again") from None
        wanted = {int(r.query) for rs in rows.values() for r in rs}
        every = con.execute("SELECT idx, id, text FROM queries").fetchall()
        queries = {int(idx): (qid, text) for idx, qid, text in every if idx in wanted}
        chunk_rows = con.execute("SELECT id, doc_id, position FROM chunks ORDER BY idx").fetchall()
        named = sorted({int(c) for rs in rows.values() for r in rs
                        for c in r.detail.get("broke", [])})
        texts = {int(i): t or "" for i, t in rows_in(
            con, "SELECT idx, text FROM chunks WHERE idx IN ({marks})", named)}
    missing = wanted - set(queries)
    if missing:
        raise RagcovError(f"{data.path}: damaged drift tables (a result of query idx "
                          f"{min(missing)}, which the file does not hold)")
    return DriftRecord(settings=settings, finished=settings_rows.get("finished") == "true",
                       copies=copies, rows=rows, queries=queries,
                       chunk_ids=[r[0] for r in chunk_rows], doc_ids=[str(r[1]) for r in chunk_rows],
                       positions={r[0]: r[2] for r in chunk_rows}, texts=texts,
                       file_queries=len(every))
