"""A Run: what a retriever returned for each query of a suite.

The shape follows ranx (plain dicts users already have): query id -> ranked
``(chunk id, score)`` pairs, plus the query texts, ``k`` and the retriever's
fingerprint. Runs come from running a suite through a retriever or from
imported traces; everything downstream works on the same object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragcov.errors import RagcovError
from ragcov.fields import Ranked


@dataclass
class Run:
    k: int
    retriever: dict[str, Any]
    queries: dict[str, str] = field(default_factory=dict)
    results: dict[str, Ranked] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_k(self.k)

    def add(self, query_id: str, text: str, ranked: Iterable[tuple[str, float | None]]) -> None:
        """Record one query's ranked list, cut to k, keeping the first of any repeated id."""
        seen: set[str] = set()
        kept: Ranked = []
        for cid, score in ranked:
            cid = str(cid)
            if cid in seen:
                continue
            seen.add(cid)
            if score is not None:
                score = float(score)
                # The last guard for every source: NaN breaks rankings, inf is not JSON.
                if not math.isfinite(score):
                    raise RagcovError(f"query {query_id!r}: chunk {cid!r} has a score that is "
                                      f"not a finite number ({score!r})")
            kept.append((cid, score))
            if len(kept) == self.k:
                break
        self.queries[query_id] = text
        self.results[query_id] = kept

    def chunk_ids(self) -> list[str]:
        """Distinct retrieved chunk ids in first-seen order (so error messages are stable)."""
        return list(dict.fromkeys(cid for ranked in self.results.values() for cid, _ in ranked))

    def __len__(self) -> int:
        return len(self.queries)


def validate_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise RagcovError(f"k must be a whole number of at least 1, got {k!r}")
    return k


def run_retriever(retriever: Any, queries: Sequence[tuple[str, str]], k: int,
                  batch_size: int = 64, progress: bool = True,
                  run: Run | None = None) -> Run:
    """Retrieve the top-k for each ``(query id, text)`` and collect a Run.

    Queries go to the retriever in batches so a dense retriever encodes them
    together; a progress bar shows retrieval on long suites.
    """
    from ragcov.progress import progress_bar

    validate_k(k)
    run = run if run is not None else Run(k=k, retriever=retriever.fingerprint())
    with progress_bar("Retrieving", total=len(queries), enabled=progress) as advance:
        for start in range(0, len(queries), batch_size):
            batch = queries[start:start + batch_size]
            results = retriever.retrieve([t for _, t in batch], k)
            if len(results) != len(batch):
                raise RagcovError(
                    f"the retriever returned {len(results)} result lists for {len(batch)} queries"
                )
            for (qid, text), ranked in zip(batch, results):
                run.add(qid, text, ranked)
            advance(len(batch))
    return run
