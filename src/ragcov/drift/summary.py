"""A recorded drift run summed up: each relation's violation rate with a bootstrap
interval, the worst tests, the chunks that break and the documents they belong to.

Read from the data file alone (:class:`ragcov.data.drift.DriftRecord`), with numpy
and nothing heavier, so ``ragcov report`` shows a drift run without loading scipy.

The interval is a percentile bootstrap over tests: the suite is resampled with
replacement ``resamples`` times and the violation rate taken each time. For a rate
(a mean of 0/1 verdicts) a resample's count of violations is exactly a binomial
draw with the observed rate, so the resamples are drawn that way, in one call,
however large the suite; the seed is the drift run's, so a report shows the same
interval every time. A rate of 0 (or 1) gives the interval [0, 0] ([1, 1]): the
bootstrap cannot see beyond the data, which is why the test count stands beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.data.drift import DriftRecord
from ragcov.drift.relations import KINDS, RELATION_NAMES, kind_of
from ragcov.drift.transforms import FORMATS
from ragcov.errors import RagcovError

DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95


def bootstrap_interval(violated: int, n: int, resamples: int = DEFAULT_RESAMPLES,
                       confidence: float = DEFAULT_CONFIDENCE, seed: int = 0
                       ) -> tuple[float, float]:
    """The percentile bootstrap interval of a rate of ``violated`` in ``n`` tests."""
    if n == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    rates = rng.binomial(n, violated / n, size=resamples) / n
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(rates, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class TestResult:
    """One test under one relation, its rows over the relation's copies combined."""

    query_idx: int
    query_id: str
    text: str
    value: float
    violated: bool
    broke: list[int]            # chunk idx, each once, in first-seen order
    detail: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ChunkBreaks:
    chunk_idx: int
    chunk_id: str
    doc_id: str
    name: str                   # its id, as a person finds it
    seen: int                   # the (test, copy) pairs that looked at it
    broke: int

    @property
    def rate(self) -> float:
        return self.broke / self.seen if self.seen else 0.0


@dataclass(frozen=True)
class DocumentBreaks:
    doc_id: str
    seen: int
    broke: int
    tests: int                  # tests that violated with a chunk of this document broken

    @property
    def rate(self) -> float:
        return self.broke / self.seen if self.seen else 0.0


@dataclass
class RelationResult:
    relation: str
    copies: int
    changed: int                # chunks changed, over the relation's copies
    added: int                  # chunks added
    tests: list[TestResult]
    chunks: list[ChunkBreaks]   # the chunks seen, most broken first
    documents: list[DocumentBreaks]
    interval: tuple[float, float]
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.tests)

    @property
    def violated(self) -> int:
        return sum(t.violated for t in self.tests)

    @property
    def rate(self) -> float:
        return self.violated / self.n if self.n else 0.0

    @property
    def kind(self) -> str:
        return kind_of(self.relation)

    @property
    def measure_name(self) -> str:
        return KINDS[self.kind].measure

    @property
    def measure(self) -> float | None:
        if not self.tests:
            return None
        return float(np.mean([t.value for t in self.tests]))

    @property
    def reordered(self) -> list[TestResult] | None:
        """Tests some of whose own chunks left the top-k because adding chunks changed the
        corpus's statistics (BM25's document frequencies), no added chunk taking their
        place; None where the relation adds nothing or its run did not record it."""
        if self.kind != "displaced" or not any("reordered" in d for t in self.tests for d in t.detail):
            return None
        return [t for t in self.tests if any(d.get("reordered") for d in t.detail)]

    def worst(self, limit: int | None = None) -> list[TestResult]:
        """Violating tests, worst first (lowest Jaccard, most displaced or stale)."""
        low = KINDS[self.kind].worst == "low"
        bad = [t for t in self.tests if t.violated]
        bad.sort(key=lambda t: (t.value if low else -t.value, t.query_idx))
        return bad if limit is None else bad[:limit]


@dataclass
class DriftSummary:
    settings: dict[str, Any]
    finished: bool
    relations: list[RelationResult]
    names: dict[int, str]                 # chunk idx -> its id, for the chunks shown
    texts: dict[int, str]                 # chunk idx -> text, for the chunks that broke
    judged: int = 0                       # the suite's tests the run judged
    in_file: int = 0                      # the tests the file holds now

    @property
    def earlier_suite(self) -> str | None:
        """Said when the file's suite grew after the drift run (``run --append``): its rates
        are of the earlier suite."""
        if self.in_file <= self.judged or not self.judged:
            return None
        return (f"the drift rates are of an earlier suite: {self.judged} tests judged, the file "
                f"holds {self.in_file} now (run --append since); run ragcov drift again to judge "
                "them all")

    def relation(self, name: str) -> RelationResult | None:
        return next((r for r in self.relations if r.relation == name), None)

    @property
    def resamples(self) -> int:
        return int(self.settings.get("resamples", DEFAULT_RESAMPLES))

    @property
    def confidence(self) -> float:
        return float(self.settings.get("confidence", DEFAULT_CONFIDENCE))


def summarize_drift(record: DriftRecord) -> DriftSummary:
    """Every relation of the recorded run, in the order the run took them."""
    settings = record.settings
    resamples = int(settings.get("resamples", DEFAULT_RESAMPLES))
    confidence = float(settings.get("confidence", DEFAULT_CONFIDENCE))
    seed = int(settings.get("seed", 0))
    # Single chunks are named by id, as everywhere (a position names another chunk's id
    # in a corpus of doc#0, doc#1 ..., and a corpus change is what drift is about).
    names = dict(enumerate(record.chunk_ids))
    by_relation: dict[str, list[Any]] = {}
    for copy in record.copies:
        by_relation.setdefault(copy.relation, []).append(copy)
    results = []
    for relation, copies in by_relation.items():
        rows = [(c, r) for c in copies for r in record.rows.get(c.name, [])]
        tests = _tests(relation, rows, record)
        violated = sum(t.violated for t in tests)
        results.append(RelationResult(
            relation=relation, copies=len(copies), changed=sum(c.changed for c in copies),
            added=sum(c.added for c in copies), tests=tests,
            chunks=_chunks(rows, record, names), documents=_documents(rows, record),
            interval=bootstrap_interval(violated, len(tests), resamples, confidence, seed),
            notes=list(settings.get("notes", {}).get(relation, []))))
    order = list(settings.get("relations", []))
    rank = {name: i for i, name in enumerate(order)}
    results.sort(key=lambda r: rank.get(r.relation, rank.get(r.relation.split(":")[0], len(rank))))
    judged = settings.get("tests")
    if not isinstance(judged, int):  # a run recorded before the suite's size was kept
        judged = len(record.queries)
    return DriftSummary(settings, record.finished, results, names, record.texts, judged,
                        record.file_queries)


def _tests(relation: str, rows: Sequence[tuple[Any, Any]], record: DriftRecord) -> list[TestResult]:
    combine = KINDS[kind_of(relation)].combine
    per: dict[int, list[Any]] = {}
    for _, row in rows:
        per.setdefault(row.query, []).append(row)
    out = []
    for q in sorted(per):
        mine = per[q]
        values = [r.value for r in mine]
        value = min(values) if combine == "min" else max(values) if combine == "max" else sum(values)
        broke = list(dict.fromkeys(int(c) for r in mine for c in r.detail.get("broke", [])))
        qid, text = record.queries[q]
        out.append(TestResult(q, qid, text, float(value), any(r.violated for r in mine), broke,
                              [r.detail for r in mine]))
    return out


def _chunks(rows: Sequence[tuple[Any, Any]], record: DriftRecord, names: dict[int, str]
            ) -> list[ChunkBreaks]:
    seen: dict[int, int] = {}
    broke: dict[int, int] = {}
    for _, row in rows:
        for c in row.detail.get("seen", []):
            seen[int(c)] = seen.get(int(c), 0) + 1
        for c in row.detail.get("broke", []):
            broke[int(c)] = broke.get(int(c), 0) + 1
    out = [ChunkBreaks(c, record.chunk_ids[c], record.doc_ids[c], names[c], n, broke.get(c, 0))
           for c, n in seen.items()]
    out.sort(key=lambda b: (-b.broke, -b.rate, b.chunk_idx))
    return out


def _documents(rows: Sequence[tuple[Any, Any]], record: DriftRecord) -> list[DocumentBreaks]:
    seen: dict[str, int] = {}
    broke: dict[str, int] = {}
    tests: dict[str, set[int]] = {}
    for _, row in rows:
        for c in row.detail.get("seen", []):
            d = record.doc_ids[int(c)]
            seen[d] = seen.get(d, 0) + 1
        for c in row.detail.get("broke", []):
            d = record.doc_ids[int(c)]
            broke[d] = broke.get(d, 0) + 1
            if row.violated:
                tests.setdefault(d, set()).add(row.query)
    out = [DocumentBreaks(d, n, broke.get(d, 0), len(tests.get(d, ()))) for d, n in seen.items()]
    out.sort(key=lambda b: (-b.rate, -b.broke, b.doc_id))
    return out


def gate_failures(summary: DriftSummary, limits: dict[str, float]) -> list[str]:
    """``--max-violation-rate``: one line per relation whose rate is above its limit.

    ``limits`` maps a relation (``noise``, ``format`` for every form, ``format:csv``)
    or ``all`` to the highest rate it may have; the most specific name wins.
    """
    out = []
    ran = {r.relation for r in summary.relations}
    for name in unmatched_limits(limits, ran):
        # A gate on a relation that did not run checks nothing: it fails, in its own words.
        out.append(f"drift: --max-violation-rate {name}={limits[name]:g}: the {name} relation did "
                   f"not run (ran: {', '.join(sorted(ran)) or 'none'}), so it gates nothing")
    for r in summary.relations:
        family = r.relation.split(":")[0]
        for name in (r.relation, family, "all"):
            if name in limits:
                limit = limits[name]
                if r.rate > limit:
                    out.append(f"drift: {r.relation} violation rate {100 * r.rate:.1f}% "
                               f"({r.violated} of {r.n} tests) is above --max-violation-rate "
                               f"{'' if name == 'all' else name + '='}{limit:g}")
                break
    return out


def unmatched_limits(limits: dict[str, float], relations: Sequence[str] | set[str]) -> list[str]:
    """The relations ``limits`` name (not ``all``) that none of ``relations`` is (a family
    name, ``format`` or ``stale``, matches its forms)."""
    families = {r.split(":")[0] for r in relations} | set(relations)
    return [name for name in limits if name != "all" and name not in families]


def check_limits_run(limits: dict[str, float], relations: Sequence[str]) -> None:
    """Refused before any work: a ``--max-violation-rate`` naming a relation not asked for."""
    missing = unmatched_limits(limits, relations)
    if missing:
        name = missing[0]
        raise RagcovError(f"--max-violation-rate {name}={limits[name]:g}: the {name} relation is "
                          f"not run (--relation {','.join(relations)}); add it to --relation or "
                          "drop the limit")


def parse_limits(values: Sequence[str]) -> dict[str, float]:
    """``--max-violation-rate RATE`` (every relation) or ``RELATION=RATE``, repeatable;
    refused in one line before any work when a value is not one."""
    limits: dict[str, float] = {}
    for value in values:
        name, sep, raw = value.rpartition("=")
        name = name.strip() if sep else "all"
        known = name in ("all", *RELATION_NAMES) or (
            name.startswith("format:") and name[7:] in FORMATS)
        if not known:
            raise RagcovError(f"--max-violation-rate {value!r}: unknown relation {name!r} "
                              f"(expected RATE, or RELATION=RATE with RELATION one of all, "
                              f"{', '.join(RELATION_NAMES)} or format:FORM)")
        try:
            rate = float(raw)
        except ValueError:
            raise RagcovError(f"--max-violation-rate {value!r}: {raw.strip()!r} is not a rate "
                              "from 0 to 1") from None
        if not math.isfinite(rate) or not 0 <= rate <= 1:
            raise RagcovError(f"--max-violation-rate {value!r}: the rate must be from 0 to 1, "
                              f"got {rate:g}")
        limits[name] = rate
    return limits
