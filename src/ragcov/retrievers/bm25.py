"""Built-in lexical retriever: BM25 over the chunks, with bm25s (sparse-matrix scoring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.retrievers.base import Ranked


class BM25Retriever:
    def __init__(self, corpus: Corpus, k1: float = 1.5, b: float = 0.75,
                 stopwords: str | None = "en", progress: bool = True) -> None:
        try:
            import bm25s
        except ImportError as exc:
            raise RagcovError("the bm25 retriever needs bm25s: pip install 'ragcov[bm25]'") from exc
        self._bm25s = bm25s
        self.corpus = corpus
        self.k1, self.b, self.stopwords = k1, b, stopwords
        tokens = bm25s.tokenize(corpus.texts, stopwords=stopwords, show_progress=False)
        self._model = bm25s.BM25(k1=k1, b=b)
        self._model.index(tokens, show_progress=False)
        self._ids = corpus.ids

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "bm25", "model": f"bm25s(k1={self.k1},b={self.b})", "index": "sparse",
                "stopwords": self.stopwords, "chunking": self.corpus.chunking}

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        kk = min(k, len(self._ids))
        tokens = self._bm25s.tokenize(list(texts), stopwords=self.stopwords, return_ids=False,
                                      show_progress=False)
        return [self._top(query_tokens, kk) for query_tokens in tokens]

    def _top(self, query_tokens: list[str], k: int) -> Ranked:
        """Top-k by score, ties by corpus order, as the dense retriever breaks them.

        bm25s's own top-k returns tied chunks in an order that changes with the corpus
        layout, and ties are common (duplicate boilerplate chunks), so which one counts as
        covered would not be reproducible. Scoring every chunk costs one sparse row sum.
        """
        scores = np.asarray(self._model.get_scores(query_tokens), dtype=np.float64)
        if k < len(scores):
            # Everything above the k-th score, then the earliest of those tied at it.
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            above = np.flatnonzero(scores > kth)
            tied = np.flatnonzero(scores == kth)[: k - len(above)]
            candidates = np.concatenate([above, tied])
        else:
            candidates = np.arange(len(scores))
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        # A chunk sharing no term with the query scores 0: it was not retrieved.
        return [(self._ids[int(j)], float(scores[j])) for j in order if scores[j] > 0]
