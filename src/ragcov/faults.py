"""Failures, faults and APFD (docs/method.md §6), all over one CoverageMatrix.

* A **failure** is a query whose per-query metric is at its minimum: by default
  ``value <= 0``; with ``fail_below=X``, ``value < X``. The metric comes from
  relevance labels (``hit``, ``context_relevance``) or from imported per-query
  scores (an LLM judge's). Queries with no label or score are neither failing nor
  passing: they are listed as unlabelled.
* A **fault** groups failing queries that retrieve (almost) the same chunks:
  Jaccard of their retrieved sets greater than ``tau``. ``components`` (default)
  takes connected components of that relation, so chains join; ``leader`` walks
  the failures in suite order and puts each into the most similar existing
  leader's fault when that Jaccard exceeds tau (ties to the earlier leader),
  otherwise makes it the leader of a new fault, so every member is within tau of
  its leader and no chaining happens. Two empty retrieved sets have Jaccard 0.
* **APFD** of an order of n tests over m faults is the area under the curve
  "fraction of faults revealed" against "fraction of tests run":

      APFD = p - (sum of TF_i over revealed faults) / (n * m) + p / (2n)

  with TF_i the 1-based position of the first test revealing fault i and p the
  fraction of the m faults the order reveals. When the order reveals every fault
  (p = 1) this is the usual ``1 - (TF_1+...+TF_m)/(n*m) + 1/(2n)``; when it does
  not (a budgeted prefix, an order over part of the suite) it is NAPFD (Qu et
  al., 2007): an unrevealed fault adds no area. With m = 0 (nothing fails) or
  n = 0 (an empty order) there is nothing to measure and APFD is undefined:
  ``None`` in Python, ``null`` in JSON, never a made-up 0 or 1.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ragcov.errors import InputFormatError, RagcovError
from ragcov.io import first_key, iter_csv, iter_jsonl, load_json
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import jaccard_pairs
from ragcov.qrels import Qrels

Clustering = Literal["components", "leader"]
CLUSTERINGS: tuple[str, ...] = ("components", "leader")
LABEL_METRICS: tuple[str, ...] = ("hit", "context_relevance")
DEFAULT_TAU = 0.8

ID_KEYS = ("query_id", "id", "_id", "qid")
TEXT_KEYS = ("user_input", "question", "query", "input", "text")


# ---------------------------------------------------------------------- metrics
def relevant_hits(m: CoverageMatrix, qrels: Qrels) -> sp.csr_matrix:
    """A 0/1 matrix on the hit pattern: 1 where the retrieved chunk is relevant to the query."""
    rel = np.zeros(m.hits.nnz, dtype=bool)
    indptr, indices = m.hits.indptr, m.hits.indices
    keys = m.chunk_ids if qrels.level == "chunk" else m.doc_ids
    for row, qid in enumerate(m.query_ids):
        wanted = qrels.relevant.get(qid)
        if not wanted:
            continue
        start, end = indptr[row], indptr[row + 1]
        rel[start:end] = [keys[c] in wanted for c in indices[start:end]]
    return sp.csr_matrix((rel.astype(np.uint8), indices.copy(), indptr.copy()),
                         shape=m.hits.shape)


def label_metric(m: CoverageMatrix, qrels: Qrels, metric: str = "hit") -> np.ndarray:
    """Per query: ``hit`` (any relevant chunk in the top-k) or ``context_relevance``.

    ``context_relevance`` is the fraction of the retrieved chunks that are relevant
    (a query that retrieved nothing scores 0). Unlabelled queries get NaN.
    """
    if metric not in LABEL_METRICS:
        raise RagcovError(f"unknown label metric {metric!r}: expected hit or context_relevance")
    rel = relevant_hits(m, qrels)
    n_rel = np.asarray(rel.sum(axis=1, dtype=np.int64)).ravel().astype(np.float64)
    if metric == "hit":
        values = (n_rel > 0).astype(np.float64)
    else:
        n_ret = np.diff(m.hits.indptr).astype(np.float64)
        values = np.divide(n_rel, n_ret, out=np.zeros_like(n_rel), where=n_ret > 0)
    labelled = np.fromiter((q in qrels.relevant for q in m.query_ids), dtype=bool,
                           count=m.n_queries)
    values[~labelled] = np.nan
    return values


# ---------------------------------------------------------------------- scores
@dataclass
class Scores:
    """Imported per-query metric values, keyed by query id or by query text."""

    metric: str
    by_id: dict[str, float] = field(default_factory=dict)
    by_text: dict[str, float] = field(default_factory=dict)
    missing: int = 0                 # rows whose value was empty or NaN
    source: str | None = None


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return list(iter_csv(path))
    if suffix == ".jsonl":
        return list(iter_jsonl(path))
    if suffix == ".json":
        data = load_json(path)
        if isinstance(data, dict):
            data = next((v for v in data.values() if isinstance(v, list)), None)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise RagcovError(f"{path}: expected a JSON list of per-query objects")
        return [(i + 1, r) for i, r in enumerate(data)]
    raise RagcovError(f"{path}: scores must be .csv, .jsonl or .json")


def load_scores(path: str | os.PathLike[str], metric: str) -> Scores:
    """Per-query scores from JSONL/CSV/JSON (e.g. a RAGAS results CSV), one metric column."""
    p = Path(path)
    if not p.is_file():
        raise RagcovError(f"{p}: no such file")
    scores = Scores(metric, source=str(p))
    rows = _records(p)
    if not rows:
        raise RagcovError(f"{p}: no rows")
    for lineno, row in rows:
        if metric not in row:
            raise InputFormatError(p, lineno, f"no {metric!r} column (have: "
                                   f"{', '.join(sorted(map(str, row)))})")
        raw = row[metric]
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "nan", "none")):
            value = math.nan
        else:
            try:
                value = float(raw)
            except (TypeError, ValueError) as exc:
                raise InputFormatError(p, lineno, f"{metric} = {raw!r} is not a number") from exc
        qid = first_key(row, ID_KEYS)
        text = first_key(row, TEXT_KEYS)
        qid = str(qid).strip() if qid is not None and str(qid).strip() else None
        text = str(text).strip() if text is not None and str(text).strip() else None
        if qid is None and text is None:
            raise InputFormatError(p, lineno, "no query id or query text "
                                   f"(expected one of {', '.join(ID_KEYS + TEXT_KEYS)})")
        if math.isnan(value):
            scores.missing += 1
            continue
        if qid is not None:
            scores.by_id[qid] = value
        else:
            scores.by_text[str(text)] = value
    return scores


def score_values(m: CoverageMatrix, scores: Scores) -> tuple[np.ndarray, int]:
    """Per-query values (NaN = no score) and how many score rows matched no query."""
    values = np.full(m.n_queries, np.nan)
    matched_ids: set[str] = set()
    matched_texts: set[str] = set()
    for row, (qid, text) in enumerate(zip(m.query_ids, m.query_texts)):
        if qid in scores.by_id:
            values[row] = scores.by_id[qid]
            matched_ids.add(qid)
        elif (t := (text or "").strip()) in scores.by_text:
            values[row] = scores.by_text[t]
            matched_texts.add(t)
    unmatched = (len(scores.by_id) - len(matched_ids)) + (len(scores.by_text) - len(matched_texts))
    return values, unmatched


# ---------------------------------------------------------------------- failures
@dataclass
class Failures:
    metric: str
    values: np.ndarray               # per query row; NaN = unlabelled
    rows: np.ndarray                 # failing query rows, ascending
    query_ids: list[str]             # ids of every query (row order)
    fail_below: float | None = None
    unmatched: int = 0               # labels/scores naming queries not in the data file

    @property
    def ids(self) -> list[str]:
        return [self.query_ids[r] for r in self.rows]

    @property
    def unlabelled(self) -> list[str]:
        return [q for q, v in zip(self.query_ids, self.values) if np.isnan(v)]

    @property
    def n_labelled(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.values)))


def failing_mask(values: np.ndarray, fail_below: float | None = None) -> np.ndarray:
    """At the minimum (``<= 0``) by default, or ``< fail_below``; NaN never fails."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        mask = v <= 0.0 if fail_below is None else v < fail_below
    return mask & ~np.isnan(v)


def find_failures(m: CoverageMatrix, values: np.ndarray, metric: str,
                  fail_below: float | None = None, unmatched: int = 0) -> Failures:
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (m.n_queries,):
        raise RagcovError(f"expected {m.n_queries} metric values, got {values.shape}")
    rows = np.flatnonzero(failing_mask(values, fail_below))
    return Failures(metric, values, rows, list(m.query_ids), fail_below, unmatched)


def label_failures(m: CoverageMatrix, qrels: Qrels, metric: str = "hit",
                   fail_below: float | None = None) -> Failures:
    unmatched = len(qrels.query_ids - set(m.query_ids))
    return find_failures(m, label_metric(m, qrels, metric), metric, fail_below, unmatched)


def score_failures(m: CoverageMatrix, scores: Scores,
                   fail_below: float | None = None) -> Failures:
    values, unmatched = score_values(m, scores)
    return find_failures(m, values, scores.metric, fail_below, unmatched)


# ---------------------------------------------------------------------- faults
@dataclass(frozen=True)
class Fault:
    id: str
    rows: tuple[int, ...]            # member query rows, ascending
    queries: tuple[str, ...]
    shared_chunks: tuple[str, ...]   # chunks every member retrieved, first member's rank order

    @property
    def size(self) -> int:
        return len(self.rows)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "size": self.size, "queries": list(self.queries),
                "shared_chunks": list(self.shared_chunks)}


def jaccard_graph(hits: sp.csr_matrix, tau: float) -> sp.csr_matrix:
    """Boolean adjacency of rows whose retrieved sets have Jaccard > tau (no self loops).

    Only pairs that share a chunk can exceed tau >= 0, so only those are computed
    (:func:`ragcov.metrics.jaccard_pairs`).
    """
    rows, cols = [], []
    for r, c, jac in jaccard_pairs(hits):
        keep = jac > tau
        rows.append(r[keep])
        cols.append(c[keep])
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    n = hits.shape[0]
    return sp.csr_matrix((np.ones(len(r), dtype=bool), (r, c)), shape=(n, n))


def _check_tau(tau: float) -> None:
    if not (0.0 <= tau <= 1.0) or math.isnan(tau):
        raise RagcovError(f"tau must be between 0 and 1, got {tau}")


def _component_labels(hits: sp.csr_matrix, tau: float) -> np.ndarray:
    _, labels = connected_components(jaccard_graph(hits, tau), directed=False)
    return labels


def _leader_labels(hits: sp.csr_matrix, tau: float) -> np.ndarray:
    h = hits.astype(np.int32)
    inter = (h @ h.T).tocsr()
    sizes = np.diff(hits.indptr).astype(np.float64)
    n = hits.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    leaders: dict[int, int] = {}                 # leader row -> label
    for i in range(n):
        start, end = inter.indptr[i], inter.indptr[i + 1]
        best, best_j = -1, -1.0
        for j, d in zip(inter.indices[start:end], inter.data[start:end]):
            if j >= i or j not in leaders:
                continue
            union = sizes[i] + sizes[j] - d
            jac = d / union if union > 0 else 0.0
            if jac > tau and (jac > best_j or (jac == best_j and j < best)):
                best, best_j = int(j), jac
        if best >= 0:
            labels[i] = leaders[best]
        else:
            leaders[i] = len(leaders)
            labels[i] = leaders[i]
    return labels


def cluster_faults(m: CoverageMatrix, rows: Sequence[int] | np.ndarray, tau: float = DEFAULT_TAU,
                   clustering: str = "components") -> list[Fault]:
    """Group the failing ``rows`` into faults; faults are numbered by their first member."""
    _check_tau(tau)
    if clustering not in CLUSTERINGS:
        raise RagcovError(f"unknown clustering {clustering!r}: expected components or leader")
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    if rows.size == 0:
        return []
    sub = m.hits[rows]
    labels = _component_labels(sub, tau) if clustering == "components" else _leader_labels(sub, tau)
    groups: dict[int, list[int]] = {}
    for pos, lab in enumerate(labels):                       # rows ascending: first member first
        groups.setdefault(int(lab), []).append(pos)
    faults = []
    for n, members in enumerate(groups.values(), start=1):
        member_rows = tuple(int(rows[p]) for p in members)
        shared = set(m.retrieved(member_rows[0]))
        for r in member_rows[1:]:
            shared &= set(m.retrieved(r))
        shared_ids = tuple(m.chunk_ids[c] for c in m.retrieved(member_rows[0]) if c in shared)
        faults.append(Fault(f"F{n}", member_rows, tuple(m.query_ids[r] for r in member_rows),
                            shared_ids))
    return faults


def fault_of_row(n_queries: int, faults: Sequence[Fault]) -> np.ndarray:
    """Per query row, the index of the fault it reveals, or -1 (not failing)."""
    out = np.full(n_queries, -1, dtype=np.int64)
    for i, f in enumerate(faults):
        out[list(f.rows)] = i
    return out


# ---------------------------------------------------------------------- APFD
def first_reveals(order: Sequence[int] | np.ndarray, fault_of: np.ndarray,
                  n_faults: int | None = None) -> np.ndarray:
    """TF_i: the 1-based position in ``order`` of the first test revealing fault i (0 = never)."""
    order = np.asarray(order, dtype=np.int64)
    fault_of = np.asarray(fault_of, dtype=np.int64)
    m = int(fault_of.max(initial=-1)) + 1 if n_faults is None else n_faults
    tf = np.zeros(m, dtype=np.int64)
    if order.size == 0 or m == 0:
        return tf
    seq = fault_of[order]
    hit = seq >= 0
    faults, first = np.unique(seq[hit], return_index=True)
    tf[faults] = np.flatnonzero(hit)[first] + 1
    return tf


def apfd(order: Sequence[int] | np.ndarray, fault_of: np.ndarray,
         n_faults: int | None = None) -> float | None:
    """APFD (NAPFD when the order misses faults); ``None`` when n = 0 or m = 0.

    ``fault_of`` maps each query row to its fault index (-1: passes or unlabelled);
    ``n_faults`` is m, the faults of the whole suite (default: inferred from
    ``fault_of``). A row may appear in ``order`` once.
    """
    order = np.asarray(order, dtype=np.int64)
    n = int(order.size)
    if n and np.unique(order).size != n:
        raise RagcovError("an order lists the same test twice")
    tf = first_reveals(order, fault_of, n_faults)
    m = int(tf.size)
    if n == 0 or m == 0:
        return None
    revealed = tf > 0
    p = float(np.count_nonzero(revealed)) / m
    return p - float(tf[revealed].sum()) / (n * m) + p / (2.0 * n)


def failure_rate_by_segment(order: Sequence[int] | np.ndarray, failing: np.ndarray,
                            segments: int = 5) -> list[float]:
    """Share of failing tests in each of ``segments`` equal slices of the order."""
    order = np.asarray(order, dtype=np.int64)
    parts = np.array_split(np.asarray(failing, dtype=bool)[order], segments)
    return [float(p.mean()) if p.size else math.nan for p in parts]


# ---------------------------------------------------------------------- orders

def load_order(path: str | os.PathLike[str], m: CoverageMatrix) -> np.ndarray:
    """Rows of an order.json (``ragcov select``'s ``{"order": [query ids], ...}``)."""
    p = Path(path)
    data = load_json(p)
    ids = data.get("order") if isinstance(data, dict) else data
    if not isinstance(ids, list) or not all(isinstance(q, str) for q in ids):
        raise RagcovError(f"{p}: expected {{\"order\": [query ids]}}")
    row_of = m.row_of()
    unknown = [q for q in ids if q not in row_of]
    if unknown:
        raise RagcovError(f"{p}: {len(unknown)} query ids not in the data file "
                          f"(first: {unknown[0]!r})")
    if len(set(ids)) != len(ids):
        raise RagcovError(f"{p}: lists the same query more than once")
    return np.array([row_of[q] for q in ids], dtype=np.int64)


def order_names(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """File stems as names; the full paths when stems collide."""
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [str(p) for p in paths]


# ---------------------------------------------------------------------- report
@dataclass
class FaultReport:
    failures: Failures
    faults: list[Fault]
    tau: float
    clustering: str
    apfd: dict[str, float | None] = field(default_factory=dict)
    revealed: dict[str, int] = field(default_factory=dict)
    order_sizes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        f = self.failures
        return {
            "metric": f.metric, "fail_below": f.fail_below, "tau": self.tau,
            "clustering": self.clustering,
            "queries": len(f.query_ids), "labelled": f.n_labelled,
            "unlabelled": f.unlabelled, "unmatched_labels": f.unmatched,
            "failures": f.ids,
            "faults": [x.as_dict() for x in self.faults],
            "apfd": dict(self.apfd),
            "orders": {name: {"tests": self.order_sizes[name], "faults_revealed":
                              self.revealed[name], "apfd": self.apfd[name]}
                       for name in self.apfd},
        }


def analyse(m: CoverageMatrix, failures: Failures, tau: float = DEFAULT_TAU,
            clustering: str = "components",
            orders: Mapping[str, Sequence[int] | np.ndarray] | None = None) -> FaultReport:
    """Failures -> faults -> APFD of each given order."""
    faults = cluster_faults(m, failures.rows, tau, clustering)
    fault_of = fault_of_row(m.n_queries, faults)
    report = FaultReport(failures, faults, tau, clustering)
    for name, order in (orders or {}).items():
        tf = first_reveals(order, fault_of, len(faults))
        report.apfd[name] = apfd(order, fault_of, len(faults))
        report.revealed[name] = int(np.count_nonzero(tf))
        report.order_sizes[name] = len(order)
    return report
