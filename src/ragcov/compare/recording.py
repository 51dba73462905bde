"""A data file read into flat arrays, for comparing two of them at a million queries.

:meth:`CoverageData.matrix` builds one Python tuple per hit; at 10M hits that alone
takes longer than a whole diff should. Here SQLite concatenates each integer column
into one string inside a single statement (one snapshot, no Python object per row)
and NumPy parses it. Query texts are read only for the few queries a report shows.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.data import CoverageData
from ragcov.data.schema import Meta, check_compatible, read_meta
from ragcov.errors import RagcovError


@dataclass
class Recording:
    """One data file: chunks and queries by position, hits as parallel arrays."""

    path: Path
    meta: Meta
    chunk_ids: list[str]
    doc_ids: np.ndarray            # per chunk, dtype object
    chunk_hashes: list[str]
    query_ids: list[str]
    hit_query: np.ndarray          # per hit, the query's position (int64)
    hit_chunk: np.ndarray          # per hit, the chunk's position (int64)
    hit_rank: np.ndarray | None    # per hit, 1-based rank (int32), when read
    texts: list[str] | None = None  # every query's text, when built in memory (not read)

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_ids)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def covered(self) -> np.ndarray:
        """Boolean mask of chunks retrieved at least once."""
        out = np.zeros(self.n_chunks, dtype=bool)
        out[self.hit_chunk] = True
        return out

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
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(text, sep=",", dtype=np.int64)


def _strings(text: str | None) -> list[str]:
    return json.loads(text) if text else []


def read_recording(path: str | os.PathLike[str], ranks: bool = False) -> Recording:
    """Read the data file at ``path`` in one read transaction."""
    data = CoverageData(path)
    with data.reading() as con:
        meta = read_meta(con, data.path)
        c_idx, c_ids, c_docs, c_hashes = con.execute(
            "SELECT group_concat(idx), json_group_array(id), json_group_array(doc_id), "
            "json_group_array(hash) FROM (SELECT * FROM chunks ORDER BY idx)").fetchone()
        q_idx, q_ids = con.execute(
            "SELECT group_concat(idx), json_group_array(id) "
            "FROM (SELECT idx, id FROM queries ORDER BY idx)").fetchone()
        rank_col = ", group_concat(rank)" if ranks else ""
        row = con.execute(f"SELECT group_concat(query_idx), group_concat(chunk_idx){rank_col} "
                          "FROM hits").fetchone()
    hq, hc = _ints(row[0]), _ints(row[1])
    hr = _ints(row[2]).astype(np.int32) if ranks else None
    chunk_idx, query_idx = _ints(c_idx), _ints(q_idx)
    return Recording(
        path=data.path, meta=meta, chunk_ids=_strings(c_ids),
        doc_ids=np.asarray(_strings(c_docs), dtype=object), chunk_hashes=_strings(c_hashes),
        query_ids=_strings(q_ids), hit_query=_positions(query_idx, hq, data.path, "query"),
        hit_chunk=_positions(chunk_idx, hc, data.path, "chunk"), hit_rank=hr)


def _positions(idx: np.ndarray, refs: np.ndarray, path: Path, what: str) -> np.ndarray:
    """Map stored idx values to 0-based positions (idx is 0..n-1 when ragcov wrote the file)."""
    if idx.size and idx[0] == 0 and idx[-1] == idx.size - 1:
        pos = refs
    else:
        table = np.full(int(idx.max()) + 1 if idx.size else 0, -1, dtype=np.int64)
        table[idx] = np.arange(idx.size)
        pos = table[refs] if refs.size else refs
    if refs.size and (refs.max() > (idx.max() if idx.size else -1) or (pos < 0).any()):
        raise RagcovError(f"{path}: damaged data file (hits name an unknown {what})")
    return pos


def read_pair(a: str | os.PathLike[str], b: str | os.PathLike[str], ranks: tuple[bool, bool]
              = (False, False)) -> tuple[Recording, Recording]:
    """Both files at once: SQLite leaves Python's lock while it aggregates, so they overlap."""
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(read_recording, a, ranks[0])
        fb = pool.submit(read_recording, b, ranks[1])
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
        flags = [f for f, allowed, diff in (
            ("--allow-different-k", allow_k, m.k != other.k),
            ("--allow-different-retriever", allow_retriever,
             json.dumps(m.retriever, sort_keys=True) != json.dumps(other.retriever,
                                                                  sort_keys=True)),
        ) if diff and not allowed]
        hint = f" (use {' and '.join(flags)} to compare across them)" if flags else ""
        raise RagcovError(str(exc).replace("cannot mix coverage data", "cannot compare "
                                           "coverage data") + hint) from exc
