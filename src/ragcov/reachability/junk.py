"""Junk is not "write a test": uncovered chunks to exclude rather than to test.

Some chunks are no content a user asks about: a reference marker (``[1]``), a bare
statistic (``n = 45``, ``p<0.05``), a line too short to score, or the same boilerplate
copied into many documents (a copyright disclaimer, a page footer). Counted as untested,
they ask a team to write tests nobody should write (7 of 8 copies of one disclaimer
were). Here each such uncovered chunk is an *exclusion candidate*, with the reason, and
the config lines that would exclude it, as coverage.py users add ``exclude_lines``.

The advice is a few rules, at most :data:`MAX_RULES`, each with the number of chunks it
leaves out: a glob for ``exclude_docs`` (``tables/*``) where every counted chunk of the
documents it matches is junk, ``min_chunk_chars``, and regular expressions for
``exclude`` (searched in chunk text, ``\\A`` and ``\\Z`` for the whole chunk whatever
its lines), written to be read: a boilerplate text by its first words, short texts as
one alternation, only the characters a regex must escape escaped. One escaped regex per
text (up to 25 of each kind, as the advice was) is a list nobody reads.

Each rule is checked against every chunk the report counts before it is offered: a
general rule (no letters at all, a length, a folder) only where it leaves out candidates
and nothing else; a text's rule also leaves out its other copies, covered ones included,
and its comment counts them. The counts are those :mod:`ragcov.scope` gives once the
lines are in the config: a chunk two rules match is counted for the first, in the order
scope applies them (``exclude_docs``, ``min_chunk_chars``, then ``exclude`` in order), and
the lines carry the settings already in effect, so they replace the config's as written.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
# Rules offered at most: more is a list nobody reads; the candidates left are counted.
MAX_RULES = 5
# Short texts one alternation names at most, each at most this long.
MAX_ALTERNATIVES = 8
ALTERNATIVE_CHARS = 60
# A boilerplate text of more words is named by its first words, as few as leave out the same.
PREFIX_WORDS = (4, 6, 8, 12)
# Candidates beginning with the same words (up to this many) are named by those words.
MAX_PREFIX = 4
# The most shared beginnings, and the most copied boilerplate texts, weighed as rules: the
# rest could never be among the MAX_RULES that leave out the most.
MAX_PREFIXES = 200
MAX_TEXTS = 50

NO_WORDS_REASON = "no words: nothing a question could ask about"
SHORT_REASON = "short: under {n} characters"
BOILERPLATE_REASON = "boilerplate: the same text in {n} chunks"


@dataclass(frozen=True)
class Rule:
    """One line of advice: a config key, its value, and the chunks it leaves out."""

    key: str                  # "exclude_docs", "min_chunk_chars" or "exclude"
    value: str | int
    what: str                 # why these chunks: "no words", "shorter than 40 characters" ...
    chunks: tuple[str, ...]   # the counted chunks it leaves out (not left out by a rule before it)
    candidates: int           # how many of them are candidates
    retrieved: int            # how many of them some test retrieves

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "what": self.what,
                "chunks": len(self.chunks), "candidates": self.candidates,
                "retrieved": self.retrieved}

    def comment(self) -> str:
        n = len(self.chunks)
        others = n - self.candidates
        extra = []
        if self.retrieved:
            extra.append(f"{self.retrieved} of them retrieved by a test")
        if others - self.retrieved:
            extra.append(f"{others - self.retrieved} of them uncovered but not junk")
        return (f"# {n} chunk{'s' if n != 1 else ''}: {self.what}"
                + (f" ({'; '.join(extra)})" if extra else ""))


@dataclass(frozen=True)
class Candidates:
    """Uncovered chunks to exclude (id -> reason), the rules and the config lines that do it."""

    reasons: dict[str, str]
    config_lines: list[str]
    rules: list[Rule] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.reasons)


_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")


def readable(text: str) -> str:
    r"""``text`` as a regex a person reads: only the characters a regex must escape escaped
    (``re.escape`` escapes every space), a single space as itself and any other run of
    whitespace as ``\s+``."""
    parts = re.split(r"(\s+)", text.strip())
    return "".join((" " if part == " " else r"\s+") if i % 2 else _SPECIAL.sub(r"\\\1", part)
                   for i, part in enumerate(parts))


def toml_string(value: str) -> str:
    r"""A TOML literal string (``'\A\s*Page'``: no backslash doubled) where one can hold
    ``value``, else a basic string."""
    if "'" not in value and value.isprintable():
        return f"'{value}'"
    return json.dumps(value)


def _exact(text: str) -> str:
    return r"\A\s*" + readable(text) + r"\s*\Z"


def _glob(doc_id: str) -> str | None:
    """A glob matching ``doc_id`` alone, or None where the config cannot write one (a glob
    value is split at commas, and trimmed)."""
    if "," in doc_id or doc_id != doc_id.strip() or not doc_id:
        return None
    return re.sub(r"([*?\[])", r"[\1]", doc_id)


#: The order scope applies the keys in: a chunk two rules match is left out by the first.
_ORDER = {"exclude_docs": 0, "min_chunk_chars": 1, "exclude": 2}


@dataclass
class _Option:
    key: str
    value: str | int
    what: str
    matches: set[str]


def exclusion_candidates(uncovered: Mapping[str, tuple[str, str]], hash_counts: Counter[str],
                         every_text: Mapping[str, str], min_chunk_chars: int = 0,
                         doc_of: Mapping[str, str] | None = None,
                         exclude: Sequence[str] = (), exclude_docs: Sequence[str] = ()
                         ) -> Candidates:
    """The candidates among ``uncovered`` (chunk id -> (text, content hash)) and the rules.

    ``hash_counts`` counts each content hash over the whole corpus (a disclaimer with one
    covered copy is still boilerplate); ``every_text`` is every chunk the report counts,
    to check what a rule would leave out, and ``doc_of`` their documents (no folder rules
    without it); ``min_chunk_chars``, ``exclude`` and ``exclude_docs`` the settings in
    effect, which the lines carry over.
    """
    reasons: dict[str, str] = {}
    shortest = max(SHORT_CHARS, min_chunk_chars)
    for cid, (text, digest) in uncovered.items():
        trimmed = text.strip()
        if min_chunk_chars and len(trimmed) < min_chunk_chars:
            continue  # already out of the report
        if not _LETTERS.search(text):
            reasons[cid] = NO_WORDS_REASON
        elif hash_counts.get(digest, 0) >= BOILERPLATE_COPIES:
            reasons[cid] = BOILERPLATE_REASON.format(n=hash_counts[digest])
        elif len(trimmed) < shortest:
            reasons[cid] = SHORT_REASON.format(n=shortest)
    if not reasons:
        return Candidates(reasons, [])
    candidates = set(reasons)
    boilerplate = {c for c, why in reasons.items() if why.startswith("boilerplate")}
    index = _Index(every_text)
    options = _options(candidates, boilerplate, uncovered, every_text, doc_of or {}, shortest,
                       min_chunk_chars, index)
    rules = _choose(options, candidates, uncovered, every_text, index)
    return Candidates(reasons, _lines(rules, candidates, uncovered, min_chunk_chars, exclude,
                                      exclude_docs), rules)


class _Index:
    r"""Counted chunks by their text, trimmed at the start, in order: a pattern that begins
    ``\A\s*WORD`` can match only texts that begin with WORD, a range found by bisection, so
    a rule is checked against those and not the whole corpus."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = texts
        self.items = sorted((t.lstrip(), c) for c, t in texts.items())
        self.keys = [t for t, _c in self.items]

    def matching(self, pattern: str, first: str) -> set[str]:
        """The chunks ``pattern`` matches; each begins with ``first``, after its whitespace."""
        rx = re.compile(pattern, re.MULTILINE)
        out = set()
        i = bisect_left(self.keys, first)
        while i < len(self.keys) and self.keys[i].startswith(first):
            cid = self.items[i][1]
            if rx.search(self.texts[cid]):
                out.add(cid)
            i += 1
        return out


def _options(candidates: set[str], boilerplate: set[str], uncovered: Mapping[str, tuple[str, str]],
             every_text: Mapping[str, str], doc_of: Mapping[str, str], shortest: int,
             min_chunk_chars: int, index: _Index) -> list[_Option]:
    """Every rule that could be offered, each with the counted chunks it matches."""
    options = _folder_options(candidates, every_text, doc_of)
    others = {cid: t for cid, t in every_text.items() if cid not in candidates}
    # A length: the longest that leaves out no chunk but candidates.
    limit = min([shortest, *(len(t.strip()) for t in others.values())])
    if limit > min_chunk_chars:
        short = {c for c, t in every_text.items() if len(t.strip()) < limit}
        if short:
            options.append(_Option("min_chunk_chars", limit, f"shorter than {limit} characters",
                                   short))
    no_words = {c for c, t in every_text.items() if not _LETTERS.search(t)}
    if no_words and no_words <= candidates:
        options.append(_Option("exclude", NO_WORDS, "no words: nothing a question could ask about",
                               no_words))
    # Each boilerplate text (the most copied first), by its first words where they leave
    # out no more than the whole text does.
    counts = Counter(uncovered[c][0].strip() for c in boilerplate)
    for text, _n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:MAX_TEXTS]:
        options.append(_text_option(text, index, "boilerplate, one text"))
    return options + _prefix_options(candidates, uncovered, index)


def _text_option(text: str, index: _Index, what: str) -> _Option:
    """One text's rule: its first words, as few as leave out what the whole text does (its
    copies), else the whole text."""
    words = text.split()
    first = words[0] if words else ""
    pattern = _exact(text)
    matches = index.matching(pattern, first)
    for n in PREFIX_WORDS:
        if n < len(words):
            prefix = r"\A\s*" + readable(" ".join(words[:n]))
            if index.matching(prefix, first) == matches:
                pattern = prefix
                break
    copies = len(matches)
    return _Option("exclude", pattern, f"{what} in {copies} chunk{'s' if copies != 1 else ''}",
                   matches)


def _folder_options(candidates: set[str], every_text: Mapping[str, str],
                    doc_of: Mapping[str, str]) -> list[_Option]:
    """Documents whose every counted chunk is junk, each by the highest folder that holds
    only such documents (``appendix/*``), else by its own id."""
    chunks_of: dict[str, list[str]] = {}
    for cid in every_text:
        if cid in doc_of:
            chunks_of.setdefault(str(doc_of[cid]), []).append(cid)
    junk_docs = {d for d, ids in chunks_of.items() if all(c in candidates for c in ids)}
    if not junk_docs:
        return []
    # Per folder, its documents and its junk documents: a folder glob is ``FOLDER/*``, which
    # matches every id that begins with ``FOLDER/``, however deep.
    total: Counter[str] = Counter()
    junk: Counter[str] = Counter()
    for doc in chunks_of:
        parts = doc.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            total[folder] += 1
            junk[folder] += doc in junk_docs
    globs: dict[str, set[str]] = {}
    for doc in sorted(junk_docs):
        parts = doc.split("/")
        folders = ["/".join(parts[:depth]) for depth in range(1, len(parts))]
        whole = next((f for f in folders if junk[f] == total[f] and _glob(f + "/") is not None),
                     None)
        if whole is not None:
            globs.setdefault(f"{_glob(whole + '/')}*", set()).add(doc)
        elif (own := _glob(doc)) is not None:
            globs[own] = {doc}
    out = []
    for glob, docs in globs.items():
        n = len(docs)
        out.append(_Option("exclude_docs", glob, f"every chunk of {n} document{'s' if n != 1 else ''}"
                           " is junk", {c for d in docs for c in chunks_of[d]}))
    return out


def _prefix_options(candidates: set[str], uncovered: Mapping[str, tuple[str, str]],
                    index: _Index) -> list[_Option]:
    """Candidates that begin with the same words (``Section 3: ...``, ``Notes on the ...``),
    by those words, where they begin no other chunk: of the prefixes that leave out the
    same chunks, the longest, which says most of what it matches."""
    counts: Counter[tuple[str, ...]] = Counter()
    for cid in candidates:
        words = tuple(uncovered[cid][0].split())
        counts.update(words[:n] for n in range(1, min(len(words), MAX_PREFIX) + 1))
    found: dict[frozenset[str], tuple[int, str, str]] = {}
    for prefix, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:MAX_PREFIXES]:
        if n < 2:
            break
        head = " ".join(prefix)
        pattern = r"\A\s*" + readable(head) + (r"\b" if head[-1].isalnum() else "")
        matches = frozenset(index.matching(pattern, prefix[0]))
        if len(matches) < 2 or not matches <= candidates:
            continue
        if matches not in found or len(prefix) > found[matches][0]:
            found[matches] = (len(prefix), pattern, head)
    return [_Option("exclude", pattern, f"junk beginning \"{head}\"", set(matches))
            for matches, (_n, pattern, head) in found.items()]


def _matching(pattern: str, texts: Mapping[str, str]) -> set[str]:
    rx = re.compile(pattern, re.MULTILINE)
    return {c for c, t in texts.items() if rx.search(t)}


def _choose(options: list[_Option], candidates: set[str], uncovered: Mapping[str, tuple[str, str]],
            every_text: Mapping[str, str], index: _Index) -> list[Rule]:
    """At most MAX_RULES rules, each chosen for the most candidates it adds (then for the
    fewest other chunks it takes): the general rules, each boilerplate text, or for the
    candidates still left their short texts in one alternation, or the most frequent of
    their longer texts by its first words."""
    chosen: list[_Option] = []
    left = set(candidates)
    # In one order whatever the order of the sets they came from: ties go to the first.
    options = sorted(options, key=lambda o: (_ORDER[o.key], str(o.value)))
    while left and len(chosen) < MAX_RULES:
        rest = _alternation(left, uncovered, every_text)
        if rest is None:
            counts = Counter(uncovered[c][0].strip() for c in left)
            text = min(counts, key=lambda t: (-counts[t], t))
            rest = _text_option(text, index, "a text of its own")
        best = max([*options, rest],
                   key=lambda o: (len(o.matches & left), -len(o.matches - candidates)))
        if not best.matches & left:
            break
        chosen.append(best)
        options = [o for o in options if o is not best]
        left -= best.matches
    chosen.sort(key=lambda o: _ORDER[o.key])  # stable: exclude patterns keep their order
    covered = set(every_text) - set(uncovered)
    rules: list[Rule] = []
    taken: set[str] = set()
    for o in chosen:
        own = o.matches - taken
        taken |= own
        if own:
            rules.append(Rule(o.key, o.value, o.what, tuple(sorted(own)), len(own & candidates),
                              len(own & covered)))
    return rules


def _alternation(left: set[str], uncovered: Mapping[str, tuple[str, str]],
                 every_text: Mapping[str, str]) -> _Option | None:
    """The short texts of the candidates left, most frequent first, as one regex."""
    counts = Counter(uncovered[c][0].strip() for c in left)
    texts = [t for t, _n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
             if len(t) <= ALTERNATIVE_CHARS][:MAX_ALTERNATIVES]
    if not texts:
        return None
    n = len(texts)
    if n == 1:
        return _Option("exclude", _exact(texts[0]), "a short text of its own",
                       _matching(_exact(texts[0]), every_text))
    pattern = r"\A\s*(?:" + "|".join(readable(t) for t in texts) + r")\s*\Z"
    return _Option("exclude", pattern, f"{n} short texts of their own", _matching(pattern, every_text))


def _lines(rules: list[Rule], candidates: set[str], uncovered: Mapping[str, tuple[str, str]],
           min_chunk_chars: int, exclude: Sequence[str], exclude_docs: Sequence[str]) -> list[str]:
    """The rules as lines of ragcov.toml, each with its count, and what they leave."""
    lines: list[str] = []
    for key, already in (("exclude_docs", exclude_docs), ("min_chunk_chars", ()),
                         ("exclude", exclude)):
        mine = [r for r in rules if r.key == key]
        if not mine:
            continue
        if key == "min_chunk_chars":
            lines.append(f"min_chunk_chars = {mine[0].value}  {mine[0].comment()}")
            continue
        lines.append(f"{key} = [")
        lines += [f"    {toml_string(v)},  # already set" for v in already]
        lines += [f"    {toml_string(str(r.value))},  {r.comment()}" for r in mine]
        lines.append("]")
    done = {c for r in rules for c in r.chunks}
    total = len(done)
    if len(rules) > 1:
        lines.append(f"# {len(rules)} rule{'s leave' if len(rules) != 1 else ' leaves'} out {total} "
                     f"chunk{'s' if total != 1 else ''}, {len(done & candidates)} of them candidates")
    missed = candidates - done
    if missed:
        lines.append(f"# {len(missed)} more candidate{'s need' if len(missed) != 1 else ' needs'} rules of "
                     f"their own (ragcov json lists every candidate): {', '.join(sorted(missed)[:5])}"
                     + (" ..." if len(missed) > 5 else ""))
    return lines
