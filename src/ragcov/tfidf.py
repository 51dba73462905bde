"""Word statistics shared by the extractive generator and the isolation policy.

A light TF-IDF over the corpus, so neither needs an embedding model: the
extractive baseline must run with no model at all, and the isolation policy must
work with any retriever (a ``module:attr`` or HTTP one has no embeddings to lend).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragcov.analyzer import content_terms

if TYPE_CHECKING:
    import scipy.sparse as sp

# Alphabetic words shorter than this say little about a chunk.
MIN_CHARS = 3
_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves
then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves may might
must shall within without however thus therefore among whether either neither per via
since cannot also using used use based well whose yet although
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def words(text: str) -> list[str]:
    """Content words, folded, in text order: :func:`ragcov.analyzer.content_terms`, words
    of any script (Chinese and Thai as bigrams), English stopwords out (the only list
    this module keeps; a word of another language is never an English stopword)."""
    return content_terms(text, STOPWORDS, MIN_CHARS)


class TermStats:
    """Document frequencies over the corpus chunks and the matching TF-IDF rows."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.n = len(texts)
        tokenised = [words(t) for t in texts]
        df: Counter[str] = Counter()
        for toks in tokenised:
            df.update(set(toks))
        self.vocab = {w: i for i, w in enumerate(sorted(df))}
        self.idf_values = np.log((1 + self.n) / (1 + np.array([df[w] for w in sorted(df)],
                                                               dtype=np.float64))) + 1.0
        self._tokenised = tokenised
        self._matrix: sp.csr_matrix | None = None

    def idf(self, word: str) -> float:
        i = self.vocab.get(word)
        return float(self.idf_values[i]) if i is not None else float(np.log(1 + self.n) + 1.0)

    def matrix(self) -> sp.csr_matrix:
        """L2-normalised TF-IDF rows, one per chunk (cosine = dot product)."""
        if self._matrix is None:
            import scipy.sparse as sp

            rows, cols, vals = [], [], []
            for r, toks in enumerate(self._tokenised):
                for w, c in Counter(toks).items():
                    j = self.vocab[w]
                    rows.append(r)
                    cols.append(j)
                    vals.append(c * self.idf_values[j])
            m = sp.csr_matrix((vals, (rows, cols)), shape=(self.n, len(self.vocab)))
            norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
            norms[norms == 0] = 1.0
            self._matrix = sp.csr_matrix(sp.diags(1.0 / norms) @ m)
        return self._matrix
