"""The numbers of docs/method.md §2–3, all computed from a CoverageMatrix.

Conventions, chosen so every value is defined:

* CC of a corpus with no chunks is an error (never a division by zero).
* Normalised entropy ``H / log(N)``: ``support="retrieved"`` takes N = distinct
  chunks retrieved, ``support="corpus"`` takes N = |C|. With no hits, or N = 1,
  there is no spread to measure and the value is 0.
* Gini of the chunk frequencies ``f_c``: ``over="retrieved"`` uses the chunks
  retrieved at least once, ``over="corpus"`` all chunks with zeros. No hits: 0.
* Mean pairwise Jaccard over all pairs i < j (pairs that share nothing count as
  0; two empty result lists count as 0). Fewer than two queries: 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix

if TYPE_CHECKING:
    import scipy.sparse as sp

Support = Literal["retrieved", "corpus"]


def chunk_coverage(m: CoverageMatrix) -> float:
    """CC(T) = |union of R_k(q)| / |C|."""
    if m.n_chunks == 0:
        raise RagcovError("chunk coverage is undefined for an empty corpus")
    return float(np.count_nonzero(m.covered())) / m.n_chunks


def normalized_entropy(frequencies: np.ndarray, support: Support = "retrieved") -> float:
    f = np.asarray(frequencies, dtype=np.float64)
    total = f.sum()
    n = np.count_nonzero(f) if support == "retrieved" else f.size
    if support not in ("retrieved", "corpus"):
        raise RagcovError(f"entropy support must be 'retrieved' or 'corpus', got {support!r}")
    if total <= 0 or n <= 1:
        return 0.0
    p = f[f > 0] / total
    return float(-(p * np.log(p)).sum() / np.log(n))


def gini(frequencies: np.ndarray, over: Support = "retrieved") -> float:
    if over not in ("retrieved", "corpus"):
        raise RagcovError(f"gini must be over 'retrieved' or 'corpus', got {over!r}")
    f = np.asarray(frequencies, dtype=np.float64)
    if over == "retrieved":
        f = f[f > 0]
    n = f.size
    if n == 0 or f.sum() <= 0:
        return 0.0
    x = np.sort(f)
    i = np.arange(1, n + 1)
    return float((2.0 * (i * x).sum()) / (n * x.sum()) - (n + 1.0) / n)


def jaccard_pairs(hits: sp.csr_matrix, block: int = 4096, upper: bool = False
                  ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(rows, cols, Jaccard)`` of the pairs of distinct queries that share a chunk.

    Pairs that share nothing have Jaccard 0 and are never materialised: each block
    of rows is multiplied by ``Hᵀ`` (``H[block] @ Hᵀ`` = intersection sizes), so
    memory is bounded by one block's co-retrieval pairs even when popular chunks
    make ``H Hᵀ`` huge. ``upper`` keeps i < j only. Pairs come grouped by row.
    """
    h = hits.astype(np.int32).tocsr()
    ht = h.T.tocsr()
    sizes = np.diff(h.indptr).astype(np.float64)
    for start in range(0, h.shape[0], block):
        inter = (h[start:start + block] @ ht).tocoo()
        rows = inter.row.astype(np.int64) + start
        keep = inter.col > rows if upper else inter.col != rows
        r, c, d = rows[keep], inter.col[keep].astype(np.int64), inter.data[keep].astype(np.float64)
        union = sizes[r] + sizes[c] - d
        yield r, c, np.divide(d, union, out=np.zeros_like(d), where=union > 0)


#: Co-retrieved pairs (Σ over chunks of f²) worked out exactly; past this many the mean
#: Jaccard is estimated from random pairs, since the pairs grow with the square of the
#: queries (a million production queries over popular chunks are ~10¹¹ pairs).
EXACT_PAIR_BUDGET = 200_000_000
SAMPLED_PAIRS = 200_000


def mean_pairwise_jaccard(m: CoverageMatrix | sp.csr_matrix, block: int = 4096) -> float:
    """Mean Jaccard of R_k(q_i), R_k(q_j) over all pairs i < j (see :func:`pairwise_jaccard`)."""
    return pairwise_jaccard(m, block)[0]


def pairwise_jaccard(m: CoverageMatrix | sp.csr_matrix, block: int = 4096,
                     seed: int = 0) -> tuple[float, int]:
    """The mean Jaccard over all pairs i < j, and how many random pairs it was estimated
    from (0: exact, every co-retrieved pair counted by :func:`jaccard_pairs`).

    Exact while the co-retrieved pairs are at most :data:`EXACT_PAIR_BUDGET`; beyond,
    the mean of :data:`SAMPLED_PAIRS` uniformly drawn pairs of distinct queries (seeded,
    so a report is reproducible), whose standard error is below 0.5/√pairs ≈ 0.0011.
    """
    hits = m.hits if isinstance(m, CoverageMatrix) else m
    n = hits.shape[0]
    if n < 2:
        return 0.0, 0
    h = hits.astype(np.int32).tocsr()
    freq = np.asarray(h.sum(axis=0)).ravel().astype(np.float64)
    if float(freq @ freq) <= EXACT_PAIR_BUDGET:
        total = sum(float(jac.sum()) for _r, _c, jac in jaccard_pairs(h, block, upper=True))
        return total / (n * (n - 1) / 2.0), 0
    rng = np.random.default_rng(seed)
    i = rng.integers(n, size=SAMPLED_PAIRS)
    j = rng.integers(n - 1, size=SAMPLED_PAIRS)
    j += j >= i  # uniform over the other n - 1 queries
    inter = np.asarray(h[i].multiply(h[j]).sum(axis=1)).ravel().astype(np.float64)
    sizes = np.diff(h.indptr).astype(np.float64)
    union = sizes[i] + sizes[j] - inter
    jac = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return float(jac.mean()), SAMPLED_PAIRS


def per_document(m: CoverageMatrix) -> dict[str, tuple[int, int]]:
    """doc id -> (chunks, covered chunks), in first-seen document order."""
    covered = m.covered()
    docs, inverse = m.documents()
    n_chunks = np.bincount(inverse, minlength=len(docs))
    n_cov = np.bincount(inverse, weights=covered, minlength=len(docs)).astype(np.int64)
    return {d: (int(n), int(c)) for d, n, c in zip(docs, n_chunks, n_cov)}


@dataclass(frozen=True)
class RedundantTest:
    """A test :func:`redundant_tests` lists, and the witness a reader can check.

    The witness is the test whose retrieved set contains this one's (``subsumed_by``,
    see :func:`subsumers`), or else the test it overlaps most (``most_similar``, the
    highest Jaccard).
    """

    query_id: str
    unique_chunks: int          # chunks no other test retrieved
    subsumed_by: str | None     # a test whose retrieved set contains this one's
    most_similar: str | None    # the other test with the highest Jaccard
    jaccard: float              # that Jaccard
    reasons: tuple[str, ...]    # "no-unique-contribution", "near-duplicate"
    #: In :func:`droppable_together`'s set: removed with the others marked so, no chunk is lost
    droppable: bool = False

    @property
    def why(self) -> str:
        if self.subsumed_by is not None:
            return f"retrieves a subset of {self.subsumed_by}"
        if self.most_similar is not None:
            return f"Jaccard {self.jaccard:.2f} with {self.most_similar}"
        return "retrieves nothing"


def unique_contributions(m: CoverageMatrix) -> np.ndarray:
    """Per query, how many of its chunks no other query retrieved."""
    only = m.chunk_frequencies() == 1
    return np.bincount(m.hit_rows(), weights=only[m.indices],
                       minlength=m.n_queries).astype(np.int64)


def nearest_neighbours(m: CoverageMatrix) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the other query with the highest Jaccard (-1 if none) and that Jaccard."""
    n = m.n_queries
    best = np.full(n, -1, dtype=np.int64)
    best_j = np.zeros(n)
    for r, c, jac in jaccard_pairs(m.hits):
        # Highest Jaccard per row, ties to the earlier query.
        order = np.lexsort((c, -jac, r))
        r, c, jac = r[order], c[order], jac[order]
        first = np.ones(len(r), dtype=bool)
        first[1:] = r[1:] != r[:-1]
        best[r[first]] = c[first]
        best_j[r[first]] = jac[first]
    return best, best_j


def redundant_tests(m: CoverageMatrix, jaccard_threshold: float = 0.8) -> list[RedundantTest]:
    """Tests that add nothing the rest of the suite does not already cover.

    A test is listed when it retrieves no chunk that another test does not also
    retrieve (no unique contribution), or when its retrieved set has Jaccard ≥
    ``jaccard_threshold`` with another test's (near duplicate). Both reasons are
    named.
    """
    unique = unique_contributions(m)
    best, best_j = nearest_neighbours(m)
    listed = []
    for i in range(m.n_queries):
        reasons = []
        if unique[i] == 0 and m.n_queries > 1:
            reasons.append("no-unique-contribution")
        if best[i] >= 0 and best_j[i] >= jaccard_threshold:
            reasons.append("near-duplicate")
        if reasons:
            listed.append((i, tuple(reasons)))
    if not listed:
        return []
    sub = subsumers(m)
    drop = droppable_together(m)
    return [RedundantTest(m.query_ids[i], int(unique[i]),
                          m.query_ids[sub[i]] if sub[i] >= 0 else None,
                          m.query_ids[best[i]] if best[i] >= 0 else None,
                          float(best_j[i]), reasons, bool(drop[i]))
            for i, reasons in listed]


def droppable_together(m: CoverageMatrix) -> np.ndarray:
    """Per test, whether it is in one set of tests that can all be removed at once with
    every covered chunk still covered.

    The pairwise view cannot say that: both tests of an identical pair are each
    redundant, and removing both loses their chunks. Here a cover is built (every test
    with a chunk of its own, then greedily the test adding the most chunks still
    uncovered, ties to the earlier test), then made minimal by trying to drop each kept
    test, last kept first; the tests outside it are the set. Its complement covers what
    the suite covers, and is minimal (no test of it can go), not always the smallest.
    """
    n = m.n_queries
    rows = [m.indices[m.indptr[i]:m.indptr[i + 1]] for i in range(n)]
    kept = np.zeros(n, dtype=bool)
    covered = np.zeros(m.n_chunks, dtype=bool)
    kept[unique_contributions(m) > 0] = True
    for i in np.flatnonzero(kept):
        covered[rows[i]] = True
    order: list[int] = [int(i) for i in np.flatnonzero(kept)]
    # Lazy greedy: a test's gain only falls as chunks get covered.
    import heapq

    heap = [(-len(rows[i]), i) for i in range(n) if not kept[i] and len(rows[i])]
    heapq.heapify(heap)
    while heap and not covered[m.indices].all():
        neg, i = heapq.heappop(heap)
        gain = int(np.count_nonzero(~covered[rows[i]]))
        if gain == 0:
            continue
        if heap and gain < -heap[0][0] or (heap and gain == -heap[0][0] and heap[0][1] < i):
            heapq.heappush(heap, (-gain, i))
            continue
        kept[i] = True
        covered[rows[i]] = True
        order.append(i)
    times = np.zeros(m.n_chunks, dtype=np.int64)
    for i in order:
        np.add.at(times, rows[i], 1)
    for i in reversed(order):
        if len(rows[i]) and (times[rows[i]] >= 2).all():
            kept[i] = False
            np.subtract.at(times, rows[i], 1)
    return ~kept


def subsumers(m: CoverageMatrix) -> np.ndarray:
    """Per test, a test whose retrieved set contains its own (-1 if none).

    Ties: among supersets the smallest wins (the highest Jaccard), then the earlier
    test. Two tests with identical sets subsume each other; only the later is said to
    be subsumed by the earlier, so no pair names each other.
    """
    sizes = np.diff(m.indptr).astype(np.float64)
    best = np.full(m.n_queries, -1, dtype=np.int64)
    best_j = np.full(m.n_queries, -1.0)
    for r, c, jac in jaccard_pairs(m.hits):
        # Intersection from Jaccard and the two sizes: |A∩B| = J (|A|+|B|) / (1+J).
        inter = np.rint(jac * (sizes[r] + sizes[c]) / (1.0 + jac))
        ok = (sizes[r] > 0) & (inter == sizes[r]) & ((sizes[c] > sizes[r]) | (c < r))
        r, c, jac = r[ok], c[ok], jac[ok]
        order = np.lexsort((c, -jac, r))
        r, c, jac = r[order], c[order], jac[order]
        first = np.ones(len(r), dtype=bool)
        first[1:] = r[1:] != r[:-1]
        for row, col, j in zip(r[first], c[first], jac[first]):
            if j > best_j[row] or (j == best_j[row] and col < best[row]):
                best[row], best_j[row] = col, j
    return best


@dataclass(frozen=True)
class DuplicateGroup:
    chunk_ids: list[str]  # in corpus order
    doc_ids: list[str]    # distinct, in first-seen order
    covered: int          # how many of the group some test retrieved


def duplicate_groups(m: CoverageMatrix, texts: Mapping[str, str]) -> list[DuplicateGroup]:
    """Groups of two or more chunks with the same non-empty text, by first occurrence.

    A retriever scores identical chunks identically, so which of them lands in the top
    k is its tie rule (ragcov's dense and BM25 retrievers take corpus order), and the
    others stay uncovered however good the suite is. The groups live here, with the
    numbers, because what they explain is a number: a chunk coverage held down by
    ties rather than by missing tests; reports list them so it is recognised as such.
    """
    in_order = [texts.get(cid, "") for cid in m.chunk_ids]
    # Counted first (in C): at a million chunks almost every text is unique, and only the
    # repeated ones need their chunks gathered.
    seen = Counter(in_order)
    by_text: dict[str, list[int]] = {}
    for j, text in enumerate(in_order):
        if text and seen[text] > 1:
            by_text.setdefault(text, []).append(j)
    return groups_of(m, [cols for cols in by_text.values() if len(cols) > 1])


def groups_of(m: CoverageMatrix, groups: Iterable[Sequence[int]]) -> list[DuplicateGroup]:
    """:class:`DuplicateGroup` of each group of ``m``'s columns (chunks of one text)."""
    covered = m.covered()
    return [DuplicateGroup([m.chunk_ids[j] for j in cols],
                           list(dict.fromkeys(str(m.doc_ids[j]) for j in cols)),
                           int(covered[np.asarray(cols, dtype=np.int64)].sum()))
            for cols in groups]


def coverage_curve(m: CoverageMatrix, order: Sequence[int] | np.ndarray) -> np.ndarray:
    """CC after each of the first n queries of ``order`` (n = 1..len(order))."""
    if m.n_chunks == 0:
        raise RagcovError("chunk coverage is undefined for an empty corpus")
    order = np.asarray(order, dtype=np.int64)
    if order.size == 0:
        return np.zeros(0)
    sub = m.select_rows(order)
    # The first position at which each chunk is reached, then a running count.
    first = np.full(m.n_chunks, order.size, dtype=np.int64)
    np.minimum.at(first, sub.indices, sub.hit_rows())
    reached = np.bincount(first[first < order.size], minlength=order.size)
    return np.cumsum(reached) / m.n_chunks
