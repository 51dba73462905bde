"""Which chunk(s) the next question should aim at.

``coverage`` aims at chunks no query has retrieved yet, with a policy for which
one: ``order`` (corpus order, the simplest reproducible walk), ``isolated`` (the
uncovered chunk least similar to anything covered, so its question is least
likely to land on covered ground) or ``random``. A chunk that was aimed at
``max_attempts`` times without being reached is given up (a plateau, reported).
The baselines are what peers do: ``random`` (any chunk, as RAGAS/DeepEval seed)
and ``overlap`` (chunks already covered).

With a ``priority`` (``ragcov generate --targets gap.json``: the untested chunks
production retrieves most, most-used first) only those chunks are aimed at, in
that order, whatever the policy: the gap is closed where users feel it first.

Draws use a generator seeded by (seed, step), so a resumed run picks exactly
what an uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ragcov.errors import RagcovError

# Which chunks generation aims at (not the selection strategies of ragcov.selection).
TARGET_STRATEGIES = ("coverage", "random", "overlap")
POLICIES = ("order", "isolated", "random")


def validate(strategy: str, policy: str, targets_per_call: int = 1, max_attempts: int = 1) -> None:
    """Refuse unknown strategies and impossible settings before any work starts."""
    if strategy not in TARGET_STRATEGIES:
        raise RagcovError(f"unknown strategy {strategy!r}: expected {', '.join(TARGET_STRATEGIES)}")
    if policy not in POLICIES:
        raise RagcovError(f"unknown policy {policy!r}: expected {', '.join(POLICIES)}")
    if targets_per_call < 1:
        raise RagcovError("--targets-per-call must be at least 1")
    if max_attempts < 1:
        raise RagcovError("--max-attempts must be at least 1")


class TargetPicker:
    def __init__(self, doc_ids: Sequence[str], strategy: str = "coverage", policy: str = "order",
                 targets_per_call: int = 1, max_attempts: int = 2, seed: int = 0,
                 vectors: np.ndarray | sp.spmatrix | None = None,
                 priority: Sequence[int] | None = None) -> None:
        validate(strategy, policy, targets_per_call, max_attempts)
        if priority is not None and strategy != "coverage":
            raise RagcovError("--targets aims at untested chunks: it needs --strategy coverage")
        if strategy == "coverage" and policy == "isolated" and vectors is None \
                and priority is None:
            raise RagcovError("the isolated policy needs chunk vectors")
        self.doc_ids = np.asarray(list(doc_ids), dtype=object)
        self.n = len(self.doc_ids)
        self.strategy = strategy
        self.policy = policy
        self.m = targets_per_call
        self.max_attempts = max_attempts
        self.seed = seed
        self.vectors = vectors
        self._maxsim = np.full(self.n, -np.inf)
        self._seen_covered = np.zeros(self.n, dtype=bool)
        # Per chunk, its place in the priority list (unlisted: never aimed at).
        self._rank: np.ndarray | None = None
        if priority is not None:
            self._rank = np.full(self.n, np.iinfo(np.int64).max, dtype=np.int64)
            for place, col in reversed(list(enumerate(priority))):
                self._rank[col] = place  # reversed: a repeated chunk keeps its first place

    def candidates(self, covered: np.ndarray, attempts: np.ndarray) -> np.ndarray:
        """Boolean mask of the chunks this strategy may aim at now."""
        if self.strategy == "coverage":
            pool = ~covered & (attempts < self.max_attempts)
            return pool if self._rank is None else pool & (self._rank < np.iinfo(np.int64).max)
        fresh = attempts == 0
        if self.strategy == "overlap":
            if not covered.any():
                return fresh if fresh.any() else np.ones(self.n, dtype=bool)
            # covered chunks aimed at least often: fresh ones first, then round and round
            return covered & (attempts == attempts[covered].min())
        return fresh if fresh.any() else np.ones(self.n, dtype=bool)

    def pick(self, covered: np.ndarray, attempts: np.ndarray, step: int) -> list[int] | None:
        """Chunk columns to aim at (first = main target); None when nothing is left."""
        pool = self.candidates(covered, attempts)
        if not pool.any():
            return None
        rng = np.random.default_rng([self.seed, step])
        first = self._first(pool, covered, rng)
        chosen = [first]
        if self.m > 1:
            chosen += self._companions(first, pool, covered, rng)
        return chosen

    def _first(self, pool: np.ndarray, covered: np.ndarray, rng: np.random.Generator) -> int:
        idx = np.flatnonzero(pool)
        if self._rank is not None:
            return int(idx[np.argmin(self._rank[idx])])
        if self.strategy != "coverage" or self.policy == "random":
            return int(rng.choice(idx))
        if self.policy == "order":
            return int(idx[0])
        self._update_isolation(covered)
        sims = self._maxsim[idx]
        return int(idx[np.argmin(sims)])  # argmin keeps the first of ties: corpus order

    def _update_isolation(self, covered: np.ndarray) -> None:
        new = np.flatnonzero(covered & ~self._seen_covered)
        if new.size == 0:
            return
        v = self.vectors
        assert v is not None
        block = v @ v[new].T
        block = block.toarray() if sp.issparse(block) else np.asarray(block)
        self._maxsim = np.maximum(self._maxsim, block.max(axis=1))
        self._seen_covered[new] = True

    def _companions(self, first: int, pool: np.ndarray, covered: np.ndarray,
                    rng: np.random.Generator) -> list[int]:
        """Further targets for one call: same document first (nearest position), then any."""
        others = pool.copy()
        others[first] = False
        same = np.flatnonzero(others & (self.doc_ids == self.doc_ids[first]))
        same = same[np.argsort(np.abs(same - first), kind="stable")]
        chosen = [int(c) for c in same[: self.m - 1]]
        others[chosen] = False
        while len(chosen) < self.m - 1 and others.any():
            nxt = self._first(others, covered, rng)
            chosen.append(nxt)
            others[nxt] = False
        return chosen


def chunk_vectors(retriever: Any, corpus: Any) -> Any:
    """Vectors for the isolation policy: the retriever's own embeddings, else TF-IDF."""
    vectors = getattr(retriever, "embeddings", None)
    if vectors is not None and getattr(vectors, "shape", (0,))[0] == len(corpus):
        return vectors
    from ragcov.tfidf import TermStats

    return TermStats(corpus.texts).matrix()


def gap_targets(path: Any, corpus: Any) -> tuple[list[str], list[str]]:
    """The untested chunk ids of a ``ragcov gap --format json`` file, most traffic first.

    Returns them with the ids this corpus does not hold (left out, for a warning).
    """
    from ragcov.files import load_json

    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("untested"), list) \
            or "traffic_weighted_coverage" not in doc:
        raise RagcovError(f"{path}: not a `ragcov gap --format json` file")
    if doc.get("format") != 1:
        raise RagcovError(f"{path}: gap format {doc.get('format')!r} is not one this ragcov "
                          "reads (format 1)")
    rows = sorted(enumerate(doc["untested"]),
                  key=lambda r: (-int(r[1].get("traffic_hits", 0)), r[0]))
    ids = []
    for n, item in rows:
        cid = item.get("chunk_id") if isinstance(item, dict) else None
        if not isinstance(cid, str):
            raise RagcovError(f"{path}: untested[{n}] has no chunk_id")
        ids.append(cid)
    unknown = set(corpus.unknown(ids))
    return [c for c in ids if c not in unknown], [c for c in ids if c in unknown]
