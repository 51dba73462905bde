"""A drift run: the suite on every transformed copy, each copy judged and recorded in turn.

The baseline is the suite's own recorded run (the ``hits`` of the data file, so a
drift run and ``ragcov run`` agree on what each test retrieved). Copies are built one
at a time, searched, judged and written in one transaction each
(:func:`ragcov.data.drift.record_copy`); a rerun with the same settings skips the
copies already recorded, so an interrupted run resumes where it stopped and a
finished one only reports.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragcov.corpus import Corpus
from ragcov.data.datafile import CoverageData
from ragcov.data.drift import DriftCopy, DriftRow, finish_drift, query_indexes, record_copy, start_drift
from ragcov.drift.base import Rebuilder
from ragcov.drift.relations import Copy, Plan, plan
from ragcov.drift.versions import Versions
from ragcov.errors import RagcovError
from ragcov.progress import progress_bar
from ragcov.retrieval import run_retriever
from ragcov.suite import Suite
from ragcov.user_warnings import RetrievalWarning


@dataclass
class DriftSettings:
    """What a drift run is: the copies it makes and how it reports them."""

    relations: list[str]
    seed: int = 0
    noise_rate: float = 0.02
    distractors: Corpus | None = None
    distractor_source: str | None = None
    resamples: int = 2000
    confidence: float = 0.95
    notes: dict[str, list[str]] = field(default_factory=dict)

    def recorded(self, k: int, retriever: dict[str, Any], tests: int | None = None) -> dict[str, Any]:
        """As the data file keeps them (report and diff read them back); ``tests``: the
        suite's size, so a later ``run --append`` is seen to have left the run behind."""
        return {"relations": self.relations, "seed": self.seed, "noise_rate": self.noise_rate,
                "distractors": self.distractor_source, "resamples": self.resamples,
                "confidence": self.confidence, "notes": self.notes, "k": k,
                "retriever": retriever_label(retriever), "tests": tests}


def retriever_label(fingerprint: dict[str, Any]) -> str | None:
    """The retriever as a drift report names it: its kind, and the ``module:attr`` (or
    function) it was built from where it has one, so a team with several factories reads
    which one drifted."""
    kind, name = fingerprint.get("kind"), fingerprint.get("name")
    return f"{kind} ({name})" if name and name != kind else kind


@dataclass
class DriftProgress:
    """What a drift run did this time: copies searched now and found already recorded."""

    copies: int
    searched: int
    resumed: int
    replaced: bool


def run_key(corpus: Corpus, suite: Suite, k: int, retriever: dict[str, Any],
            settings: DriftSettings) -> str:
    """The run's identity: a rerun with the same key resumes, another key replaces it.

    The interval's resamples and confidence are left out: they change the report, not
    a single copy's results. ``judges`` is the version of the verdicts: a run recorded
    when a distractor's verdict still counted chunks reordered by the corpus's changed
    statistics is judged again, never resumed.
    """
    suite_digest = hashlib.sha256("\x00".join(f"{q.id}\x01{q.text}" for q in suite).encode())
    distractors = settings.distractors.hash if settings.distractors is not None else None
    key = {"corpus": corpus.hash, "suite": suite_digest.hexdigest(), "k": k,
           "retriever": retriever, "relations": settings.relations, "seed": settings.seed,
           "noise_rate": settings.noise_rate, "distractors": distractors, "judges": 2}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


# Judges copies elsewhere (a Dask cluster): given the names of the copies to make and what
# every copy is judged against (the queries, their baseline, their rows in the data file),
# yields (name, changed chunks, added chunks, rows) for each as it is done, in any order.
Remote = Callable[[list[str], dict[str, Any]], Any]


def run_drift(corpus: Corpus, suite: Suite, rebuild: Rebuilder, data: CoverageData, k: int,
              settings: DriftSettings, versions: Versions | None = None, progress: bool = True,
              notify: Callable[[str], None] | None = None,
              on_copy: Callable[[str], None] | None = None,
              remote: Remote | None = None) -> DriftProgress:
    """Judge every relation's copies against the suite's recorded run in ``data``; with
    ``remote``, the copies are made, searched and judged there, and recorded here as each
    comes back (so an interrupted run resumes as a local one does)."""
    say = notify or (lambda line: None)
    fingerprint = rebuild.base.fingerprint()
    m = data.matrix()
    row_of = m.row_of()
    missing = [q.id for q in suite if q.id not in row_of]
    if missing:  # measure() recorded the suite just before: only a concurrent erase does this
        raise RagcovError(f"{data.path}: query {missing[0]!r} of the suite is not recorded; run "
                          "`ragcov drift` again")
    ids = [q.id for q in suite]
    baseline = [m.retrieved(row_of[qid]) for qid in ids]
    plans = plan(corpus, settings.relations, baseline, k, settings.seed, settings.noise_rate,
                 settings.distractors, versions)
    key = run_key(corpus, suite, k, fingerprint, settings)
    done, replaced = start_drift(data, key, settings.recorded(k, fingerprint, len(ids)), k, corpus.hash,
                                 fingerprint)
    if replaced:
        say(f"ragcov: {data.path}: replacing the drift run recorded there (other settings)")
    todo = [p for p in plans if p.name not in done]
    if done and todo:
        say(f"ragcov: resuming the drift run in {data.path}: {len(plans) - len(todo)} of "
            f"{len(plans)} copies already recorded")
    index = query_indexes(data, ids)
    queries = [(q.id, q.text) for q in suite]
    deepest = max((len(top) for top in baseline), default=k)
    depth = (deepest, k) if deepest < k else None
    if depth is not None:
        say(f"ragcov: the suite's run returned at most {deepest} chunks a query (k = {k}): each "
            f"copy is judged at that depth too")
    far = [p for p in todo if remote is not None and p.build is not None]
    named = {p.name: p for p in far}
    with progress_bar("Drift copies", total=len(todo), enabled=progress) as advance:
        for p in todo:
            if p.name in named:
                continue
            copy, rows = judged(p, corpus, rebuild, queries, baseline, index, depth)
            record_copy(data, key, k, corpus.hash, fingerprint,
                        DriftCopy(p.name, p.relation, copy.changed, copy.added, p.detail), rows)
            advance(1)
            if on_copy is not None:
                on_copy(p.name)
        if far:
            assert remote is not None
            context = {"queries": queries, "baseline": baseline, "index": index, "depth": depth}
            for name, changed, added, rows in remote(list(named), context):
                p = named[name]
                record_copy(data, key, k, corpus.hash, fingerprint,
                            DriftCopy(p.name, p.relation, changed, added, p.detail), rows)
                advance(1)
                if on_copy is not None:
                    on_copy(p.name)
    finish_drift(data, key)
    return DriftProgress(len(plans), len(todo), len(plans) - len(todo), replaced)


def judged(p: Plan, corpus: Corpus, rebuild: Rebuilder, queries: Sequence[tuple[str, str]],
            baseline: Sequence[list[int]], index: dict[str, int],
            depth: tuple[int, int] | None = None) -> tuple[Copy, list[DriftRow]]:
    """Make, search and judge plan ``p``'s copy. ``depth``: (the suite run's deepest list,
    k) where that run returned fewer than k (an app's retriever fixed at top-3 recorded at
    k = 5): each copy's lists are cut to the same depth, else every copy would seem to
    change its tests by the chunks the suite's run never returned."""
    if p.build is None:  # the corpus's own versions: judged on the baseline itself
        copy = Copy(corpus)
        results = {qid: [(corpus[c].id, None) for c in top]
                   for (qid, _), top in zip(queries, baseline)}
    else:
        copy = p.build()
        retriever = rebuild.on(copy.corpus)
        # What the suite's own run said about its queries (no word to match, lists shorter
        # than k) it said once; a copy losing chunks is the measurement, not a warning.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetrievalWarning)
            results = run_retriever(retriever, list(queries), p.depth, progress=False,
                                    corpus=copy.corpus, warn_short=False).results
        if depth is not None:
            deepest, k = depth
            cut = deepest * max(1, p.depth // k)
            results = {qid: ranked[:cut] for qid, ranked in results.items()}
    rows = []
    for (qid, _), seen in zip(queries, baseline):
        outcome = p.judge(copy, seen, results.get(qid, []))
        if outcome is not None:
            rows.append(DriftRow(index[qid], outcome.value, outcome.violated, outcome.detail()))
    return copy, rows
