"""The offline question writer: no LLM, a question made of a chunk's most distinctive terms."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcov.analyzer import content_terms, script_shares
from ragcov.generation.base import Generation
from ragcov.tfidf import MIN_CHARS, STOPWORDS, TermStats, words

# A sentence ends at a stop before a capital, a digit or a bracket (Latin script: not
# "e.g. foo"), at the Arabic, Devanagari and Greek question marks and stops before a
# space, and at the CJK full stops, which no space follows.
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|(?<=[\u037e\u061f\u06d4\u0964\u0965])\s+"
                      r"|(?<=[\u3002\uff01\uff1f])\s*")
# Words the English frame of a question is written in: the frame only where the
# sentence is mostly in Latin script, else the terms alone (a question in the chunk's
# own language, not an English sentence around it).
ASCII_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]+")


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
        if sentence.isascii():  # keep each word as the chunk writes it (case)
            for w in ASCII_WORD.findall(sentence):
                if w.lower() not in STOPWORDS and len(w) > 2:
                    surface.setdefault(w.lower(), w)
        else:
            for w in content_terms(sentence, STOPWORDS, MIN_CHARS):
                surface.setdefault(w, w)
        keep = set(sorted(surface, key=lambda w: -self.stats.idf(w))[: self.max_terms])
        terms = [form for low, form in surface.items() if low in keep]
        if not terms:
            return Generation("", calls=0)
        if _latin(sentence):
            return Generation(f"What is known about {' '.join(terms)}?", calls=0)
        return Generation(f"{' '.join(terms)}?", calls=0)

    def _salience(self, sentence: str) -> float:
        toks = set(words(sentence))
        if not toks:
            return 0.0
        return sum(self.stats.idf(w) for w in toks) / len(toks) ** 0.5


def _latin(sentence: str) -> bool:
    shares = script_shares([sentence])
    return not shares or shares.get("Latin", 0.0) >= 0.5
