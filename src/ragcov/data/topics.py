"""Topics in the data file: which subject each chunk belongs to, kept beside the run.

Topics describe the corpus, not the suite or the retriever, so they live in three
tables of their own (``topic_meta``, ``topic_labels``, ``topic_chunks``), created
on first write, absent from files that were never clustered and ignored by older
readers. Each chunk's topic is keyed by its chunk id, and the set records the
corpus digest it was made from: a file whose corpus has since changed still holds
the old topics, and every reader says they are stale instead of pinning old
subjects on new chunks.

A run that records a new file over an old one carries the old file's topics into
it (:func:`carry_topics`), and ``combine`` copies them from its inputs: clustering
a large corpus is paid for once, not on every CI run, and a changed corpus is then
met as stale topics rather than as none.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragcov.data.inserts import insert_rows
from ragcov.data.locking import open_for_reading, write_lock
from ragcov.data.schema import NoDataFile, has_tables, read_meta
from ragcov.errors import RagcovError


class CoverageData(Protocol):
    """What these readers and writers use of :class:`ragcov.data.datafile.CoverageData`
    (a protocol: ``datafile`` imports this module to carry topics into a new file)."""

    path: Path

    def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

TOPIC_TABLES = ("topic_meta", "topic_labels", "topic_chunks")
TOPIC_SCHEMA = """
CREATE TABLE IF NOT EXISTS topic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS topic_labels (
    topic INTEGER PRIMARY KEY, label TEXT NOT NULL, terms TEXT NOT NULL,
    central TEXT NOT NULL, size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS topic_chunks (
    chunk_id TEXT PRIMARY KEY, topic INTEGER NOT NULL, x REAL NOT NULL, y REAL NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class TopicLabel:
    """One topic as stored: its number (from 1), label, distinctive terms, central chunk."""

    topic: int
    label: str
    terms: tuple[str, ...]
    central: str  # the chunk id nearest the topic's centre
    size: int     # chunks assigned to it when it was made


@dataclass
class StoredTopics:
    """A topic set as the data file holds it.

    ``chunk_ids`` and ``assignment`` are parallel (the topic number of each chunk,
    from 1); ``xy`` is each chunk's place on the corpus map. ``settings`` holds what
    it was made with: ``corpus_hash``, ``vectors``, ``seed``, ``requested`` (N, or
    ``"auto"``), ``method``, ``created`` and, when N was chosen, ``candidates``
    (N -> mean silhouette).
    """

    settings: dict[str, Any]
    labels: list[TopicLabel]
    chunk_ids: list[str]
    assignment: np.ndarray
    xy: np.ndarray = field(repr=False)

    @property
    def corpus_hash(self) -> str:
        return str(self.settings.get("corpus_hash", ""))

    @property
    def n_topics(self) -> int:
        return len(self.labels)


def _ensure(con: sqlite3.Connection) -> None:
    for stmt in TOPIC_SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def _has_tables(con: sqlite3.Connection) -> bool:
    marks = ",".join("?" * len(TOPIC_TABLES))
    row = con.execute(f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
                      TOPIC_TABLES).fetchone()
    return row[0] == len(TOPIC_TABLES)


def write_topics(data: CoverageData, topics: StoredTopics) -> None:
    """Replace the file's topics with ``topics`` in one transaction.

    The file's corpus digest is checked inside the transaction: topics made from one
    corpus never land in a file a new run re-recorded over another meanwhile.
    """
    with write_lock(data.path) as con:
        if con is None or not has_tables(con):
            raise RagcovError(f"{data.path}: no coverage data (removed meanwhile?); run "
                              "`ragcov run` again, then `ragcov topics`")
        meta = read_meta(con, data.path)
        if meta.corpus_hash != topics.corpus_hash:
            raise RagcovError(f"{data.path}: the corpus changed while its topics were made "
                              f"(hash {topics.corpus_hash}, now {meta.corpus_hash}); run "
                              "`ragcov topics` again")
        _insert(con, topics)


def _insert(con: sqlite3.Connection, topics: StoredTopics) -> None:
    _ensure(con)
    for table in TOPIC_TABLES:
        con.execute(f"DELETE FROM {table}")
    con.executemany("INSERT INTO topic_meta VALUES (?, ?)",
                    ((k, json.dumps(v, sort_keys=True)) for k, v in topics.settings.items()))
    con.executemany("INSERT INTO topic_labels VALUES (?, ?, ?, ?, ?)",
                    ((t.topic, t.label, json.dumps(list(t.terms)), t.central, t.size)
                     for t in topics.labels))
    xy = np.asarray(topics.xy, dtype=np.float64).reshape(-1, 2)
    insert_rows(con, "topic_chunks", 4, zip(
        topics.chunk_ids, np.asarray(topics.assignment).tolist(), xy[:, 0].tolist(),
        xy[:, 1].tolist()))


def read_topics(data: CoverageData) -> StoredTopics | None:
    """The file's topics, or None when it was never clustered."""
    with data.reading() as con:
        return _read(con, data.path)


def _read(con: sqlite3.Connection, path: Path) -> StoredTopics | None:
    if not _has_tables(con):
        return None
    try:
        settings = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM topic_meta")}
        labels = [TopicLabel(int(t), str(label), tuple(str(w) for w in json.loads(terms)),
                             str(central), int(size))
                  for t, label, terms, central, size in con.execute(
                      "SELECT topic, label, terms, central, size FROM topic_labels ORDER BY topic")]
        # In the file's corpus order (a chunk no longer in the corpus: after, by id).
        rows = con.execute(
            "SELECT t.chunk_id, t.topic, t.x, t.y FROM topic_chunks t "
            "LEFT JOIN chunks c ON c.id = t.chunk_id ORDER BY c.idx IS NULL, c.idx, t.chunk_id"
        ).fetchall()
        ids = [r[0] for r in rows]
        assignment = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        xy = np.array([(r[2], r[3]) for r in rows], dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError, json.JSONDecodeError) as exc:
        raise _damaged(path, f"a value that is not what its column holds ({exc})") from None
    if not labels and not rows:
        return None
    known = {t.topic for t in labels}
    if not all(type(i) is str for i in ids) or "corpus_hash" not in settings:
        raise _damaged(path, "a chunk id that is not text, or no corpus digest")
    if assignment.size and not np.isin(assignment, sorted(known)).all():
        raise _damaged(path, "a chunk in a topic that has no label")
    if not np.isfinite(xy).all():
        raise _damaged(path, "a map position that is not a number")
    return StoredTopics(settings, labels, ids, assignment, xy)


def _damaged(path: Path, what: str) -> RagcovError:
    return RagcovError(f"{path}: damaged topic tables ({what}); run `ragcov topics --refit`")


def carry_topics(old: Path, con: sqlite3.Connection) -> None:
    """Copy the topics of the data file now at ``old`` into ``con`` (a new file replacing it).

    Whatever the old file's corpus: when it differs from the new file's, its topics
    arrive stale and are reported as such. A file that cannot be read carries nothing.
    """
    try:
        if not old.is_file():
            return
        with closing(open_for_reading(old)) as src:
            try:
                found = _read(src, old) if has_tables(src) else None
            finally:
                if src.in_transaction:
                    src.execute("COMMIT")
    except (RagcovError, NoDataFile, sqlite3.Error, OSError):
        return  # the old file is replaced either way; its topics are made again on demand
    if found is not None:
        _insert(con, found)


def copy_topics(con: sqlite3.Connection, src: sqlite3.Connection, path: Path) -> bool:
    """Copy the topics of ``src`` (a ``combine`` input) into ``con``; False when it has none.

    ``combine`` inputs share one corpus, so the topics of the first input that has
    them hold for the output as they are.
    """
    found = _read(src, path)
    if found is None:
        return False
    _insert(con, found)
    return True


def chunk_ids_in_order(data: CoverageData) -> list[str]:
    """The file's chunk ids in corpus order (the columns of its hit matrix)."""
    with data.reading() as con:
        return [r[0] for r in con.execute("SELECT id FROM chunks ORDER BY idx")]


def chunk_texts_in_order(data: CoverageData) -> list[str]:
    """The file's chunk texts in corpus order: what topics are labelled from."""
    with data.reading() as con:
        return [text or "" for (text,) in con.execute("SELECT text FROM chunks ORDER BY idx")]
