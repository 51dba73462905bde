"""Self-queries: questions built from a chunk's own text, with no LLM.

If a chunk cannot be retrieved by its own most distinctive words, nor by its own most
distinctive sentence, no reasonable question will retrieve it either: that is the
test of reachability. Two probes per chunk, because each fails differently: a bag of
rare terms is what lexical retrievers match best, a real sentence is what dense
retrievers were trained on.

Distinctive means TF-IDF against the corpus (the same light statistics the extractive
generator uses, :mod:`ragcov.tfidf`), so probes are reproducible and need no
model: the same corpus always gives the same probes, whatever retriever they test.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragcov.analyzer import terms
from ragcov.data.probes import ProbeRow
from ragcov.tfidf import STOPWORDS
from ragcov.tfidf import words as tfidf_words

TERMS = 8               # distinctive terms in a terms probe
MIN_SENTENCE_WORDS = 3  # content words a sentence needs to be a probe
MAX_SENTENCE_CHARS = 400
NONE = "none"  # a chunk with no word to ask with: recorded, never retrieved
LLM = "llm"    # a question an LLM wrote for the chunk (`ragcov probe --generator`)
KINDS = ("terms", "sentence", LLM, NONE)

# Sentence ends: Latin, Greek and Cyrillic stops and the Arabic, Devanagari and Armenian
# ones before a space; the CJK full stops with or without one (no space follows them).
_SENTENCE = re.compile(r"(?<=[.!?\u037e\u061f\u06d4\u0964\u0965\u0589])\s+|(?<=[\u3002\uff01\uff1f])\s*"
                       r"|\n\s*\n|\n(?=\s*[-*#|])")


def probe_id(chunk_id: str, kind: str) -> str:
    """Stable, readable, and unique per chunk and kind (chunk ids are unique)."""
    return f"probe:{kind}:{chunk_id}"


def words(text: str) -> list[str]:
    """Content words, folded: :func:`ragcov.tfidf.words`, the house text rule."""
    return tfidf_words(text)


def plain_terms(text: str) -> list[str]:
    """A chunk's words when it has no content word: numbers and short words of two
    characters or more (a lexical retriever indexes no shorter one), not stopwords
    (which no retriever scores), first ones first."""
    return list(dict.fromkeys(terms(text, STOPWORDS, min_chars=2)))[:TERMS]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def build_probes(texts: Sequence[str], chunk_ids: Sequence[str], rows: Iterable[int]
                 ) -> list[ProbeRow]:
    """The terms and sentence probes of the chunks at ``rows`` (corpus positions).

    A chunk with no content word gets one empty probe of kind ``none`` that is never
    retrieved: it is recorded as probed, so it counts as unreachable (reason
    ``no-words``) unless another chunk's probe reaches it. A sentence probe that would
    repeat the terms probe's words is dropped.

    Each text is cut into words once (a probed text into sentences again, to give its
    best sentence back); document frequencies come from the whole corpus (distinctive
    means rare in *this* corpus), probes from ``rows`` only. The words are kept as
    numbers in one flat array, a sentence a slice of it: kept as lists of strings, the
    words of 200,000 chunks held 660 MB until the last probe.
    """
    numbers: defaultdict[str, int] = defaultdict()
    numbers.default_factory = numbers.__len__  # a new word gets the next number
    number = numbers.__getitem__
    flat = array("i")           # every sentence's words, as numbers, text after text
    sentence_ends = array("q")  # where each sentence's words end in ``flat``
    first_sentence = array("q", [0])  # each text's sentences: a range of ``sentence_ends``
    distinct = array("i")       # each text's words once, for the document frequencies
    for text in texts:
        start = len(flat)
        for sent in sentences(text):
            flat.extend(map(number, words(sent)))
            sentence_ends.append(len(flat))
        first_sentence.append(len(sentence_ends))
        distinct.extend(set(flat[start:]))
    vocab = list(numbers)
    del numbers
    df = np.bincount(np.asarray(distinct, dtype=np.int64), minlength=len(vocab)).tolist()
    del distinct
    n = len(texts)
    idf = [math.log((1 + n) / (1 + c)) + 1.0 for c in df]
    out: list[ProbeRow] = []
    for row in rows:
        a, b = first_sentence[row], first_sentence[row + 1]
        start = sentence_ends[a - 1] if a else 0
        counts = Counter(flat[start:sentence_ends[b - 1]] if b > a else ())
        if not counts:
            # No content word, yet letters or digits ("2019 2020", a line of short or
            # common words): those are what a query could match, so they are its probe.
            # Only a chunk with no letter or digit in any script gets no probe.
            plain = plain_terms(texts[row])
            if plain:
                out.append(ProbeRow(probe_id(chunk_ids[row], "terms"), row, "terms", " ".join(plain)))
            else:
                out.append(ProbeRow(probe_id(chunk_ids[row], NONE), row, NONE, ""))
            continue
        # Highest weight first; ties by the word, so the probe never depends on hash order.
        top = [w for _, w in sorted((-(c * idf[i]), vocab[i]) for i, c in counts.items())[:TERMS]]
        out.append(ProbeRow(probe_id(chunk_ids[row], "terms"), row, "terms", " ".join(top)))
        parts = [flat[sentence_ends[k - 1] if k else 0:sentence_ends[k]] for k in range(a, b)]
        best = _best_sentence(sentences(texts[row]), parts, idf)
        if best is not None and set(words(best)) != set(top):
            out.append(ProbeRow(probe_id(chunk_ids[row], "sentence"), row, "sentence", best))
    return out


def _best_sentence(sents: list[str], parts: list[Any], idf: list[float]) -> str | None:
    """The sentence with the highest mean IDF of its content words (long enough to ask);
    ``parts``: each sentence's words, as numbers."""
    best, best_score = None, -math.inf
    weight = idf.__getitem__
    for sent, ws in zip(sents, parts):
        if len(ws) < MIN_SENTENCE_WORDS:
            continue
        score = sum(map(weight, ws)) / len(ws)
        if score > best_score:
            best, best_score = sent, score
    if best is None:
        return None
    return best if len(best) <= MAX_SENTENCE_CHARS else best[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0]


def choose_chunks(corpus, sample: int | None = None, include: Sequence[str] = (),  # type: ignore[no-untyped-def]
                  omit: Sequence[str] = (), seed: int = 0) -> list[int]:
    """Corpus positions to probe: documents matching ``include`` globs (all when none) and
    no ``omit`` glob, then a seeded random ``sample`` of them, in corpus order."""
    from fnmatch import fnmatchcase

    from ragcov.errors import RagcovError

    rows = [i for i, c in enumerate(corpus)
            if (not include or any(fnmatchcase(c.doc_id, g) for g in include))
            and not any(fnmatchcase(c.doc_id, g) for g in omit)]
    if not rows:
        raise RagcovError("no chunk to probe: --include/--omit leave no document")
    if sample is not None:
        if sample < 1:
            raise RagcovError(f"--sample must be at least 1, got {sample}")
        if sample < len(rows):
            picked = np.random.default_rng(seed).choice(len(rows), size=sample, replace=False)
            rows = [rows[i] for i in sorted(picked)]
    return rows
