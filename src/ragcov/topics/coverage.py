"""Coverage by topic: per subject, how much of it the suite reaches, and what to do first.

Per topic: its chunks (in the report's scope), covered (a test retrieves them),
untested (no test does: a probe does, or the file was never probed), not probed (in a
probed file, chunks no probe was run for or reached: nothing is known), unreachable
(``ragcov probe`` found no self-query retrieves them: a retrieval defect, not a missing
test),
CC, the tests that reach it and, given production traffic, the share of traffic
hits landing there and on its untested chunks.

Sorted by what to do first: with traffic, the topics whose untested chunks
production retrieves most (users ask, tests do not); without, the topics with the
largest share of untested chunks (a dark subject first), then the most untested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.compare.diff import TwoSides
from ragcov.data.topics import StoredTopics
from ragcov.errors import RagcovError
from ragcov.reachability.audit import UNREACHABLE
from ragcov.summary import GATE_PRECISION, display_percent, fails_under

#: Test ids listed per topic (JSON), most hits in the topic first.
TEST_IDS = 5


@dataclass
class TopicNumbers:
    topic: int
    label: str
    terms: list[str]
    central: str                   # chunk id nearest the topic's centre (named by its id)
    chunks: int                    # in the report's scope
    covered: int
    untested: int
    unreachable: int | None        # None: the data file was never probed
    tests: int                     # queries retrieving at least one of its chunks
    not_probed: int | None = None  # uncovered, never probed and reached by no probe (probed files)
    test_ids: list[str] = field(default_factory=list)
    untested_chunks: list[str] = field(default_factory=list)
    traffic_hits: int | None = None            # production hits on its chunks
    untested_traffic_hits: int | None = None   # ... on its untested chunks

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0

    @property
    def untested_share(self) -> float:
        return self.untested / self.chunks if self.chunks else 0.0


@dataclass
class TopicReport:
    """Every topic's numbers, in the order to act on them, and how the topics were made."""

    data_file: str
    settings: dict[str, Any]
    topics: list[TopicNumbers]
    chunks: int
    covered: int
    queries: int
    probed: bool
    traffic_hits: int | None = None   # all production hits, when traffic was given
    unassigned: int = 0               # chunks in scope with no topic (a set made before them)
    tests: int = 0                    # queries that retrieve a chunk in scope (the TOTAL's tests)
    sorted_by: str = "untested share"
    stored: StoredTopics | None = field(default=None, repr=False)  # labels, the map

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0

    def share(self, hits: int | None) -> float | None:
        if hits is None or not self.traffic_hits:
            return None
        return hits / self.traffic_hits


def topic_positions(stored: StoredTopics, chunk_ids: list[str]) -> np.ndarray:
    """Per chunk of ``chunk_ids``, its topic number (0: the set has none for it)."""
    of = dict(zip(stored.chunk_ids, stored.assignment.tolist()))
    return np.fromiter((of.get(c, 0) for c in chunk_ids), dtype=np.int64, count=len(chunk_ids))


def topic_numbers(scoped: Any, stored: StoredTopics, data_file: str,
                  traffic_hits: np.ndarray | None = None) -> TopicReport:
    """The per-topic table of a scoped data file (:class:`ragcov.scope.Scoped`).

    ``traffic_hits``: production hits per chunk of the full corpus (the unscoped
    columns), from ``ragcov gap``'s reading of a traffic recording.
    """
    m = scoped.matrix
    full_cols = _columns(scoped)
    topic = topic_positions(stored, m.chunk_ids)
    covered = m.covered()
    status = None
    if scoped.reachability is not None:
        status = np.asarray(scoped.reachability.status, dtype=object)[full_cols]
    unreachable = (status == UNREACHABLE) if status is not None else np.zeros(m.n_chunks, bool)
    # In a probed file an uncovered chunk nobody probed, and no probe reached, is not known
    # to be untested: it is counted apart, never folded into "untested".
    unknown = (~covered & (status == None)) if status is not None else np.zeros(m.n_chunks, bool)  # noqa: E711
    untested = ~covered & ~unreachable & ~unknown
    hits = None if traffic_hits is None else np.asarray(traffic_hits, dtype=np.int64)[full_cols]
    per_query = _queries_per_topic(m, topic, stored.n_topics)
    rows: list[TopicNumbers] = []
    for t in stored.labels:
        mine = topic == t.topic
        if not mine.any():
            continue  # every chunk of it is outside the scope
        reach = per_query.get(t.topic, {})
        ids = np.flatnonzero(mine & untested)
        rows.append(TopicNumbers(
            topic=t.topic, label=t.label, terms=list(t.terms), central=t.central,
            chunks=int(mine.sum()),
            covered=int((mine & covered).sum()), untested=int(ids.size),
            unreachable=None if status is None else int((mine & unreachable).sum()),
            tests=len(reach),
            not_probed=None if status is None else int((mine & unknown).sum()),
            test_ids=[m.query_ids[q] for q, _n in sorted(reach.items(),
                                                         key=lambda r: (-r[1], r[0]))[:TEST_IDS]],
            untested_chunks=[m.chunk_ids[j] for j in ids],
            traffic_hits=None if hits is None else int(hits[mine].sum()),
            untested_traffic_hits=None if hits is None
            else int(hits[mine & (untested | unknown)].sum())))
    report = TopicReport(data_file=data_file, settings=dict(stored.settings), topics=rows,
                         chunks=m.n_chunks, covered=int(covered.sum()), queries=m.n_queries,
                         probed=status is not None,
                         traffic_hits=None if hits is None else int(np.asarray(traffic_hits).sum()),
                         unassigned=int((topic == 0).sum()), stored=stored,
                         tests=int((np.diff(m.indptr) > 0).sum()))
    sort_topics(report)
    return report


def _columns(scoped: Any) -> np.ndarray:
    cols = np.asarray(getattr(scoped, "columns", np.zeros(0)), dtype=np.int64)
    return cols if cols.size == scoped.matrix.n_chunks else np.arange(scoped.matrix.n_chunks)


def _queries_per_topic(m: Any, topic: np.ndarray, n_topics: int) -> dict[int, dict[int, int]]:
    """Topic -> {query row: its hits in the topic}."""
    if m.nnz == 0:
        return {}
    rows = m.hit_rows()
    t = topic[m.indices]
    keep = t > 0
    pairs, counts = np.unique(np.stack([t[keep], rows[keep]]), axis=1, return_counts=True)
    out: dict[int, dict[int, int]] = {}
    for (tt, q), c in zip(pairs.T.tolist(), counts.tolist()):
        out.setdefault(tt, {})[q] = c
    return out


def sort_topics(report: TopicReport) -> None:
    """What to do first: traffic the tests miss, else the darkest subject (ties: topic number)."""
    if report.traffic_hits is not None:
        report.sorted_by = "untested traffic"
        report.topics.sort(key=lambda r: (-(r.untested_traffic_hits or 0), -r.untested_share,
                                          -r.untested, r.topic))
    else:
        report.sorted_by = "untested share"
        report.topics.sort(key=lambda r: (-r.untested_share, -r.untested, r.topic))


def check_min_topic_coverage(minimum: float | None) -> None:
    """Refused before any work, as ``--fail-under`` is: a gate above 100 always fails."""
    if minimum is not None and not 0 <= minimum <= 100:
        raise RagcovError(f"--min-topic-coverage must be a percentage from 0 to 100, got {minimum:g}")


def min_topic_failure(report: TopicReport, minimum: float | None,
                      precision: int | None = None) -> str | None:
    """``--min-topic-coverage``: None when every topic is at least that covered, else the
    message naming the least covered topic (compared as ``--fail-under`` compares)."""
    check_min_topic_coverage(minimum)
    if minimum is None:
        return None
    p = GATE_PRECISION if precision is None else precision
    below = [r for r in report.topics if fails_under(r.coverage, minimum, p)]
    if not below:
        return None
    worst = min(below, key=lambda r: (r.coverage, r.topic))
    more = len(below) - 1
    return (f"Coverage failure: topic {worst.topic} ({worst.label}) is "
            f"{display_percent(worst.coverage, p)}% covered, less than min-topic-coverage="
            f"{minimum:g}" + (f" ({more} more topic{'s' if more != 1 else ''} below it)"
                              if more else ""))


@dataclass(frozen=True)
class TopicChange(TwoSides):
    """One topic's coverage in two recordings (``ragcov diff``)."""

    topic: int
    label: str
    base_chunks: int
    base_covered: int
    head_chunks: int
    head_covered: int


@dataclass
class TopicDiff:
    """Per-topic CC change, most changed first; ``side`` is the recording the topics were
    made for (``base`` or ``head``); ``unmatched`` chunks of the other side had no topic."""

    side: str
    changes: list[TopicChange]
    unmatched: int = 0


def topic_diff(d: Any, stored: StoredTopics, side: str) -> TopicDiff:
    """The per-topic change of a :class:`ragcov.compare.diff.CoverageDiff`.

    The topics belong to one side's corpus; the other side's chunks take the topic of
    the chunk they were matched to (same position, or same text across a re-index),
    else their own id's topic, else none (counted in ``unmatched``).
    """
    base, head = d.base, d.head
    tb = topic_positions(stored, base.chunk_ids)
    th = topic_positions(stored, head.chunk_ids)
    b2h = np.asarray(d._b2h, dtype=np.int64)
    if side == "head":
        matched = b2h >= 0
        tb = np.where(matched & (tb == 0), th[np.where(matched, b2h, 0)], tb)
        unmatched = int((tb == 0).sum())
    else:
        h2b = np.full(head.n_chunks, -1, dtype=np.int64)
        h2b[b2h[b2h >= 0]] = np.flatnonzero(b2h >= 0)
        matched = h2b >= 0
        th = np.where(matched & (th == 0), tb[np.where(matched, h2b, 0)], th)
        unmatched = int((th == 0).sum())
    n = stored.n_topics + 1
    cov_b, cov_h = base.covered(), head.covered()
    bn, hn = np.bincount(tb, minlength=n), np.bincount(th, minlength=n)
    bc = np.bincount(tb, weights=cov_b, minlength=n).astype(np.int64)
    hc = np.bincount(th, weights=cov_h, minlength=n).astype(np.int64)
    changes = [TopicChange(t.topic, t.label, int(bn[t.topic]), int(bc[t.topic]), int(hn[t.topic]),
                           int(hc[t.topic])) for t in stored.labels]
    changes.sort(key=lambda c: (-abs(c.change), c.topic))
    return TopicDiff(side, changes, unmatched)


def find_topic(stored: StoredTopics, given: str) -> int:
    """The topic ``generate --topic`` names: its number, its label, or one of its terms
    when only one topic's label holds it (case does not matter)."""
    text = given.strip()
    numbers = {t.topic for t in stored.labels}
    if text.lstrip("Tt").isdigit():
        n = int(text.lstrip("Tt"))
        if n in numbers:
            return n
        raise RagcovError(f"--topic {given}: no such topic (topics are 1 to {stored.n_topics})")
    low = text.lower()
    exact = [t.topic for t in stored.labels if t.label.lower() == low]
    if exact:
        return exact[0]
    words = [t for t in stored.labels if low in (w.lower() for w in t.label.split(", "))]
    if len(words) == 1:
        return words[0].topic
    if len(words) > 1:
        shown = "; ".join(f"{t.topic}: {t.label}" for t in words[:5])
        raise RagcovError(f"--topic {given!r} names {len(words)} topics ({shown}); give its number")
    raise RagcovError(f"--topic {given!r}: no topic has that number, label or label word "
                      "(`ragcov topics` lists them)")
