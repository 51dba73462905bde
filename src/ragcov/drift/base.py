"""What every rebuilt retriever shares: the rebuilder's shape and the queries embedded once.

Apart from :mod:`ragcov.drift.rebuild` so that the store rebuilder
(:mod:`ragcov.drift.scratch`) and the others share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragcov.corpus import Corpus


class Rebuilder:
    """``base``: the retriever over the corpus; ``on(copy)``: the same one over a copy."""

    base: Any

    def on(self, copy: Corpus) -> Any:  # pragma: no cover - every kind defines it
        raise NotImplementedError

    def check_searches_copies(self, k: int) -> None:
        """Raise unless ``on(copy)`` searches the copy (ragcov's own kinds do by construction)."""

    def close(self) -> None:
        """Remove what the copies left on disk (scratch stores)."""


class QueryMemo:
    """Query vectors by text, computed once for every copy (the suite never changes)."""

    def __init__(self, embed: Callable[[Sequence[str]], Any]) -> None:
        self.embed = embed
        self.seen: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if new:
            self.seen.update(zip(new, np.asarray(self.embed(new), dtype=np.float32)))
        return np.stack([self.seen[t] for t in texts])
