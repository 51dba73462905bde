"""Built-in lexical retriever: BM25 over the chunks, with bm25s (sparse-matrix scoring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.retrievers.base import Ranked
from ragcov.user_warnings import RetrievalWarning, warn

# Queries named in one warning; the rest of a batch is counted.
NAMED_QUERIES = 5


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
        if not tokens.vocab:
            # bm25s would fail with "max() arg is an empty sequence".
            raise RagcovError(
                f"the bm25 retriever found no word to index in the corpus ({len(corpus)} "
                f"chunk{'s' if len(corpus) != 1 else ''}): every chunk is empty, punctuation "
                f"or {'stopwords' if stopwords else 'symbols'}; use another retriever")
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
        wordless = [text for text, query_tokens in zip(texts, tokens) if not query_tokens]
        if wordless:
            _warn_wordless(wordless)
        # A query with no word to match retrieves nothing (bm25s cannot score it).
        return [self._top(query_tokens, kk) if query_tokens else [] for query_tokens in tokens]

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


def _warn_wordless(texts: list[str]) -> None:
    """Say which queries BM25 could not match on: they are recorded with no chunk, and a
    suite full of them would otherwise look like a retriever that finds nothing."""
    shown = ", ".join(repr(t if len(t) <= 60 else t[:57] + "...") for t in texts[:NAMED_QUERIES])
    more = f" and {len(texts) - NAMED_QUERIES} more" if len(texts) > NAMED_QUERIES else ""
    n = len(texts)
    warn(f"bm25: {n} quer{'ies have' if n != 1 else 'y has'} no word to match (only stopwords, "
         f"punctuation or nothing) and retrieve{'s' if n == 1 else ''} no chunk: {shown}{more}",
         RetrievalWarning)
