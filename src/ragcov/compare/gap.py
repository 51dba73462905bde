"""What production retrieves that the tests never do (``ragcov gap --tests T --traffic P``).

Both files are over one corpus: a test run and imported production traces. Every
production hit counts once, so a chunk production retrieves a thousand times weighs
a thousand times more than one it retrieved once: that is the share of real traffic
whose retrieved evidence some test also exercised.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.compare.recording import Recording, check_comparable, read_pair
from ragcov.data.columns import best_hits, chunk_idx_of_hits, hit_rows
from ragcov.errors import RagcovError
from ragcov.reporters.names import chunk_name

# Example production queries kept per untested chunk.
EXAMPLES = 3


@dataclass(frozen=True)
class ExampleQuery:
    query_id: str
    text: str
    rank: int


@dataclass(frozen=True)
class UntestedChunk:
    chunk_id: str
    doc_id: str
    traffic_hits: int
    example_queries: list[ExampleQuery]
    name: str = ""  # DOC:N, N from 1: the chunk as a person reads it


@dataclass(frozen=True)
class UntestedDocument:
    doc_id: str
    chunks: int                    # chunks of the document
    untested_chunks: int           # of those, retrieved by production and not by the tests
    traffic_hits: int              # production hits on its untested chunks
    total_traffic_hits: int        # production hits on the whole document


@dataclass
class TrafficGap:
    tests: Recording
    traffic: Recording
    total_hits: int                # production hits
    tested_hits: int               # of those, on chunks the tests retrieve
    traffic_chunks: int            # distinct chunks production retrieved
    tested_traffic_chunks: int     # of those, retrieved by the tests too
    untested_total: int            # distinct production chunks no test retrieves
    untested: list[UntestedChunk]  # the top of them by traffic hits
    documents: list[UntestedDocument] = field(default_factory=list)

    # None when the traffic has no hits: 0 of 0 is no coverage at all, not 0%, as diff's
    # mean Jaccard and faults' APFD are None when there is nothing to average.
    @property
    def traffic_weighted_coverage(self) -> float | None:
        return self.tested_hits / self.total_hits if self.total_hits else None

    @property
    def traffic_chunk_coverage(self) -> float | None:
        return self.tested_traffic_chunks / self.traffic_chunks if self.traffic_chunks else None

    @property
    def test_coverage(self) -> float:
        """The tests' own chunk coverage of the corpus, for scale."""
        n = self.tests.n_chunks
        return float(self.tests.covered().sum()) / n if n else 0.0


#: Runs a function over argument tuples somewhere (a Dask cluster), results in order.
MapRows = Callable[[Callable[..., np.ndarray], list[tuple[Any, ...]]], list[np.ndarray]]
#: Traffic hits counted per task when they are counted elsewhere (several per worker);
#: a task takes a range of queries holding about this many hits (k per query).
ROWS_PER_TASK = 2_000_000


def traffic_gap(tests_path: str | os.PathLike[str], traffic_path: str | os.PathLike[str],
                top: int | None = 100, allow_different_k: bool = False,
                allow_different_retriever: bool = False,
                map_rows: MapRows | None = None) -> TrafficGap:
    """Compare a test run with production traffic over the same corpus.

    An imported trace records no retriever (``{"kind": "traces"}``), so the
    retriever is compared only when neither side is one. With ``map_rows`` (a
    Dask cluster) the traffic's hits are never read here: ranges of them are
    counted per chunk where ``map_rows`` runs them, and the counts summed.
    """
    # Coverage sets and hit counts need only the chunk of each hit; the example
    # queries of the few chunks shown are looked up afterwards.
    tests, traffic = read_pair(tests_path, traffic_path, (
        {"queries": False, "chunks": False}, {"queries": False, "hits": map_rows is None}))
    traces = "traces" in (tests.meta.retriever.get("kind"), traffic.meta.retriever.get("kind"))
    check_comparable(tests, traffic, allow_different_k, allow_different_retriever or traces)
    if tests.n_chunks != traffic.n_chunks:
        raise RagcovError(f"{tests.path} and {traffic.path} list different chunks")
    hits = None if map_rows is None else _hits_elsewhere(traffic, map_rows)
    return gap_recordings(tests, traffic, top, hits)


def _hits_elsewhere(traffic: Recording, map_rows: MapRows) -> np.ndarray:
    """Production hits per chunk position, counted over ranges of the hits table by
    ``map_rows`` (the file must be where it runs them: shared storage on a cluster)."""
    # stored: position -> idx as stored (0..n-1 when ragcov wrote it)
    low, high, stored = hit_rows(traffic.path)
    if low is None or high is None:
        return np.zeros(traffic.n_chunks, dtype=np.int64)
    path = os.path.abspath(traffic.path)
    step = max(1, ROWS_PER_TASK // max(1, traffic.meta.k))
    tasks = [(path, a, min(a + step, high + 1)) for a in range(low, high + 1, step)]
    by_idx = np.zeros(int(stored.max()) + 1 if stored.size else 0, dtype=np.int64)
    for counts in map_rows(chunk_hits, tasks):
        if counts.size > by_idx.size:
            raise RagcovError(f"{traffic.path}: damaged data file (hits name an unknown chunk)")
        by_idx[:counts.size] += counts
    hits = by_idx[stored]
    if hits.sum() != by_idx.sum():
        raise RagcovError(f"{traffic.path}: damaged data file (hits name an unknown chunk)")
    return hits


def chunk_hits(path: str, low: int, high: int) -> np.ndarray:
    """How often each stored chunk idx is hit by the queries whose stored idx is ``low``
    to ``high - 1`` (one task of :func:`_hits_elsewhere`, run on a worker)."""
    idx = chunk_idx_of_hits(path, low, high)
    if idx.size and idx.min() < 0:
        raise RagcovError(f"{path}: damaged data file (hits name an unknown chunk)")
    return np.bincount(idx)


def gap_recordings(tests: Recording, traffic: Recording, top: int | None = 100,
                   hits: np.ndarray | None = None) -> TrafficGap:
    """The gap; ``hits`` is the traffic's hits per chunk when counted elsewhere."""
    tested = tests.covered()
    if hits is None:
        hits = np.bincount(traffic.hit_chunk, minlength=traffic.n_chunks)
    seen = hits > 0
    untested_mask = seen & ~tested
    untested = np.flatnonzero(untested_mask)
    untested = untested[np.argsort(-hits[untested], kind="stable")]  # ties: corpus order
    shown = untested if top is None else untested[:top]
    return TrafficGap(
        tests=tests, traffic=traffic, total_hits=int(hits.sum()),
        tested_hits=int(hits[tested].sum()), traffic_chunks=int(seen.sum()),
        tested_traffic_chunks=int((seen & tested).sum()), untested_total=int(untested.size),
        untested=_with_examples(traffic, shown, hits),
        documents=_documents(traffic, hits, untested_mask))


def _with_examples(traffic: Recording, chunks: np.ndarray, hits: np.ndarray
                   ) -> list[UntestedChunk]:
    """Each chunk with the production queries that ranked it highest (best rank first)."""
    if chunks.size == 0:
        return []
    if traffic.hit_rank is None:
        picks = _examples_from_file(traffic, chunks)
        ids = {row: qid for p in picks.values() for row, qid, _r, _t in p}
        texts = {row: text for p in picks.values() for row, _q, _r, text in p}
    else:
        picks = _examples_in_memory(traffic, chunks)
        ids = {row: traffic.query_ids[row] for p in picks.values() for row, *_ in p}
        texts = traffic.query_texts(sorted(ids))
    names = [chunk_name(doc, p) for doc, p in traffic.chunk_names(chunks.tolist())]
    return [UntestedChunk(traffic.chunk_ids[j], str(traffic.doc_ids[j]), int(hits[j]),
                          [ExampleQuery(ids[row], texts[row], rank)
                           for row, _q, rank, _t in picks[int(j)]], name)
            for j, name in zip(chunks, names)]


Pick = list[tuple[int, str, int, str]]  # (query row, id, rank, text), best first


def _examples_in_memory(traffic: Recording, chunks: np.ndarray) -> dict[int, Pick]:
    want = np.zeros(traffic.n_chunks, dtype=bool)
    want[chunks] = True
    sel = np.flatnonzero(want[traffic.hit_chunk])
    assert traffic.hit_rank is not None
    c, q, r = traffic.hit_chunk[sel], traffic.hit_query[sel], traffic.hit_rank[sel]
    order = np.lexsort((q, r, c))  # by chunk, then rank, then recording order
    c, q, r = c[order], q[order], r[order]
    starts = np.searchsorted(c, chunks)
    return {int(j): [(int(q[i]), "", int(r[i]), "") for i in range(s, min(s + EXAMPLES, c.size))
                     if c[i] == j] for j, s in zip(chunks, starts)}


def _examples_from_file(traffic: Recording, chunks: np.ndarray) -> dict[int, Pick]:
    """One SQL pass over the hits of just these chunks (SQLite scans; nothing is parsed)."""
    out: dict[int, Pick] = {int(j): [] for j in chunks}
    for j, qidx, qid, rank, text in best_hits(traffic.path, chunks.tolist(), EXAMPLES):
        pick = out[j]
        if len(pick) < EXAMPLES:
            pick.append((int(qidx), qid, int(rank), text))
    return out




def _documents(traffic: Recording, hits: np.ndarray, untested: np.ndarray
               ) -> list[UntestedDocument]:
    """Documents holding untested production chunks, most untested traffic first."""
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(d, len(index)) for d in traffic.doc_ids), np.int64,
                        traffic.n_chunks)
    nd = len(index)
    chunks = np.bincount(codes, minlength=nd)
    n_untested = np.bincount(codes, weights=untested, minlength=nd).astype(np.int64)
    u_hits = np.bincount(codes, weights=np.where(untested, hits, 0), minlength=nd).astype(np.int64)
    total = np.bincount(codes, weights=hits, minlength=nd).astype(np.int64)
    names = list(index)
    docs = np.flatnonzero(n_untested > 0)
    docs = docs[np.argsort(-u_hits[docs], kind="stable")]
    return [UntestedDocument(names[d], int(chunks[d]), int(n_untested[d]), int(u_hits[d]),
                             int(total[d])) for d in docs]
