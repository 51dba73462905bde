"""Faults (docs/method.md §6): failing queries grouped by what they retrieve, and APFD.

* A **fault** groups failing queries (:mod:`ragcov.failures`) that retrieve (almost)
  the same chunks: Jaccard of their retrieved sets greater than ``tau``.
  ``components`` (default) takes connected components of that relation, so chains
  join; ``leader`` walks the failures in suite order and puts each into the most
  similar existing leader's fault when that Jaccard exceeds tau (ties to the earlier
  leader), otherwise makes it the leader of a new fault, so every member is within
  tau of its leader and no chaining happens. Two empty retrieved sets have Jaccard 0.
* :func:`analyse` takes failures to faults and measures the APFD
  (:mod:`ragcov.apfd`) of each given order of the suite against them.

The pieces of failures and APFD are importable from here too, so
``from ragcov.faults import label_failures, apfd`` keeps working.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ragcov.apfd import apfd, failure_rate_by_segment, first_reveals, load_order, order_names
from ragcov.errors import RagcovError
from ragcov.failures import (
    LABEL_METRICS,
    Failures,
    Scores,
    failing_mask,
    find_failures,
    label_failures,
    label_metric,
    load_scores,
    relevant_hits,
    score_failures,
    score_values,
)
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import jaccard_pairs

__all__ = [
    "CLUSTERINGS", "DEFAULT_TAU", "LABEL_METRICS", "Failures", "Fault", "FaultReport", "Scores",
    "analyse", "apfd", "cluster_faults", "failing_mask", "failure_rate_by_segment",
    "fault_of_row", "find_failures", "first_reveals", "jaccard_graph", "label_failures",
    "label_metric", "load_order", "load_scores", "order_names", "relevant_hits",
    "score_failures", "score_values",
]

CLUSTERINGS: tuple[str, ...] = ("components", "leader")
DEFAULT_TAU = 0.8


# ---------------------------------------------------------------------- clustering
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


def _fault(m: CoverageMatrix, number: int, member_rows: tuple[int, ...]) -> Fault:
    """Fault ``F<number>`` of these rows, with the chunks all of them retrieved."""
    shared = set(m.retrieved(member_rows[0]))
    for r in member_rows[1:]:
        shared &= set(m.retrieved(r))
    shared_ids = tuple(m.chunk_ids[c] for c in m.retrieved(member_rows[0]) if c in shared)
    return Fault(f"F{number}", member_rows, tuple(m.query_ids[r] for r in member_rows),
                 shared_ids)


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
    return [_fault(m, n, tuple(int(rows[p]) for p in members))
            for n, members in enumerate(groups.values(), start=1)]


def fault_of_row(n_queries: int, faults: Sequence[Fault]) -> np.ndarray:
    """Per query row, the index of the fault it reveals, or -1 (not failing)."""
    out = np.full(n_queries, -1, dtype=np.int64)
    for i, f in enumerate(faults):
        out[list(f.rows)] = i
    return out


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
