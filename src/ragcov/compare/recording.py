"""A data file read into flat arrays, for comparing two of them at a million queries.

:meth:`CoverageData.matrix` builds one Python tuple per hit; at 10M hits that alone
takes longer than a whole diff should. Here SQLite concatenates each integer column
into one string inside a single statement (no Python object per row) and NumPy
parses it; only the columns a comparison needs are read, and query texts only for
the few queries a report shows.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.data import CoverageData
from ragcov.data.schema import Meta, check_compatible, read_meta, retriever_key
from ragcov.errors import RagcovError

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class Recording:
    """One data file: chunks and queries by position, hits as parallel arrays."""

    path: Path
    meta: Meta
    chunk_ids: list[str]
    doc_ids: np.ndarray            # per chunk, dtype object
    query_ids: list[str]
    hit_query: np.ndarray          # per hit, the query's position (int64); empty if not read
    hit_chunk: np.ndarray          # per hit, the chunk's position (int64)
    hit_rank: np.ndarray | None = None   # per hit, 1-based rank, when read
    texts: list[str] | None = None  # every query's text, when built in memory (not read)
    chunk_count: int | None = None  # when the chunk table was not read
    query_count: int | None = None  # when the query table was not read
    _hashes: list[str] | None = field(default=None, repr=False)
    _in_doc: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_ids) if self.chunk_count is None else self.chunk_count

    @property
    def n_queries(self) -> int:
        return len(self.query_ids) if self.query_count is None else self.query_count

    def covered(self) -> np.ndarray:
        """Boolean mask of chunks retrieved at least once."""
        out = np.zeros(self.n_chunks, dtype=bool)
        out[self.hit_chunk] = True
        return out

    def chunk_hashes(self) -> list[str]:
        """Content hashes by chunk position (read on first use: only a corpus change needs them)."""
        if self._hashes is None:
            with CoverageData(self.path).reading() as con:
                self._hashes = json.loads(con.execute(
                    "SELECT json_group_array(hash) FROM (SELECT hash FROM chunks ORDER BY idx)"
                ).fetchone()[0])
        return self._hashes

    def chunk_names(self, rows: Iterable[int]) -> list[tuple[str, int]]:
        """(document, 0-based position in it) of the chunks at these rows, as reports number them.

        Positions are those ``ragcov report`` and the Cobertura lines use, read on first
        use; a recording with no file behind it numbers chunks in corpus order.
        """
        if self._in_doc is None:
            from ragcov.summary import positions_in_documents

            try:
                with CoverageData(self.path).reading() as con:
                    recorded = dict(con.execute("SELECT id, position FROM chunks").fetchall())
            except (RagcovError, OSError, sqlite3.Error):
                recorded = None
            self._in_doc = positions_in_documents(self.doc_ids, self.chunk_ids, recorded)
        return [(str(self.doc_ids[j]), int(self._in_doc[j])) for j in rows]

    def read_query_texts(self) -> list[str]:
        """Every query's text by row (``diff --match text`` pairs queries by them)."""
        if self.texts is None:
            with CoverageData(self.path).reading() as con:
                self.texts = _strings(con.execute(
                    "SELECT json_group_array(text) FROM (SELECT text FROM queries ORDER BY idx)"
                ).fetchone()[0])
        return self.texts

    def query_texts(self, rows: list[int]) -> dict[int, str]:
        """The texts of the queries at these positions (a report shows a few, not all)."""
        if not rows:
            return {}
        if self.texts is not None:
            return {r: self.texts[r] for r in rows}
        wanted = sorted({self.query_ids[r] for r in rows})
        found: dict[str, str] = {}
        with CoverageData(self.path).reading() as con:
            for i in range(0, len(wanted), 500):  # SQLite's limit on bound parameters
                part = wanted[i:i + 500]
                found.update(con.execute(
                    f"SELECT id, text FROM queries WHERE id IN ({','.join('?' * len(part))})",
                    part).fetchall())
        return {r: found.get(self.query_ids[r], "") for r in rows}


def _ints(text: str | None) -> np.ndarray:
    if not text:
        return _EMPTY
    return np.fromstring(text, sep=",", dtype=np.int64)


def _strings(text: str | None) -> list[str]:
    return json.loads(text) if text else []


def read_recording(path: str | os.PathLike[str], queries: bool = True,
                   chunks: bool = True, hits: bool = True) -> Recording:
    """Read the data file at ``path`` in one read transaction.

    ``queries=False`` reads neither the query ids nor which query made each hit (a
    coverage set needs only the chunks); ``chunks=False`` leaves out the chunk ids;
    ``hits=False`` the hits (counted elsewhere: ``gap --engine dask``).
    """
    data = CoverageData(path)
    with data.reading() as con:
        meta = read_meta(con, data.path)
        n_chunks, c_max = con.execute("SELECT COUNT(*), MAX(idx) FROM chunks").fetchone()
        n_queries, q_max = con.execute("SELECT COUNT(*), MAX(idx) FROM queries").fetchone()
        c_ids, c_docs = (con.execute(
            "SELECT json_group_array(id), json_group_array(doc_id) "
            "FROM (SELECT id, doc_id FROM chunks ORDER BY idx)").fetchone()
            if chunks else (None, None))
        q_ids = (con.execute("SELECT json_group_array(id) FROM (SELECT id FROM queries "
                             "ORDER BY idx)").fetchone()[0] if queries else None)
        # Files ragcov writes number rows 0..n-1; anything else is mapped through its idx.
        c_idx = None if c_max in (None, n_chunks - 1) else _ints(con.execute(
            "SELECT group_concat(idx) FROM (SELECT idx FROM chunks ORDER BY idx)").fetchone()[0])
        q_idx = None if q_max in (None, n_queries - 1) or not queries else _ints(con.execute(
            "SELECT group_concat(idx) FROM (SELECT idx FROM queries ORDER BY idx)").fetchone()[0])
        cols = "group_concat(query_idx), group_concat(chunk_idx)" if queries \
            else "NULL, group_concat(chunk_idx)"
        hq_text, hc_text = con.execute(f"SELECT {cols} FROM hits").fetchone() if hits \
            else (None, None)
    hq, hc = _ints(hq_text), _ints(hc_text)
    return Recording(
        path=data.path, meta=meta, chunk_ids=_strings(c_ids),
        doc_ids=np.asarray(_strings(c_docs), dtype=object), query_ids=_strings(q_ids),
        hit_query=_positions(q_idx, n_queries, hq, data.path, "query"),
        hit_chunk=_positions(c_idx, n_chunks, hc, data.path, "chunk"),
        chunk_count=None if chunks else n_chunks, query_count=None if queries else n_queries)


def _positions(idx: np.ndarray | None, n: int, refs: np.ndarray, path: Path, what: str
               ) -> np.ndarray:
    """Stored idx values as 0-based positions; a reference to no row is a damaged file."""
    if idx is not None:
        table = np.full(int(idx.max()) + 1, -1, dtype=np.int64)
        table[idx] = np.arange(idx.size)
        refs = np.where(refs < table.size, table[np.minimum(refs, table.size - 1)], -1)
        n = idx.size
    if refs.size and (refs.min() < 0 or refs.max() >= n):
        raise RagcovError(f"{path}: damaged data file (hits name an unknown {what})")
    return refs


def read_pair(a: str | os.PathLike[str], b: str | os.PathLike[str],
              options: tuple[dict[str, bool], dict[str, bool]] = ({}, {})
              ) -> tuple[Recording, Recording]:
    """Both files at once: SQLite leaves Python's lock while it aggregates, so they overlap."""
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(read_recording, a, **options[0])
        fb = pool.submit(read_recording, b, **options[1])
        return fa.result(), fb.result()


def check_comparable(base: Recording, head: Recording, allow_k: bool = False,
                     allow_retriever: bool = False, allow_corpus: bool = False) -> None:
    """Refuse, as ``combine`` does, two recordings that differ in what was not allowed to."""
    m, other = base.meta, head.meta
    k = m.k if allow_k else other.k
    retriever: dict[str, Any] = m.retriever if allow_retriever else other.retriever
    corpus = m.corpus_hash if allow_corpus else other.corpus_hash
    try:
        check_compatible(m, k, corpus, retriever, str(base.path), str(head.path))
    except RagcovError as exc:
        flags = [f for f, allowed, differs in (
            ("--allow-different-k", allow_k, m.k != other.k),
            ("--allow-different-retriever", allow_retriever,
             retriever_key(m.retriever) != retriever_key(other.retriever)),
        ) if differs and not allowed]
        hint = f" (use {' and '.join(flags)} to compare across them)" if flags else ""
        raise RagcovError(str(exc).replace("cannot mix coverage data",
                                           "cannot compare coverage data") + hint) from exc
