"""Rows a ragcov data file may hold, checked on read, and what differs between two corpora.

:func:`check_rows` is the one validator of queries and hits: ``combine`` runs it on
every input; :meth:`ragcov.data.CoverageData.matrix` makes the same checks on the
arrays it has read (no second pass) and calls it only to word the error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ragcov.data.schema import Meta, check_compatible, read_meta
from ragcov.errors import RagcovError

if TYPE_CHECKING:
    import numpy as np

    from ragcov.corpus import Corpus


def check_rows(con: sqlite3.Connection, path: Path) -> None:
    """Raise, in one line, when a row is one ragcov never writes (a crafted or damaged file).

    Every reader of queries and hits (reports, ``combine``, ``diff``) calls it inside
    its read transaction, so a hit naming no chunk is refused everywhere rather than
    copied into a combined file or counted in a report. One linear pass over hits.
    """
    for table, columns in (("chunks", ("id", "doc_id")), ("queries", ("id", "text"))):
        test = " OR ".join(f"typeof({c}) != 'text'" for c in columns)
        row = con.execute(f"SELECT idx, {', '.join(f'typeof({c})' for c in columns)} FROM {table} "
                          f"WHERE typeof(idx) != 'integer' OR {test} LIMIT 1").fetchone()
        if row is not None:
            kinds = ", ".join(f"{c} is {t}" for c, t in zip(columns, row[1:]) if t != "text")
            raise _damaged(path, f"{table} row {row[0]!r} is not text ({kinds})")
    bad = _first_bad_hit(con, "hits", "query_idx", "queries", "query", read_meta(con, path).k)
    if bad is not None:
        q, r, problem = bad
        raise _damaged(path, f"the hit at query row {q!r}, rank {r!r} {problem}")


def _first_bad_hit(con: sqlite3.Connection, table: str, owner: str, owners: str, word: str,
                   max_rank: int | None = None) -> tuple[Any, Any, str] | None:
    """The first row of a hits table (``hits``, ``probe_hits``) ragcov never writes, as
    (owner idx, rank, what is wrong), or None: one linear pass.

    ``owner`` is the column naming the query or probe the hit belongs to, ``owners`` the
    table of those, ``word`` what the message calls one; ``max_rank`` the file's k, when
    every list was cut to it (a hit ranked below k was never retrieved in the top k).
    """
    deepest = "" if max_rank is None else f"OR rank > {int(max_rank)} "
    row = con.execute(
        f"SELECT {owner}, chunk_idx, rank, typeof({owner}), typeof(chunk_idx), typeof(rank), "
        f"typeof(score) FROM {table} h WHERE typeof({owner}) != 'integer' "
        "OR typeof(chunk_idx) != 'integer' OR typeof(rank) != 'integer' "
        "OR typeof(score) NOT IN ('real', 'integer', 'null') OR rank < 1 "
        f"{deepest}"
        f"OR {_no_row_of(con, 'chunks', 'h.chunk_idx')} "
        f"OR {_no_row_of(con, owners, f'h.{owner}')} LIMIT 1").fetchone()
    if row is None:
        return None
    o, c, r, to, tc, tr, ts = row
    if (to, tc, tr) != ("integer",) * 3:
        problem = f"has a non-integer {word}, chunk or rank"
    elif ts not in ("real", "integer", "null"):
        problem = f"has a score that is {ts}, not a number"
    elif r < 1:
        problem = "has a rank below 1"
    elif max_rank is not None and r > max_rank:
        problem = f"is ranked below the file's k ({max_rank})"
    elif con.execute("SELECT 1 FROM chunks WHERE idx = ?", (c,)).fetchone() is None:
        problem = f"names chunk row {c}, which the file does not hold"
    else:
        problem = f"belongs to no recorded {word}"
    return o, r, problem


def _no_row_of(con: sqlite3.Connection, table: str, ref: str) -> str:
    """SQL true where the integer ``ref`` names no row of ``table`` by its ``idx``.

    Where every ``idx`` is its row's rowid (unique by the table's own b-tree, whatever
    its schema claims) and they are the integers 0..n-1, as ragcov numbers every row it
    writes, a range test: a look-up in the table's index for each of five million hits
    was two thirds of the check (6.0 s against 1.8 s at a million queries x k = 5).
    Anything else (a file numbered by hand, a table without a rowid) is looked up row by
    row.
    """
    names = {row[1].lower() for row in con.execute(f"PRAGMA table_info({table})")}
    if "idx" in names and "_rowid_" not in names:
        try:
            n, low, high, other = con.execute(
                f"SELECT COUNT(*), MIN(idx), MAX(idx), "
                f"TOTAL(typeof(idx) != 'integer' OR idx != _rowid_) FROM {table}").fetchone()
        except sqlite3.OperationalError:  # WITHOUT ROWID: nothing holds idx unique but its key
            n = None
        if n == 0 or (n is not None and other == 0 and low == 0 and high == n - 1):
            return f"{ref} NOT BETWEEN 0 AND {int(n) - 1}"
    return f"NOT EXISTS (SELECT 1 FROM {table} t WHERE t.idx = {ref})"


def check_probe_rows(con: sqlite3.Connection, path: Path) -> None:
    """Raise, in one line, when a probe row is one ``ragcov probe`` never writes.

    The probe tables' counterpart of :func:`check_rows`: ``combine`` runs it on every
    probed input (so a bad row is never copied on), and :func:`ragcov.data.probes.read_probes`
    calls it to word the error when what it read cannot be a probe. One pass over each table.
    """
    row = con.execute(
        "SELECT idx, typeof(idx), typeof(id), typeof(chunk_idx), typeof(kind), typeof(text) "
        "FROM probes WHERE typeof(idx) != 'integer' OR typeof(id) != 'text' "
        "OR typeof(chunk_idx) != 'integer' OR typeof(kind) != 'text' OR typeof(text) != 'text' "
        "LIMIT 1").fetchone()
    if row is not None:
        names = ("idx", "id", "chunk_idx", "kind", "text")
        want = ("integer", "text", "integer", "text", "text")
        bad = ", ".join(f"{n} is {t}" for n, t, w in zip(names, row[1:], want) if t != w)
        raise _probe_damage(path, f"probes row {row[0]!r} has {bad}")
    bad = _first_bad_hit(con, "probe_hits", "probe_idx", "probes", "probe")
    if bad is not None:
        p, r, problem = bad
        raise _probe_damage(path, f"the probe hit at probe row {p!r}, rank {r!r} {problem}")


def _probe_damage(path: Path, what: str) -> RagcovError:
    return RagcovError(f"{path}: damaged probe tables: {what}; run `ragcov probe` again on a "
                       "new recording")


def _damaged(path: Path, what: str) -> RagcovError:
    return RagcovError(f"{path}: damaged data file: {what}; rerun to record it again")


def doc_id_change(con: sqlite3.Connection, chunks: Sequence[tuple[str, str, str]],
                  where: str = "recorded", other: str = "now") -> str | None:
    """When ``chunks`` (id, document id, content hash) differ from the file's in document ids only.

    The corpus hash cannot say what changed; this names the first chunk that moved.
    """
    stored = con.execute("SELECT id, doc_id, hash FROM chunks ORDER BY idx").fetchall()
    if len(stored) != len(chunks) or any(
            (a[0], a[2]) != (b[0], b[2]) for a, b in zip(stored, chunks)):
        return None
    moved = next((a, b) for a, b in zip(stored, chunks) if a[1] != b[1])
    return (f"only document ids changed (chunk {moved[0][0]!r}: document {moved[0][1]!r} {where}, "
            f"{moved[1][1]!r} {other})")


def check_read(con: sqlite3.Connection, path: Path, hits: np.ndarray, qidx: np.ndarray,
               chunk_rows: list[tuple[Any, ...]], query_rows: list[tuple[Any, ...]],
               k: int | None = None) -> None:
    """The checks of :func:`check_rows` on what the matrix reader has read: no second pass.

    ``hits`` has fields q, c, r (query idx, chunk idx, rank); ``qidx`` the queries' idx;
    ``k`` the file's. (An infinite score an older file holds is read as no score.)
    """
    import numpy as np

    known = np.zeros(int(qidx.max()) + 1 if qidx.size else 0, dtype=bool)
    known[qidx] = True
    if hits.size and (
            hits["c"].min() < 0 or hits["c"].max() >= len(chunk_rows)
            or hits["q"].min() < 0 or hits["q"].max() >= known.size
            or not known[hits["q"]].all() or hits["r"].min() < 1
            or (k is not None and hits["r"].max() > k)) \
            or (chunk_rows and con.execute("SELECT MIN(idx), MAX(idx) FROM chunks")
                .fetchone() != (0, len(chunk_rows) - 1)) \
            or not all(type(v) is str for row in chunk_rows for v in row[:2]) \
            or not all(type(v) is str for row in query_rows for v in row[1:3]):
        refuse(con, path)


def refuse(con: sqlite3.Connection, path: Path) -> NoReturn:
    """Raise the one-line reason a file that failed a cheap check is damaged."""
    check_rows(con, path)
    raise _damaged(path, "its chunk rows are not numbered 0 to n-1")


def first_problem(problems: Sequence[str]) -> str:
    """``PRAGMA quick_check`` rows as one line: the first problem, and how many more."""
    # SQLite reports one problem per line under a "*** in database main ***" header.
    lines = [ln.strip() for p in problems for ln in str(p).splitlines()
             if ln.strip() and not ln.startswith("***")] or ["unknown damage"]
    return lines[0] + (f", and {len(lines) - 1} more" if len(lines) > 1 else "")


def check_appendable(con: sqlite3.Connection, path: Path, meta: Meta, k: int, corpus_hash: str,
                     retriever: dict[str, Any], corpus: Corpus | None) -> None:
    """:func:`check_compatible` against a run, naming a corpus whose document ids alone changed."""
    try:
        check_compatible(meta, k, corpus_hash, retriever, str(path), "this run")
    except RagcovError as exc:
        moved = None
        if corpus is not None and meta.corpus_hash != corpus_hash:
            moved = doc_id_change(con, [(c.id, c.doc_id, c.hash) for c in corpus])
        if moved is None:
            raise
        raise RagcovError(f"{exc}: {moved}; per-document reports would mix the two mappings, "
                          "so record again without --append") from exc
