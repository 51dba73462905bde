"""The data file's tables and meta row, connections, and SQLite's errors as one line.

Everything here is shared by :mod:`ragcov.data.datafile` (one file) and
:mod:`ragcov.data.merge` (several): opening a file checks that it is a ragcov data
file of a format this version understands; a new file is built by
:func:`new_file` inside one transaction; SQLite's own errors (a damaged page, a
locked file) surface as one line naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragcov.data.names import FORMAT_VERSION
from ragcov.errors import RagcovError
from ragcov.user_warnings import warn

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
) WITHOUT ROWID;
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
    from ragcov.version import __version__

    return Meta(format=FORMAT_VERSION, ragcov_version=__version__, k=k, retriever=retriever,
                corpus_hash=corpus_hash,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def retriever_key(fp: dict[str, Any]) -> str:
    """The retriever identity compared across files, canonical JSON."""
    return json.dumps(fp, sort_keys=True)


def compared(fp: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint as recordings are compared: where a model's folder was (``model_path``)
    and how it was spelled (``./m``, ``$PWD/m``, a link to it) are not what the model is
    (``model_digest``, its content); a model known only by name is compared by name."""
    digest = "model_digest" in fp
    return {key: value for key, value in fp.items()
            if key != "model_path" and not (digest and key == "model")}


def known_by_name_only(fp: dict[str, Any]) -> bool:
    """An embedding model recorded without its content digest (before ragcov kept one):
    another model saved at the same name cannot be told from it."""
    return bool(fp.get("model")) and "model_digest" not in fp and fp.get("kind") in ("dense", "store")


def same_retriever(a: dict[str, Any], b: dict[str, Any], where: str = "", other: str = "") -> bool:
    """Whether two fingerprints are one retriever; a file written before model digests
    compares by the model's name, and says so once (it cannot be checked further)."""
    if compared(a) == compared(b):
        return True
    old_a, old_b = known_by_name_only(a), known_by_name_only(b)
    if old_a != old_b and a.get("model") and b.get("model"):
        strip = ("model_path", "model_digest")
        ca = {k: v for k, v in a.items() if k not in strip}
        cb = {k: v for k, v in b.items() if k not in strip}
        if ca == cb:
            old = (where if old_a else other) or "a recording"
            warn(f"{old}: its model {a.get('model')!r} is known only by name (recorded before "
                 "ragcov kept model digests): it is taken for the same model")
            return True
    return False


def read_meta(con: sqlite3.Connection, path: Path) -> Meta:
    """The file's meta row; a format-1 file's corpus hash is the current one of its chunks.

    Format 1 hashed chunk ids and contents only. The file holds every chunk's id,
    document id and content hash, so the hash this version computes is recomputed
    from them: old files are read, combined, diffed and appended to as they are,
    and one whose document ids differ from the corpus's is refused like any other.
    """
    rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    try:
        fmt = _whole_number(rows["format"])
        if fmt is None:
            raise ValueError(f"format {rows['format']!r} is not a whole number")
        corpus_hash = rows["corpus_hash"]
        if fmt < 2:
            from ragcov.corpus import corpus_digest

            corpus_hash = corpus_digest(con.execute("SELECT id, doc_id, hash FROM chunks ORDER BY idx"))
        k = _whole_number(rows["k"])
        if k is None:
            raise ValueError(f"k {rows['k']!r} is not a whole number")
        if k < 1:
            raise ValueError(f"k = {k}, below 1")
        retriever = json.loads(rows["retriever"])
        if not isinstance(retriever, dict):
            raise ValueError(f"retriever is {type(retriever).__name__}, not an object")
        return Meta(format=fmt, ragcov_version=rows["ragcov_version"],
                    k=k, retriever=retriever,
                    corpus_hash=corpus_hash, created=rows["created"])
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise RagcovError(f"{path}: damaged meta table ({exc})") from exc


def check_compatible(meta: Meta, k: int, corpus_hash: str, retriever: dict[str, Any],
                     where: str, other: str) -> None:
    """Raise, naming every difference, unless data recorded with these settings may mix."""
    problems = []
    if meta.k != k:
        problems.append(f"k differs ({meta.k} in {where}, {k} in {other})")
    if meta.corpus_hash != corpus_hash:
        problems.append(f"the corpus differs (hash {meta.corpus_hash} in {where}, "
                        f"{corpus_hash} in {other})")
    if not same_retriever(meta.retriever, retriever, where, other):
        problems.append(_retriever_difference(meta.retriever, retriever, where, other))
    if problems:
        raise RagcovError(f"cannot mix coverage data: {'; '.join(problems)}")


def _retriever_difference(a: dict[str, Any], b: dict[str, Any], where: str, other: str) -> str:
    """How two retrievers differ, in a reader's words where only the model's content does."""
    ca, cb = compared(a), compared(b)
    if ca.get("model_digest") and cb.get("model_digest") and \
            {**ca, "model_digest": None} == {**cb, "model_digest": None}:
        return (f"the embedding model {a.get('model')!r} differs in content ({ca['model_digest']} "
                f"in {where}, {cb['model_digest']} in {other}): another model was saved at that "
                "name or path")
    return (f"the retriever differs ({retriever_key(ca)} in {where}, {retriever_key(cb)} in {other})")


# ---------------------------------------------------------------- connections
IN_BATCH = 500  # values bound in one IN (...): well under SQLite's limit on parameters


def rows_in(con: sqlite3.Connection, sql: str, values: Sequence[Any], before: Sequence[Any] = ()
            ) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` (its ``{marks}`` the IN list, after the ``before`` parameters)
    for ``values``, :data:`IN_BATCH` at a time: what a reader that wants a few rows of a
    large file (a report's query texts, an append's recorded ids) reads through the
    column's index instead of the whole table."""
    for start in range(0, len(values), IN_BATCH):
        part = list(values[start:start + IN_BATCH])
        yield from con.execute(sql.format(marks=",".join("?" * len(part))), [*before, *part])


def connect(path: Path, create: bool = True, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode; without ``create`` a missing file is an error.

    Opening a file that another process removes a moment earlier (erase) must not
    leave an empty database in its place, so only a new file's builder creates.
    ``readonly`` is every reader's: SQLite finds a rollback journal by name, so a
    reader holding a file that a combine has just renamed away takes the live
    journal of the file now at the path for one a crash left beside its own. A
    writable reader would replay it into its file and delete it, and the writer
    whose journal it was then fails at its commit, with no journal to recover a
    crash from. A read-only one only reports it (:class:`HotJournal`).
    """
    if create:
        target = str(path)
    else:
        mode = "ro" if readonly else "rw"
        target = "file:" + urllib.parse.quote(str(path.absolute())) + f"?mode={mode}"
    con = sqlite3.connect(target, isolation_level=None, timeout=BUSY_TIMEOUT_S, uri=not create)
    con.execute("PRAGMA foreign_keys = OFF")
    return con


class NoDataFile(RagcovError):
    """There is no data file at the path (never was, or erased a moment ago)."""


class DataFileLocked(RagcovError):
    """Another process held the data file's lock for longer than :data:`BUSY_TIMEOUT_S`."""


class DataFileIOError(RagcovError):
    """SQLite's "disk I/O error": a damaged disk, or a file another process swapped meanwhile."""


class HotJournal(RagcovError):
    """A read-only reader met a rollback journal beside the file it opened.

    Either the file was renamed away since it was opened and the journal is the
    live one of the file now at the path (opening the path again reads that file),
    or a writer was killed mid-transaction and its journal must be replayed before
    the file is read (:func:`ragcov.data.locking.open_for_reading` does both).
    """


# Tries of a reader's open when its first read meets a swapped file, and the pause between.
IO_RETRIES, IO_PAUSE_S = 5, 0.02


def database_error(path: Path, exc: sqlite3.Error) -> RagcovError:
    """SQLite's error as one line that names the file and says what to do."""
    text = str(exc)
    if _left_journal(exc, path):
        return HotJournal(left_journal_message(path))
    if "locked" in text or "busy" in text:
        return DataFileLocked(f"{path}: locked by {lock_holder(path)} for over {BUSY_TIMEOUT_S:g} s "
                              "(the file is intact); retry when it has finished")
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        hint = "the file is damaged; rerun to record it again"
    elif "readonly" in text or "read-only" in text:
        hint = "the file or its folder is not writable"
    elif "disk I/O" in text:
        return DataFileIOError(f"{path}: {text} (cannot use the data file)")
    else:
        hint = "cannot use the data file"
    return RagcovError(f"{path}: {text} ({hint})")


def _left_journal(exc: sqlite3.Error, path: Path) -> bool:
    """SQLITE_READONLY_ROLLBACK: a read found a journal it may not roll back.

    Python 3.10 gives no error name; there it is a "readonly database" error while a
    journal is beside the file.
    """
    if hasattr(exc, "sqlite_errorname"):
        return exc.sqlite_errorname == "SQLITE_READONLY_ROLLBACK"
    return "readonly database" in str(exc) and os.path.lexists(f"{path}-journal")


def left_journal_message(path: Path) -> str:
    """Why a file a killed writer left a journal beside cannot be read here."""
    return (f"{path}: an interrupted write left {path.name}-journal beside it, which must be "
            "rolled back before the file is read, and the file or its folder is not writable "
            "here; make them writable and rerun")


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


def open_existing(path: Path, allow_empty: bool = False, read: bool = False) -> sqlite3.Connection:
    """A connection to the ragcov data file at ``path``, refused if it is anything else.

    ``allow_empty`` also accepts a 0-byte file, for a writer that fills it under
    :func:`write_lock`; a reader finds no data there, as when there is no file.
    ``read`` gives a read-only connection inside a read transaction whose first read
    is done: SQLite looks for a journal only when a transaction takes its first
    lock, so whatever the caller then reads is one snapshot of the file that was
    opened, whatever another process renames over the path meanwhile.
    """
    if path.is_dir():
        raise RagcovError(f"{path}: is a directory, not a data file")
    empty = is_empty(path)
    if not path.is_file():
        raise NoDataFile(f"{path}: no data file (run 'ragcov run' first)")
    if empty and not allow_empty:
        raise RagcovError(f"{path}: an empty file, no data recorded yet (run 'ragcov run' first)")
    try:
        con = connect(path, create=False, readonly=read)
    except sqlite3.Error as exc:
        if not path.exists():
            raise NoDataFile(f"{path}: no data file (run 'ragcov run' first)") from exc
        raise database_error(path, exc) from exc
    if empty:
        return con
    try:
        if read:
            con.execute("BEGIN")
        _check_format(con, path)
    except BaseException:
        con.close()
        raise
    return con


def _whole_number(raw: Any) -> int | None:
    """A meta value as ragcov writes whole numbers (ASCII digits only), else None.

    ``int()`` alone takes ``' 3'``, ``'３'`` and ``'3_0'``, and raises on ``'3.0'``: a
    damaged or hand-edited meta row must be one damaged-file line, never a traceback
    nor a number that was not written."""
    text = str(raw)
    return int(text) if text.isascii() and text.isdigit() else None


def _check_format(con: sqlite3.Connection, path: Path) -> None:
    try:
        rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "unable to open" in text or "disk I/O" in text or _left_journal(exc, path):
            raise database_error(path, exc) from exc
        raise RagcovError(f"{path}: not a ragcov data file ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        raise RagcovError(f"{path}: not a ragcov data file ({exc})") from exc
    raw = rows.get("format", "0")
    fmt = _whole_number(raw)
    if fmt is None:
        raise RagcovError(f"{path}: damaged meta table (format {raw!r} is not a whole number)")
    if fmt > FORMAT_VERSION:
        raise RagcovError(
            f"{path}: data file format {fmt} is newer than this ragcov understands "
            f"(format {FORMAT_VERSION}); upgrade ragcov"
        )
    if fmt < 1:
        raise RagcovError(f"{path}: not a ragcov data file (no format version)")


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
