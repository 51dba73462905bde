"""The offline question writer: no LLM, a question made of a chunk's most distinctive terms."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcov.generation.base import Generation
from ragcov.tfidf import STOPWORDS, WORD, TermStats, words

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


class ExtractiveGenerator:
    """The offline baseline: a question made of the target's most distinctive terms.

    The chunk's sentences are ranked by the corpus IDF of their content words;
    attempt n takes the n-th best sentence, so a retry asks something different.
    """

    name = "extractive"
    model = "salient-sentence"
    template = None

    def __init__(self, corpus_texts: Sequence[str], max_terms: int = 7) -> None:
        self.stats = TermStats(corpus_texts)
        self.max_terms = max_terms

    def _sentences(self, text: str) -> list[str]:
        sents = [s.strip() for s in SENTENCE.split(text) if len(words(s)) >= 2]
        return sents or [text]

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        sents = [s for p in passages for s in self._sentences(p)]
        scored = sorted(sents, key=lambda s: -self._salience(s))
        sentence = scored[(attempt - 1) % len(scored)] if scored else ""
        surface: dict[str, str] = {}
        for w in WORD.findall(sentence):
            if w.lower() not in STOPWORDS and len(w) > 2:
                surface.setdefault(w.lower(), w)
        keep = set(sorted(surface, key=lambda w: -self.stats.idf(w))[: self.max_terms])
        terms = [form for low, form in surface.items() if low in keep]
        if not terms:
            return Generation("", calls=0)
        return Generation(f"What is known about {' '.join(terms)}?", calls=0)

    def _salience(self, sentence: str) -> float:
        toks = set(words(sentence))
        if not toks:
            return 0.0
        return sum(self.stats.idf(w) for w in toks) / len(toks) ** 0.5
