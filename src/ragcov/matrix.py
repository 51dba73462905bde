"""CoverageMatrix: the one representation everything after retrieval works on.

A sparse 0/1 matrix ``hits[query, chunk]`` with the id lists beside it, plus the
1-based rank and score of each hit on the same sparsity pattern. Metrics,
selection, generation and fault analysis are all functions of it.

The pattern is held as plain CSR arrays (``indptr``, ``indices``, ``rank_data``,
``score_data``) and the scipy matrices ``hits``, ``ranks`` and ``scores`` are built
from them on first use. The reading commands (``report``, the CI formats) count,
name and slice chunks with numpy alone, so they never pay for importing scipy,
which is a third of their start-up; the analyses that need sparse products
(Jaccard, selection, faults) ask for the scipy view and get it once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ragcov.corpus import Corpus
    from ragcov.retrieval import Run

_INT32_MAX = np.iinfo(np.int32).max


def _index_dtype(nnz: int, shape: tuple[int, int]) -> type:
    """scipy's choice of index type for these sizes, so either view holds the same arrays."""
    return np.int32 if max(nnz, *shape) <= _INT32_MAX else np.int64


def csr_arrays(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(indptr, indices, order) of the canonical CSR form of (rows, cols); None on repeats.

    ``order`` puts the input entries in row-major, column-sorted order, the order
    scipy's canonical CSR keeps. A (row, col) pair given twice is summed by scipy;
    that rare case is left to it (None) rather than re-implemented here.
    """
    n_rows, n_cols = shape
    if rows.size and (rows.min() < 0 or cols.min() < 0 or rows.max() >= n_rows
                      or cols.max() >= n_cols):
        raise ValueError("row or column index out of range for the matrix shape")
    order = np.lexsort((cols, rows))
    r, c = rows[order], cols[order]
    if r.size > 1 and np.any((r[1:] == r[:-1]) & (c[1:] == c[:-1])):
        return None
    idx = _index_dtype(r.size, shape)
    indptr = np.zeros(n_rows + 1, dtype=idx)
    np.cumsum(np.bincount(r, minlength=n_rows), out=indptr[1:])
    return indptr, c.astype(idx), order


def document_codes(doc_ids: Iterable[object]) -> tuple[list[str], np.ndarray]:
    """The distinct documents (as strings, in first-seen order) and each chunk's number
    among them: one pass, so per-document work runs once per document, not per chunk."""
    keys = list(map(str, doc_ids))
    codes: dict[str, int] = dict.fromkeys(keys)  # type: ignore[arg-type]  # first-seen order
    for i, d in enumerate(codes):
        codes[d] = i
    inverse = np.fromiter(map(codes.__getitem__, keys), dtype=np.int64, count=len(keys))
    return list(codes), inverse


class CoverageMatrix:
    """Queries x chunks: which chunk each query retrieved, at which rank, with which score."""

    def __init__(self, hits: sp.csr_matrix | None = None, ranks: sp.csr_matrix | None = None,
                 scores: sp.csr_matrix | None = None, query_ids: Sequence[str] = (),
                 chunk_ids: Sequence[str] = (), doc_ids: Sequence[str] | np.ndarray | None = None,
                 query_texts: Sequence[str] | None = None, k: int | None = None,
                 meta: dict[str, Any] | None = None,
                 query_context: Sequence[str | None] | None = None, *,
                 csr: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        """From scipy matrices (``hits``, ``ranks``, ``scores``) or, without scipy, from
        ``csr = (indptr, indices, rank_data, score_data)`` in canonical CSR order."""
        self.query_ids = list(query_ids)
        self.chunk_ids = list(chunk_ids)
        self.shape = (len(self.query_ids), len(self.chunk_ids))
        if csr is None:
            if ranks is None or scores is None:
                raise TypeError("CoverageMatrix needs ranks and scores, or csr=")
            ranks = ranks.tocsr()
            ranks.sort_indices()
            self.shape = ranks.shape
            csr = (ranks.indptr, ranks.indices, ranks.data, scores.tocsr().data)
            self._hits, self._ranks, self._scores = hits, ranks, scores
        else:
            self._hits = self._ranks = self._scores = None
        self.indptr, self.indices, self.rank_data, self.score_data = csr
        self.doc_ids = np.asarray(list(doc_ids) if doc_ids is not None else self.chunk_ids,
                                  dtype=object)
        self.query_texts = (list(query_texts) if query_texts is not None
                            else [""] * self.shape[0])
        self.k = k
        self.meta = dict(meta or {})
        self.query_context = (list(query_context) if query_context is not None
                              else [None] * self.shape[0])

    @classmethod
    def from_triples(cls, rows: np.ndarray, cols: np.ndarray, ranks: np.ndarray,
                     scores: np.ndarray, query_ids: Sequence[str], chunk_ids: Sequence[str],
                     doc_ids: Sequence[str] | None = None, query_texts: Sequence[str] | None = None,
                     k: int | None = None, meta: dict[str, Any] | None = None,
                     query_context: Sequence[str | None] | None = None) -> CoverageMatrix:
        """Build from parallel arrays of (query row, chunk column, rank, score)."""
        shape = (len(query_ids), len(chunk_ids))
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        ranks = np.asarray(ranks, dtype=np.int32)
        scores = np.asarray(scores, dtype=np.float64)
        rest = dict(query_ids=query_ids, chunk_ids=chunk_ids, doc_ids=doc_ids,
                    query_texts=query_texts, k=k, meta=meta, query_context=query_context)
        arrays = csr_arrays(rows, cols, shape)
        if arrays is None:  # a hit recorded twice: scipy's summing rule, as always
            import scipy.sparse as sp

            rank_m = sp.csr_matrix((ranks, (rows, cols)), shape=shape)
            score_m = sp.csr_matrix((scores, (rows, cols)), shape=shape)
            rank_m.sort_indices()
            score_m.sort_indices()
            return cls(ranks=rank_m, scores=score_m, **rest)
        indptr, indices, order = arrays
        return cls(csr=(indptr, indices, ranks[order], scores[order]), **rest)

    @classmethod
    def from_run(cls, run: Run, corpus: Corpus) -> CoverageMatrix:
        rows, cols, ranks, scores = [], [], [], []
        for i, qid in enumerate(run.queries):
            for rank, (cid, score) in enumerate(run.results.get(qid, []), start=1):
                rows.append(i)
                cols.append(corpus.index_of(cid))
                ranks.append(rank)
                scores.append(np.nan if score is None else score)
        return cls.from_triples(
            np.array(rows), np.array(cols), np.array(ranks), np.array(scores, dtype=np.float64),
            query_ids=list(run.queries), chunk_ids=corpus.ids,
            doc_ids=[c.doc_id for c in corpus], query_texts=list(run.queries.values()), k=run.k,
            meta={"k": run.k, "retriever": run.retriever, "corpus_hash": corpus.hash},
        )

    @classmethod
    def from_sets(cls, sets: Sequence[Sequence[int]], n_chunks: int,
                  doc_ids: Sequence[str] | None = None) -> CoverageMatrix:
        """Build from per-query lists of chunk columns (ranked); handy for tests and benchmarks."""
        lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        rows = np.repeat(np.arange(len(sets)), lengths)
        cols = np.fromiter((c for s in sets for c in s), dtype=np.int64, count=int(lengths.sum()))
        ranks = np.concatenate([np.arange(1, n + 1) for n in lengths]) if len(sets) else np.zeros(0)
        return cls.from_triples(rows, cols, ranks, np.full(len(cols), np.nan),
                                query_ids=[f"q{i}" for i in range(len(sets))],
                                chunk_ids=[f"c{j}" for j in range(n_chunks)], doc_ids=doc_ids)

    # ------------------------------------------------------------ scipy views
    def _view(self, data: np.ndarray) -> sp.csr_matrix:
        import scipy.sparse as sp

        m = sp.csr_matrix((data, self.indices.copy(), self.indptr.copy()), shape=self.shape)
        m.has_sorted_indices = True
        return m

    @property
    def hits(self) -> sp.csr_matrix:
        """(n_queries, n_chunks) uint8 0/1, scipy CSR (built on first use)."""
        if self._hits is None:
            self._hits = self._view(np.ones(self.indices.size, dtype=np.uint8))
        return self._hits

    @property
    def ranks(self) -> sp.csr_matrix:
        """The hits' pattern, int32 1-based rank."""
        if self._ranks is None:
            self._ranks = self._view(self.rank_data)
        return self._ranks

    @property
    def scores(self) -> sp.csr_matrix:
        """The hits' pattern, float64 score (NaN = none recorded)."""
        if self._scores is None:
            self._scores = self._view(self.score_data)
        return self._scores

    # ------------------------------------------------------------------ shape
    @property
    def n_queries(self) -> int:
        return self.shape[0]

    @property
    def n_chunks(self) -> int:
        return self.shape[1]

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def depths(self) -> np.ndarray:
        """Per query, how many chunks it retrieved: k, or fewer where the retriever returned
        fewer (a score threshold, a reranker, MMR, a corpus smaller than k)."""
        return np.diff(self.indptr).astype(np.int64)

    def hit_rows(self) -> np.ndarray:
        """Per hit (in CSR order), the query row it belongs to."""
        return np.repeat(np.arange(self.n_queries), np.diff(self.indptr))

    # ------------------------------------------------------------------ views
    def retrieved(self, row: int) -> list[int]:
        """Chunk columns of one query, best rank first."""
        start, end = self.indptr[row], self.indptr[row + 1]
        cols = self.indices[start:end]
        order = np.argsort(self.rank_data[start:end], kind="stable")
        return [int(c) for c in cols[order]]

    def retrieved_scores(self, row: int) -> list[float | None]:
        start, end = self.indptr[row], self.indptr[row + 1]
        order = np.argsort(self.rank_data[start:end], kind="stable")
        vals = self.score_data[start:end][order]
        # Non-finite scores (NaN: none recorded) are not JSON numbers: report no score.
        return [float(v) if np.isfinite(v) else None for v in vals]

    def chunk_frequencies(self) -> np.ndarray:
        """f_c: how many queries retrieved each chunk."""
        return np.bincount(self.indices, minlength=self.n_chunks).astype(np.int64)

    def documents(self) -> tuple[list[str], np.ndarray]:
        """The distinct documents (first-seen order) and each chunk's number among them,
        made once per matrix: scoping, positions and the summary all group by document."""
        made = self.__dict__.get("_documents")
        if made is None:
            made = self.__dict__["_documents"] = document_codes(self.doc_ids)
        return made

    def covered(self) -> np.ndarray:
        """Boolean mask of chunks retrieved at least once."""
        return self.chunk_frequencies() > 0

    def hits_by_chunk(self) -> tuple[np.ndarray, np.ndarray]:
        """Every hit's query row, ordered by chunk column (rows ascending within one), and
        each column's bounds in it: column ``j``'s queries are ``rows[bounds[j]:bounds[j+1]]``."""
        order = np.argsort(self.indices, kind="stable")  # by column, rows ascending within
        return (self.hit_rows()[order],
                np.searchsorted(self.indices[order], np.arange(self.n_chunks + 1)))

    def queries_for_chunk(self) -> list[list[int]]:
        """Chunk column -> query rows that retrieved it."""
        rows, bounds = self.hits_by_chunk()
        # One conversion, then list slices: a million small array conversions took seconds.
        flat, cut = rows.tolist(), bounds.tolist()
        return [flat[cut[j]:cut[j + 1]] for j in range(self.n_chunks)]

    def select_rows(self, rows: Sequence[int] | np.ndarray) -> CoverageMatrix:
        """The matrix of a sub-suite (rows in the given order)."""
        idx = np.asarray(rows, dtype=np.int64)
        starts, ends = self.indptr[idx].astype(np.int64), self.indptr[idx + 1].astype(np.int64)
        lengths = ends - starts
        indptr = np.zeros(idx.size + 1, dtype=self.indptr.dtype)
        np.cumsum(lengths, out=indptr[1:])
        # Every kept hit's position in the old arrays, row by row in the new order.
        take = (np.repeat(starts - indptr[:-1], lengths) + np.arange(int(lengths.sum()))
                if idx.size else np.zeros(0, dtype=np.int64))
        return CoverageMatrix(
            query_ids=[self.query_ids[i] for i in idx], chunk_ids=self.chunk_ids,
            doc_ids=self.doc_ids, query_texts=[self.query_texts[i] for i in idx],
            k=self.k, meta=self.meta, query_context=[self.query_context[i] for i in idx],
            csr=(indptr, self.indices[take], self.rank_data[take], self.score_data[take]),
        )

    def row_of(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

    def select_columns(self, cols: Sequence[int] | np.ndarray) -> CoverageMatrix:
        """The matrix over a subset of the corpus (chunks in the given order).

        What a report leaves out of its denominator (omitted documents, excluded
        chunks) is dropped here, once, so every reporter counts the same chunks.
        """
        idx = np.asarray(cols, dtype=np.int64)
        new_col = np.full(self.n_chunks, -1, dtype=np.int64)
        new_col[idx] = np.arange(idx.size)
        # Rebuilt from (row, col, rank, score) triples: ranks and scores keep one pattern.
        cols_new = new_col[self.indices]
        keep = cols_new >= 0
        return CoverageMatrix.from_triples(
            self.hit_rows()[keep], cols_new[keep], self.rank_data[keep], self.score_data[keep],
            query_ids=self.query_ids, chunk_ids=[self.chunk_ids[j] for j in idx],
            doc_ids=list(self.doc_ids[idx]), query_texts=self.query_texts, k=self.k,
            meta=self.meta, query_context=self.query_context,
        )
