"""Exact search over the vectors an index searches: the reference an ANN index is held to.

An approximate index (HNSW, IVF) may never return a chunk that its own vectors rank in
the top k: hnswlib, Milvus, Lucene and Weaviate users all report graph nodes no search
reaches. Whether a chunk is lost to the embedding or to the index is decided by asking
the same question twice, with the same query vector: once through the index, once by
brute force over the very vectors the index holds (read from the store, never embedded
again), ranked by the metric the store's own search ranks by.

Ties decide nothing. A chunk counts as *surely* in a query's exact top-d only when it
scores above the first chunk outside it (by more than :data:`TIE`): with identical
vectors (duplicate chunks) any exact search may return either copy, so neither is held
against the index. Recall@d counts an index-returned chunk as found when it scores at
least the d-th exact score, less :data:`TIE` (as ann-benchmarks counts it).

Memory stays bounded: the stored vectors are read a page at a time into one array (the
same bytes a dense retriever holds), and the scores are never one matrix of queries by
chunks: the corpus goes through in blocks with a running top-d (with torch, on the
retriever's device; faiss's blocked brute force where torch is not installed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.stores.base import VectorsUnavailable, index_settings

METRICS = ("cosine", "ip", "l2")
TIE = 1e-5  # relative: scores closer than this are a tie
BLOCK = 1 << 15  # corpus rows per block: 512 queries x 32,768 rows of scores is 64 MiB


def _tolerance(scores: np.ndarray) -> np.ndarray:
    return TIE * np.maximum(1.0, np.abs(scores))


@dataclass
class Judged:
    """One batch of queries judged against exact search at depth ``depth``.

    Per query: the exact top-``depth`` (corpus positions best first, their scores, and
    whether each is surely there whatever breaks ties), how many of them the index list
    found (tie-aware) and how many it could find (``expected``: ``depth``, or the corpus
    when smaller).
    """

    positions: np.ndarray   # (queries, depth) int64
    scores: np.ndarray      # (queries, depth) float32
    sure: np.ndarray        # (queries, depth) bool
    found: np.ndarray       # (queries,) int64
    expected: int


@dataclass
class ExactVectors:
    """The stored vectors of every chunk, in corpus order, and how to rank them.

    ``metric`` is what the index's own search ranks by: ``ip`` (inner product),
    ``cosine`` (rows kept normalised here) or ``l2`` (score = minus the squared
    distance). ``source`` says where the vectors came from; ``settings`` the index's
    kind, settings and remedy (:func:`ragcov.stores.base.index_settings`).
    """

    matrix: np.ndarray
    metric: str
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise VectorsUnavailable(f"unknown metric {self.metric!r}")
        self.matrix = np.ascontiguousarray(self.matrix, dtype=np.float32)
        if self.metric == "cosine":
            self.matrix = _unit_rows(self.matrix)

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    def queries(self, vectors: Any) -> np.ndarray:
        """Query vectors as this metric compares them (normalised for cosine)."""
        q = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1, self.matrix.shape[1]))
        return _unit_rows(q) if self.metric == "cosine" else q

    def top(self, q: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``depth`` of each query: scores (best first) and corpus positions,
        ties by corpus position."""
        depth = max(1, min(depth, self.n))
        q = np.ascontiguousarray(q, dtype=np.float32)
        try:
            import torch  # noqa: F401 - the dense extra brings it
        except ImportError:
            torch = None
        if torch is not None:
            scores, idx = _torch_top(q, self.matrix, depth, self.metric, self.device)
        else:
            import faiss

            metric = faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT
            scores, idx = faiss.knn(q, self.matrix, depth, metric=metric)
            if self.metric == "l2":
                scores = -scores
        order = np.lexsort((idx, -scores), axis=1)
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(idx, order, axis=1)

    def pair_scores(self, q: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The score of each query against the chunks at ``positions`` (queries x L, -1
        pads), as :meth:`top` scores them; -inf at the pads."""
        safe = np.where(positions >= 0, positions, 0)
        rows = self.matrix[safe]                                  # (queries, L, d)
        if self.metric == "l2":
            out = -np.einsum("qld,qld->ql", rows - q[:, None, :], rows - q[:, None, :])
        else:
            out = np.einsum("qld,qd->ql", rows, q)
        return np.where(positions >= 0, out, -np.inf).astype(np.float32)

    def judge(self, vectors: Any, index_lists: Sequence[Sequence[int]], depth: int) -> Judged:
        """Exact search for each query, and the index's tie-aware recall against it.

        ``index_lists`` are what the index returned for the same queries (corpus
        positions, best first; -1 for an id the corpus does not hold)."""
        q = self.queries(vectors)
        dd = max(1, min(depth, self.n))
        scores, idx = self.top(q, dd + 1 if self.n > dd else dd)
        if self.n > dd:
            nxt = scores[:, dd]
            sure = scores[:, :dd] > (nxt + _tolerance(nxt))[:, None]
        else:
            sure = np.ones((len(q), dd), dtype=bool)
        width = max([dd, *(len(x) for x in index_lists)])
        given = np.full((len(q), width), -1, dtype=np.int64)
        for row, items in enumerate(index_lists):
            unique = list(dict.fromkeys(int(i) for i in items if int(i) >= 0))
            given[row, :len(unique)] = unique
        threshold = scores[:, dd - 1]
        hit = self.pair_scores(q, given) >= (threshold - _tolerance(threshold))[:, None]
        found = np.minimum(hit.sum(axis=1), dd).astype(np.int64)
        return Judged(idx[:, :dd].astype(np.int64), scores[:, :dd].astype(np.float32), sure,
                      found, dd)


def _unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.ascontiguousarray(m / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def _torch_top(q: np.ndarray, matrix: np.ndarray, depth: int, metric: str, device: str
               ) -> tuple[np.ndarray, np.ndarray]:
    """The exact top-``depth`` with torch: the corpus in blocks of :data:`BLOCK` rows, one
    matrix product and one ``topk`` each, a running top-d. On a CPU this is 2.4 times
    faster than faiss's brute force (whose per-score heap costs more than the product,
    benchmarks/bench_lost.py); on a CUDA device the blocks go to it."""
    import torch

    with torch.inference_mode():
        queries = torch.from_numpy(q).to(device)
        best_s = torch.full((len(q), 0), float("-inf"), device=device)
        best_i = torch.zeros((len(q), 0), dtype=torch.int64, device=device)
        q_sq = (queries * queries).sum(dim=1, keepdim=True) if metric == "l2" else None
        for start in range(0, matrix.shape[0], BLOCK):
            block = torch.from_numpy(matrix[start:start + BLOCK]).to(device)
            s = queries @ block.T
            if q_sq is not None:
                s = -(q_sq + (block * block).sum(dim=1)[None, :] - 2 * s)
            s, i = torch.topk(s, min(depth, s.shape[1]), dim=1)
            best_s = torch.cat([best_s, s], dim=1)
            best_i = torch.cat([best_i, i + start], dim=1)
            best_s, keep = torch.topk(best_s, min(depth, best_s.shape[1]), dim=1)
            best_i = torch.gather(best_i, 1, keep)
        return best_s.cpu().numpy(), best_i.cpu().numpy()


def first_stage(retriever: Any) -> Any:
    """The retriever that searches the index: a reranked pipeline's first stage, else itself."""
    return getattr(retriever, "first_stage", retriever)


def exact_vectors(retriever: Any, corpus: Any, device: str = "cpu",
                  page_size: int = 10_000) -> ExactVectors:
    """The vectors ``retriever``'s index searches, read back, with its metric and settings.

    The built-in dense retriever holds them (its embeddings are what its index holds);
    a store retriever's are read from the store in pages. Anything else raises
    :class:`VectorsUnavailable` with the reason, which the report prints as it is.
    """
    base = first_stage(retriever)
    if hasattr(base, "embeddings") and hasattr(base, "index_kind"):
        return ExactVectors(base.embeddings, "ip", "the dense retriever's corpus embeddings",
                            dense_settings(base), device)
    store = getattr(base, "store", None)
    if store is None or not hasattr(store, "iter_vectors"):
        fp = base.fingerprint() if hasattr(base, "fingerprint") else {}
        kind = fp.get("kind", type(base).__name__)
        raise VectorsUnavailable(f"the {kind} retriever gives no vectors to search exactly (the "
                                 "built-in dense retriever and vector stores do)")
    return ExactVectors(_read_store(store, corpus, page_size), store.vector_metric(),
                        f"the {store.describe().get('store', 'store')}'s stored vectors",
                        store.index_settings(), device)


def _read_store(store: Any, corpus: Any, page_size: int) -> np.ndarray:
    """Every chunk's stored vector, placed at its corpus position, a page at a time."""
    matrix: np.ndarray | None = None
    seen = np.zeros(len(corpus), dtype=bool)
    for ids, vectors in store.iter_vectors(page_size):
        page = np.asarray(vectors, dtype=np.float32)
        if page.ndim != 2 or page.shape[0] != len(ids):
            raise VectorsUnavailable("the store gave vectors of uneven lengths")
        if matrix is None:
            matrix = np.zeros((len(corpus), page.shape[1]), dtype=np.float32)
        elif page.shape[1] != matrix.shape[1]:
            raise VectorsUnavailable(f"the store gave vectors of {matrix.shape[1]} and "
                                     f"{page.shape[1]} dimensions")
        rows = [corpus.positions.get(cid, -1) for cid in ids]
        known = [(r, j) for j, r in enumerate(rows) if r >= 0]
        if known:
            at, src = np.array(known).T
            matrix[at] = page[src]
            seen[at] = True
    if matrix is None or not seen.all():
        missing = np.flatnonzero(~seen)
        first = corpus.ids[int(missing[0])] if missing.size else "?"
        raise VectorsUnavailable(f"{missing.size} of {len(corpus)} chunks have no stored vector "
                                 f"(first: {first})")
    return matrix


def dense_settings(dense: Any) -> dict[str, Any]:
    """The built-in dense retriever's index: flat is exact; HNSW with its graph settings."""
    if dense.index_kind != "hnsw":
        return index_settings("flat", {"index": "faiss IndexFlatIP"}, exact=True)
    hnsw = dense.index.hnsw
    settings = {"M": int(hnsw.nb_neighbors(1)), "efConstruction": int(hnsw.efConstruction),
                "efSearch": int(hnsw.efSearch)}
    remedy = (f"raise --hnsw-ef-search (now {settings['efSearch']}) or --hnsw-m (now "
              f"{settings['M']}, the graph is rebuilt) on run and probe, or use --index flat "
              "(exact)")
    return index_settings("hnsw", settings, remedy)
