"""The row check's test of a hit naming a row (``data.checks._no_row_of``): a range test
where a table's ``idx`` values are exactly 0..n-1, a look-up otherwise; either way the
same hits are refused as a look-up of every hit refuses them."""

from __future__ import annotations

import contextlib
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.data.checks import _no_row_of

# How the named table is made: ragcov's own (a rowid alias), a primary key of another
# declared type, a WITHOUT ROWID table, and no key at all (values may repeat).
LAYOUTS = {
    "rowid alias": "CREATE TABLE t (idx INTEGER PRIMARY KEY, v TEXT)",
    "text key": "CREATE TABLE t (idx TEXT PRIMARY KEY, v TEXT)",
    "without rowid": "CREATE TABLE t (idx INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID",
    "descending key": "CREATE TABLE t (idx INTEGER PRIMARY KEY DESC, v TEXT)",
    "no key": "CREATE TABLE t (idx INTEGER, v TEXT)",
    "two keys": "CREATE TABLE t (idx INTEGER, v TEXT, PRIMARY KEY (idx, v))",
}
# Few values, so repeats and gaps are common; every reference from -1 to 6 is tried.
_values = st.integers(-1, 4) | st.sampled_from([0.5, 1.5, 2.0, "1", "x", None])
REFS = list(range(-1, 7))


def _refused(layout: str, values: list, refs: list[int], fast: bool) -> list[int]:  # type: ignore[type-arg]
    con = sqlite3.connect(":memory:")
    con.execute(LAYOUTS[layout])
    for n, value in enumerate(values):
        # A repeat the key refuses, or a NULL or text where an alias holds integers: left out.
        with contextlib.suppress(sqlite3.IntegrityError):
            con.execute("INSERT INTO t VALUES (?, ?)", (value, f"v{n}"))
    con.execute("CREATE TABLE h (ref)")
    con.executemany("INSERT INTO h VALUES (?)", [(r,) for r in refs])
    test = _no_row_of(con, "t", "h.ref") if fast else \
        "NOT EXISTS (SELECT 1 FROM t WHERE t.idx = h.ref)"
    return [r for (r,) in con.execute(f"SELECT ref FROM h WHERE {test} ORDER BY rowid")]


@settings(max_examples=300, deadline=None)
@given(layout=st.sampled_from(sorted(LAYOUTS)), values=st.lists(_values, max_size=6))
def test_the_same_hits_are_refused_as_by_a_look_up(layout, values) -> None:  # type: ignore[no-untyped-def]
    assert _refused(layout, values, REFS, fast=True) == _refused(layout, values, REFS, fast=False)


def test_ragcov_s_own_numbering_is_a_range_test_and_a_gap_is_a_look_up() -> None:
    con = sqlite3.connect(":memory:")
    con.execute(LAYOUTS["rowid alias"])
    con.executemany("INSERT INTO t VALUES (?, 'v')", [(i,) for i in range(5)])
    assert _no_row_of(con, "t", "h.ref") == "h.ref NOT BETWEEN 0 AND 4"
    con.execute("DELETE FROM t WHERE idx = 2")
    assert _no_row_of(con, "t", "h.ref").startswith("NOT EXISTS")
    con.execute("DELETE FROM t")
    assert _no_row_of(con, "t", "h.ref") == "h.ref NOT BETWEEN 0 AND -1"  # no row: every hit


def test_a_key_the_schema_claims_and_nothing_keeps_is_looked_up(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A schema edited to say ``idx`` is the key, over rows that repeat one (0, 1, 1, 3:
    four rows from 0 to 3, and no row 2): counted, it looks like 0..n-1."""
    path = tmp_path / "lying.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (idx INT, v TEXT)")
    con.executemany("INSERT INTO t VALUES (?, 'v')", [(0,), (1,), (1,), (3,)])
    con.execute("CREATE INDEX plain ON t (idx)")  # not unique: made the key's index below
    con.commit()
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE t (idx INT PRIMARY KEY, v TEXT)' "
                "WHERE name = 't'")
    con.execute("UPDATE sqlite_master SET name = 'sqlite_autoindex_t_1', sql = NULL "
                "WHERE name = 'plain'")
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    assert [row[1] for row in con.execute("PRAGMA table_info(t)") if row[5]] == ["idx"]
    con.execute("CREATE TABLE h (ref)")
    con.executemany("INSERT INTO h VALUES (?)", [(r,) for r in REFS])
    refused = [r for (r,) in con.execute(f"SELECT ref FROM h WHERE {_no_row_of(con, 't', 'h.ref')}")]
    assert refused == [-1, 2, 4, 5, 6]
