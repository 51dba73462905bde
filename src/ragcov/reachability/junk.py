"""Junk is not "write a test": uncovered chunks to exclude rather than to test.

Some chunks are no content a user asks about: a reference marker (``[1]``), a bare
statistic (``n = 45``, ``p<0.05``), a line too short to score, or the same boilerplate
copied into many documents (a copyright disclaimer, a page footer). Counted as untested,
they ask a team to write tests nobody should write (7 of 8 copies of one disclaimer
were). Here each such uncovered chunk is an *exclusion candidate*, with the reason, and
the config lines that would exclude it, as coverage.py users add ``exclude_lines``.

The lines are regular expressions for ``exclude`` (searched in chunk text, ``\\A`` and
``\\Z`` for the whole chunk whatever its lines) and ``min_chunk_chars``: what
:mod:`ragcov.scope` applies. They are checked against every chunk of the corpus before
they are offered: a general rule (no letters at all, a length) only where it leaves out
the candidates and nothing else, else the candidates' own texts. What they leave out
besides the candidates (the covered copies of a boilerplate text: the same text) is said
in a comment line beside them, never left for the user to find.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

# No run of three letters (any script): "[1]", "n = 45", "p<0.05", "12.3 %". A letter may
# carry combining marks (a Devanagari or Thai vowel sign, an accent written apart), which
# Python's ``\w`` does not count: without them "भारत" would be three runs of one letter.
# The pattern is for the config (scope applies it with ``re``), so it says "mark" as "a
# character outside ASCII that is neither a word character nor a space".
_LETTER = r"[^\W\d_][^\w\s\x00-\x7f]*"
NO_WORDS = r"\A(?![\s\S]*(?:" + _LETTER + "){3})"
_LETTERS = re.compile("(?:" + _LETTER + "){3}")
# Below this many characters (trimmed) a chunk gives a retriever too little to score.
SHORT_CHARS = 40
# Copies of one text in at least this many chunks are boilerplate, not content.
BOILERPLATE_COPIES = 3
# More candidates of one kind than this are excluded by a general rule or not at all.
MAX_EXACT = 25

NO_WORDS_REASON = "no words: nothing a question could ask about"
SHORT_REASON = "short: under {n} characters"
BOILERPLATE_REASON = "boilerplate: the same text in {n} chunks"


@dataclass(frozen=True)
class Candidates:
    """Uncovered chunks to exclude (id -> reason), and the config lines that do it."""

    reasons: dict[str, str]
    config_lines: list[str]

    def __len__(self) -> int:
        return len(self.reasons)


def _exact(text: str) -> str:
    return r"\A\s*" + re.escape(text.strip()) + r"\s*\Z"


def exclusion_candidates(uncovered: Mapping[str, tuple[str, str]], hash_counts: Counter[str],
                         every_text: Mapping[str, str], min_chunk_chars: int = 0) -> Candidates:
    """The candidates among ``uncovered`` (chunk id -> (text, content hash)) and the lines.

    ``hash_counts`` counts each content hash over the whole corpus (a disclaimer with one
    covered copy is still boilerplate); ``every_text`` is every chunk the report counts,
    to check what a line would leave out; ``min_chunk_chars`` the setting in effect.
    """
    reasons: dict[str, str] = {}
    kinds: dict[str, list[str]] = {"no-words": [], "boilerplate": [], "short": []}
    shortest = max(SHORT_CHARS, min_chunk_chars)
    for cid, (text, digest) in uncovered.items():
        trimmed = text.strip()
        if min_chunk_chars and len(trimmed) < min_chunk_chars:
            continue  # already out of the report
        if not _LETTERS.search(text):
            reasons[cid], kind = NO_WORDS_REASON, "no-words"
        elif hash_counts.get(digest, 0) >= BOILERPLATE_COPIES:
            reasons[cid], kind = BOILERPLATE_REASON.format(n=hash_counts[digest]), "boilerplate"
        elif len(trimmed) < shortest:
            reasons[cid], kind = SHORT_REASON.format(n=shortest), "short"
        else:
            continue
        kinds[kind].append(cid)
    patterns: list[str] = []
    settings: list[str] = []
    candidates = set(reasons)
    others = {cid: t for cid, t in every_text.items() if cid not in candidates}
    if kinds["no-words"]:
        if not any(not _LETTERS.search(t) for t in others.values()):
            patterns.append(NO_WORDS)
        else:
            patterns += _exacts(uncovered, kinds["no-words"])
    patterns += dict.fromkeys(_exacts(uncovered, kinds["boilerplate"]))
    if kinds["short"]:
        if not any(len(t.strip()) < shortest for t in others.values()):
            settings.append(f"min_chunk_chars = {shortest}")
        else:
            patterns += _exacts(uncovered, kinds["short"])
    lines = ["exclude = [" + ", ".join(json.dumps(p) for p in patterns) + "]"] if patterns else []
    lines += settings
    missed = {cid for cid in candidates
              if not _also_left_out(patterns, settings, shortest, {cid: uncovered[cid][0]})}
    if missed:
        lines.append(f"# {len(missed)} more candidate(s) have texts of their own beyond these "
                     f"lines (ragcov json lists every candidate): {', '.join(sorted(missed)[:5])}"
                     + (" ..." if len(missed) > 5 else ""))
    also = _also_left_out(patterns, settings, shortest, others)
    if also:
        lines.append(f"# these also leave out {len(also)} chunk(s) that are not candidates (the "
                     f"other copies of the same texts): {', '.join(sorted(also)[:5])}"
                     + (" ..." if len(also) > 5 else ""))
    return Candidates(reasons, lines)


def _exacts(uncovered: Mapping[str, tuple[str, str]], ids: list[str]) -> list[str]:
    """Each candidate's own text as a pattern (one per distinct text), at most MAX_EXACT."""
    return list(dict.fromkeys(_exact(uncovered[cid][0]) for cid in ids))[:MAX_EXACT]


def _also_left_out(patterns: list[str], settings: list[str], shortest: int,
                   others: Mapping[str, str]) -> set[str]:
    compiled = [re.compile(p, re.MULTILINE) for p in patterns]
    short = bool(settings)
    return {cid for cid, text in others.items()
            if any(rx.search(text) for rx in compiled) or (short and len(text.strip()) < shortest)}
