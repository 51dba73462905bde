"""A reader never replays or deletes a journal that is not its file's.

SQLite finds a rollback journal by name (``DATA-journal``). A reader that opened
the data file just before a combine renamed a new file over it, and then met the
journal an appender was writing into that new file, used to take it for a killed
writer's journal: it replayed it into its own (renamed-away) file and deleted it, and
the appender's commit failed with "disk I/O error" (the CI failure of
test_trust_races.py, about 1 trial in 900 on a loaded machine). These tests build
that state with real SQLite files; only its timing is arranged, by running the swap
and the appender's first writes right after the reader's connection opens.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData, locking, schema
from ragcov.data.locking import lock_path, writers_turn
from ragcov.errors import RagcovError
from ragcov.retrieval import Run

FP = {"kind": "test", "name": "fixed"}


def _corpus() -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=f"text {i}", doc_id=f"d{i // 3}", position=i % 3)
                   for i in range(6)])


def _write(path: Path, ids: list[str]) -> CoverageData:
    run = Run(k=2, retriever=FP)
    for n, qid in enumerate(ids):
        run.add(qid, f"text of {qid}", [(f"c{n % 6}", 1.0), (f"c{(n + 1) % 6}", 0.5)])
    data = CoverageData(path)
    data.write(_corpus(), run)
    return data


def _start_appender(path: Path) -> sqlite3.Connection:
    """A writer mid-transaction on the file now at ``path``, its journal synced (pages spilled).

    A journal counts as a killed writer's once its header is synced: when a writer
    spills pages to the file, or in the first phase of its commit.
    """
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA cache_size = 1")
    con.execute("BEGIN IMMEDIATE")
    con.executemany("INSERT INTO meta VALUES (?, ?)", ((f"x:pad{i}", "x" * 200) for i in range(400)))
    assert Path(f"{path}-journal").stat().st_size > 0
    return con


def test_a_stale_reader_leaves_the_live_journal_alone_and_the_appender_commits(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    _write(path, ["old"])
    _write(tmp_path / "new", ["old", "new"])
    reader = schema.connect(path, create=False, readonly=True)  # holds the file about to be renamed away
    os.replace(tmp_path / "new", path)  # combine publishes
    appender = _start_appender(path)
    with pytest.raises(sqlite3.OperationalError) as met:
        reader.execute("SELECT COUNT(*) FROM queries").fetchone()
    assert met.value.sqlite_errorname == "SQLITE_READONLY_ROLLBACK"
    reader.close()
    assert Path(f"{path}-journal").stat().st_size > 0  # still the appender's
    appender.execute("COMMIT")
    appender.close()
    assert not Path(f"{path}-journal").exists()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'x:pad%'").fetchone()[0] == 400


def test_a_read_that_meets_a_swapped_files_journal_reads_the_file_now_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / ".ragcov"
    data = _write(path, ["old"])
    _write(tmp_path / "new", ["old", "new"])
    real_connect = schema.connect
    appenders: list[sqlite3.Connection] = []
    reopened = threading.Event()

    def connect_then_swap(target: Path, create: bool = True, readonly: bool = False) -> sqlite3.Connection:
        if readonly and appenders:
            reopened.set()  # the reader opens the path again
        con = real_connect(target, create=create, readonly=readonly)
        if readonly and not appenders:  # the first reader's open, once: a combine, then an appender
            os.replace(tmp_path / "new", path)
            appenders.append(_start_appender(path))
        return con

    def commit_soon() -> None:  # the appender finishes once the reader has met its journal
        assert reopened.wait(60)
        time.sleep(0.05)
        try:
            appenders[0].execute("COMMIT")  # used to fail: the reader had deleted its journal
        except sqlite3.Error as exc:
            failed.append(exc)
        appenders[0].close()

    failed: list[sqlite3.Error] = []
    monkeypatch.setattr(schema, "connect", connect_then_swap)
    committer = threading.Thread(target=commit_soon)
    committer.start()
    try:
        texts = data.query_texts()
    finally:
        committer.join()
    monkeypatch.undo()
    assert set(texts) == {"old", "new"}  # the renamed-in file, read again
    assert failed == []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'x:pad%'").fetchone()[0] == 400


KILLED_WRITER = """
import os, signal, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA cache_size = 1")
con.execute("BEGIN IMMEDIATE")
con.execute("DELETE FROM hits")
con.execute("UPDATE queries SET text = 'half-written'")
con.executemany("INSERT INTO meta VALUES (?, ?)", ((f"x:pad{i}", "x" * 200) for i in range(400)))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writers_journal_is_rolled_back_before_the_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    data = _write(path, ["q0", "q1", "q2"])
    before = data.matrix()
    _kill_a_writer(path)  # hot: its pages are already in the file
    assert data.query_texts() == {f"q{i}": f"text of q{i}" for i in range(3)}
    assert not Path(f"{path}-journal").exists()
    after = data.matrix()
    assert list(after.query_ids) == list(before.query_ids)
    assert after.indices.tolist() == before.indices.tolist()
    assert after.rank_data.tolist() == before.rank_data.tolist()
    data.check_integrity()


def _kill_a_writer(path: Path) -> None:
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert Path(f"{path}-journal").stat().st_size > 0


def test_a_writer_that_reads_its_own_file_in_its_turn_does_not_wait_for_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append that finds no file reads the path again in its turn (check_destination)."""
    path = tmp_path / ".ragcov"
    data = _write(path, ["q0"])
    _kill_a_writer(path)
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_S", 2.0)
    # Waiting for itself would find its own lock taken at every try until the 2 s ran out:
    # the refused tries are counted, not the time they would take on a loaded machine.
    import fcntl

    refused: list[int] = []
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        try:
            real_flock(fd, operation)
        except BlockingIOError:
            refused.append(fd)
            raise

    monkeypatch.setattr(fcntl, "flock", flock)
    with writers_turn(path):
        assert data.meta().k == 2  # rolled back in the turn this thread holds
    assert refused == [], f"the writer found its own lock taken {len(refused)} times"
    assert not Path(f"{path}-journal").exists()
    assert not lock_path(path).exists()


def test_a_journal_gone_at_the_second_look_takes_no_writers_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that rolls back deletes its journal just after it stops looking live, so a
    reader may meet it once (SQLite's own note on hot journals). Arranged here: the first
    look finds a killed writer's journal, which another writer rolls back before the second."""
    path = tmp_path / ".ragcov"
    data = _write(path, ["q0"])
    _kill_a_writer(path)
    real_open = locking.open_existing
    looks: list[bool] = []
    turns: list[Path] = []

    def look(target: Path, **kw: bool) -> sqlite3.Connection:
        try:
            return real_open(target, **kw)
        except schema.HotJournal:
            looks.append(True)
            with sqlite3.connect(path) as other:  # another process's writer recovers it
                other.execute("SELECT COUNT(*) FROM meta").fetchone()
            raise

    monkeypatch.setattr(locking, "open_existing", look)
    monkeypatch.setattr(locking, "_roll_back_left_journal", lambda p, opened: turns.append(p))
    assert data.query_texts() == {"q0": "text of q0"}
    assert looks == [True] and turns == []


def test_a_left_journal_beside_an_unwritable_file_is_one_line() -> None:
    """Root (as in CI) writes through file modes, so this case is the error's wording alone."""
    exc = sqlite3.OperationalError("attempt to write a readonly database")
    exc.sqlite_errorname = "SQLITE_READONLY_ROLLBACK"  # type: ignore[attr-defined]
    err = schema.database_error(Path("/d/.ragcov"), exc)
    assert isinstance(err, RagcovError)
    assert str(err) == ("/d/.ragcov: an interrupted write left .ragcov-journal beside it, which must "
                        "be rolled back before the file is read, and the file or its folder is not "
                        "writable here; make them writable and rerun")


def test_a_file_replaced_at_every_try_is_one_line_saying_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE, labelled: five renames in a row between a reader's looks cannot be timed on
    demand, so each look is told the file was swapped (a new inode at every stat)."""
    path = tmp_path / ".ragcov"
    data = _write(path, ["q0"])
    stats = iter(range(100))

    def swapped(target: Path, **kw: bool) -> sqlite3.Connection:
        raise schema.HotJournal("met a journal")

    monkeypatch.setattr(locking, "open_existing", swapped)
    monkeypatch.setattr(locking, "_file_id", lambda p: (0, next(stats)))
    monkeypatch.setattr(schema, "IO_PAUSE_S", 0.0)
    with pytest.raises(RagcovError, match=r"\.ragcov: replaced by another process at each of 5 "
                                          r"tries to read it; retry when its writers have finished"):
        data.meta()


def test_without_sqlites_error_name_a_left_journal_is_known_by_the_journal_beside(tmp_path: Path) -> None:
    """Python 3.10 names no SQLite error: "readonly database" with a journal beside is that one."""
    path = tmp_path / ".ragcov"
    exc = sqlite3.OperationalError("attempt to write a readonly database")
    assert not hasattr(exc, "sqlite_errorname")
    assert not isinstance(schema.database_error(path, exc), schema.HotJournal)  # an unwritable file
    Path(f"{path}-journal").write_bytes(b"\xd9\xd5\x05\xf9")
    assert isinstance(schema.database_error(path, exc), schema.HotJournal)
