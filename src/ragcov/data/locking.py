"""Writers of one data file take turns (appenders, ``combine``, ``erase``, a replacing run),
and readers never touch a journal that is not their file's."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from ragcov.data import schema
from ragcov.data.schema import (
    DataFileIOError,
    DataFileLocked,
    HotJournal,
    NoDataFile,
    connect,
    lock_holder,
    open_existing,
    sqlite_errors,
)
from ragcov.errors import RagcovError


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


# (thread, lock file) of the writers' turns this process holds.
_turns_held: set[tuple[int, str]] = set()


def lock_path(path: Path) -> Path:
    """``DATA_FILE-lock``: the file writers of ``DATA_FILE`` take turns on (never a shard name)."""
    return path.with_name(f"{path.name}-lock")


@contextmanager
def writers_turn(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``DATA_FILE-lock``, held by one writer of the data file at a time.

    SQLite's own lock lives in the data file, and combine and erase replace or
    remove that file: a writer that waited on SQLite's lock would then hold a file
    no longer at ``path``, and even start its transaction there (where SQLite, which
    finds journals by name, may take another file's live journal for its own). The
    turn is taken before the data file is opened, so the file a writer opens is the
    one at ``path``. The lock file exists only while a writer holds it: a writer that
    got the lock of a removed lock file tries again on a new one. A thread that holds
    the turn already has it (a flock on a second descriptor would wait for itself).
    """
    try:
        import fcntl
    except ImportError:  # no flock (Windows): SQLite's lock alone, as before
        yield
        return
    lock = lock_path(path)
    mine = (threading.get_ident(), os.path.abspath(lock))
    if mine in _turns_held:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)  # as atomic_path does for the file itself
    deadline = time.monotonic() + schema.BUSY_TIMEOUT_S
    while True:
        try:  # ragcov's own name beside the data file: a link there was planted
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        except OSError as exc:
            if os.path.islink(lock):
                raise RagcovError(f"{lock}: is a symbolic link, and ragcov's lock file never is "
                                  "one; refusing to open it (remove it)") from exc
            raise
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise DataFileLocked(
                            f"{path}: locked by {lock_holder(lock)} for over {schema.BUSY_TIMEOUT_S:g} s "
                            "(the file is intact); retry when it has finished") from None
                    time.sleep(0.005)
            st = os.fstat(fd)
            if _file_id(lock) == (st.st_dev, st.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the lock file was removed while we waited: take the new one's turn
    _turns_held.add(mine)
    try:
        yield
    finally:
        _turns_held.discard(mine)
        # Removed before it is released, so no lock file stays beside the data file; a
        # writer waiting on this one finds it removed and takes a new one's turn.
        if _file_id(lock) == (st.st_dev, st.st_ino):
            with contextlib.suppress(OSError):
                os.unlink(lock)
        os.close(fd)


@contextmanager
def write_lock(path: Path) -> Iterator[sqlite3.Connection | None]:
    """The writer's turn and SQLite's write lock (``BEGIN IMMEDIATE``) of the data file; None if none.

    Every writer takes it: appenders, and ``combine`` and ``erase`` while they
    replace or remove the file (see :func:`writers_turn`). ``BEGIN IMMEDIATE`` also
    keeps out writers that take no turn; should one of them have replaced the file
    meanwhile, the path no longer names the file opened, and this starts over. The
    transaction commits when the block ends without an error and rolls back
    otherwise; when the block itself replaced or removed the file, the connection
    is closed without another statement on a file that is no longer there.
    """
    with writers_turn(path):
        while True:
            before = _file_id(path)
            try:
                con = None if before is None else open_existing(path, allow_empty=True)
            except NoDataFile:  # removed since the stat
                con = None
            if con is None:
                yield None
                return
            try:
                with sqlite_errors(path):
                    con.execute("BEGIN IMMEDIATE")
                if _file_id(path) == before:
                    break
            except BaseException:
                con.close()
                raise
            con.close()
        try:
            with sqlite_errors(path):
                yield con
                if con.in_transaction and _file_id(path) == before:
                    con.execute("COMMIT")
        except BaseException:
            # An interrupt can land after COMMIT: a ROLLBACK then would raise and hide it
            # (Ctrl-C would exit 1, not 130).
            if con.in_transaction and _file_id(path) == before:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()


def open_for_reading(path: Path) -> sqlite3.Connection:
    """A read-only connection to the data file at ``path``, inside a read transaction.

    Readers take no turn, so a combine may rename a new file over the one a reader
    has just opened, and an appender may then write a journal beside it (see
    :func:`ragcov.data.schema.connect`). The reader's first read then meets that
    journal, and opening the path again reads the file now there. A journal beside
    the very file opened is a killed writer's once it is met twice (a writer that
    rolls back deletes its journal a moment after it stops looking live): it is
    rolled back in a writer's turn, as SQLite does for any writable connection, and
    the file is read as it was before that write.
    """
    met_beside: tuple[int, int] | None = None
    for attempt in range(schema.IO_RETRIES):
        before = _file_id(path)
        try:
            return open_existing(path, read=True)
        except HotJournal:
            if _file_id(path) == before and before is not None:
                if met_beside == before:
                    _roll_back_left_journal(path, before)
                    met_beside = None
                    continue
                met_beside = before
            elif attempt == schema.IO_RETRIES - 1:
                raise RagcovError(f"{path}: replaced by another process at each of {schema.IO_RETRIES} "
                                  "tries to read it; retry when its writers have finished") from None
        except DataFileIOError:
            if attempt == schema.IO_RETRIES - 1:
                raise
        time.sleep(schema.IO_PAUSE_S)
    return open_existing(path, read=True)  # the journal rolled back on the last try


def _roll_back_left_journal(path: Path, opened: tuple[int, int]) -> None:
    """SQLite's recovery of a killed writer's journal, by a writable connection in a writer's turn."""
    try:
        with writers_turn(path):
            if _file_id(path) != opened:
                return  # swapped meanwhile: the next open reads the new file
            with closing(connect(path, create=False)) as con, sqlite_errors(path):
                con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except PermissionError as exc:  # no lock file can be made beside it
        raise HotJournal(schema.left_journal_message(path)) from exc
