"""Turning raw generator output into one clean question, or a reason to reject it.

Small models pad their answer with numbering, quotes, a second question or a
whole continued few-shot block; only the first usable line is kept. A question
is rejected when nothing is left, when it is too long to be a user question,
when the suite already holds it, or when it repeats one of the prompt's own
examples (a base model's favourite failure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragcov.analyzer import tokens

LABEL = re.compile(r"^\s*(?:(?:question|q|query|answer)\s*\d*\s*[:.)-]\s*)+", re.IGNORECASE)
NUMBERING = re.compile(r"^\s*(?:[-*\u2022]+|\(?\d{1,3}[.):]|\(?[a-z][.)])\s+", re.IGNORECASE)
QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"
MAX_CHARS = 300
MAX_WORDS = 60
MIN_WORDS = 3
COPY_SIMILARITY = 0.8
# The question marks of the scripts a corpus may be in: Latin, full-width (Chinese,
# Japanese), Arabic, Greek (";" after NFKC, not cut at: it is also a semicolon).
QUESTION_MARKS = ("?", "\uff1f", "\u061f")


def clean(raw: str) -> str:
    """The first non-empty line, without labels, numbering, quotes or trailing chatter."""
    for line in raw.replace("\r", "\n").split("\n"):
        text = line.strip()
        for _ in range(3):
            text = LABEL.sub("", text)
            text = NUMBERING.sub("", text)
            text = text.strip().strip(QUOTES).strip()
            text = re.sub(r"^\*\*(.*)\*\*$", r"\1", text).strip()
        if not text:
            continue
        ends = [text.index(q) for q in QUESTION_MARKS if q in text]
        if ends:
            text = text[: min(ends) + 1]
        return re.sub(r"\s+", " ", text).strip()
    return ""


def normalize(text: str) -> str:
    """The key duplicates are compared on: case, width, punctuation and spacing ignored,
    words cut by the house text rule (a Chinese question by its bigrams)."""
    return " ".join(tokens(text))


def _tokens(text: str) -> set[str]:
    return set(normalize(text).split())


def jaccard(a: str, b: str) -> float:
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def rejection(text: str, existing: set[str], examples: Iterable[str]) -> str | None:
    """Why ``text`` cannot join the suite (None: it can)."""
    if not text:
        return "empty"
    # Words by the text rule: a Chinese or Thai question has no spaces to count.
    words = len(tokens(text))
    if words < MIN_WORDS:
        return "too short"
    if len(text) > MAX_CHARS or words > MAX_WORDS:
        return "too long"
    key = normalize(text)
    if not key:
        return "empty"
    for example in examples:
        if normalize(example) == key or jaccard(text, example) >= COPY_SIMILARITY:
            return "copies a prompt example"
    if key in existing:
        return "duplicate"
    return None
