"""Where a chunk is lost: the embedding, the ANN index or the reranker.

An unreachable chunk (no probe's final list holds it) is lost at one of three stages,
and each has its own remedy:

* ``reranker``: a probe's first stage retrieved it, and the reranker always put it
  below k (only with a reranking stage: ``--rerank``, or traces with reranker spans);
* ``index``: exact search over the very vectors the index holds surely ranks it in a
  probe's top-d, and the index never returns it: tune the index, not the model;
* ``embedding``: exact search does not reach it either; the vectors themselves bury it
  (a near duplicate, a table the model flattens, an anti-hub): re-chunk or change the
  model.

Without an exact check (a retriever with no vectors, a store that cannot give them
back) or with probes not yet checked, a chunk no first stage reached has no cause.

The suite gets the same view: per test, the index's recall@d against exact search and
the chunks its exact top-d holds that its index list misses; over the suite, the
chunks exact search would cover and the index does not, and with a reranker the first
stage's coverage beside the final one. All of it is set arithmetic on the recorded
rows (:mod:`ragcov.data.stages`), with numpy: no query is run here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.data.stages import PROBE, TEST, StageHits, StageRecord
from ragcov.errors import RagcovError

EMBEDDING, INDEX, RERANKER = "embedding", "index", "reranker"
LOST_AT = (EMBEDDING, INDEX, RERANKER)
WHERE = {EMBEDDING: "the embedding: exact search over the stored vectors does not reach it either",
         INDEX: "the ANN index: exact search over the same vectors reaches it, the index does not",
         RERANKER: "the reranker: the first stage retrieves it, the reranker puts it below k"}


@dataclass
class Stages:
    """Per chunk where it is lost (unreachable chunks only) and the suite's view of the
    stages; every per-chunk array is over the same chunks as its :class:`Reachability`."""

    meta: dict[str, Any]
    cause: np.ndarray                    # object: None or one of LOST_AT
    exact_reached: np.ndarray            # bool: surely in some probe's exact top-d
    first_reached: np.ndarray | None     # bool: in some probe's first stage (a reranker)
    suite_exact: np.ndarray              # bool: surely in some test's exact top-d
    suite_index: np.ndarray              # bool: in some test's index list
    suite_first: np.ndarray | None       # bool: in some test's first stage (a reranker)
    hidden_probes: dict[int, list[str]] = field(default_factory=dict)
    hidden_tests: dict[int, list[str]] = field(default_factory=dict)
    test_ids: list[str] = field(default_factory=list)
    test_found: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    test_expected: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    test_missed: dict[int, list[int]] = field(default_factory=dict)   # test row -> chunks
    probe_found: int = 0
    probe_expected: int = 0
    probes_checked: int = 0
    probes_unchecked: int = 0            # probes with text and no exact check recorded
    chunk_ids: list[str] = field(default_factory=list)
    final_covered: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # by a test
    unreachable: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def checked(self) -> bool:
        return bool((self.meta.get("exact") or {}).get("checked"))

    @property
    def reranked(self) -> bool:
        return self.first_reached is not None or self.suite_first is not None

    @property
    def exact(self) -> dict[str, Any]:
        """The check's record: its source, metric, depth, the index's settings and remedy,
        or ``checked`` false with the reason."""
        return dict(self.meta.get("exact") or {})

    @property
    def depth(self) -> int | None:
        return self.exact.get("depth")

    def recall(self, side: str) -> float | None:
        """Recall@d of the index against exact search over ``side``'s checked lists."""
        if side == TEST:
            checked = self.test_expected > 0
            expected = int(self.test_expected[checked].sum())
            return float(self.test_found[checked].sum() / expected) if expected else None
        return self.probe_found / self.probe_expected if self.probe_expected else None

    def tests_checked(self) -> int:
        return int(np.count_nonzero(self.test_expected > 0))

    def test_recall(self, row: int) -> float | None:
        e = int(self.test_expected[row]) if row < self.test_expected.size else -1
        return float(self.test_found[row] / e) if e > 0 else None

    def lost_at(self) -> dict[str, int]:
        return {stage: int(np.count_nonzero(self.cause == stage)) for stage in LOST_AT}

    def index_hidden(self) -> list[int]:
        return [int(j) for j in np.flatnonzero(self.cause == INDEX)]

    def index_missed(self) -> list[int]:
        """Chunks some test's exact top-d holds and no test's index list does: the suite's
        coverage the index costs."""
        return [int(j) for j in np.flatnonzero(self.suite_exact & ~self.suite_index)]

    def reranker_dropped(self) -> list[int]:
        """Chunks some test's first stage found that no test's final list holds."""
        if self.suite_first is None:
            return []
        return [int(j) for j in np.flatnonzero(self.suite_first & ~self.final_covered)]

    def restricted(self, cols: np.ndarray) -> Stages:
        """The same view over the chunks at ``cols`` (a report's scope)."""
        new = {int(old): n for n, old in enumerate(cols)}

        def remap(d: dict[int, Any]) -> dict[int, Any]:
            return {new[j]: v for j, v in d.items() if j in new}

        return Stages(
            meta=self.meta, cause=self.cause[cols], exact_reached=self.exact_reached[cols],
            first_reached=None if self.first_reached is None else self.first_reached[cols],
            suite_exact=self.suite_exact[cols], suite_index=self.suite_index[cols],
            suite_first=None if self.suite_first is None else self.suite_first[cols],
            hidden_probes=remap(self.hidden_probes), hidden_tests=remap(self.hidden_tests),
            test_ids=self.test_ids, test_found=self.test_found, test_expected=self.test_expected,
            test_missed={t: [new[j] for j in cs if j in new] for t, cs in self.test_missed.items()},
            probe_found=self.probe_found, probe_expected=self.probe_expected,
            probes_checked=self.probes_checked, probes_unchecked=self.probes_unchecked,
            chunk_ids=[self.chunk_ids[int(j)] for j in cols],
            final_covered=self.final_covered[cols], unreachable=self.unreachable[cols])

    def totals(self, n_chunks: int) -> dict[str, Any]:
        """The stage totals every report prints (added to the reachability totals)."""
        exact = self.exact
        out: dict[str, Any] = {
            "exact_check": {key: exact.get(key) for key in (
                "checked", "reason", "source", "vectors", "metric", "depth", "index",
                "settings", "remedy") if key in exact},
            "index_recall": {"tests": self.recall(TEST), "probes": self.recall(PROBE),
                             "tests_checked": self.tests_checked(),
                             "probes_checked": self.probes_checked,
                             "probes_not_checked": self.probes_unchecked,
                             "depth": self.depth},
            "lost_at": {**self.lost_at(), "unknown": int(np.count_nonzero(
                (self.cause == None) & self.unreachable))},  # noqa: E711 - elementwise
            "index_hidden_chunks": len(self.index_hidden()),
            "suite_exact_covered_chunks": int(self.suite_exact.sum()),
            "suite_index_missed_chunks": len(self.index_missed()),
        }
        if self.reranked:
            first = int(self.suite_first.sum()) if self.suite_first is not None else 0
            out["rerank"] = dict(self.meta.get("rerank") or {})
            out["first_stage_covered_chunks"] = first
            out["first_stage_coverage"] = first / n_chunks if n_chunks else 0.0
            out["reranker_dropped_chunks"] = len(self.reranker_dropped())
        return out


def _pairs(hits: StageHits | None, sure_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    if hits is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keep = hits.sure if sure_only else np.ones(hits.rows.size, bool)
    return hits.rows[keep], hits.chunks[keep]


def _csr_pairs(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    return rows, np.asarray(indices, dtype=np.int64)


def _reached(chunks: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(chunks, minlength=n)[:n] > 0 if chunks.size else np.zeros(n, bool)


def _missed(exact: tuple[np.ndarray, np.ndarray], index: tuple[np.ndarray, np.ndarray], n: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """The (row, chunk) pairs of ``exact`` that ``index`` does not hold."""
    key_e = exact[0] * n + exact[1]
    key_i = index[0] * n + index[1]
    miss = ~np.isin(key_e, key_i)
    return exact[0][miss], exact[1][miss]


@dataclass
class _ProbeSide:
    """The probes' stage rows as (row, chunk) pairs: what the index and exact search gave."""

    index: tuple[np.ndarray, np.ndarray]
    exact: tuple[np.ndarray, np.ndarray]
    reranked: bool
    found: int
    expected: int
    checked: int
    unchecked: int


def _probe_side(record: StageRecord, probes: Any) -> _ProbeSide:
    probe_first = record.first.get(PROBE)
    reranked = probe_first is not None and probe_first.rows.size > 0
    if probes is not None:
        final = _csr_pairs(probes.indptr, probes.indices)
    else:
        final = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    found = record.found.get(PROBE, np.zeros(0, np.int64))
    expected = record.expected.get(PROBE, np.zeros(0, np.int64))
    checked_rows = expected > 0
    unchecked = 0
    if probes is not None:
        with_text = np.fromiter((k != "none" for k in probes.kinds), bool, probes.n_probes)
        done = np.zeros(probes.n_probes, bool)
        done[:min(checked_rows.size, probes.n_probes)] = checked_rows[:probes.n_probes]
        unchecked = int(np.count_nonzero(with_text & ~done))
    return _ProbeSide(index=_pairs(probe_first) if reranked else final,
                      exact=_pairs(record.exact.get(PROBE), sure_only=True), reranked=reranked,
                      found=int(found[checked_rows].sum()),
                      expected=int(expected[checked_rows].sum()),
                      checked=int(np.count_nonzero(checked_rows)), unchecked=unchecked)


def causes(record: StageRecord, unreachable: np.ndarray, probes: Any, n: int,
           side: _ProbeSide | None = None) -> np.ndarray:
    """Per chunk where it is lost (None where it is not unreachable, or nothing says):
    the reranker when a probe's first stage holds it, the index when a probe's exact
    top-d surely does, else the embedding once every probe with words was checked."""
    side = side or _probe_side(record, probes)
    cause = np.full(n, None, dtype=object)
    lost = np.asarray(unreachable, dtype=bool)
    if side.reranked:
        cause[lost & _reached(side.index[1], n)] = RERANKER
    checked = bool((record.meta.get("exact") or {}).get("checked"))
    if side.exact[1].size or checked:
        exact_reached = _reached(side.exact[1], n)
        open_ = lost & (cause == None)  # noqa: E711 - elementwise
        cause[open_ & exact_reached] = INDEX
        if checked and side.unchecked == 0:
            cause[open_ & ~exact_reached] = EMBEDDING
    return cause


def side_recall(record: StageRecord, side: str) -> float | None:
    """Recall@d of the index over one side's checked rows (tests or probes), or None."""
    expected = record.expected.get(side, np.zeros(0, np.int64))
    found = record.found.get(side, np.zeros(0, np.int64))
    total = int(expected[expected > 0].sum())
    return float(found[expected > 0].sum() / total) if total else None


def attribute(record: StageRecord, status: np.ndarray, unreachable: np.ndarray,
              probes: Any, tests: Any) -> Stages:
    """Each unreachable chunk's cause and the suite's stage view, from one file's rows.

    ``probes`` is the file's :class:`~ragcov.data.probes.ProbeMatrix` (or None), ``tests``
    its :class:`~ragcov.matrix.CoverageMatrix`; ``record``'s rows are on their rows.
    """
    n = tests.n_chunks
    n_tests = tests.n_queries
    side = _probe_side(record, probes)
    test_first = record.first.get(TEST)
    has_test_first = test_first is not None and test_first.rows.size > 0
    test_final = _csr_pairs(np.asarray(tests.indptr), np.asarray(tests.indices))
    test_index = _pairs(test_first) if has_test_first else test_final
    test_exact = _pairs(record.exact.get(TEST), sure_only=True)
    cause = causes(record, unreachable, probes, n, side)

    hidden_probes: dict[int, list[str]] = {}
    hidden = np.flatnonzero(cause == INDEX)
    if hidden.size and probes is not None:
        rows, chunks = side.exact
        sel = np.isin(chunks, hidden)
        for r, c in zip(rows[sel].tolist(), chunks[sel].tolist()):
            hidden_probes.setdefault(c, []).append(probes.ids[r])

    t_rows, t_chunks = _missed(test_exact, test_index, n)
    test_missed: dict[int, list[int]] = {}
    hidden_tests: dict[int, list[str]] = {}
    for r, c in zip(t_rows.tolist(), t_chunks.tolist()):
        test_missed.setdefault(r, []).append(c)
        hidden_tests.setdefault(c, []).append(tests.query_ids[r])

    tf = record.found.get(TEST, np.zeros(0, np.int64))
    te = record.expected.get(TEST, np.zeros(0, np.int64))
    test_found = np.full(n_tests, -1, np.int64)
    test_expected = np.full(n_tests, -1, np.int64)
    test_found[:min(tf.size, n_tests)] = tf[:n_tests]
    test_expected[:min(te.size, n_tests)] = te[:n_tests]
    return Stages(
        meta=record.meta, cause=cause, exact_reached=_reached(side.exact[1], n),
        first_reached=_reached(side.index[1], n) if side.reranked else None,
        suite_exact=_reached(test_exact[1], n), suite_index=_reached(test_index[1], n),
        suite_first=_reached(test_index[1], n) if has_test_first else None,
        hidden_probes=hidden_probes, hidden_tests=hidden_tests, test_ids=list(tests.query_ids),
        test_found=test_found, test_expected=test_expected, test_missed=test_missed,
        probe_found=side.found, probe_expected=side.expected, probes_checked=side.checked,
        probes_unchecked=side.unchecked, chunk_ids=list(tests.chunk_ids),
        final_covered=_reached(test_final[1], n), unreachable=np.asarray(unreachable, bool))


def check_index_gates(min_recall: float | None, max_hidden: int | None) -> None:
    """The two gates' values, refused before any work."""
    if min_recall is not None and not 0 <= min_recall <= 100:
        raise RagcovError(f"--min-index-recall must be a percentage from 0 to 100, got {min_recall:g}")
    if max_hidden is not None and (isinstance(max_hidden, bool) or max_hidden < 0):
        raise RagcovError(f"--max-index-hidden must be 0 or more, got {max_hidden}")


def index_failure(stages: Stages | None, min_recall: float | None, max_hidden: int | None
                  ) -> str | None:
    """``--min-index-recall`` and ``--max-index-hidden``: None when they pass, else the
    message. A gate that cannot be judged (no exact check) is an error, never a pass:
    an index nobody measured must not read as a perfect one."""
    if min_recall is None and max_hidden is None:
        return None
    if stages is None or not stages.checked:
        why = (stages.exact.get("reason") if stages is not None else None) or \
            "the data file has no exact check (run `ragcov probe` on it)"
        flags = " and ".join(f for f, v in (("--min-index-recall", min_recall),
                                            ("--max-index-hidden", max_hidden)) if v is not None)
        raise RagcovError(f"{flags} need the exact check, which was not done: {why}")
    failures = []
    if min_recall is not None:
        for side, name in ((TEST, "tests"), (PROBE, "probes")):
            value = stages.recall(side)
            if value is not None and value * 100 < min_recall:
                failures.append(f"the index's recall@{stages.depth} against exact search over the "
                                f"{name} is {value * 100:.2f}%, less than "
                                f"min-index-recall={min_recall:g}")
    hidden = len(stages.index_hidden())
    if max_hidden is not None and hidden > max_hidden:
        failures.append(f"{hidden} chunks are hidden by the index, more than "
                        f"max-index-hidden={max_hidden}")
    return "Index failure: " + "; ".join(failures) if failures else None
