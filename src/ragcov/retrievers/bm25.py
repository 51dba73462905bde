"""Built-in lexical retriever: BM25 over the chunks, with bm25s (sparse-matrix scoring)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

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
        # bm25s's eager index is already a (token x chunk) CSR matrix of per-term scores:
        # a batch of queries is then one sparse product, scored as bm25s scores one query.
        sc = self._model.scores
        self._postings = sp.csr_matrix((sc["data"], sc["indices"], sc["indptr"]),
                                       shape=(len(sc["indptr"]) - 1, sc["num_docs"]))

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
        return self._top_k(self._scores([self._model.get_tokens_ids(t) for t in tokens]), kk)

    def _scores(self, token_ids: list[list[int]]) -> sp.csr_matrix:
        """(query x chunk) BM25 scores of a batch, zeros left out, as bm25s computes them.

        Each query row keeps its tokens in query order, repeats included, and the product
        adds each chunk's term scores in that order in float32: bit for bit the sum
        ``bm25s.BM25.get_scores`` makes, so ties and scores are the same. A chunk sharing
        no term with the query is absent, never scored 0, and costs nothing: a batch costs
        its queries' postings, not queries x chunks.
        """
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        flat = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int64,
                           count=int(indptr[-1]))
        queries = sp.csr_matrix((np.ones(flat.size, dtype=self._postings.dtype), flat, indptr),
                                shape=(len(token_ids), self._postings.shape[0]))
        return queries @ self._postings

    def _top_k(self, scores: sp.csr_matrix, k: int) -> list[Ranked]:
        """Per row, the top-k by score, ties by corpus order, as the dense retriever breaks them.

        bm25s's own top-k returns tied chunks in an order that changes with the corpus
        layout, and ties are common (duplicate boilerplate chunks), so which one counts as
        covered would not be reproducible.
        """
        out: list[Ranked] = []
        ids = self._ids
        # A chunk sharing no term with the query was not retrieved: no score above 0.
        scores.data[scores.data < 0] = 0
        scores.eliminate_zeros()
        # One sort key per hit: a positive float32's bits grow with its value, so
        # (~bits << 32 | chunk) sorts by score descending, then corpus order, exactly.
        data = scores.data.astype(np.float32)
        keys = ((~data.view(np.uint32)).astype(np.uint64) << np.uint64(32)) | \
            scores.indices.astype(np.uint64)
        indptr = scores.indptr
        for i in range(scores.shape[0]):
            row = keys[indptr[i]:indptr[i + 1]]
            if k < row.size:
                row = np.partition(row, k - 1)[:k]
            row = np.sort(row)
            cols = (row & np.uint64(0xFFFFFFFF)).astype(np.int64)
            vals = (~(row >> np.uint64(32)).astype(np.uint32)).view(np.float32)
            out.append([(ids[c], float(v)) for c, v in zip(cols.tolist(), vals.tolist())])
        return out


def _warn_wordless(texts: list[str]) -> None:
    """Say which queries BM25 could not match on: they are recorded with no chunk, and a
    suite full of them would otherwise look like a retriever that finds nothing."""
    shown = ", ".join(repr(t if len(t) <= 60 else t[:57] + "...") for t in texts[:NAMED_QUERIES])
    more = f" and {len(texts) - NAMED_QUERIES} more" if len(texts) > NAMED_QUERIES else ""
    n = len(texts)
    warn(f"bm25: {n} quer{'ies have' if n != 1 else 'y has'} no word to match (only stopwords, "
         f"punctuation or nothing) and retrieve{'s' if n == 1 else ''} no chunk: {shown}{more}",
         RetrievalWarning)
