"""Rows written hundreds to a statement (``data.inserts.insert_rows``, and
``insert_columns`` for rows held as columns) against ``executemany`` of a one-row
INSERT: the same table, the same refusals."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.data import inserts
from ragcov.data.inserts import hit_columns, insert_columns, insert_rows

_TABLE = "CREATE TABLE t (a INTEGER NOT NULL, b TEXT, c REAL, PRIMARY KEY (a)) WITHOUT ROWID"
_values = st.tuples(st.text(max_size=5) | st.none(),
                    st.floats(allow_nan=False) | st.integers(-2**63, 2**63 - 1) | st.none())


def _table(rows, write) -> list[tuple]:  # type: ignore[no-untyped-def]
    con = sqlite3.connect(":memory:")
    con.execute(_TABLE)
    write(con, rows)
    return con.execute("SELECT a, b, c, typeof(b), typeof(c) FROM t ORDER BY a").fetchall()


def _as_rows(con, rows):  # type: ignore[no-untyped-def]
    # A generator, as the writers pass them: taken a slice at a time, never listed whole.
    insert_rows(con, "t", 3, (x for x in rows))


def _as_columns(con, rows):  # type: ignore[no-untyped-def]
    insert_columns(con, "t", [[row[j] for row in rows] for j in range(3)])


@settings(max_examples=120, deadline=None)
@given(values=st.lists(_values, max_size=1_300), per=st.sampled_from([1, 3, 500]),
       slices=st.sampled_from([1, 2, 64]), write=st.sampled_from([_as_rows, _as_columns]))
def test_the_same_rows_as_executemany(values, per, slices, write) -> None:  # type: ignore[no-untyped-def]
    rows = [(i, b, c) for i, (b, c) in enumerate(values)]
    expected = _table(rows, lambda con, r: con.executemany("INSERT INTO t VALUES (?, ?, ?)", r))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inserts, "ROWS_PER_STATEMENT", per)
        mp.setattr(inserts, "STATEMENTS_PER_SLICE", slices)
        got = _table(rows, write)
    assert got == expected


def test_rows_in_order_across_statements_and_the_tail() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")  # rowid order is insertion order
    insert_rows(con, "t", 2, ((i, -i) for i in range(1_234)))
    assert con.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == \
        [(i, -i) for i in range(1_234)]


def test_a_row_of_another_width_is_refused_before_its_slice_is_written() -> None:
    con = sqlite3.connect(":memory:")
    con.execute(_TABLE)
    # The short row and the long one would add up to the right count of values.
    rows = [(i, "a", 1.0) for i in range(600)]
    rows[300], rows[301] = (300, "b"), (301, "c", 3.0, 4.0)
    with pytest.raises(sqlite3.ProgrammingError, match="uses 3, and there are 2 supplied"):
        insert_rows(con, "t", 3, rows)
    assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    # A slice shorter than a statement goes by executemany, which refuses it the same way.
    with pytest.raises(sqlite3.ProgrammingError, match="uses 3, and there are 2 supplied"):
        insert_rows(con, "t", 3, [(0, "a", 1.0), (1, "b"), (2, "c", 3.0, 4.0)])


def test_the_statement_keeps_within_the_connections_length_limit() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a, b, c, d)")
    if not hasattr(con, "setlimit"):
        pytest.skip("Python 3.10 cannot set a connection's limits")
    con.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 2_000)
    insert_rows(con, "t", 4, ((i, i, i, i) for i in range(1_000)))
    assert con.execute("SELECT COUNT(*), SUM(d) FROM t").fetchone() == (1_000, sum(range(1_000)))


def test_a_constraint_stops_the_write_as_executemany_does() -> None:
    con = sqlite3.connect(":memory:")
    con.execute(_TABLE)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        insert_rows(con, "t", 3, [(0, "a", 1.0), (0, "b", 2.0)])


def test_the_statement_keeps_within_the_connections_parameter_limit() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE w (" + ", ".join(f"c{i}" for i in range(70)) + ")")
    if hasattr(con, "setlimit"):  # Python 3.11+: a build that allows only 999 parameters
        con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    insert_rows(con, "w", 70, (tuple(range(r, r + 70)) for r in range(1_000)))
    assert con.execute("SELECT COUNT(*), SUM(c69) FROM w").fetchone() == \
        (1_000, sum(range(69, 1_069)))


def test_columns_in_order_across_statements_slices_and_the_tail() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")  # rowid order is insertion order
    n = inserts.ROWS_PER_STATEMENT * inserts.STATEMENTS_PER_SLICE + 777  # a second, short slice
    insert_columns(con, "t", [list(range(n)), [-i for i in range(n)]])
    assert con.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == \
        [(i, -i) for i in range(n)]


def test_columns_of_unequal_length_are_refused_before_anything_is_written() -> None:
    con = sqlite3.connect(":memory:")
    con.execute(_TABLE)
    # One value short at the very end: a flat layout would shift nothing visible until then.
    with pytest.raises(sqlite3.ProgrammingError, match="unequal length"):
        insert_columns(con, "t", [list(range(600)), ["a"] * 600, [1.0] * 599])
    assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0


def test_columns_keep_within_the_connections_parameter_limit() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE w (" + ", ".join(f"c{i}" for i in range(70)) + ")")
    if hasattr(con, "setlimit"):
        con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    insert_columns(con, "w", [list(range(j, j + 1_000)) for j in range(70)])
    assert con.execute("SELECT COUNT(*), SUM(c69) FROM w").fetchone() == \
        (1_000, sum(range(69, 1_069)))


def test_no_columns_write_nothing() -> None:
    con = sqlite3.connect(":memory:")
    con.execute(_TABLE)
    insert_columns(con, "t", [[], [], []])
    assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0


@settings(max_examples=60, deadline=None)
@given(lists=st.lists(st.lists(st.tuples(st.integers(0, 9), st.floats(allow_nan=False) | st.none()),
                               max_size=6), max_size=20), start=st.integers(0, 5))
def test_hit_columns_are_the_nested_loop(lists, start) -> None:  # type: ignore[no-untyped-def]
    from ragcov.corpus import Chunk, Corpus

    corpus = Corpus([Chunk(f"c{i}", f"text {i}", "d") for i in range(10)])
    ranked = [[(f"c{c}", s) for c, s in one] for one in lists]
    rows = list(range(start, start + len(ranked)))
    expected = [(row, corpus.index_of(cid), rank, score) for row, one in zip(rows, ranked)
                for rank, (cid, score) in enumerate(one, start=1)]
    columns = hit_columns(corpus, rows, ranked)
    assert all(type(col) is list for col in columns)  # what SQLite binds, value by value
    assert list(zip(*columns)) == expected


def test_hit_columns_refuse_an_id_not_in_the_corpus() -> None:
    from ragcov.corpus import Chunk, Corpus

    corpus = Corpus([Chunk("a", "text", "d")])
    with pytest.raises(KeyError):
        hit_columns(corpus, [0], [[("a", 1.0), ("b", 0.5)]])
