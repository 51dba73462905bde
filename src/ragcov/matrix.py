"""CoverageMatrix: the one representation everything after retrieval works on.

A sparse 0/1 matrix ``hits[query, chunk]`` (scipy CSR) with the id lists beside
it, plus the 1-based rank and score of each hit on the same sparsity pattern.
Metrics, selection, generation and fault analysis are all functions of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrieval import Run


@dataclass
class CoverageMatrix:
    hits: sp.csr_matrix            # (n_queries, n_chunks), uint8 0/1
    ranks: sp.csr_matrix           # same pattern, int32 1-based rank
    scores: sp.csr_matrix          # same pattern, float64 score (NaN = none recorded)
    query_ids: list[str]
    chunk_ids: list[str]
    doc_ids: np.ndarray            # per chunk, dtype object
    query_texts: list[str] = field(default_factory=list)
    k: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    query_context: list[str | None] = field(default_factory=list)

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
        # Rank matrix first: its canonical CSR order fixes the order of the others.
        rank_m = sp.csr_matrix((np.asarray(ranks, dtype=np.int32), (rows, cols)), shape=shape)
        score_m = sp.csr_matrix((np.asarray(scores, dtype=np.float64), (rows, cols)), shape=shape)
        rank_m.sort_indices()
        score_m.sort_indices()
        hits = sp.csr_matrix((np.ones(rank_m.nnz, dtype=np.uint8), rank_m.indices.copy(),
                              rank_m.indptr.copy()), shape=shape)
        docs = np.asarray(list(doc_ids) if doc_ids is not None else list(chunk_ids), dtype=object)
        return cls(hits=hits, ranks=rank_m, scores=score_m, query_ids=list(query_ids),
                   chunk_ids=list(chunk_ids), doc_ids=docs,
                   query_texts=list(query_texts) if query_texts is not None else [""] * shape[0],
                   k=k, meta=dict(meta or {}),
                   query_context=list(query_context) if query_context is not None
                   else [None] * shape[0])

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

    # ------------------------------------------------------------------ shape
    @property
    def n_queries(self) -> int:
        return self.hits.shape[0]

    @property
    def n_chunks(self) -> int:
        return self.hits.shape[1]

    # ------------------------------------------------------------------ views
    def retrieved(self, row: int) -> list[int]:
        """Chunk columns of one query, best rank first."""
        start, end = self.ranks.indptr[row], self.ranks.indptr[row + 1]
        cols = self.ranks.indices[start:end]
        order = np.argsort(self.ranks.data[start:end], kind="stable")
        return [int(c) for c in cols[order]]

    def retrieved_scores(self, row: int) -> list[float | None]:
        start, end = self.ranks.indptr[row], self.ranks.indptr[row + 1]
        order = np.argsort(self.ranks.data[start:end], kind="stable")
        vals = self.scores.data[start:end][order]
        # Non-finite scores (NaN: none recorded) are not JSON numbers: report no score.
        return [float(v) if np.isfinite(v) else None for v in vals]

    def chunk_frequencies(self) -> np.ndarray:
        """f_c: how many queries retrieved each chunk."""
        return np.asarray(self.hits.sum(axis=0, dtype=np.int64)).ravel()

    def covered(self) -> np.ndarray:
        """Boolean mask of chunks retrieved at least once."""
        return self.chunk_frequencies() > 0

    def queries_for_chunk(self) -> list[list[int]]:
        """Chunk column -> query rows that retrieved it."""
        csc = self.hits.tocsc()
        return [csc.indices[csc.indptr[j]:csc.indptr[j + 1]].tolist() for j in range(self.n_chunks)]

    def select_rows(self, rows: Sequence[int] | np.ndarray) -> CoverageMatrix:
        """The matrix of a sub-suite (rows in the given order)."""
        idx = np.asarray(rows, dtype=np.int64)
        return CoverageMatrix(
            hits=self.hits[idx], ranks=self.ranks[idx], scores=self.scores[idx],
            query_ids=[self.query_ids[i] for i in idx], chunk_ids=self.chunk_ids,
            doc_ids=self.doc_ids, query_texts=[self.query_texts[i] for i in idx],
            k=self.k, meta=self.meta, query_context=[self.query_context[i] for i in idx],
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
        rows = np.repeat(np.arange(self.n_queries), np.diff(self.ranks.indptr))
        cols_new = new_col[self.ranks.indices]
        keep = cols_new >= 0
        return CoverageMatrix.from_triples(
            rows[keep], cols_new[keep], self.ranks.data[keep], self.scores.data[keep],
            query_ids=self.query_ids, chunk_ids=[self.chunk_ids[j] for j in idx],
            doc_ids=list(self.doc_ids[idx]), query_texts=self.query_texts, k=self.k,
            meta=self.meta, query_context=self.query_context,
        )
