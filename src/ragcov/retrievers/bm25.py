"""Built-in lexical retriever: BM25 over the chunks, with bm25s (sparse-matrix scoring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
        tokens = self._bm25s.tokenize(list(texts), stopwords=self.stopwords, show_progress=False)
        docs, scores = self._model.retrieve(tokens, k=kk, show_progress=False, n_threads=1)
        out: list[Ranked] = []
        for row_docs, row_scores in zip(docs, scores):
            # A chunk sharing no term with the query scores 0: it was not retrieved,
            # whatever order bm25s happens to return the ties in.
            out.append([(self._ids[int(d)], float(s))
                        for d, s in zip(row_docs, row_scores) if s > 0])
        return out
