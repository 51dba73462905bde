"""Junk is not "write a test": uncovered chunks to exclude rather than to test.

Some chunks are no content a user asks about: a reference marker (``[1]``), a bare
statistic (``n = 45``, ``p<0.05``), a line too short to score, or the same boilerplate
copied into many documents (a copyright disclaimer, a page footer). Counted as untested,
they ask a team to write tests nobody should write (7 of 8 copies of one disclaimer
were). Here each such uncovered chunk is an *exclusion candidate*, with the reason, and
the config lines that would exclude it, as coverage.py users add ``exclude_lines``.

The lines are regular expressions for ``exclude`` (searched in chunk text, ``\\A`` for
the start of the chunk whatever the line) and ``min_chunk_chars``: what
:mod:`ragcov.scope` applies, so pasting them into ragcov.toml leaves exactly these
chunks out of the next report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

# No run of three letters (any script): "[1]", "n = 45", "p<0.05", "12.3 %".
NO_WORDS = r"\A(?![\s\S]*[^\W\d_]{3})"
_LETTERS = re.compile(r"[^\W\d_]{3}")
# Below this many characters (trimmed) a chunk gives a retriever too little to score.
SHORT_CHARS = 40
# Copies of one text in at least this many chunks are boilerplate, not content.
BOILERPLATE_COPIES = 3
# The start of a boilerplate text that its exclude pattern matches.
PREFIX_CHARS = 60

NO_WORDS_REASON = "no words: nothing a question could ask about"
SHORT_REASON = "short: under {n} characters"
BOILERPLATE_REASON = "boilerplate: the same text in {n} chunks"


@dataclass(frozen=True)
class Candidates:
    """Uncovered chunks to exclude (position -> reason), and the config lines that do it."""

    reasons: dict[int, str]
    config_lines: list[str]

    def __len__(self) -> int:
        return len(self.reasons)


def exclusion_candidates(texts: Mapping[int, tuple[str, str]], hash_counts: Counter[str],
                         min_chunk_chars: int = 0) -> Candidates:
    """The candidates among ``texts`` (position -> (text, content hash)) of uncovered chunks.

    ``hash_counts`` counts each content hash over the whole corpus (a disclaimer with one
    covered copy is still boilerplate). ``min_chunk_chars`` is the scope's own setting:
    chunks under it are already excluded, so the short rule only adds to it.
    """
    reasons: dict[int, str] = {}
    prefixes: dict[str, None] = {}
    shortest = max(SHORT_CHARS, min_chunk_chars)
    any_short = any_no_words = False
    for j, (text, digest) in texts.items():
        trimmed = text.strip()
        if not _LETTERS.search(text):
            reasons[j] = NO_WORDS_REASON
            any_no_words = True
        elif hash_counts.get(digest, 0) >= BOILERPLATE_COPIES:
            reasons[j] = BOILERPLATE_REASON.format(n=hash_counts[digest])
            prefixes[trimmed[:PREFIX_CHARS]] = None
        elif len(trimmed) < shortest:
            reasons[j] = SHORT_REASON.format(n=shortest)
            any_short = True
    lines = []
    patterns = ([NO_WORDS] if any_no_words else []) + [r"\A\s*" + re.escape(p) for p in prefixes]
    if patterns:
        lines.append("exclude = [" + ", ".join(json.dumps(p) for p in patterns) + "]")
    if any_short:
        lines.append(f"min_chunk_chars = {shortest}")
    return Candidates(reasons, lines)
