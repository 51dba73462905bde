"""A data file read whole into flat arrays (:mod:`ragcov.data.columns`), and whether two compare.

A comparison reads the columns it needs in one transaction per file, both files at
once; query texts, content hashes and positions are read on first use, for the few
queries and chunks a report shows.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.data.columns import (
    chunk_hashes,
    chunk_positions,
    query_texts_in_order,
    query_texts_of,
    read_columns,
)
from ragcov.data.schema import Meta, check_compatible, same_retriever
from ragcov.errors import RagcovError


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

    def effective_depth(self) -> int | None:
        """The longest list recorded (k, or less where the retriever returned fewer); None
        when the hits were not read."""
        if self.hit_query.size == 0:
            return None if self.n_queries else 0
        return int(np.bincount(self.hit_query).max())

    def covered(self) -> np.ndarray:
        """Boolean mask of chunks retrieved at least once."""
        out = np.zeros(self.n_chunks, dtype=bool)
        out[self.hit_chunk] = True
        return out

    def chunk_hashes(self) -> list[str]:
        """Content hashes by chunk position (read on first use: only a corpus change needs them)."""
        if self._hashes is None:
            self._hashes = chunk_hashes(self.path)
        return self._hashes

    def chunk_names(self, rows: Iterable[int]) -> list[tuple[str, int]]:
        """(document, 0-based position in it) of the chunks at these rows, as reports number them.

        Positions are those ``ragcov report`` and the Cobertura lines use, read on first
        use; a recording with no file behind it numbers chunks in corpus order.
        """
        if self._in_doc is None:
            from ragcov.summary import positions_in_documents

            try:
                recorded = chunk_positions(self.path, self.chunk_ids)
            except (RagcovError, OSError, sqlite3.Error):
                recorded = None
            self._in_doc = positions_in_documents(self.doc_ids, self.chunk_ids, recorded)
        return [(str(self.doc_ids[j]), int(self._in_doc[j])) for j in rows]

    def read_query_texts(self) -> list[str]:
        """Every query's text by row (``diff --match text`` pairs queries by them)."""
        if self.texts is None:
            self.texts = query_texts_in_order(self.path)
        return self.texts

    def query_texts(self, rows: list[int]) -> dict[int, str]:
        """The texts of the queries at these positions (a report shows a few, not all)."""
        if not rows:
            return {}
        if self.texts is not None:
            return {r: self.texts[r] for r in rows}
        wanted = sorted({self.query_ids[r] for r in rows})
        found = query_texts_of(self.path, wanted)
        return {r: found.get(self.query_ids[r], "") for r in rows}


def read_recording(path: str | os.PathLike[str], queries: bool = True,
                   chunks: bool = True, hits: bool = True) -> Recording:
    """Read the data file at ``path`` (see :func:`ragcov.data.columns.read_columns`)."""
    c = read_columns(path, queries=queries, chunks=chunks, hits=hits)
    return Recording(
        path=c.path, meta=c.meta, chunk_ids=c.chunk_ids,
        doc_ids=np.asarray(c.doc_ids, dtype=object), query_ids=c.query_ids,
        hit_query=c.hit_query, hit_chunk=c.hit_chunk,
        chunk_count=None if chunks else c.n_chunks, query_count=None if queries else c.n_queries)


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
    # Only across retrievers: with one retriever and k a shorter list comes from the query
    # (nothing more matched it), which is what a suite change is, not a second depth.
    if not allow_k and m.k == other.k and not same_retriever(m.retriever, other.retriever):
        deep, deep_other = base.effective_depth(), head.effective_depth()
        if deep is not None and deep_other is not None and deep != deep_other:
            # The same k on paper, two depths in fact: a k = 3 number beside a k = 5 one.
            raise RagcovError(
                f"cannot compare coverage data: the effective depth differs ({deep} in "
                f"{base.path}, {deep_other} in {head.path}, both recorded at k={m.k}: a "
                "retriever returned fewer than k) (use --allow-different-k to compare across "
                "them)")
    k = m.k if allow_k else other.k
    retriever: dict[str, Any] = m.retriever if allow_retriever else other.retriever
    corpus = m.corpus_hash if allow_corpus else other.corpus_hash
    try:
        check_compatible(m, k, corpus, retriever, str(base.path), str(head.path))
    except RagcovError as exc:
        flags = [f for f, allowed, differs in (
            ("--allow-different-k", allow_k, m.k != other.k),
            ("--allow-different-retriever", allow_retriever,
             not same_retriever(m.retriever, other.retriever)),
        ) if differs and not allowed]
        # No flag lets two corpora be compared here: suggesting one would not help.
        other_corpus = not allow_corpus and m.corpus_hash != other.corpus_hash
        hint = (f" (use {' and '.join(flags)} to compare across them)"
                if flags and not other_corpus else "")
        raise RagcovError(str(exc).replace("cannot mix coverage data",
                                           "cannot compare coverage data") + hint) from exc
