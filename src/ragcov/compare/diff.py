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
from typing import Any

import numpy as np

from ragcov.compare.recording import Recording, check_comparable, read_pair
from ragcov.data.schema import Meta
from ragcov.errors import RagcovError

MATCHES = ("id", "text")


class TwoSides:
    """Coverage of one group of chunks (a document, a topic) in BASE and HEAD, from the
    ``base_chunks``, ``base_covered``, ``head_chunks`` and ``head_covered`` it holds."""

    base_chunks: int
    base_covered: int
    head_chunks: int
    head_covered: int

    @property
    def base(self) -> float | None:
        """Coverage in BASE (None: the group has no chunk in BASE's corpus)."""
        return self.base_covered / self.base_chunks if self.base_chunks else None

    @property
    def head(self) -> float | None:
        return self.head_covered / self.head_chunks if self.head_chunks else None

    @property
    def change(self) -> float:
        return (self.head or 0.0) - (self.base or 0.0)


@dataclass(frozen=True)
class DocumentChange(TwoSides):
    doc_id: str
    base_chunks: int
    base_covered: int
    head_chunks: int
    head_covered: int


@dataclass(frozen=True)
class DriftChange:
    """One relation's violation rate in BASE and HEAD (``ragcov drift``); None where that
    file's drift run did not test it."""

    relation: str
    base: float | None
    head: float | None
    base_tests: int
    head_tests: int


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
    gained_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    lost_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    match: str = "id"  # how queries were paired: by id, or by text
    # Reachability's blast radius when both files were probed (else None): HEAD chunk
    # ids that became unreachable, BASE chunk ids the change rescued.
    became_unreachable: list[str] | None = None
    rescued: list[str] | None = None
    became_unreachable_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    rescued_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, int))
    # Per-topic coverage change when either file holds topics of its own corpus (else
    # None): ragcov.topics.coverage.TopicDiff, set by the api's coverage_diff.
    topics: Any = None
    # The relations' violation rates when either file holds a drift run (else None).
    drift: list[DriftChange] | None = None
    # Per side whose drift run judged an earlier suite (run --append since): what to say.
    drift_notes: list[str] = field(default_factory=list)
    # An index change's blast radius when both files hold the probe run's exact check
    # (else None): HEAD chunk ids the index now hides (their BASE counterpart it did not),
    # BASE chunk ids it hid that HEAD reaches; and each side's index recall.
    became_index_hidden: list[str] | None = None
    index_rescued: list[str] | None = None
    index_recall: dict[str, dict[str, float | None]] | None = None
    # The same documents cut differently (different corpora sharing documents): the
    # chunking change and the text-span diff (ragcov.compare.textdiff.TextDiff), else None.
    text: Any = None

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
    def mean_jaccard(self) -> float | None:
        """None when no query is in both files: nothing was compared, nothing is the same."""
        return float(self.jaccard.mean()) if self.jaccard.size else None

    @property
    def query_overlap(self) -> float | None:
        """The share of the tests in both files whose top-k is the same set (None: no test
        in both): retrieval-fairness's query overlap."""
        return float((self.jaccard >= 1.0).mean()) if self.jaccard.size else None

    @property
    def base_gini(self) -> float:
        return exposure_gini(self.base)

    @property
    def head_gini(self) -> float:
        return exposure_gini(self.head)

    @property
    def gini_rise(self) -> float:
        """HEAD's exposure Gini less BASE's: how much more retrievals concentrate."""
        return self.head_gini - self.base_gini

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
                  allow_different_retriever: bool = False, match: str = "id") -> CoverageDiff:
    """Compare two data files; refuses k or retriever differences unless allowed.

    ``match="text"`` pairs queries by their text: a test run and imported traces name
    the same question differently (a test id, a trace id).
    """
    if match not in MATCHES:
        raise RagcovError(f"--match must be one of {', '.join(MATCHES)}, got {match!r}")
    from ragcov.data import CoverageData

    # Equal corpus hashes mean the same chunk ids and texts in order: read them once.
    same = CoverageData(base_path).meta().corpus_hash == CoverageData(head_path).meta().corpus_hash
    base, head = read_pair(base_path, head_path, ({}, {"chunks": not same}))
    if same:
        head.chunk_ids, head.doc_ids, head.chunk_count = base.chunk_ids, base.doc_ids, None
    check_comparable(base, head, allow_different_k, allow_different_retriever,
                     allow_corpus=True)
    if match == "text":
        base.read_query_texts()
        head.read_query_texts()
    d = diff_recordings(base, head, match)
    _blast_radius(d, base_path, head_path)
    d.drift, d.drift_notes = drift_changes(base_path, head_path)
    if not d.same_corpus:
        from ragcov.compare.textdiff import text_diff

        d.text = text_diff(d, base_path, head_path)
    return d


def drift_changes(base_path: str | os.PathLike[str], head_path: str | os.PathLike[str]
                  ) -> tuple[list[DriftChange] | None, list[str]]:
    """Each relation's violation rate on both sides, when either file holds a drift run,
    and a note per side whose drift run judged an earlier suite than the file holds."""
    from ragcov.data import CoverageData
    from ragcov.data.drift import read_drift
    from ragcov.drift.summary import summarize_drift

    sides = []
    for path in (base_path, head_path):
        record = read_drift(CoverageData(path))
        sides.append(None if record is None else summarize_drift(record))
    if sides[0] is None and sides[1] is None:
        return None, []
    notes = [f"{side}: {s.earlier_suite}" for side, s in zip(("BASE", "HEAD"), sides)
             if s is not None and s.earlier_suite]
    names = list(dict.fromkeys(r.relation for s in sides if s is not None for r in s.relations))
    out = []
    for name in names:
        b, h = (None if s is None else s.relation(name) for s in sides)
        out.append(DriftChange(name, None if b is None else b.rate, None if h is None else h.rate,
                               0 if b is None else b.n, 0 if h is None else h.n))
    return out, notes


def _blast_radius(d: CoverageDiff, base_path: str | os.PathLike[str],
                  head_path: str | os.PathLike[str]) -> None:
    """Chunks that became unreachable or were rescued, when both sides were probed."""
    from ragcov.data import CoverageData
    from ragcov.data.probes import read_probes
    from ragcov.reachability.audit import blast_radius, statuses

    probes = [read_probes(CoverageData(p), r.n_chunks)
              for p, r in ((base_path, d.base), (head_path, d.head))]
    if any(p is None for p in probes):
        return
    base_status = statuses(d.base.covered(), probes[0])
    head_status = statuses(d.head.covered(), probes[1])
    became, rescued = blast_radius(base_status, head_status, d._b2h)
    d.became_unreachable = [d.head.chunk_ids[j] for j in became]
    d.rescued = [d.base.chunk_ids[j] for j in rescued]
    d.became_unreachable_rows, d.rescued_rows = became, rescued
    _index_radius(d, (base_path, head_path), probes, (base_status, head_status))


def _index_radius(d: CoverageDiff, paths: tuple[Any, Any], probes: list[Any],
                  status: tuple[np.ndarray, np.ndarray]) -> None:
    """What an index change did: chunks it newly hides and chunks it no longer hides, when
    both files hold the exact check (:mod:`ragcov.reachability.stages`)."""
    from ragcov.data import CoverageData
    from ragcov.data.stages import PROBE, TEST, read_stages
    from ragcov.reachability.audit import COVERED, UNREACHABLE, UNTESTED
    from ragcov.reachability.stages import INDEX, causes, side_recall

    hidden, recall = [], {}
    for name, path, rec, pm, st in zip(("base", "head"), paths, (d.base, d.head), probes, status):
        record = read_stages(CoverageData(path), rec.n_chunks, {p: i for i, p in enumerate(pm.ids)},
                             {q: i for i, q in enumerate(rec.query_ids)})
        if record is None or not (record.meta.get("exact") or {}).get("checked"):
            return
        hidden.append(causes(record, st == UNREACHABLE, pm, rec.n_chunks) == INDEX)
        recall[name] = {"tests": side_recall(record, TEST), "probes": side_recall(record, PROBE)}
    paired = np.flatnonzero(d._b2h >= 0)
    heads = d._b2h[paired]
    now = hidden[1][heads] & ~hidden[0][paired]
    rescued = hidden[0][paired] & np.isin(status[1][heads], (COVERED, UNTESTED))
    d.became_index_hidden = [d.head.chunk_ids[j] for j in heads[now]]
    d.index_rescued = [d.base.chunk_ids[j] for j in paired[rescued]]
    d.index_recall = recall


def exposure_gini(rec: Recording) -> float:
    """The Gini of retrievals over every chunk of the corpus (unretrieved chunks count)."""
    from ragcov.metrics import gini

    occ = np.bincount(rec.hit_chunk, minlength=rec.n_chunks).astype(np.float64)
    return float(gini(occ, over="corpus")) if occ.sum() else 0.0


def gate_failures(d: CoverageDiff, max_gini_rise: float | None, min_query_overlap: float | None
                  ) -> list[str]:
    """``--max-gini-rise`` (Gini points, 0-1) and ``--min-query-overlap`` (percent)."""
    out = []
    if max_gini_rise is not None and d.gini_rise > max_gini_rise:
        out.append(f"Gini failure: exposure Gini rose by {d.gini_rise:.3f} ({d.base_gini:.3f} -> "
                   f"{d.head_gini:.3f}), more than max-gini-rise={max_gini_rise:g}")
    if min_query_overlap is not None:
        overlap = d.query_overlap
        if overlap is None:
            raise RagcovError("--min-query-overlap needs tests in both files (none is; --match "
                              "text pairs them by their text)")
        if overlap * 100 < min_query_overlap:
            out.append(f"Overlap failure: {overlap * 100:.2f}% of {d.queries_compared} tests "
                       f"retrieve the same top-k, less than min-query-overlap={min_query_overlap:g}")
    return out


def diff_recordings(base: Recording, head: Recording, match: str = "id") -> CoverageDiff:
    same = base.chunk_ids == head.chunk_ids and (
        base.meta.corpus_hash == head.meta.corpus_hash
        or base.chunk_hashes() == head.chunk_hashes())
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
    changes = [DocumentChange(str(docs[d]), bn, bc, hn, hc) for d, bn, bc, hn, hc in zip(
        range(nd), b_chunks.tolist(), b_cov.tolist(), h_chunks.tolist(), h_cov.tolist())]
    # Most changed first (ties: corpus order), sorted by NumPy rather than per object.
    in_both = np.flatnonzero((b_chunks > 0) & (h_chunks > 0))
    change = h_cov[in_both] / h_chunks[in_both] - b_cov[in_both] / b_chunks[in_both]
    both = [changes[d] for d in in_both[np.argsort(-np.abs(change), kind="stable")]]
    rows_b, rows_h, jac, only_b, only_h = _query_jaccard(base, head, b2h, match)
    return CoverageDiff(
        base=base, head=head, same_corpus=same, base_covered=int(cov_b.sum()),
        head_covered=int(cov_h.sum()), gained=[head.chunk_ids[j] for j in gained],
        lost=[base.chunk_ids[j] for j in lost], documents=both,
        new_documents=[c for c in changes if not c.base_chunks],
        removed_documents=[c for c in changes if not c.head_chunks],
        matched_chunks=int((b2h >= 0).sum()), query_base_rows=rows_b, query_head_rows=rows_h,
        jaccard=jac, queries_only_base=only_b, queries_only_head=only_h, _b2h=b2h,
        gained_rows=gained, lost_rows=lost, match=match)


def match_chunks(base: Recording, head: Recording) -> np.ndarray:
    """Per BASE chunk, the HEAD chunk with the same text (-1: none).

    Repeated texts pair up in order: the n-th copy in BASE with the n-th in HEAD,
    preferring a copy in the same document.
    """
    pools: dict[tuple[str, str], list[int]] = {}
    by_hash: dict[str, list[int]] = {}
    head_hashes = head.chunk_hashes()
    for j in range(head.n_chunks - 1, -1, -1):  # reversed: pop() takes the first
        h = head_hashes[j]
        pools.setdefault((str(head.doc_ids[j]), h), []).append(j)
        by_hash.setdefault(h, []).append(j)
    taken = np.zeros(head.n_chunks, dtype=bool)
    out = np.full(base.n_chunks, -1, dtype=np.int64)
    for same_doc in (True, False):  # every same-document copy first, then any copy
        for i, h in enumerate(base.chunk_hashes()):
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
    names = list(dict.fromkeys([*dict.fromkeys(a.tolist()), *dict.fromkeys(b.tolist())]))
    index = {d: i for i, d in enumerate(names)}
    ca = np.fromiter(map(index.__getitem__, a.tolist()), np.int64, len(a))
    cb = ca if b is a else np.fromiter(map(index.__getitem__, b.tolist()), np.int64, len(b))
    return names, ca, cb


def _query_jaccard(base: Recording, head: Recording, b2h: np.ndarray, match: str = "id"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Jaccard of the retrieved sets of every query in both files, all rows at once.

    Each side becomes a (queries x k) table of chunk numbers in one numbering
    (HEAD's, with BASE's unmatched chunks after it), sorted and de-duplicated per
    row; the intersections are then k column comparisons over the whole table, with
    no Python loop over queries.
    """
    keys_b, keys_h = ((base.texts, head.texts) if match == "text"
                      else (base.query_ids, head.query_ids))
    assert keys_b is not None and keys_h is not None
    if keys_b == keys_h:
        rows_b = rows_h = np.arange(base.n_queries, dtype=np.int64)
    else:
        # The n-th BASE query with a key pairs with the n-th HEAD one (texts repeat).
        pools: dict[str, list[int]] = {}
        for i in range(len(keys_h) - 1, -1, -1):
            pools.setdefault(keys_h[i], []).append(i)
        pairs = [(i, pools[q].pop()) for i, q in enumerate(keys_b) if pools.get(q)]
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        rows_b, rows_h = arr[:, 0], arr[:, 1]
    n = rows_b.size
    mapped = None if (b2h == np.arange(b2h.size)).all() and b2h.size <= head.n_chunks else \
        np.where(b2h >= 0, b2h, head.n_chunks + np.arange(base.n_chunks))
    a = _table(base, rows_b, n, mapped, pad=-1)
    h = _table(head, rows_h, n, None, pad=-2)
    size_b, size_h = (a >= 0).sum(axis=1), (h >= 0).sum(axis=1)
    inter = np.zeros(n, dtype=np.int64)
    for j in range(h.shape[1]):  # rows hold distinct chunks: each HEAD one matches once
        inter += (a == h[:, j:j + 1]).any(axis=1)
    union = size_b + size_h - inter
    jac = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return rows_b, rows_h, jac, base.n_queries - n, head.n_queries - n


def _table(rec: Recording, rows: np.ndarray, n: int, mapped: np.ndarray | None, pad: int
           ) -> np.ndarray:
    """The chunks each compared query retrieved, one row per query, padded with ``pad``."""
    if n == rec.n_queries and (rows == np.arange(n)).all():  # the same queries, in order
        q, c = rec.hit_query, rec.hit_chunk
    else:
        common = np.full(rec.n_queries, -1, dtype=np.int64)
        common[rows] = np.arange(n)
        q = common[rec.hit_query]
        keep = q >= 0
        q, c = q[keep], rec.hit_chunk[keep]
    if mapped is not None:
        c = mapped[c]
    if q.size and (q[1:] < q[:-1]).any():  # hits not grouped by query: group them
        order = np.argsort(q, kind="stable")
        q, c = q[order], c[order]
    counts = np.bincount(q, minlength=n)
    width = int(counts.max()) if counts.size else 0
    # Every query the same number of hits, grouped: a reshape; otherwise a scatter.
    table = c.reshape(n, width).copy() if q.size == n * width else _scatter(q, c, n, counts, pad)
    table.sort(axis=1)
    repeat = np.zeros(table.shape, dtype=bool)
    repeat[:, 1:] = table[:, 1:] == table[:, :-1]
    table[repeat] = pad  # a chunk listed twice by one query counts once
    return table


def _scatter(q: np.ndarray, c: np.ndarray, n: int, counts: np.ndarray, pad: int) -> np.ndarray:
    table = np.full((n, int(counts.max()) if counts.size else 0), pad, dtype=np.int64)
    table[q, np.arange(q.size) - (np.cumsum(counts) - counts)[q]] = c
    return table
