"""The data file's tables and meta row, connections, and SQLite's errors as one line.

Everything here is shared by :mod:`ragcov.data.datafile` (one file) and
:mod:`ragcov.data.merge` (several): opening a file checks that it is a ragcov data
file of a format this version understands; a new file is built by
:func:`new_file` inside one transaction; SQLite's own errors (a damaged page, a
locked file) surface as one line naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragcov.data import FORMAT_VERSION
from ragcov.errors import RagcovError

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (
    idx INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL,
    position INTEGER NOT NULL, hash TEXT NOT NULL, title TEXT, text TEXT
);
CREATE TABLE queries (
    idx INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL, context TEXT
);
CREATE TABLE hits (
    query_idx INTEGER NOT NULL, chunk_idx INTEGER NOT NULL, rank INTEGER NOT NULL, score REAL,
    PRIMARY KEY (query_idx, rank)
);
"""

# How long a reader or writer waits for another process's transaction to finish.
# Appends are short transactions, so a long wait means a stuck process, not load.
BUSY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Meta:
    format: int
    ragcov_version: str
    k: int
    retriever: dict[str, Any]
    corpus_hash: str
    created: str

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "ragcov_version": self.ragcov_version, "k": self.k,
                "retriever": self.retriever, "corpus_hash": self.corpus_hash,
                "created": self.created}


def new_meta(k: int, retriever: dict[str, Any], corpus_hash: str) -> Meta:
    """The meta of a file written now, in this format, by this version of ragcov."""
    from ragcov import __version__

    return Meta(format=FORMAT_VERSION, ragcov_version=__version__, k=k, retriever=retriever,
                corpus_hash=corpus_hash,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def retriever_key(fp: dict[str, Any]) -> str:
    """The retriever identity compared across files, canonical JSON."""
    return json.dumps(fp, sort_keys=True)


def read_meta(con: sqlite3.Connection, path: Path) -> Meta:
    """The file's meta row; a format-1 file's corpus hash is the current one of its chunks.

    Format 1 hashed chunk ids and contents only. The file holds every chunk's id,
    document id and content hash, so the hash this version computes is recomputed
    from them: old files are read, combined, diffed and appended to as they are,
    and one whose document ids differ from the corpus's is refused like any other.
    """
    rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    try:
        fmt = int(rows["format"])
        corpus_hash = rows["corpus_hash"]
        if fmt < 2:
            from ragcov.corpus import corpus_digest

            corpus_hash = corpus_digest(con.execute("SELECT id, doc_id, hash FROM chunks ORDER BY idx"))
        return Meta(format=fmt, ragcov_version=rows["ragcov_version"],
                    k=int(rows["k"]), retriever=json.loads(rows["retriever"]),
                    corpus_hash=corpus_hash, created=rows["created"])
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise RagcovError(f"{path}: damaged meta table ({exc})") from exc


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
    row = con.execute(
        "SELECT query_idx, chunk_idx, rank, typeof(query_idx), typeof(chunk_idx), typeof(rank), "
        "typeof(score) FROM hits h WHERE typeof(query_idx) != 'integer' "
        "OR typeof(chunk_idx) != 'integer' OR typeof(rank) != 'integer' "
        "OR typeof(score) NOT IN ('real', 'integer', 'null') OR rank < 1 "
        "OR NOT EXISTS (SELECT 1 FROM chunks c WHERE c.idx = h.chunk_idx) "
        "OR NOT EXISTS (SELECT 1 FROM queries q WHERE q.idx = h.query_idx) LIMIT 1").fetchone()
    if row is None:
        return
    q, c, r, tq, tc, tr, ts = row
    where = f"the hit at query row {q!r}, rank {r!r}"
    if (tq, tc, tr) != ("integer",) * 3:
        problem = "has a non-integer query, chunk or rank"
    elif ts not in ("real", "integer", "null"):
        problem = f"has a score that is {ts}, not a number"
    elif r < 1:
        problem = "has a rank below 1"
    elif con.execute("SELECT 1 FROM chunks WHERE idx = ?", (c,)).fetchone() is None:
        problem = f"names chunk row {c}, which the file does not hold"
    else:
        problem = "belongs to no recorded query"
    raise _damaged(path, f"{where} {problem}")


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


def check_compatible(meta: Meta, k: int, corpus_hash: str, retriever: dict[str, Any],
                     where: str, other: str) -> None:
    """Raise, naming every difference, unless data recorded with these settings may mix."""
    problems = []
    if meta.k != k:
        problems.append(f"k differs ({meta.k} in {where}, {k} in {other})")
    if meta.corpus_hash != corpus_hash:
        problems.append(f"the corpus differs (hash {meta.corpus_hash} in {where}, "
                        f"{corpus_hash} in {other})")
    if retriever_key(meta.retriever) != retriever_key(retriever):
        problems.append(f"the retriever differs ({retriever_key(meta.retriever)} in {where}, "
                        f"{retriever_key(retriever)} in {other})")
    if problems:
        raise RagcovError(f"cannot mix coverage data: {'; '.join(problems)}")


# ---------------------------------------------------------------- connections
def connect(path: Path, create: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode; without ``create`` a missing file is an error.

    Opening a file that another process removes a moment earlier (erase) must not
    leave an empty database in its place, so readers never create.
    """
    target = str(path) if create else "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=rw"
    con = sqlite3.connect(target, isolation_level=None, timeout=BUSY_TIMEOUT_S, uri=not create)
    con.execute("PRAGMA foreign_keys = OFF")
    return con


class NoDataFile(RagcovError):
    """There is no data file at the path (never was, or erased a moment ago)."""


class DataFileLocked(RagcovError):
    """Another process held the data file's lock for longer than :data:`BUSY_TIMEOUT_S`."""


def database_error(path: Path, exc: sqlite3.Error) -> RagcovError:
    """SQLite's error as one line that names the file and says what to do."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return DataFileLocked(f"{path}: locked by {lock_holder(path)} for over {BUSY_TIMEOUT_S:g} s "
                              "(the file is intact); retry when it has finished")
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        hint = "the file is damaged; rerun to record it again"
    elif "readonly" in text or "read-only" in text:
        hint = "the file or its folder is not writable"
    else:
        hint = "cannot use the data file"
    return RagcovError(f"{path}: {text} ({hint})")


def lock_holder(path: Path) -> str:
    """Which process holds a lock on ``path``: its pid and name from /proc/locks (Linux).

    The name is the kernel's short process name (``comm``), never its command line,
    which may carry secrets.
    """
    try:
        st = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "another process"
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and "->" not in fields and fields[5] == where and fields[4].isdigit():
            pid = int(fields[4])
            if pid != os.getpid() and pid not in pids:
                pids.append(pid)
    if not pids:
        return "another process"
    names = []
    for pid in pids[:3]:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            comm = ""
        names.append(f"process {pid}" + (f" ({comm})" if comm else ""))
    return ", ".join(names)


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise database_error(path, exc) from exc


def is_empty(path: Path) -> bool:
    """A 0-byte file (what ``touch`` or a killed ``>`` leaves) holds no data yet."""
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def open_existing(path: Path, allow_empty: bool = False) -> sqlite3.Connection:
    """A connection to the ragcov data file at ``path``, refused if it is anything else.

    ``allow_empty`` also accepts a 0-byte file, for a writer that fills it under
    :func:`write_lock`; a reader finds no data there, as when there is no file.
    """
    if path.is_dir():
        raise RagcovError(f"{path}: is a directory, not a data file")
    empty = is_empty(path)
    if not path.is_file():
        raise NoDataFile(f"{path}: no data file (run 'ragcov run' first)")
    if empty and not allow_empty:
        raise RagcovError(f"{path}: an empty file, no data recorded yet (run 'ragcov run' first)")
    try:
        con = connect(path, create=False)
    except sqlite3.Error as exc:
        if not path.exists():
            raise NoDataFile(f"{path}: no data file (run 'ragcov run' first)") from exc
        raise database_error(path, exc) from exc
    if empty:
        return con
    try:
        _check_format(con, path)
    except BaseException:
        con.close()
        raise
    return con


def _check_format(con: sqlite3.Connection, path: Path) -> None:
    try:
        rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "unable to open" in str(exc):
            raise database_error(path, exc) from exc
        raise RagcovError(f"{path}: not a ragcov data file ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        raise RagcovError(f"{path}: not a ragcov data file ({exc})") from exc
    fmt = int(rows.get("format", "0"))
    if fmt > FORMAT_VERSION:
        raise RagcovError(
            f"{path}: data file format {fmt} is newer than this ragcov understands "
            f"(format {FORMAT_VERSION}); upgrade ragcov"
        )
    if fmt < 1:
        raise RagcovError(f"{path}: not a ragcov data file (no format version)")


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


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
    got the lock of a removed lock file tries again on a new one.
    """
    try:
        import fcntl
    except ImportError:  # no flock (Windows): SQLite's lock alone, as before
        yield
        return
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)  # as atomic_path does for the file itself
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise DataFileLocked(
                            f"{path}: locked by {lock_holder(lock)} for over {BUSY_TIMEOUT_S:g} s "
                            "(the file is intact); retry when it has finished") from None
                    time.sleep(0.005)
            st = os.fstat(fd)
            if _file_id(lock) == (st.st_dev, st.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the lock file was removed while we waited: take the new one's turn
    try:
        yield
    finally:
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


# ---------------------------------------------------------------- writing
@contextmanager
def new_file(tmp: Path, meta: Meta) -> Iterator[sqlite3.Connection]:
    """Build a data file at the temporary path ``tmp`` in one transaction.

    The caller's block fills the tables through the connection; the transaction
    commits when the block ends without an error. ``tmp`` is the name an
    :func:`ragcov.files.atomic_path` reserved: it is replaced by an empty database.
    """
    tmp.unlink()
    with closing(connect(tmp)) as con:
        # The file is private until atomic_path publishes it, and it is fsynced before
        # that; a crash leaves only a temporary to remove. So no rollback journal and no
        # syncs while it is built.
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute("BEGIN")
        create_tables(con, meta)
        yield con
        con.execute("COMMIT")


def create_tables(con: sqlite3.Connection, meta: Meta) -> None:
    """The tables and the meta row, inside the caller's transaction."""
    for stmt in SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)
    row = {**meta.as_dict(), "retriever": retriever_key(meta.retriever)}
    con.executemany("INSERT INTO meta VALUES (?, ?)", ((k, str(v)) for k, v in row.items()))


def has_tables(con: sqlite3.Connection) -> bool:
    """False for a database with no table yet (an empty file being filled under the lock)."""
    return con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0


def insert_query(con: sqlite3.Connection, idx: int, qid: str, text: str, context: str | None,
                 hits: Iterable[tuple[int, int, float | None]]) -> None:
    """One query row and its ``(chunk idx, rank, score)`` hits."""
    con.execute("INSERT INTO queries VALUES (?, ?, ?, ?)", (idx, qid, text, context))
    con.executemany("INSERT INTO hits VALUES (?, ?, ?, ?)",
                    ((idx, c, r, s) for c, r, s in hits))
