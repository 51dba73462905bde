"""What changed between two recordings (``ragcov diff BASE HEAD``).

Same corpus (the common case: a new embedding model or k over one index): chunks
line up by position and everything is set arithmetic on arrays. Different corpora
(a re-index, new chunking, new documents): chunks are matched by content hash where
their texts are equal, documents by id; a document only in HEAD is *new* (its
coverage is the patch coverage of the corpus change), one only in BASE *removed*,
and neither takes part in the gained and lost chunks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ragcov.compare.recording import Recording, check_comparable, read_pair
from ragcov.data.schema import Meta


@dataclass(frozen=True)
class DocumentChange:
    doc_id: str
    base_chunks: int
    base_covered: int
    head_chunks: int
    head_covered: int

    @property
    def base(self) -> float | None:
        """Coverage in BASE (None: the document is not in BASE's corpus)."""
        return self.base_covered / self.base_chunks if self.base_chunks else None

    @property
    def head(self) -> float | None:
        return self.head_covered / self.head_chunks if self.head_chunks else None

    @property
    def change(self) -> float:
        return (self.head or 0.0) - (self.base or 0.0)


@dataclass
class CoverageDiff:
    base: Recording
    head: Recording
    same_corpus: bool
    base_covered: int
    head_covered: int
    gained: list[str]                      # HEAD chunk ids newly covered
    lost: list[str]                        # BASE chunk ids no longer covered
    documents: list[DocumentChange]        # documents in both corpora, most changed first
    new_documents: list[DocumentChange]
    removed_documents: list[DocumentChange]
    matched_chunks: int                    # chunks present in both (by position or content)
    # Queries recorded in both files (by id), as parallel arrays: positions and Jaccard.
    query_base_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    query_head_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    jaccard: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    queries_only_base: int = 0
    queries_only_head: int = 0
    _b2h: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))

    @property
    def base_meta(self) -> Meta:
        return self.base.meta

    @property
    def head_meta(self) -> Meta:
        return self.head.meta

    @property
    def base_coverage(self) -> float:
        return self.base_covered / self.base.n_chunks if self.base.n_chunks else 0.0

    @property
    def head_coverage(self) -> float:
        return self.head_covered / self.head.n_chunks if self.head.n_chunks else 0.0

    @property
    def delta(self) -> float:
        """HEAD's chunk coverage minus BASE's, as a fraction."""
        return self.head_coverage - self.base_coverage

    @property
    def queries_compared(self) -> int:
        return int(self.jaccard.size)

    @property
    def queries_changed(self) -> int:
        return int((self.jaccard < 1.0).sum())

    @property
    def mean_jaccard(self) -> float:
        return float(self.jaccard.mean()) if self.jaccard.size else 1.0

    def changed_queries(self, limit: int | None = None) -> list[tuple[int, int, float]]:
        """(base row, head row, Jaccard) of queries whose retrieved set changed, most first."""
        changed = np.flatnonzero(self.jaccard < 1.0)
        order = changed[np.argsort(self.jaccard[changed], kind="stable")]
        if limit is not None:
            order = order[:limit]
        return [(int(self.query_base_rows[i]), int(self.query_head_rows[i]),
                 float(self.jaccard[i])) for i in order]

    def retrieved_change(self, base_row: int, head_row: int) -> tuple[list[str], list[str]]:
        """The chunks one query no longer retrieves (BASE ids) and newly retrieves (HEAD ids)."""
        b = self.base.hit_chunk[self.base.hit_query == base_row]
        h = self.head.hit_chunk[self.head.hit_query == head_row]
        in_head = set(h.tolist())
        from_base = {int(self._b2h[c]) for c in b if self._b2h[c] >= 0}
        dropped = [self.base.chunk_ids[c] for c in b if self._b2h[c] not in in_head
                   or self._b2h[c] < 0]
        added = [self.head.chunk_ids[c] for c in h if int(c) not in from_base]
        return dropped, added


def coverage_diff(base_path: str | os.PathLike[str], head_path: str | os.PathLike[str],
                  allow_different_k: bool = False,
                  allow_different_retriever: bool = False) -> CoverageDiff:
    """Compare two data files; refuses k or retriever differences unless allowed."""
    base, head = read_pair(base_path, head_path)
    check_comparable(base, head, allow_different_k, allow_different_retriever,
                     allow_corpus=True)
    return diff_recordings(base, head)


def diff_recordings(base: Recording, head: Recording) -> CoverageDiff:
    same = base.chunk_ids == head.chunk_ids and base.chunk_hashes == head.chunk_hashes
    b2h = np.arange(base.n_chunks, dtype=np.int64) if same else match_chunks(base, head)
    h2b = np.full(head.n_chunks, -1, dtype=np.int64)
    h2b[b2h[b2h >= 0]] = np.flatnonzero(b2h >= 0)
    cov_b, cov_h = base.covered(), head.covered()
    # Each side's chunks as covered on the other side (no counterpart: not covered).
    b_in_h = np.zeros(base.n_chunks, dtype=bool)
    b_in_h[b2h >= 0] = cov_h[b2h[b2h >= 0]]
    h_in_b = np.zeros(head.n_chunks, dtype=bool)
    h_in_b[h2b >= 0] = cov_b[h2b[h2b >= 0]]
    docs, base_codes, head_codes = _doc_codes(base.doc_ids, head.doc_ids)
    nd = len(docs)
    b_chunks = np.bincount(base_codes, minlength=nd)
    h_chunks = np.bincount(head_codes, minlength=nd)
    b_cov = np.bincount(base_codes, weights=cov_b, minlength=nd).astype(np.int64)
    h_cov = np.bincount(head_codes, weights=cov_h, minlength=nd).astype(np.int64)
    new_doc = (b_chunks == 0)[head_codes]
    removed_doc = (h_chunks == 0)[base_codes]
    gained = np.flatnonzero(cov_h & ~h_in_b & ~new_doc)
    lost = np.flatnonzero(cov_b & ~b_in_h & ~removed_doc)
    changes = [DocumentChange(str(docs[d]), int(b_chunks[d]), int(b_cov[d]), int(h_chunks[d]),
                              int(h_cov[d])) for d in range(nd)]
    both = [c for c in changes if c.base_chunks and c.head_chunks]
    both.sort(key=lambda c: (-abs(c.change), c.doc_id))
    rows_b, rows_h, jac, only_b, only_h = _query_jaccard(base, head, b2h)
    return CoverageDiff(
        base=base, head=head, same_corpus=same, base_covered=int(cov_b.sum()),
        head_covered=int(cov_h.sum()), gained=[head.chunk_ids[j] for j in gained],
        lost=[base.chunk_ids[j] for j in lost], documents=both,
        new_documents=[c for c in changes if not c.base_chunks],
        removed_documents=[c for c in changes if not c.head_chunks],
        matched_chunks=int((b2h >= 0).sum()), query_base_rows=rows_b, query_head_rows=rows_h,
        jaccard=jac, queries_only_base=only_b, queries_only_head=only_h, _b2h=b2h)


def match_chunks(base: Recording, head: Recording) -> np.ndarray:
    """Per BASE chunk, the HEAD chunk with the same text (-1: none).

    Repeated texts pair up in order: the n-th copy in BASE with the n-th in HEAD,
    preferring a copy in the same document.
    """
    pools: dict[tuple[str, str], list[int]] = {}
    by_hash: dict[str, list[int]] = {}
    for j in range(head.n_chunks - 1, -1, -1):  # reversed: pop() takes the first
        h = head.chunk_hashes[j]
        pools.setdefault((str(head.doc_ids[j]), h), []).append(j)
        by_hash.setdefault(h, []).append(j)
    taken = np.zeros(head.n_chunks, dtype=bool)
    out = np.full(base.n_chunks, -1, dtype=np.int64)
    for same_doc in (True, False):  # every same-document copy first, then any copy
        for i, h in enumerate(base.chunk_hashes):
            if out[i] >= 0:
                continue
            pool = pools.get((str(base.doc_ids[i]), h)) if same_doc else by_hash.get(h)
            while pool and taken[pool[-1]]:
                pool.pop()
            if pool:
                out[i] = pool.pop()
                taken[out[i]] = True
    return out


def _doc_codes(a: np.ndarray, b: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """One numbering of the documents of both corpora, in order of first appearance."""
    index: dict[str, int] = {}
    ca = np.fromiter((index.setdefault(d, len(index)) for d in a), np.int64, len(a))
    cb = np.fromiter((index.setdefault(d, len(index)) for d in b), np.int64, len(b))
    return list(index), ca, cb


def _query_jaccard(base: Recording, head: Recording, b2h: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Jaccard of the retrieved sets of every query in both files, all rows at once.

    Hits become keys ``row * U + chunk`` in one chunk numbering (HEAD's, with BASE's
    unmatched chunks after it); one sort of both key arrays together puts each shared
    hit next to its twin, so the intersections are one comparison and one bincount
    (no Python loop over queries).
    """
    if base.query_ids == head.query_ids:
        rows_b = rows_h = np.arange(base.n_queries, dtype=np.int64)
    else:
        where = {q: i for i, q in enumerate(head.query_ids)}
        pairs = [(i, where[q]) for i, q in enumerate(base.query_ids) if q in where]
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        rows_b, rows_h = arr[:, 0], arr[:, 1]
    n = rows_b.size
    common_b = np.full(base.n_queries, -1, dtype=np.int64)
    common_b[rows_b] = np.arange(n)
    common_h = np.full(head.n_queries, -1, dtype=np.int64)
    common_h[rows_h] = np.arange(n)
    universe = head.n_chunks + base.n_chunks
    bc = np.where(b2h >= 0, b2h, head.n_chunks + np.arange(base.n_chunks))[base.hit_chunk]
    qb, qh = common_b[base.hit_query], common_h[head.hit_query]
    kb = qb[qb >= 0] * universe + bc[qb >= 0]
    kh = qh[qh >= 0] * universe + head.hit_chunk[qh >= 0]
    # Tagged with their side (low bit) so a chunk listed twice by one query counts once.
    keys = np.concatenate([kb * 2, kh * 2 + 1])
    keys.sort()
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
    rows, side = (keys >> 1) // universe, keys & 1
    size_b = np.bincount(rows[side == 0], minlength=n)
    size_h = np.bincount(rows[side == 1], minlength=n)
    pair = (keys[1:] >> 1) == (keys[:-1] >> 1)
    inter = np.bincount(rows[1:][pair], minlength=n)
    union = size_b + size_h - inter
    jac = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return rows_b, rows_h, jac, base.n_queries - n, head.n_queries - n

