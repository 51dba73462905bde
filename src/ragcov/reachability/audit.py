"""Why a chunk is uncovered: reachability statuses, hubs and lost gold.

An uncovered chunk is one of two things, and a team acts on them differently:

* ``untested``: some probe retrieves it, so a question can reach it; no test asks one.
  Write a test (or let ``ragcov generate`` write it).
* ``unreachable``: even its own self-queries do not retrieve it. That is a retrieval
  defect (a shadowed near-duplicate, a table the embedding flattens, an anti-hub, a
  chunk too short to score); another test will not fix it, and generating questions
  for it wastes calls that always fail the retrieval check.

``covered`` chunks are what a test retrieves. A chunk neither covered nor probed, and
retrieved by no other chunk's probe, has no status: nothing is known about it.

Hubs are the other side of the same coin: in dense spaces a few chunks occupy a
disproportionate share of all top-k lists (Radovanovic et al., JMLR 2010). Their
k-occurrence, its skewness (the standard hubness measure) and the share of all
retrievals the top chunks capture are measured here over tests and probes apart.

Everything is computed from the data file's rows with numpy: one pass over each
sparse matrix, so a million chunks and a million probe lists take about a second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragcov.data.probes import ProbeMatrix
from ragcov.data.stages import StageRecord
from ragcov.matrix import CoverageMatrix
from ragcov.reachability.stages import Stages, attribute

COVERED, UNTESTED, UNREACHABLE = "covered", "untested", "unreachable"
STATUSES = (COVERED, UNTESTED, UNREACHABLE)
# A chunk this similar (TF-IDF cosine) to the chunk that displaced it is its near duplicate.
NEAR_DUPLICATE = 0.9
# Chunks shorter than this many characters (trimmed) give a retriever too little to score.
SHORT_CHUNK_CHARS = 40
LORENZ_POINTS = 101


@dataclass
class Hubs:
    """How retrievals concentrate on a few chunks: one side (tests or probes)."""

    retrievals: int                 # hits in all top-k lists together
    k_occurrence: np.ndarray        # per chunk
    capture: dict[str, float]       # "top5", "top10", "top1%": share of retrievals
    skewness: float | None          # of the k-occurrence distribution (None: constant)
    gini: float
    lorenz: list[tuple[float, float]]  # (share of chunks, share of retrievals), ascending

    def top(self, n: int = 10) -> list[tuple[int, int]]:
        """The ``n`` chunks with the highest k-occurrence: (position, count), ties by position."""
        order = np.lexsort((np.arange(self.k_occurrence.size), -self.k_occurrence))[:n]
        return [(int(i), int(self.k_occurrence[i])) for i in order if self.k_occurrence[i] > 0]

    def as_dict(self, chunk_ids: list[str], n: int = 10) -> dict[str, Any]:
        return {"retrievals": self.retrievals, "capture": self.capture,
                "skewness": self.skewness, "gini": self.gini,
                "top": [{"chunk_id": chunk_ids[i], "k_occurrence": c} for i, c in self.top(n)],
                "lorenz": [list(p) for p in self.lorenz]}


@dataclass(frozen=True)
class Draft:
    """A draft test for an untested chunk: the probe that retrieved it.

    The chunk's own probes first (they ask about it), a generator's question before a
    sentence or a list of terms, then the best rank. Only a generator's probe (``llm``,
    from ``probe --generator``) is a question; a ``sentence`` probe is a sentence copied
    from a chunk and a ``terms`` probe a list of its words. Those say which words reach
    the chunk, and a person has to rewrite them as the question a user would ask: a
    test that copies its chunk's words raises coverage and tests nothing new, so every
    output marks them and none counts them as questions.
    """

    text: str
    kind: str        # "llm", "sentence" or "terms"
    rank: int        # where it ranked the chunk
    probe: str       # the probe's id
    own: bool        # built from this chunk (else another chunk's probe reached it)

    @property
    def is_question(self) -> bool:
        return self.kind == "llm"

    @property
    def label(self) -> str:
        """What the draft is, in every output's words."""
        if self.is_question:
            return "question from the generator"
        if self.kind == "terms":
            return "terms copied from a chunk: rewrite as a question"
        return "sentence copied from a chunk: rewrite as a question"

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "rank": self.rank, "probe": self.probe,
                "own_probe": self.own, "question": self.is_question,
                "copied": not self.is_question}


_KIND_ORDER = {"llm": 0, "sentence": 1, "terms": 2}


def pick_drafts(untested: np.ndarray, probes: ProbeMatrix) -> dict[int, tuple[int, int]]:
    """Per untested chunk, (probe row, rank) of the probe to draft its test from."""
    rows = np.repeat(np.arange(probes.n_probes), np.diff(probes.indptr))
    chunks = probes.indices.astype(np.int64)
    keep = untested[chunks]
    rows, chunks, ranks = rows[keep], chunks[keep], probes.rank_data[keep].astype(np.int64)
    if not rows.size:
        return {}
    own = probes.source[rows] == chunks
    kind = np.fromiter((_KIND_ORDER.get(probes.kinds[r], 3) for r in rows), dtype=np.int64,
                       count=rows.size)
    order = np.lexsort((rows, ranks, kind, ~own, chunks))
    chunks, rows, ranks = chunks[order], rows[order], ranks[order]
    first = np.ones(chunks.size, dtype=bool)
    first[1:] = chunks[1:] != chunks[:-1]
    return {int(c): (int(r), int(k)) for c, r, k in zip(chunks[first], rows[first], ranks[first])}


@dataclass
class Reachability:
    """Per chunk status (None where unknown), what displaced each unreachable chunk, and why.

    Every total has one definition, the same in text, JSON and HTML:

    * ``chunks``: the chunks counted (a report's scope: its include/omit and exclusions);
    * ``covered``, ``untested``, ``unreachable``: the statuses above; ``unknown`` is the rest
      (neither covered nor reached by any probe, its own probes not run: ``--sample``);
    * ``not_probed``: chunks whose own probes were not run (some of them are covered or
      were reached by another chunk's probe, so they have a status all the same);
    * ``reachable`` = chunks - unreachable: every chunk not shown to be unreachable. With
      every chunk probed it is covered + untested; with a sample the unknown chunks are
      in it, and ``coverage_of_reachable`` = covered / reachable is a lower bound.
    """

    chunk_ids: list[str]
    doc_ids: np.ndarray
    status: np.ndarray              # object array of str | None, per chunk
    displaced_by: np.ndarray        # int64 position in ``all_ids``, -1 where none
    reason: np.ndarray              # object array of str | None
    probed: np.ndarray              # bool, the chunk's own probes were run
    tests: Hubs
    probes: Hubs
    n_queries: int
    k: int
    n_probes: int
    reasons_seen: dict[str, int] = field(default_factory=dict)
    # The ids ``displaced_by`` points into: the whole recorded corpus, also once a report's
    # scope has left some chunks out (a displacer may be outside the scope).
    all_ids: list[str] = field(default_factory=list)
    # The whole corpus's view this one was cut from (per-chunk lookups of excluded chunks).
    full: Reachability | None = None
    # Per untested chunk (position), the probe that reached it, as a test to start from.
    drafts: dict[int, Draft] = field(default_factory=dict)
    # Per uncovered chunk that is junk (no words, boilerplate, too short): why; and the config
    # lines that exclude them (ragcov.reachability.junk). Not tests to write.
    junk: dict[int, str] = field(default_factory=dict)
    junk_config: list[str] = field(default_factory=list)
    junk_rules: list[dict[str, Any]] = field(default_factory=list)  # each rule and its counts
    # Where each unreachable chunk is lost (embedding, index, reranker) and the index's
    # recall against exact search, when ``ragcov probe`` recorded the stages (else None).
    stages: Stages | None = None

    def __post_init__(self) -> None:
        if not self.all_ids:
            self.all_ids = self.chunk_ids

    def name(self, j: int) -> str:
        """A single chunk is named by its id: positions shift when a chunk is deleted, and
        ``DOC#N`` can be another chunk's id (``doc#0``, ``doc#1`` ...)."""
        return self.chunk_ids[j]

    def draft(self, j: int) -> Draft | None:
        """The draft test of untested chunk ``j`` (None for any other chunk, and for an
        exclusion candidate: junk wants an exclusion, not a test)."""
        return None if j in self.junk else self.drafts.get(j)

    def with_candidates(self, texts: Mapping[str, str], hashes: Mapping[str, str],
                        counted: Sequence[str] | None = None,
                        min_chunk_chars: int = 0, scope: Any = None) -> Reachability:
        """This view with its uncovered junk chunks found (see :mod:`ragcov.reachability.junk`):
        ``texts`` and ``hashes`` by chunk id, ``counted`` the chunks a report counts (the
        lines are checked against them; default: every chunk of this view), ``scope`` the
        report's :class:`~ragcov.scope.ReportScope` (its exclusions are carried into the lines)."""
        from collections import Counter

        from ragcov.reachability.junk import exclusion_candidates

        counted_ids = list(counted) if counted is not None else list(self.chunk_ids)
        keep = set(counted_ids)
        uncovered = {self.chunk_ids[j]: (texts.get(self.chunk_ids[j], ""),
                                         hashes.get(self.chunk_ids[j], ""))
                     for j in np.flatnonzero(self.status != COVERED)
                     if self.chunk_ids[j] in keep}
        doc_of = {cid: str(doc) for cid, doc in zip(self.chunk_ids, self.doc_ids) if cid in keep}
        found = exclusion_candidates(uncovered, Counter(hashes.values()),
                                     {cid: texts.get(cid, "") for cid in counted_ids},
                                     min_chunk_chars, doc_of,
                                     getattr(scope, "exclude", ()), getattr(scope, "exclude_docs", ()))
        position = {cid: j for j, cid in enumerate(self.chunk_ids)}
        self.junk = {position[cid]: reason for cid, reason in found.reasons.items()}
        self.junk_config = found.config_lines
        self.junk_rules = [r.as_dict() for r in found.rules]
        return self

    def cause(self, j: int) -> str | None:
        """Where unreachable chunk ``j`` is lost (``embedding``, ``index``, ``reranker``), if
        known: see :mod:`ragcov.reachability.stages`."""
        return None if self.stages is None else self.stages.cause[j]

    def displacer(self, j: int) -> str | None:
        """The id of the chunk ranked in place of chunk ``j`` by its own probe, if any."""
        by = int(self.displaced_by[j])
        return self.all_ids[by] if by >= 0 else None

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_ids)

    def count(self, status: str) -> int:
        return int(np.count_nonzero(self.status == status))

    @property
    def probed_chunks(self) -> int:
        return int(self.probed.sum())

    @property
    def not_probed_chunks(self) -> int:
        return self.n_chunks - self.probed_chunks

    @property
    def unknown_chunks(self) -> int:
        return self.n_chunks - self.count(COVERED) - self.count(UNTESTED) - self.count(UNREACHABLE)

    @property
    def reachable_chunks(self) -> int:
        """Chunks not shown to be unreachable: the denominator of coverage_of_reachable."""
        return self.n_chunks - self.unreachable_chunks

    @property
    def unreachable_chunks(self) -> int:
        return self.count(UNREACHABLE)

    @property
    def coverage(self) -> float:
        return self.count(COVERED) / self.n_chunks if self.n_chunks else 0.0

    @property
    def coverage_of_reachable(self) -> float:
        """Covered over what a test could reach: the chunks less the unreachable ones."""
        denominator = self.reachable_chunks
        return self.count(COVERED) / denominator if denominator else 0.0

    @property
    def workload_ceiling(self) -> float:
        """min(1, queries x k / chunks): the most any suite of this size could cover."""
        if not self.n_chunks:
            return 0.0
        return min(1.0, self.n_queries * self.k / self.n_chunks)

    @property
    def coverage_of_ceiling(self) -> float:
        ceiling = self.workload_ceiling
        return self.coverage / ceiling if ceiling else 0.0

    def unreachable(self) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.status == UNREACHABLE)]

    def restricted(self, columns: np.ndarray) -> Reachability:
        """The same view over the chunks at ``columns`` only (a report's scope): every total
        and the hubs are counted over them, as the report's table counts its chunks."""
        cols = np.asarray(columns, dtype=np.int64)
        if cols.size == self.n_chunks and np.array_equal(cols, np.arange(self.n_chunks)):
            return self
        seen: dict[str, int] = {}
        for value in self.reason[cols][self.status[cols] == UNREACHABLE]:
            if value is not None:
                seen[value.split(":")[0]] = seen.get(value.split(":")[0], 0) + 1
        return Reachability(
            chunk_ids=[self.chunk_ids[i] for i in cols], doc_ids=self.doc_ids[cols],
            status=self.status[cols], displaced_by=self.displaced_by[cols],
            reason=self.reason[cols], probed=self.probed[cols],
            tests=hubs(self.tests.k_occurrence[cols]), probes=hubs(self.probes.k_occurrence[cols]),
            n_queries=self.n_queries, k=self.k, n_probes=self.n_probes, reasons_seen=seen,
            all_ids=self.all_ids, full=self.full or self,
            drafts={new: self.drafts[int(old)] for new, old in enumerate(cols)
                    if int(old) in self.drafts},
            junk={new: self.junk[int(old)] for new, old in enumerate(cols) if int(old) in self.junk},
            junk_config=self.junk_config, junk_rules=self.junk_rules,
            stages=None if self.stages is None else self.stages.restricted(cols))

    def totals(self) -> dict[str, Any]:
        return {"chunks": self.n_chunks, "queries": self.n_queries, "k": self.k,
                "probes": self.n_probes, "probed_chunks": self.probed_chunks,
                "not_probed_chunks": self.not_probed_chunks,
                "covered_chunks": self.count(COVERED), "untested_chunks": self.count(UNTESTED),
                "unknown_chunks": self.unknown_chunks,
                "reachable_chunks": self.reachable_chunks,
                "unreachable_chunks": self.unreachable_chunks,
                "coverage": self.coverage, "coverage_of_reachable": self.coverage_of_reachable,
                "workload_ceiling": self.workload_ceiling,
                "coverage_of_ceiling": self.coverage_of_ceiling,
                "exclusion_candidates": len(self.junk),
                "unreachable_reasons": dict(sorted(self.reasons_seen.items())),
                **({} if self.stages is None else self.stages.totals(self.n_chunks))}


def hubs(k_occurrence: np.ndarray) -> Hubs:
    """Concentration of retrievals over chunks, from each chunk's k-occurrence."""
    from ragcov.metrics import gini

    occ = np.asarray(k_occurrence, dtype=np.int64)
    total = int(occ.sum())
    n = occ.size
    ranked = np.sort(occ)[::-1]
    cum = np.cumsum(ranked)

    def share(top: int) -> float:
        if not total or not n:
            return 0.0
        return float(cum[min(top, n) - 1] / total)

    capture = {"top5": share(5), "top10": share(10), "top1%": share(max(1, n // 100))}
    skewness: float | None = None
    if n > 2 and occ.std() > 0:
        # Population skewness m3 / m2^1.5 (scipy.stats.skew's default), without importing
        # scipy.stats: that import alone costs a second.
        d = occ - occ.mean()
        skewness = float(np.mean(d ** 3) / np.mean(d ** 2) ** 1.5)
    return Hubs(retrievals=total, k_occurrence=occ, capture=capture, skewness=skewness,
                gini=float(gini(occ.astype(np.float64), over="corpus")) if total else 0.0,
                lorenz=lorenz(occ))


def lorenz(occ: np.ndarray, points: int = LORENZ_POINTS) -> list[tuple[float, float]]:
    """The Lorenz curve of retrievals over chunks, sampled at ``points`` shares of chunks."""
    n = occ.size
    if not n:
        return [(0.0, 0.0), (1.0, 1.0)]
    cum = np.concatenate([[0], np.cumsum(np.sort(occ))]).astype(np.float64)
    total = cum[-1]
    xs = np.linspace(0.0, 1.0, points)
    ys = cum[np.round(xs * n).astype(np.int64)] / total if total else xs.copy()
    return [(round(float(x), 4), round(float(y), 6)) for x, y in zip(xs, ys)]


ChunkDetails = Callable[[Sequence[int]], dict[int, tuple[str, str]]]
ProbeTexts = Callable[[Sequence[str]], dict[str, str]]


def audit(tests: CoverageMatrix, probes: ProbeMatrix | None,
          details: ChunkDetails | None = None, probe_texts: ProbeTexts | None = None,
          stages: StageRecord | None = None) -> Reachability:
    """Every chunk's status from the test matrix and the probe matrix of one data file.

    ``details`` maps chunk positions to their (text, content hash); it is asked only
    for the unreachable chunks and the chunks that displaced them, so a million-chunk
    file is never read whole. With it the reason of an unreachable chunk is found: an
    exact duplicate (the same content hash as the chunk its probe ranked first), a near
    duplicate (bag-of-words cosine of at least :data:`NEAR_DUPLICATE`), a chunk shorter
    than :data:`SHORT_CHUNK_CHARS`, or one whose text has no word to ask with. With
    ``stages`` (the file's stage rows) each unreachable chunk gets where it is lost.
    """
    n = tests.n_chunks
    covered = tests.covered()
    test_occ = np.asarray(tests.chunk_frequencies(), dtype=np.int64)
    status = np.full(n, None, dtype=object)
    displaced = np.full(n, -1, dtype=np.int64)
    reason = np.full(n, None, dtype=object)
    probed = np.zeros(n, dtype=bool)
    reasons_seen: dict[str, int] = {}
    if probes is not None:
        probe_occ = probes.k_occurrence()
        probed[probes.source] = True
        status[:] = statuses(np.zeros(n, dtype=bool), probes)
        lost = status == UNREACHABLE
        # displaced_by: what the chunk's own probe ranked first (its first probe that
        # retrieved anything, in recording order: terms before sentence).
        first = probes.first_hits()
        sel = np.flatnonzero(lost[probes.source] & (first >= 0))
        sources, at = np.unique(probes.source[sel], return_index=True)
        displaced[sources] = first[sel[at]]
        lost_rows = np.flatnonzero(lost)
        if details is not None and lost_rows.size:
            wanted = np.union1d(lost_rows, displaced[lost_rows][displaced[lost_rows] >= 0])
            info = details([int(i) for i in wanted])
            for i in lost_rows:
                reason[i] = _reason(int(i), int(displaced[i]), info)
        elif lost_rows.size:
            reason[lost_rows[displaced[lost_rows] < 0]] = NO_HITS
        for value in reason[lost_rows]:
            if value is not None:
                key = value.split(":")[0]
                reasons_seen[key] = reasons_seen.get(key, 0) + 1
        probe_hubs = hubs(probe_occ)
        n_probes = probes.n_probes
    else:
        probe_hubs = hubs(np.zeros(n, dtype=np.int64))
        n_probes = 0
    status[covered] = COVERED
    displaced[covered] = -1
    reason[covered] = None
    drafts: dict[int, Draft] = {}
    if probes is not None and probe_texts is not None:
        picked = pick_drafts(status == UNTESTED, probes)
        texts = probe_texts([probes.ids[r] for r, _ in picked.values()])
        drafts = {j: Draft(texts.get(probes.ids[r], ""), probes.kinds[r], rank, probes.ids[r],
                           bool(probes.source[r] == j))
                  for j, (r, rank) in picked.items()}
    where = None if stages is None else attribute(stages, status, status == UNREACHABLE, probes,
                                                  tests)
    return Reachability(chunk_ids=list(tests.chunk_ids), doc_ids=tests.doc_ids, status=status,
                        displaced_by=displaced, reason=reason, probed=probed,
                        tests=hubs(test_occ), probes=probe_hubs, n_queries=tests.n_queries,
                        k=int(tests.k or 0), n_probes=n_probes, reasons_seen=reasons_seen,
                        drafts=drafts, stages=where)


def statuses(covered: np.ndarray, probes: ProbeMatrix | None) -> np.ndarray:
    """Per chunk: covered if a test retrieves it, untested if any probe does, unreachable
    if its own probes were run and none does, else None (nothing is known)."""
    status = np.full(covered.size, None, dtype=object)
    if probes is not None:
        probed = np.zeros(covered.size, dtype=bool)
        probed[probes.source] = True
        reached = probes.k_occurrence() > 0
        status[reached] = UNTESTED
        status[probed & ~reached] = UNREACHABLE
    status[covered] = COVERED
    return status


def blast_radius(base_status: np.ndarray, head_status: np.ndarray, base_to_head: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """What a retriever, embedder or chunking change did to reachability: the HEAD chunks
    that became unreachable (their BASE counterpart was reachable) and the BASE chunks
    rescued (unreachable in BASE, reachable in HEAD). ``base_to_head`` pairs chunks
    (-1: no counterpart, so neither side counts)."""
    paired = np.flatnonzero(base_to_head >= 0)
    heads = base_to_head[paired]
    was_lost = base_status[paired] == UNREACHABLE
    now_lost = head_status[heads] == UNREACHABLE
    was_known = np.isin(base_status[paired], (COVERED, UNTESTED))
    now_known = np.isin(head_status[heads], (COVERED, UNTESTED))
    return heads[now_lost & was_known], paired[was_lost & now_known]


NO_HITS = "no-hits: its own probes retrieved nothing"


def _reason(i: int, by: int, info: dict[int, tuple[str, str]]) -> str | None:
    text, digest = info[i]
    if not _has_words(text):
        return "no-words: the chunk has no word a query could match"
    if by >= 0 and digest == info[by][1]:
        return "duplicate: same text as the chunk ranked in its place (ties go to corpus order)"
    if len(text.strip()) < SHORT_CHUNK_CHARS:
        return f"short: {len(text.strip())} characters, too little to score"
    if _only_stopwords(text):
        return "stopwords: the chunk has only common words, which retrievers do not score"
    if by >= 0:
        sim = _cosine(text, info[by][0])
        if sim >= NEAR_DUPLICATE:
            return f"near-duplicate: {sim:.2f} similar to the chunk ranked in its place"
    if by < 0:
        return NO_HITS
    return None


def _has_words(text: str) -> bool:
    """A letter or a digit in any script (:func:`ragcov.analyzer.has_words`): a chunk
    with one is never "no-words", whatever its language."""
    from ragcov.analyzer import has_words

    return has_words(text)


def _only_stopwords(text: str) -> bool:
    from ragcov.reachability.selfquery import plain_terms, words

    return not words(text) and not plain_terms(text)


def _cosine(a: str, b: str) -> float:
    """Bag-of-words cosine of two texts (a tie-breaker for reasons, not a retriever)."""
    from collections import Counter

    from ragcov.tfidf import words

    ca, cb = Counter(words(a)), Counter(words(b))
    if not ca or not cb:
        return 0.0
    dot = sum(v * cb.get(w, 0) for w, v in ca.items())
    return float(dot / (np.sqrt(sum(v * v for v in ca.values())) *
                        np.sqrt(sum(v * v for v in cb.values()))))


def lost_gold(r: Reachability, relevant_chunks: set[int] = frozenset(),  # type: ignore[assignment]
              relevant_docs: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """Relevant chunks no test retrieves, and among them those no probe retrieves either.

    The second set is what the retriever loses whatever the suite asks: a recall defect
    that labels reveal and coverage alone cannot. With document-level labels a document
    is relevant as a whole: it is lost when no chunk of it is covered, and unreachable
    when every chunk of it is.
    """
    covered = r.status == COVERED
    unreachable = r.status == UNREACHABLE
    out: dict[str, Any] = {"level": "chunk" if relevant_chunks else "doc"}
    if relevant_chunks:
        rel = np.zeros(r.n_chunks, dtype=bool)
        rel[list(relevant_chunks)] = True
        not_covered, lost = rel & ~covered, rel & unreachable
        per_doc: dict[str, dict[str, int]] = {}
        for i in np.flatnonzero(rel):
            d = per_doc.setdefault(str(r.doc_ids[i]),
                                   {"relevant": 0, "not_covered": 0, "unreachable": 0})
            d["relevant"] += 1
            d["not_covered"] += int(not_covered[i])
            d["unreachable"] += int(lost[i])
        out.update({"relevant": int(rel.sum()),
                    "not_covered": [r.chunk_ids[i] for i in np.flatnonzero(not_covered)],
                    "unreachable": [r.chunk_ids[i] for i in np.flatnonzero(lost)],
                    "documents": {d: v for d, v in sorted(per_doc.items()) if v["not_covered"]}})
        return out
    docs = np.asarray(r.doc_ids, dtype=object)
    not_covered_docs, lost_docs = [], []
    for d in sorted(relevant_docs):
        mask = docs == d
        if not mask.any():
            continue
        if not covered[mask].any():
            not_covered_docs.append(d)
            if unreachable[mask].all():
                lost_docs.append(d)
    out.update({"relevant": sum(1 for d in relevant_docs if (docs == d).any()),
                "not_covered": not_covered_docs, "unreachable": lost_docs})
    return out
