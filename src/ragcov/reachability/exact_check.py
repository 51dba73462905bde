"""The probe run's exact check: each probe and test asked through the index and by exact search.

:class:`StageRecorder` stands where ``ragcov probe`` asks its retriever. For each batch
it embeds the queries once, searches the index with those vectors (the first stage,
to the reranker's depth when there is one), reranks, and searches the same vectors
exactly over the vectors the index holds (:mod:`ragcov.retrievers.exact`); the final
lists go on to be recorded as probes, and what each stage gave is kept beside them
(:mod:`ragcov.data.stages`), in the same transaction.

Probes recorded before the check existed, and the suite's tests, get the check in a
second pass (:func:`check_pending`): their texts embedded again, held against the lists
the file already records. Nothing is embedded twice within one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragcov.data.stages import PROBE, TEST, StageRow, pending, record_rows, write_meta
from ragcov.retrievers.exact import ExactVectors, exact_vectors, first_stage
from ragcov.stores.base import VectorsUnavailable

BATCH = 512


@dataclass
class CheckSettings:
    """What the check is run with, recorded as ``stage_meta['exact']``."""

    vectors: ExactVectors | None
    depth: int
    k: int
    reason: str | None = None   # why there is no exact check (vectors is None)
    lexical: bool = False       # the retriever has no vectors by nature (BM25): nothing to say

    def meta(self) -> dict[str, Any]:
        if self.vectors is None:
            return {"checked": False, "reason": self.reason, "depth": self.depth, "k": self.k}
        v = self.vectors
        return {"checked": True, "source": v.source, "vectors": v.n, "metric": v.metric,
                "depth": self.depth, "k": self.k, "device": v.device, **v.settings}

    def line(self) -> str | None:
        """The one line ``ragcov probe`` prints about the check (None: nothing to say)."""
        if self.vectors is None:
            if self.lexical:
                return None
            return (f"ragcov: exact check skipped: {self.reason}; unreachable chunks get no "
                    "cause (embedding or index) and no index recall is reported")
        v = self.vectors
        shown = ", ".join(f"{key} {value}" for key, value in v.settings.get("settings", {}).items())
        index = v.settings.get("index", "unknown")
        return (f"ragcov: exact check: every probe and test also searched exactly over "
                f"{v.source} ({v.n} vectors, {v.metric}) at depth {self.depth}, beside the "
                f"{index} index" + (f" ({shown})" if shown else ""))


def check_settings(retriever: Any, corpus: Any, k: int, device: str | None = None) -> CheckSettings:
    """The vectors the retriever's index searches, read once, or why there are none."""
    base = first_stage(retriever)
    depth = int(getattr(retriever, "depth", k)) if base is not retriever else k
    fp = base.fingerprint() if hasattr(base, "fingerprint") else {}
    try:
        vectors = exact_vectors(retriever, corpus, device or device_of(base))
    except VectorsUnavailable as exc:
        return CheckSettings(None, depth, k, str(exc), lexical=fp.get("kind") == "bm25")
    return CheckSettings(vectors, depth, k)


def device_of(retriever: Any) -> str:
    """Where the retriever embeds (its resolved ``--device``): the exact search runs there too."""
    placement = getattr(retriever, "placement", None) or getattr(
        getattr(retriever, "encoder", None), "placement", None)
    device = getattr(placement, "device", None) or getattr(
        getattr(retriever, "encoder", None), "device", None)
    return str(device) if device is not None else "cpu"


class StageRecorder:
    """The retriever a probe run asks, with each stage's lists kept for the batch just asked.

    ``retrieve`` returns the final lists (what the retriever itself would return); the
    stage rows of the queries asked since the last :meth:`take` come out of ``take``, in
    the order asked (``run_retriever`` asks in order).
    """

    def __init__(self, retriever: Any, corpus: Any, settings: CheckSettings) -> None:
        self.retriever = retriever
        self.base = first_stage(retriever)
        self.reranked = self.base is not retriever
        self.corpus = corpus
        self.settings = settings
        self.batches_queries = getattr(retriever, "batches_queries", True)
        self._log: list[StageRow] = []

    def fingerprint(self) -> dict[str, Any]:
        return self.retriever.fingerprint()

    def retrieve(self, texts: Sequence[str], k: int) -> list[Any]:
        if not texts:
            return []
        depth = self.settings.depth if self.reranked else k
        vectors = self.settings.vectors
        q = None
        if vectors is not None and hasattr(self.base, "search_vectors"):
            q = self.base.embed_queries(texts)
            first = self.base.search_vectors(q, depth)
        else:
            first = self.base.retrieve(texts, depth)
        final = (self.retriever.rerank_lists(texts, first, k) if self.reranked
                 else [list(r)[:k] for r in first])
        lists = [self._positions(r) for r in first]
        judged = vectors.judge(q, lists, depth) if q is not None and vectors is not None else None
        for i, ranked in enumerate(first):
            self._log.append(_row(ranked if self.reranked else None, lists[i], judged, i))
        return final

    def _positions(self, ranked: Any) -> list[int]:
        where = self.corpus.positions
        return [where.get(cid, -1) for cid, _s in ranked]

    def take(self, ids: Sequence[str]) -> list[StageRow]:
        """The rows of the queries asked since the last take, given their ids in order."""
        rows, self._log = self._log, []
        if len(rows) != len(ids):  # a retriever that answered past run_retriever: nothing kept
            return []
        return [StageRow(qid, r.first, r.exact, r.found, r.expected) for qid, r in zip(ids, rows)]


def _row(first: Any, positions: list[int], judged: Any, i: int) -> StageRow:
    first_rows = None
    if first is not None:
        first_rows = [(p, s) for p, (_cid, s) in zip(positions, first) if p >= 0]
    if judged is None:
        return StageRow("", first_rows)
    exact = list(zip(judged.positions[i].tolist(), judged.scores[i].tolist(),
                     judged.sure[i].tolist()))
    return StageRow("", first_rows, exact, int(judged.found[i]), judged.expected)


def record_settings(data: Any, settings: CheckSettings) -> None:
    write_meta(data, "exact", settings.meta())


def pending_work(data: Any) -> dict[str, list[Any]]:
    """The probes and tests recorded without the exact check (with their recorded lists)."""
    return {side: todo for side in (PROBE, TEST) if (todo := pending(data, side))}


def check_pending(data: Any, settings: CheckSettings, retriever: Any, work: dict[str, list[Any]],
                  check: Callable[[Any], None], progress: Callable[[int], None] | None = None
                  ) -> int:
    """The exact check of ``work`` (:func:`pending_work`); how many were checked. Their
    index lists are the ones recorded (the first stage's when a reranker kept them):
    only their texts are embedded again."""
    vectors = settings.vectors
    base = first_stage(retriever)
    if vectors is None or not hasattr(base, "embed_queries"):
        return 0
    done = 0
    for side, todo in work.items():
        for start in range(0, len(todo), BATCH):
            part = todo[start:start + BATCH]
            q = base.embed_queries([text for _id, text, _l in part])
            judged = vectors.judge(q, [lists for _i, _t, lists in part], settings.depth)
            rows = []
            for i, (qid, _text, _lists) in enumerate(part):
                exact = list(zip(judged.positions[i].tolist(), judged.scores[i].tolist(),
                                 judged.sure[i].tolist()))
                rows.append(StageRow(qid, None, exact, int(judged.found[i]), judged.expected))
            record_rows(data, side, rows, check)
            done += len(part)
            if progress is not None:
                progress(len(part))
    return done
