"""Fault-revealing orders: coverage's greedy steered by oracle-free risk signals.

Coverage greedy explores the corpus fastest but reveals failures late: failing
queries tend to retrieve popular chunks (hubs), which other queries cover first, so
their gain drops and greedy defers them (docs/results.md, RQ3). These orders keep
the greedy's exploration and move the queries that *look* risky forward, using only
what a recording holds: each query's retrieved chunks and scores, and, when
``ragcov probe`` was run, each chunk's k-occurrence among the self-query probes
(measured without the test pool, so no pool statistic and no label leaks in).

Risk signals (higher = riskier), each turned into a seeded priority (a permutation):

* ``lowconf``: the query's best retrieval score, ascending (the retriever was unsure);
* ``margin``: rank-1 score minus rank-k score, ascending (nothing stood out);
* ``confmargin``: the mean of the two percentiles (low top score, small margin);
* ``hub``: hub exposure, the mean probe k-occurrence of the chunks the query
  retrieved, descending (it lands where every self-query lands);
* ``hubconf``: the mean of the hub and low-confidence percentiles.

A query that retrieved nothing is the riskiest under every signal. Orders:

* ``<signal>``: the signal alone;
* ``coverage-<signal>``: greedy by gain, ties and the saturated tail by the signal;
* ``<signal>-gain<B>``: greedy on ``gain + B * risk``, risk = 1 - place / (n - 1) with
  place the query's position in the riskiest-first order: the riskiest query beats
  a safe one that adds up to B more chunks (B = 0 is ``coverage-<signal>``);
* ``<signal>-share<E>``: every E-th pick is the riskiest query left, the others
  follow ``coverage-<signal>``;
* ``interleave``: coverage and lowconf picks in turn, each skipping what the other took.

RQ3 (docs/results.md) measured them all; ``ragcov select`` offers the best trade-off,
``confmargin-gain5``, and three research options. Hub exposure from probes does not
separate failing from passing queries on FinQA or ConvFinQA, so no hub order ships.
"""

from __future__ import annotations

import heapq
import re

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.selection.greedy import coverage_order, tie_ranks

SIGNALS = ("lowconf", "margin", "confmargin", "hub", "hubconf")


def top_scores(m: CoverageMatrix) -> np.ndarray:
    """Each query's rank-1 score; -inf when it retrieved nothing, NaN when unscored."""
    out = np.full(m.n_queries, -np.inf)
    r, s = m.ranks.tocoo(), m.scores.tocoo()
    first = r.data == 1
    out[r.row[first]] = s.data[first]
    return out


def margins(m: CoverageMatrix) -> np.ndarray:
    """Rank-1 score minus the score of the query's last retrieved chunk; -inf when empty."""
    top = top_scores(m)
    r, s = m.ranks.tocsr(), m.scores.tocsr()
    last = np.full(m.n_queries, np.nan)
    sizes = np.diff(r.indptr)
    rows = np.repeat(np.arange(m.n_queries), sizes)
    deepest = np.zeros(m.n_queries, dtype=np.int64)
    np.maximum.at(deepest, rows, r.data)
    at_last = r.data == deepest[rows]
    last[rows[at_last]] = s.data[at_last]
    out = top - last
    out[sizes == 0] = -np.inf
    return out


def hub_exposure(m: CoverageMatrix, k_occurrence: np.ndarray) -> np.ndarray:
    """Mean probe k-occurrence of each query's retrieved chunks; +inf when it retrieved nothing."""
    occ = np.asarray(k_occurrence, dtype=np.float64)
    if occ.shape != (m.n_chunks,):
        raise RagcovError(f"{occ.size} k-occurrences for {m.n_chunks} chunks")
    sizes = np.diff(m.hits.indptr)
    total = np.asarray(m.hits.astype(np.float64) @ occ).ravel()
    return np.divide(total, sizes, out=np.full(m.n_queries, np.inf), where=sizes > 0)


def priority(riskiness: np.ndarray, seed: int) -> np.ndarray:
    """Each query's place when sorted riskiest first (seeded ties): a permutation of 0..n-1."""

    ties = tie_ranks(riskiness.size, seed)
    order = np.lexsort((ties, -np.nan_to_num(riskiness, nan=-np.inf, neginf=-np.inf)))
    prio = np.empty(riskiness.size, dtype=np.int64)
    prio[order] = np.arange(riskiness.size)
    return prio


def riskiness(m: CoverageMatrix, signal: str, k_occurrence: np.ndarray | None = None
              ) -> np.ndarray:
    """The signal as "higher is riskier" values, or a clear error when the data lacks it."""
    missing = int(np.isnan(m.score_data).sum()) if signal in (
        "lowconf", "margin", "hubconf", "confmargin") else 0
    if missing:
        held = ("has none" if missing == m.score_data.size else
                f"lacks {missing} of its {m.score_data.size} hits' scores")
        raise RagcovError(f"the {signal} order needs retrieval scores, and this recording "
                          f"{held} (use coverage, random or overlap)")
    if signal in ("hub", "hubconf") and (k_occurrence is None or not np.any(k_occurrence)):
        raise RagcovError(f"the {signal} order needs self-query probes: run `ragcov probe` "
                          "on this data file first")
    if signal == "lowconf":
        return -top_scores(m)
    if signal == "margin":
        return -margins(m)
    if signal == "hub":
        return hub_exposure(m, k_occurrence)  # type: ignore[arg-type]
    if signal == "hubconf":
        # Mean percentile of hub exposure and low confidence: both must point the same way.
        return (_percentile(hub_exposure(m, k_occurrence)) +  # type: ignore[arg-type]
                _percentile(-top_scores(m))) / 2
    if signal == "confmargin":
        return (_percentile(-margins(m)) + _percentile(-top_scores(m))) / 2
    raise RagcovError(f"unknown risk signal {signal!r}: expected {', '.join(SIGNALS)}")


def _percentile(x: np.ndarray) -> np.ndarray:
    """Average rank of each value scaled to [0, 1] (ties share their rank)."""
    from scipy.stats import rankdata

    return (rankdata(x) - 1) / max(x.size - 1, 1)


def risk_greedy(m: CoverageMatrix, prio: np.ndarray, bonus: float = 0.0) -> np.ndarray:
    """Greedy on ``gain + bonus * risk``, risk = 1 - prio / (n - 1); ties by ``prio``.

    Lazy, as :func:`ragcov.selection.greedy.coverage_order`: gains only fall, so a stored
    score bounds the true one and only the top of the heap is re-counted. Once no
    query adds a chunk the rest follow by risk alone (by ``prio``).
    """
    n = m.n_queries
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    indptr, indices = m.hits.indptr.tolist(), m.hits.indices.tolist()
    rows = [indices[indptr[i]:indptr[i + 1]] for i in range(n)]
    prio_l = prio.tolist()
    add = [bonus * (1 - p / max(n - 1, 1)) for p in prio_l]
    covered = bytearray(m.n_chunks)
    heap = [(-(len(rows[r]) + add[r]), prio_l[r], r) for r in range(n)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        stale, p, r = heapq.heappop(heap)
        gain = sum(1 for c in rows[r] if not covered[c])
        score = -(gain + add[r])
        if score == stale:
            order.append(r)
            for c in rows[r]:
                covered[c] = 1
        else:
            heapq.heappush(heap, (score, p, r))
    return np.asarray(order, dtype=np.int64)


def interleave(first: np.ndarray, second: np.ndarray, every: int = 2) -> np.ndarray:
    """Every ``every``-th pick from ``second``, the others from ``first``; rows taken once."""
    if every < 2:
        raise RagcovError(f"a share order needs every >= 2, got {every}")
    n = len(first)
    taken = np.zeros(n, dtype=bool)
    pos = [0, 0]
    sources = (first, second)
    out: list[int] = []
    while len(out) < n:
        s = 1 if len(out) % every == every - 1 else 0
        src = sources[s]
        while taken[src[pos[s]]]:
            pos[s] += 1
        r = int(src[pos[s]])
        taken[r] = True
        out.append(r)
    return np.asarray(out, dtype=np.int64)


def _interleave(m: CoverageMatrix, seed: int, occ: np.ndarray | None) -> np.ndarray:

    return interleave(coverage_order(m, tie_ranks(m.n_queries, seed)),
                      np.argsort(priority(riskiness(m, "lowconf", occ), seed), kind="stable"))


_NAME = re.compile(r"^(?:(?P<cov>coverage)-)?(?P<signal>[a-z]+)"
                   r"(?:-gain(?P<bonus>\d+(?:\.\d+)?))?(?:-share(?P<every>\d+))?$")


def fault_order(m: CoverageMatrix, name: str, seed: int = 0,
                k_occurrence: np.ndarray | None = None) -> np.ndarray:
    """The order ``name`` of the pool (a permutation of its rows), seeded for ties.

    Names: ``interleave``, ``SIGNAL`` (the signal alone), ``coverage-SIGNAL`` (greedy,
    ties by the signal), ``SIGNAL-gainB`` (bonus B), ``SIGNAL-shareE`` (every E-th pick
    the riskiest left) and ``SIGNAL-gainB-shareE``.
    """
    if name == "interleave":
        return _interleave(m, seed, k_occurrence)
    parts = _NAME.match(name)
    if parts is None or parts["signal"] not in SIGNALS or (
            parts["cov"] and (parts["bonus"] or parts["every"])):
        raise RagcovError(f"unknown order {name!r}")
    prio = priority(riskiness(m, parts["signal"], k_occurrence), seed)
    alone = np.argsort(prio, kind="stable").astype(np.int64)
    if not (parts["cov"] or parts["bonus"] or parts["every"]):
        return alone
    guided = risk_greedy(m, prio, float(parts["bonus"] or 0))
    return interleave(guided, alone, int(parts["every"])) if parts["every"] else guided
