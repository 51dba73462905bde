"""The offline question writer: no LLM, a question made of a chunk's most distinctive terms."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcov.analyzer import content_terms, corpus_language, fold, is_spaceless, script_shares, term_runs
from ragcov.generation.base import Generation
from ragcov.tfidf import MIN_CHARS, STOPWORDS, TermStats, words

# A sentence ends at a stop before a capital, a digit or a bracket (Latin script: not
# "e.g. foo"), at the Arabic, Devanagari and Greek question marks and stops before a
# space, and at the CJK full stops, which no space follows.
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|(?<=[\u037e\u061f\u06d4\u0964\u0965])\s+"
                      r"|(?<=[\u3002\uff01\uff1f])\s*")
# Characters in a phrase of a spaceless script (about three or four words of Chinese).
PHRASE = 8
# A word of the TF-IDF form in ASCII text, as the chunk writes it.
TERM_RUN = re.compile(r"[A-Za-z][A-Za-z0-9\-]+")


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
        # The English frame ("What is known about ...?") only around English: a French or
        # Chinese chunk gets its own words alone, not an English sentence around them.
        lang, _ = corpus_language(corpus_texts)
        shares = script_shares(corpus_texts)
        self.english = (lang == "en" or lang is None) and (not shares or shares.get("Latin", 0) >= 0.5)

    def _sentences(self, text: str) -> list[str]:
        sents = [s.strip() for s in SENTENCE.split(text) if len(words(s)) >= 2]
        return sents or [text]

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        sents = [s for p in passages for s in self._sentences(p)]
        scored = sorted(sents, key=lambda s: -self._salience(s))
        sentence = scored[(attempt - 1) % len(scored)] if scored else ""
        # Each content word as the chunk writes it (its case kept); a run of Chinese,
        # Japanese, Korean or Thai by its bigrams, shown below as the spans they cover.
        surface: dict[str, str] = {}
        spaceless: list[str] = []
        for run in TERM_RUN.findall(sentence) if sentence.isascii() else term_runs(sentence):
            keys = content_terms(run, STOPWORDS, MIN_CHARS)
            if len(keys) == 1 and not is_spaceless(run):
                surface.setdefault(keys[0], run)
            elif keys:
                spaceless.append(fold(run))
                for key in keys:
                    surface.setdefault(key, key)
        keep = set(sorted(surface, key=lambda w: -self.stats.idf(w))[: self.max_terms])
        terms = [form for low, form in surface.items() if low in keep and not is_spaceless(form)]
        terms += self._phrases(spaceless)
        if not terms:
            return Generation("", calls=0)
        if self.english:
            return Generation(f"What is known about {' '.join(terms)}?", calls=0)
        mark = "\uff1f" if any(is_spaceless(t) for t in terms) and not _thai(terms) else "?"
        return Generation(f"{' '.join(terms)}{mark}", calls=0)

    def _phrases(self, runs: list[str]) -> list[str]:
        """The two most distinctive stretches of a spaceless run (Chinese, Japanese,
        Korean, Thai), each PHRASE characters long, by the summed IDF of its bigrams: a
        question shows 职业碗防守截锋, not bigrams (职业 业碗 碗防)."""
        scored: list[tuple[float, int, int, str]] = []
        for r, run in enumerate(runs):
            for i in range(max(1, len(run) - PHRASE + 1)):
                window = run[i:i + PHRASE]
                keys = set(content_terms(window, STOPWORDS, MIN_CHARS))
                if keys:
                    scored.append((-sum(self.stats.idf(k) for k in keys), r, i, window))
        chosen: list[tuple[int, int, str]] = []
        for _, r, i, window in sorted(scored):
            if all((r != r2 or i + PHRASE <= i2 or i2 + PHRASE <= i) and window != w2
                   for r2, i2, w2 in chosen):
                chosen.append((r, i, window))
            if len(chosen) == 2:
                break
        return [w for _, _, w in sorted(chosen)]

    def _salience(self, sentence: str) -> float:
        toks = set(words(sentence))
        if not toks:
            return 0.0
        return sum(self.stats.idf(w) for w in toks) / len(toks) ** 0.5


def _thai(terms: list[str]) -> bool:
    return any("\u0e00" <= ch <= "\u0eff" for t in terms for ch in t)
