"""Many rows into a table, hundreds to a statement.

SQLite's own work per row is small next to what each statement costs around it (a
reset, the bindings cleared, a step, and the driver's loop in between): an ``INSERT``
of 500 rows (``VALUES (...), (...), ...``) wrote a million hit rows in 0.49 s where
``executemany`` of a one-row ``INSERT`` took 1.18 s, and a whole ``CoverageData.write``
is 1.35x faster (``benchmarks/bench_datafile.py``; docs/performance.md). The rows, their
order and their values are the same either way; every large table a write fills
(chunks, queries, hits, probes and their hits, spans, topics, stages, drift) goes in here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import chain, islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.fields import Ranked

# Rows a statement holds at most, and statements built from one slice of the rows.
ROWS_PER_STATEMENT = 500
STATEMENTS_PER_SLICE = 64
# Queries whose hits a writer gathers and writes together (a run's, a combine's): 20,000
# retrievals at k = 10 are 200,000 values a column, held once, never the whole file's.
QUERIES_AT_ONCE = 20_000
# SQLite's limit on a statement's parameters before 3.32 (and in builds that keep it),
# taken where the connection cannot say its own (Python 3.10).
OLD_VARIABLE_LIMIT = 999


def insert_rows(con: sqlite3.Connection, table: str, width: int,
                rows: Iterable[Sequence[Any]]) -> None:
    """``INSERT INTO table VALUES`` each row (``width`` values each), in order.

    Rows are taken a slice at a time, so a generator of a million rows is never held
    whole. A row of another width is refused (``sqlite3.ProgrammingError``, as
    ``executemany`` refuses it) before any of its slice is written: the values are
    passed flat, so one short row would otherwise shift every value after it. A slice
    shorter than one statement (a probe's few stage rows) goes by ``executemany``.
    """
    per = _rows_per_statement(con, width)
    many, single = _statements(table, width, per)
    it = iter(rows)
    while True:
        part = list(islice(it, per * STATEMENTS_PER_SLICE))
        if not part:
            return
        if len(part) < per:
            con.executemany(single, part)
            return
        if set(map(len, part)) != {width}:
            bad = next(row for row in part if len(row) != width)
            raise sqlite3.ProgrammingError(
                f"Incorrect number of bindings supplied. The current statement uses {width}, "
                f"and there are {len(bad)} supplied.")
        _write_flat(con, many, single, width, per, list(chain.from_iterable(part)))


def _write_flat(con: sqlite3.Connection, many: str, single: str, width: int, per: int,
                flat: list[Any]) -> None:
    """Rows of ``width`` values laid end to end in ``flat`` (at least ``per`` of them):
    ``per`` rows to a statement (``many``), the rows left over one at a time (``single``)."""
    step = per * width
    full = len(flat) // step * step
    con.executemany(many, (flat[i:i + step] for i in range(0, full, step)))
    if full < len(flat):
        con.executemany(single, (flat[i:i + width] for i in range(full, len(flat), width)))


@cache
def _statements(table: str, width: int, per: int) -> tuple[str, str]:
    one = "(" + ",".join("?" * width) + ")"
    return f"INSERT INTO {table} VALUES " + ",".join([one] * per), \
        f"INSERT INTO {table} VALUES {one}"


def _rows_per_statement(con: sqlite3.Connection, width: int) -> int:
    """At most :data:`ROWS_PER_STATEMENT`, within the connection's limits on a statement's
    parameters and on its length (a build may lower either)."""
    getlimit = getattr(con, "getlimit", None)
    if getlimit is None:  # Python 3.10
        return max(1, min(ROWS_PER_STATEMENT, OLD_VARIABLE_LIMIT // width))
    by_params = getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    by_length = (getlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH) - 100) // (2 * width + 2)
    return max(1, min(ROWS_PER_STATEMENT, by_params, by_length))


def insert_columns(con: sqlite3.Connection, table: str, columns: Sequence[list[Any]]) -> None:
    """``INSERT INTO table VALUES`` the i-th value of each column as row i, in order.

    For rows that exist as columns (a run's hits): the flat values a statement binds are
    laid out by one slice assignment per column, with no tuple per row on the way (at a
    million retrievals, 5M hit tuples cost about as much Python as SQLite spends writing
    them). Columns are lists: SQLite binds no numpy scalar. Columns of unequal length are
    refused before anything is written.
    """
    width = len(columns)
    n = len(columns[0]) if columns else 0
    if any(len(col) != n for col in columns):
        raise sqlite3.ProgrammingError(
            f"columns of unequal length for {table}: {sorted({len(c) for c in columns})}")
    per = _rows_per_statement(con, width)
    many, single = _statements(table, width, per)
    size = per * STATEMENTS_PER_SLICE
    for start in range(0, n, size):
        stop = min(n, start + size)
        if stop - start < per:
            con.executemany(single, zip(*(col[start:stop] for col in columns)))
            return
        flat: list[Any] = [None] * ((stop - start) * width)
        for j, col in enumerate(columns):
            flat[j::width] = col[start:stop]
        _write_flat(con, many, single, width, per, flat)


def hit_columns(corpus: Corpus, rows: list[int], lists: list[Ranked]
                ) -> tuple[list[int], list[int], list[int], list[float | None]]:
    """The hit rows' columns (row, chunk idx, rank, score) of each row's ranked list, made
    by itertools and the corpus's own id map: no Python line runs per hit."""
    counts = list(map(len, lists))
    pairs = list(chain.from_iterable(lists))
    return (list(chain.from_iterable(map(repeat, rows, counts))),
            corpus.positions_of(map(itemgetter(0), pairs)),
            list(chain.from_iterable(map(range, repeat(1), [n + 1 for n in counts]))),
            list(map(itemgetter(1), pairs)))
