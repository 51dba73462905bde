"""Which queries fail (docs/method.md §6), from relevance labels or imported scores.

A **failure** is a query whose per-query metric is at its minimum: by default
``value <= 0``; with ``fail_below=X``, ``value < X``. The metric comes from
relevance labels (``hit``, ``context_relevance``) or from imported per-query
scores (an LLM judge's). Queries with no label or score are neither failing nor
passing: they are listed as unlabelled.

Grouping the failures into faults and measuring orders of the suite against them
is :mod:`ragcov.faults`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import QUERY_ID_KEYS, QUERY_TEXT_KEYS, FieldError, parse_id, parse_score
from ragcov.files import first_key, iter_csv, iter_jsonl, load_json, require_file
from ragcov.matrix import CoverageMatrix
from ragcov.qrels import Qrels

if TYPE_CHECKING:
    import scipy.sparse as sp

LABEL_METRICS: tuple[str, ...] = ("hit", "context_relevance", "recall")
#: What a test's outcome says about its question: a test asserting what its retrieval
#: found passes or fails with it (recorded by ``pytest --ragcov``).
OUTCOME_METRIC = "test_outcome"


# ---------------------------------------------------------------------- labels
def relevant_hits(m: CoverageMatrix, qrels: Qrels) -> sp.csr_matrix:
    """A 0/1 matrix on the hit pattern: 1 where the retrieved chunk is relevant to the query.

    scipy is imported here, not with the module: ``ragcov report`` reads test outcomes
    through this module and starts without scipy (tests/test_startup.py)."""
    import scipy.sparse as sp

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
        raise RagcovError(f"unknown label metric {metric!r}: expected hit, context_relevance "
                          "or recall")
    rel = relevant_hits(m, qrels)
    n_rel = np.asarray(rel.sum(axis=1, dtype=np.int64)).ravel().astype(np.float64)
    if metric == "hit":
        values = (n_rel > 0).astype(np.float64)
    elif metric == "recall":
        values = _recall(m, qrels)
    else:
        n_ret = np.diff(m.hits.indptr).astype(np.float64)
        values = np.divide(n_rel, n_ret, out=np.zeros_like(n_rel), where=n_ret > 0)
    labelled = np.fromiter((q in qrels.relevant for q in m.query_ids), dtype=bool,
                           count=m.n_queries)
    values[~labelled] = np.nan
    return values


def _recall(m: CoverageMatrix, qrels: Qrels) -> np.ndarray:
    """Per query, recall@k: the share of its relevant chunks (or documents, with document
    labels) that its top-k holds; NaN where it has no label."""
    keys = m.chunk_ids if qrels.level == "chunk" else m.doc_ids
    values = np.full(m.n_queries, np.nan)
    for row, qid in enumerate(m.query_ids):
        wanted = qrels.relevant.get(qid)
        if wanted:
            found = {keys[c] for c in m.retrieved(row)} & set(wanted)
            values[row] = len(found) / len(set(wanted))
    return values


@dataclass(frozen=True)
class Correctness:
    """Coverage's other half: did the tests' retrievals find what they should?

    From relevance labels: the hit rate (share of labelled queries with a relevant chunk
    in the top-k) and mean recall@k. From test outcomes (``pytest --ragcov``): the share of
    the tests that passed, each counted once. A suite of vague questions raises coverage
    and retrieves nothing relevant; these are what a gate then catches.
    """

    source: str                 # "labels" or "outcomes"
    labelled: int               # queries (labels) or tests (outcomes) counted
    hit_rate: float
    recall_at_k: float | None   # labels only
    failed: list[str] = field(default_factory=list)  # tests that failed (outcomes)
    level: str | None = None    # labels only: "doc" (a chunk of a relevant document counts) or "chunk"
    # Labels naming ids the recorded corpus does not have (a re-chunk renamed them): they
    # can never be hit, so the hit rate is not the retriever's alone.
    unresolved: Unresolved | None = None

    def as_dict(self) -> dict[str, Any]:
        # A rate of labels is a hit rate; of test outcomes, the tests' pass rate (``hit_rate``
        # stays beside it for outcomes too: the JSON report renames no key within a version).
        rates = {"hit_rate": self.hit_rate} if self.source == "labels" else {
            "pass_rate": self.hit_rate, "hit_rate": self.hit_rate}
        out = {"source": self.source, "labelled": self.labelled, **rates,
               "recall_at_k": self.recall_at_k, "failed_tests": self.failed,
               **({"level": self.level} if self.source == "labels" else {})}
        if self.unresolved is not None:
            u = self.unresolved
            out["unresolved_labels"] = {"level": u.level, "labels": u.labels, "of": u.total,
                                        "unknown_ids": u.ids, "queries_that_cannot_hit": u.dead_queries}
        return out


@dataclass(frozen=True)
class Unresolved:
    """Relevant ids of the labels that name nothing in the recorded corpus."""

    level: str               # "chunk" or "doc"
    ids: list[str]           # distinct unknown ids, in label order
    labels: int              # relevant labels naming one of them
    total: int               # relevant labels of the recorded queries
    dead_queries: int        # labelled queries whose every relevant id is unknown


def unresolved_labels(m: CoverageMatrix, qrels: Qrels) -> Unresolved | None:
    """The labels of the recorded queries whose ids are not in the corpus; None when all resolve."""
    keys = set(m.chunk_ids) if qrels.level == "chunk" else {str(d) for d in m.doc_ids}
    recorded = set(m.query_ids)
    ids: dict[str, None] = {}
    labels = total = dead = 0
    for qid, wanted in qrels.relevant.items():
        if qid not in recorded or not wanted:
            continue
        gone = [w for w in sorted(wanted) if w not in keys]
        total += len(wanted)
        labels += len(gone)
        ids.update(dict.fromkeys(gone))
        dead += len(gone) == len(wanted)
    if not labels:
        return None
    return Unresolved(qrels.level, list(ids), labels, total, dead)


def label_correctness(m: CoverageMatrix, qrels: Qrels) -> Correctness:
    hit = label_metric(m, qrels, "hit")
    labelled = ~np.isnan(hit)
    if not labelled.any():
        raise RagcovError("no query of the data file has a relevance label (the labels name "
                          "other query ids)")
    return Correctness("labels", int(labelled.sum()), float(hit[labelled].mean()),
                       float(np.nanmean(label_metric(m, qrels, "recall"))), level=qrels.level,
                       unresolved=unresolved_labels(m, qrels))


def query_outcome(qid: str, first: str | None, outcomes: dict[str, str],
                  askers: dict[str, list[str]] | None = None) -> str | None:
    """A question's outcome: failed when any test that asked it failed, passed when the
    tests that asked it passed, else that of the one that asked first (skipped) or None."""
    seen = [outcomes.get(t) for t in ((askers or {}).get(qid) or [first or ""])]
    for outcome in ("failed", "passed"):
        if outcome in seen:
            return outcome
    return next((o for o in seen if o), None)


def outcome_values(m: CoverageMatrix, outcomes: dict[str, str],
                   askers: dict[str, list[str]] | None = None) -> np.ndarray:
    """Per query: 0 when a test that asked it failed, 1 when those that asked it passed,
    NaN otherwise (``askers``: every test of each question; else the one that asked first)."""
    values = np.full(m.n_queries, np.nan)
    contexts = m.query_context or [None] * m.n_queries
    for row, (qid, first) in enumerate(zip(m.query_ids, contexts)):
        outcome = query_outcome(qid, first, outcomes, askers)
        if outcome in ("passed", "failed"):
            values[row] = 1.0 if outcome == "passed" else 0.0
    return values


def outcome_correctness(outcomes: dict[str, str]) -> Correctness | None:
    counted = {t: o for t, o in outcomes.items() if o in ("passed", "failed")}
    if not counted:
        return None
    failed = sorted(t for t, o in counted.items() if o == "failed")
    return Correctness("outcomes", len(counted), 1 - len(failed) / len(counted), None, failed)


def outcome_failures(m: CoverageMatrix, outcomes: dict[str, str],
                     askers: dict[str, list[str]] | None = None,
                     fail_below: float | None = None) -> Failures:
    """The questions of failed tests (``faults`` without labels or scores): a passed test
    is 1, a failed one 0, and ``fail_below`` applies to those values as to any metric."""
    return find_failures(m, outcome_values(m, outcomes, askers), OUTCOME_METRIC, fail_below, 0)


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


def _score_value(raw: Any, metric: str, path: Path, lineno: int) -> float:
    """The metric's value in one row; NaN (no score) for an empty cell or null.

    A NaN or infinite value is refused: NaN would quietly turn a judged query into an
    unlabelled one, and an infinity would never (or always) fail. A judge that gave
    no score leaves the cell empty, as pandas writes a missing value.
    """
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
        return math.nan
    try:
        value = parse_score(raw.strip() if isinstance(raw, str) else raw, text_ok=True)
    except FieldError as exc:
        what = ("a finite number (leave it empty or null for a query with no score)"
                if "finite" in str(exc) else "a number")
        raise InputFormatError(path, lineno, f"{metric} = {raw!r} is not {what}") from None
    return math.nan if value is None else value


def _query_key(value: Any, path: Path, lineno: int, what: str, parse: Any) -> str | None:
    """A row's query id or text, stripped; None when absent or blank."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse(value.strip() if isinstance(value, str) else value)
    except FieldError as exc:
        raise InputFormatError(path, lineno, f"{what}: {exc}") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError(f"a {type(value).__name__}, not text")
    return value


def load_scores(path: str | os.PathLike[str], metric: str) -> Scores:
    """Per-query scores from JSONL/CSV/JSON (e.g. a RAGAS results CSV), one metric column."""
    p = require_file(path)
    scores = Scores(metric, source=str(p))
    rows = _records(p)
    if not rows:
        raise RagcovError(f"{p}: no rows")
    # A query scored twice with two values is settled by nothing but line order (the last
    # row would win): refused. The same value twice (a results file concatenated) is one.
    seen: dict[tuple[str, str], tuple[int, float]] = {}
    for lineno, row in rows:
        if metric not in row:
            raise InputFormatError(p, lineno, f"no {metric!r} column (have: "
                                   f"{', '.join(sorted(map(str, row)))})")
        value = _score_value(row[metric], metric, p, lineno)
        qid = _query_key(first_key(row, QUERY_ID_KEYS), p, lineno, "query id", parse_id)
        text = _query_key(first_key(row, QUERY_TEXT_KEYS), p, lineno, "query text", _text)
        if qid is None and text is None:
            raise InputFormatError(p, lineno, "no query id or query text (expected one of "
                                   f"{', '.join(QUERY_ID_KEYS + QUERY_TEXT_KEYS)})")
        key = ("query id", qid) if qid is not None else ("query text", str(text))
        if key in seen:
            first, before = seen[key]
            if not (before == value or (math.isnan(before) and math.isnan(value))):
                raise InputFormatError(p, lineno, f"{key[0]} {key[1]!r} is scored twice with "
                                       f"different {metric} values ({before:g} on line {first}, "
                                       f"{value:g} here); keep one row per query")
            continue
        seen[key] = (lineno, value)
        if math.isnan(value):
            scores.missing += 1
        elif qid is not None:
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
