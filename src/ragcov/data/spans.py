"""Each chunk's place in its document's text, kept beside the corpus for text coverage.

Two tables of their own, written with the chunks when the corpus knows where its
chunks lie (ragcov split the documents, or they were given with ``--documents``):
``documents`` (each document's text) and ``chunk_spans`` (per chunk, its ``start``
and ``stop`` character offsets, or why it has none), plus ``span_meta`` rows
saying how the spans were found (``method``) and, for chunks ragcov split and named
by their content, the id scheme (``ids``: ``content``; no row is ``position``), so a
later command on the file splits and names the documents the same way. A file
written before these tables existed, or from chunks given without their documents,
has none: readers then find no text coverage (None), never a guess, and older ragcov
versions ignore the tables, so no format change is needed to read or append to any file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.data.inserts import insert_rows
from ragcov.textcov import TextSpans

if TYPE_CHECKING:
    from ragcov.corpus import Corpus

SPAN_TABLES = ("documents", "chunk_spans", "span_meta")
SPAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (doc_id TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_spans (
    chunk_idx INTEGER PRIMARY KEY, start INTEGER, stop INTEGER, unplaced TEXT
);
CREATE TABLE IF NOT EXISTS span_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _create(con: sqlite3.Connection) -> None:
    for stmt in SPAN_SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def write_spans(con: sqlite3.Connection, corpus: Corpus) -> None:
    """The corpus's documents and chunk spans, in the caller's transaction (nothing when
    the corpus does not know them)."""
    spans = getattr(corpus, "text_spans", None)
    if spans is None:
        return
    ids = corpus.chunking.get("ids")
    _insert(con, spans, {c.id: i for i, c in enumerate(corpus)},
            {"ids": ids} if isinstance(ids, str) else {})


def add_spans(con: sqlite3.Connection, corpus: Corpus) -> bool:
    """The corpus's spans into a file that has none yet (an ``--append`` that knows them,
    to a file recorded without): True when written. A file that has them keeps its own:
    the corpus is the same (its hash was checked), so they are the same spans."""
    if getattr(corpus, "text_spans", None) is None or _has_any_table(con):
        return False
    write_spans(con, corpus)
    return True


def _insert(con: sqlite3.Connection, spans: TextSpans, idx: dict[str, int],
            meta: dict[str, str] | None = None) -> None:
    _create(con)
    con.executemany("INSERT INTO documents VALUES (?, ?)", spans.documents.items())
    insert_rows(con, "chunk_spans", 4, (
        (i, *spans.spans[cid], None) if cid in spans.spans
        else (i, None, None, spans.unlocated.get(cid)) for cid, i in idx.items()))
    con.executemany("INSERT INTO span_meta VALUES (?, ?)",
                    [("method", spans.method), *(meta or {}).items()])


def _has_any_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)",
                       SPAN_TABLES).fetchone() is not None


def _has_tables(con: sqlite3.Connection) -> bool:
    found = {r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)", SPAN_TABLES)}
    return found == set(SPAN_TABLES)


def _read(con: sqlite3.Connection) -> TextSpans | None:
    if not _has_tables(con):
        return None
    method = con.execute("SELECT value FROM span_meta WHERE key = 'method'").fetchone()
    documents = {d: t for d, t in con.execute("SELECT doc_id, text FROM documents")}
    spans: dict[str, tuple[int, int]] = {}
    unlocated: dict[str, str] = {}
    for cid, start, stop, why in con.execute(
            "SELECT c.id, s.start, s.stop, s.unplaced FROM chunk_spans s "
            "JOIN chunks c ON c.idx = s.chunk_idx"):
        if isinstance(start, int) and isinstance(stop, int) and 0 <= start <= stop:
            spans[cid] = (start, stop)
        else:
            unlocated[cid] = why or "no span recorded"
    return TextSpans(documents, spans, method[0] if method else "located", unlocated)


def _chunk_ids(con: sqlite3.Connection) -> str | None:
    if not _has_tables(con):
        return None
    row = con.execute("SELECT value FROM span_meta WHERE key = 'ids'").fetchone()
    return row[0] if row else None


def recorded_chunk_ids(data: Any) -> str | None:
    """How the data file's split chunks were named (``content``), or None: position ids,
    chunks given with their own, or no file. What ``probe`` and ``run --append`` split with."""
    if not data.exists():
        return None
    with data.reading() as con:
        return _chunk_ids(con)


def read_text_spans(data: Any) -> TextSpans | None:
    """The data file's text spans (``data``: a CoverageData), or None when it has none."""
    with data.reading() as con:
        return _read(con)


def copy_spans(con: sqlite3.Connection, src: sqlite3.Connection, path: Path) -> bool:
    """Copy ``src``'s spans into ``con`` (a ``combine``); False when it has none.

    ``combine`` inputs share one corpus (the same chunk ids in the same order), so the
    spans of the first input that has them hold for the output."""
    found = _read(src)
    if found is None:
        return False
    ids = _chunk_ids(src)
    _insert(con, found, {cid: i for cid, i in con.execute("SELECT id, idx FROM chunks")},
            {"ids": ids} if ids else {})
    return True


def recorded_corpus(data: Any) -> Corpus:
    """The corpus a data file recorded (``data``: a CoverageData): its chunks in order, with
    their spans and documents' text when the file kept them; what a label made on that
    chunking is read against after a re-chunk."""
    from ragcov.corpus import Chunk, Corpus

    with data.reading() as con:
        rows = con.execute(
            "SELECT id, doc_id, position, hash, title, text FROM chunks ORDER BY idx").fetchall()
        spans = _read(con)
    corpus = Corpus((Chunk(id=cid, text=text or "", doc_id=doc, position=pos, title=title,
                           hash=digest) for cid, doc, pos, digest, title, text in rows),
                    chunking={"method": "recorded"}, source=str(data.path))
    corpus.text_spans = spans
    return corpus
