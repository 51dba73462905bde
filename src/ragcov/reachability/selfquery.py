"""Self-queries: questions built from a chunk's own text, with no LLM.

If a chunk cannot be retrieved by its own most distinctive words, nor by its own most
distinctive sentence, no reasonable question will retrieve it either: that is the
test of reachability. Two probes per chunk, because each fails differently: a bag of
rare terms is what lexical retrievers match best, a real sentence is what dense
retrievers were trained on.

Distinctive means TF-IDF against the corpus (the same light statistics the extractive
generator uses, :mod:`ragcov.generation.tfidf`), so probes are reproducible and need no
model: the same corpus always gives the same probes, whatever retriever they test.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from ragcov.data.probes import ProbeRow
from ragcov.generation.tfidf import TermStats, words

TERMS = 8               # distinctive terms in a terms probe
MIN_SENTENCE_WORDS = 3  # content words a sentence needs to be a probe
MAX_SENTENCE_CHARS = 400
NONE = "none"  # a chunk with no word to ask with: recorded, never retrieved
KINDS = ("terms", "sentence", NONE)

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#|])")


def probe_id(chunk_id: str, kind: str) -> str:
    """Stable, readable, and unique per chunk and kind (chunk ids are unique)."""
    return f"probe:{kind}:{chunk_id}"


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def build_probes(texts: Sequence[str], chunk_ids: Sequence[str], rows: Iterable[int],
                 stats: TermStats | None = None) -> list[ProbeRow]:
    """The terms and sentence probes of the chunks at ``rows`` (corpus positions).

    A chunk with no content word gets one empty probe of kind ``none`` that is never
    retrieved: it is recorded as probed, so it counts as unreachable (reason
    ``no-words``) unless another chunk's probe reaches it. A sentence probe that would
    repeat the terms probe's words is dropped.
    """
    stats = stats if stats is not None else TermStats(texts)
    out: list[ProbeRow] = []
    for row in rows:
        text = texts[row]
        counts = Counter(words(text))
        if not counts:
            out.append(ProbeRow(probe_id(chunk_ids[row], NONE), row, NONE, ""))
            continue
        weight = {w: c * stats.idf(w) for w, c in counts.items()}
        # Highest weight first; ties by the word, so the probe never depends on hash order.
        top = sorted(weight, key=lambda w: (-weight[w], w))[:TERMS]
        terms = " ".join(top)
        out.append(ProbeRow(probe_id(chunk_ids[row], "terms"), row, "terms", terms))
        best = _best_sentence(text, stats)
        if best is not None and set(words(best)) != set(top):
            out.append(ProbeRow(probe_id(chunk_ids[row], "sentence"), row, "sentence", best))
    return out


def _best_sentence(text: str, stats: TermStats) -> str | None:
    """The sentence with the highest mean IDF of its content words (long enough to ask)."""
    best, best_score = None, -np.inf
    for s in sentences(text):
        ws = words(s)
        if len(ws) < MIN_SENTENCE_WORDS:
            continue
        score = float(np.mean([stats.idf(w) for w in ws]))
        if score > best_score:
            best, best_score = s, score
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
