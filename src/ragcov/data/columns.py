"""A data file's columns as flat arrays, for comparing two of them at a million queries.

:meth:`CoverageData.matrix` builds one Python tuple per hit; at 10M hits that alone
takes longer than a whole diff should. Here SQLite concatenates each integer column
into one string inside a single statement (no Python object per row) and NumPy
parses it; only the columns a comparison needs are read, and query texts only for
the few queries a report shows. :mod:`ragcov.compare` asks through these readers
and never names a table, so a new schema changes this folder only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragcov.data.checks import check_rows
from ragcov.data.datafile import CoverageData
from ragcov.data.schema import Meta, read_meta, rows_in
from ragcov.errors import RagcovError

if TYPE_CHECKING:
    import sqlite3

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Columns:
    """One read of a data file: chunks and queries in ``idx`` order, hits by position."""

    path: Path
    meta: Meta
    n_chunks: int
    n_queries: int
    chunk_ids: list[str]    # empty when the chunks were not asked for
    doc_ids: list[str]      # per chunk, likewise
    query_ids: list[str]    # empty when the queries were not asked for
    hit_query: np.ndarray   # per hit, the query's 0-based position; empty if not read
    hit_chunk: np.ndarray   # per hit, the chunk's 0-based position


def read_columns(path: str | os.PathLike[str], queries: bool = True,
                 chunks: bool = True, hits: bool = True) -> Columns:
    """Read the data file at ``path`` in one read transaction.

    ``queries=False`` reads neither the query ids nor which query made each hit (a
    coverage set needs only the chunks); ``chunks=False`` leaves out the chunk ids;
    ``hits=False`` the hits (counted elsewhere: ``gap --engine dask``).
    """
    data = CoverageData(path)
    with data.reading() as con:
        meta = read_meta(con, data.path)
        row = con.execute("SELECT value FROM meta WHERE key = 'x:generated'").fetchone()
        generated = set(json.loads(row[0])) if row else set()
        if generated:  # which queries made which hits is needed to leave them out
            queries = True
        n_chunks, c_max = con.execute("SELECT COUNT(*), MAX(idx) FROM chunks").fetchone()
        n_queries, q_max = con.execute("SELECT COUNT(*), MAX(idx) FROM queries").fetchone()
        c_ids, c_docs = (con.execute(
            "SELECT json_group_array(id), json_group_array(doc_id) "
            "FROM (SELECT id, doc_id FROM chunks ORDER BY idx)").fetchone()
            if chunks else (None, None))
        q_ids = (con.execute("SELECT json_group_array(id) FROM (SELECT id FROM queries "
                             "ORDER BY idx)").fetchone()[0] if queries else None)
        # Files ragcov writes number rows 0..n-1; anything else is mapped through its idx.
        c_idx = None if c_max in (None, n_chunks - 1) else _stored_idx(con, "chunks")
        q_idx = None if q_max in (None, n_queries - 1) or not queries \
            else _stored_idx(con, "queries")
        cols = "group_concat(query_idx), group_concat(chunk_idx)" if queries \
            else "NULL, group_concat(chunk_idx)"
        # The deepest rank in the same pass: a hit past k was never in the top k.
        hq_text, hc_text, deepest = con.execute(
            f"SELECT {cols}, MAX(rank) FROM hits").fetchone() if hits else (None, None, None)
        if isinstance(deepest, int) and deepest > meta.k:
            check_rows(con, data.path)
    hq, hc = _ints(hq_text), _ints(hc_text)
    columns = Columns(
        path=data.path, meta=meta, n_chunks=n_chunks, n_queries=n_queries,
        chunk_ids=_strings(c_ids), doc_ids=_strings(c_docs), query_ids=_strings(q_ids),
        hit_query=_positions(q_idx, n_queries, hq, data.path, "query"),
        hit_chunk=_positions(c_idx, n_chunks, hc, data.path, "chunk"))
    return _without_generated(columns, generated) if generated else columns


def _without_generated(c: Columns, generated: set[str]) -> Columns:
    """The columns less the questions ``ragcov generate`` wrote and no suite accepted yet:
    what ``diff``, ``gap`` and every report count (``report --include-generated`` aside)."""
    keep = np.fromiter((q not in generated for q in c.query_ids), dtype=bool, count=len(c.query_ids))
    new_position = np.cumsum(keep) - 1
    hits = keep[c.hit_query] if c.hit_query.size else np.zeros(0, dtype=bool)
    return Columns(path=c.path, meta=c.meta, n_chunks=c.n_chunks, n_queries=int(keep.sum()),
                   chunk_ids=c.chunk_ids, doc_ids=c.doc_ids,
                   query_ids=[q for q, k in zip(c.query_ids, keep) if k],
                   hit_query=new_position[c.hit_query[hits]].astype(np.int64),
                   hit_chunk=c.hit_chunk[hits])


def chunk_hashes(path: str | os.PathLike[str]) -> list[str]:
    """Content hashes by chunk position."""
    with CoverageData(path).reading() as con:
        return json.loads(con.execute(
            "SELECT json_group_array(hash) FROM (SELECT hash FROM chunks ORDER BY idx)"
        ).fetchone()[0])


class ChunkPositions(Mapping[str, int]):
    """Chunk id -> its position within its document, as recorded: one array in corpus order.

    A report over a million chunks asks for every chunk's position: built as a dict and
    looked up chunk by chunk, that cost two seconds; the array is read in one statement
    and handed over whole to a matrix with the same chunks (:meth:`aligned`). Looking up
    one id builds the index on first use.
    """

    def __init__(self, ids: Sequence[str], values: np.ndarray) -> None:
        self.ids = ids
        self.values = values
        self._index: dict[str, int] | None = None

    def aligned(self, chunk_ids: Sequence[str]) -> np.ndarray | None:
        """The positions of ``chunk_ids`` as an array, when they are this file's chunks in
        order (a whole report); None for any other list, which is looked up id by id."""
        if chunk_ids is self.ids or (len(chunk_ids) == len(self.ids)
                                     and list(chunk_ids) == list(self.ids)):
            return self.values
        return None

    def _where(self) -> dict[str, int]:
        if self._index is None:
            self._index = dict(zip(self.ids, range(len(self.ids))))
        return self._index

    def __getitem__(self, chunk_id: str) -> int:
        return int(self.values[self._where()[chunk_id]])

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._where()


def chunk_positions(path: str | os.PathLike[str], chunk_ids: Sequence[str]
                    ) -> Mapping[str, int]:
    """Each chunk's recorded position within its document; ``chunk_ids`` are the file's
    chunks in ``idx`` order, as every reader reads them."""
    with CoverageData(path).reading() as con:
        text = con.execute("SELECT group_concat(position) FROM (SELECT position "
                           "FROM chunks ORDER BY idx)").fetchone()[0]
        try:
            values = _ints(text)
        except ValueError:  # a position that is no whole number (an edited file)
            values = _EMPTY
        if values.size != len(chunk_ids):  # not one whole number a chunk: read as stored
            return dict(con.execute("SELECT id, position FROM chunks").fetchall())
    return ChunkPositions(chunk_ids, values)


class ChunkTexts(Mapping[str, str]):
    """Chunk id -> text, read from the data file when first asked for.

    Most reports never show a chunk's text (the table, the gate, lcov), and reading a
    million of them is most of a report's read. Read after the report's snapshot ended,
    the texts come from the same corpus or not at all: the file's corpus hash (ids,
    documents and each text's hash) must still be the one the report read.
    """

    def __init__(self, path: str | os.PathLike[str], corpus_hash: str, n_chunks: int) -> None:
        self.path = Path(path).absolute()  # a caller that changes directory reads the same file
        self.corpus_hash = corpus_hash
        self.n_chunks = n_chunks
        self._texts: dict[str, str] | None = None

    def _read(self, ids: Sequence[str] | None = None) -> dict[str, str]:
        with CoverageData(self.path).reading() as con:
            now = read_meta(con, self.path).corpus_hash
            if now != self.corpus_hash:
                raise RagcovError(f"{self.path}: the data file now holds another corpus (hash "
                                  f"{now}, read as {self.corpus_hash}): it was recorded again "
                                  "since its report was read; read the report again")
            if ids is None:
                return dict(con.execute("SELECT id, coalesce(text, '') FROM chunks"))
            return dict(rows_in(con, "SELECT id, coalesce(text, '') FROM chunks WHERE id IN ({marks})",
                                ids))

    @property
    def _all(self) -> dict[str, str]:
        if self._texts is None:
            self._texts = self._read()
        return self._texts

    def of(self, ids: Sequence[str]) -> Mapping[str, str]:
        """The texts of just these ids (all of them once they are read, or when the ids are
        a good part of the corpus): a check of the chunks the suite retrieved need not read
        the rest."""
        wanted = list(dict.fromkeys(ids))
        if self._texts is not None or len(wanted) * 4 > self.n_chunks:
            return self._all
        return self._read(wanted)

    def __getitem__(self, chunk_id: str) -> str:
        return self._all[chunk_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


def same_text_columns(path: str | os.PathLike[str]) -> list[np.ndarray]:
    """Groups of two or more chunk positions whose texts are equal and not empty, each in
    corpus order, the groups by their first chunk: the duplicates a report lists.

    Found by the content hash each chunk row keeps (a 64-bit prefix of its SHA-256, one
    sort), and only the chunks that share one have their texts read and compared: a
    report need not read a million texts to find that none repeats.
    """
    with CoverageData(path).reading() as con:
        joined, odd = con.execute(
            "SELECT group_concat(hash, ''), SUM(typeof(hash) != 'text' OR length(hash) != 16) "
            "FROM (SELECT hash FROM chunks ORDER BY idx)").fetchone()
        try:
            codes = None if odd else np.frombuffer(bytes.fromhex(joined or ""), dtype=">u8")
        except ValueError:  # not hex: hashes written otherwise are compared as strings
            codes = None
        if codes is None:
            hashes = [str(h) for (h,) in con.execute("SELECT hash FROM chunks ORDER BY idx")]
            codes = np.unique(np.asarray(hashes, dtype=object), return_inverse=True)[1]
        order = np.argsort(codes, kind="stable")
        ordered = codes[order]
        repeated = np.zeros(codes.size, dtype=bool)
        if codes.size > 1:
            same = ordered[1:] == ordered[:-1]
            repeated[order[1:][same]] = True
            repeated[order[:-1][same]] = True
        candidates = np.flatnonzero(repeated)
        if not candidates.size:
            return []
        stored = _stored_idx(con, "chunks")
        texts: dict[int, str] = dict(rows_in(
            con, "SELECT idx, coalesce(text, '') FROM chunks WHERE idx IN ({marks})",
            [int(stored[j]) for j in candidates]))
    by_text: dict[str, list[int]] = {}
    for j in candidates.tolist():
        text = texts[int(stored[j])]
        if text:
            by_text.setdefault(text, []).append(j)
    groups = [np.asarray(cols, dtype=np.int64) for cols in by_text.values() if len(cols) > 1]
    return sorted(groups, key=lambda cols: int(cols[0]))


def query_texts_in_order(path: str | os.PathLike[str]) -> list[str]:
    """Every query's text by position (``diff --match text`` pairs queries by them)."""
    with CoverageData(path).reading() as con:
        return _strings(con.execute(
            "SELECT json_group_array(text) FROM (SELECT text FROM queries ORDER BY idx)"
        ).fetchone()[0])


def query_texts_of(path: str | os.PathLike[str], ids: Sequence[str]) -> dict[str, str]:
    """The texts of just these query ids (a report shows a few, not all)."""
    with CoverageData(path).reading() as con:
        return dict(rows_in(con, "SELECT id, text FROM queries WHERE id IN ({marks})", ids))


def best_hits(path: str | os.PathLike[str], chunks: Sequence[int], per_chunk: int
              ) -> list[tuple[int, int, str, int, str]]:
    """The ``per_chunk`` best-ranked hits on each chunk at these positions, in one SQL pass.

    Rows are (chunk position, query idx as stored, query id, rank, query text), by chunk
    idx and then rank, ties to the earlier query; SQLite scans, nothing is parsed.
    """
    with CoverageData(path).reading() as con:
        stored = _stored_idx(con, "chunks")  # position -> idx (0..n-1 when ragcov wrote it)
        back = {int(stored[j]): int(j) for j in chunks}
        con.execute("CREATE TEMP TABLE wanted (chunk_idx INTEGER PRIMARY KEY)")
        con.executemany("INSERT INTO wanted VALUES (?)", ((i,) for i in back))
        rows = con.execute(
            "SELECT b.chunk_idx, q.idx, q.id, b.rank, q.text FROM (SELECT h.chunk_idx, "
            "h.query_idx, h.rank, ROW_NUMBER() OVER (PARTITION BY h.chunk_idx ORDER BY h.rank, "
            "h.query_idx) AS n FROM hits h JOIN wanted w ON w.chunk_idx = h.chunk_idx) b "
            f"JOIN queries q ON q.idx = b.query_idx WHERE b.n <= {int(per_chunk)} "
            "ORDER BY b.chunk_idx, b.n").fetchall()
    return [(back[cidx], qidx, qid, rank, text) for cidx, qidx, qid, rank, text in rows]


def _stored_idx(con: sqlite3.Connection, table: str) -> np.ndarray:
    """The ``idx`` column of ``chunks`` or ``queries``, ascending: position -> stored idx."""
    return _ints(con.execute(f"SELECT group_concat(idx) FROM (SELECT idx FROM {table} "
                             "ORDER BY idx)").fetchone()[0])


def _ints(text: str | None) -> np.ndarray:
    if not text:
        return _EMPTY
    return np.fromstring(text, sep=",", dtype=np.int64)


def _strings(text: str | None) -> list[str]:
    return json.loads(text) if text else []


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


def hit_rows(path: str | os.PathLike[str]) -> tuple[int | None, int | None, np.ndarray]:
    """The hits' lowest and highest stored query ``idx`` (None, None when empty) and the
    chunks' stored ``idx`` by position, for counting hits in query ranges elsewhere.

    Ranges are of query idx, not rowid: a format-3 hits table has no rowid, and every
    format keys its hits by (query idx, rank), so a range is one walk of that key.
    """
    with CoverageData(path).reading() as con:
        low, high = con.execute("SELECT MIN(query_idx), MAX(query_idx) FROM hits").fetchone()
        return low, high, _stored_idx(con, "chunks")


def chunk_idx_of_hits(path: str | os.PathLike[str], low: int, high: int) -> np.ndarray:
    """The stored chunk ``idx`` of each hit of the queries whose idx is ``low`` to ``high - 1``."""
    with CoverageData(path).reading() as con:
        return _ints(con.execute("SELECT group_concat(chunk_idx) FROM hits WHERE query_idx >= ? "
                                 "AND query_idx < ?", (low, high)).fetchone()[0])
