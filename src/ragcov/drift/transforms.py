"""The corpus changes a metamorphic relation is tested under, as text transforms.

Every transform is deterministic: a chunk's random choices come from the seed, the
relation and the chunk's own id, never from its position or from the chunks before
it, so the same chunk is changed the same way in a slice of the corpus and in the
whole of it, on any machine. Nothing here builds a corpus or touches a retriever
(:mod:`ragcov.drift.copies` does); these are the edits a person could check by eye.

- **OCR noise** (:func:`ocr_noise`): the confusions a scanner makes (``rn``/``m``,
  ``l``/``1``, ``O``/``0`` ...), dropped and doubled spaces and line-break
  hyphenation, at a rate per character.
- **Surface form** (:func:`reformat`): Markdown pipe tables as rows of text, as
  aligned Markdown or as CSV; whitespace; upper case. The words and numbers stay.
- **An updated version** (:func:`updated_version`): the numbers of a chunk changed
  (years moved on by one, amounts by 5-25%), as a restated filing changes them.
"""

from __future__ import annotations

import csv
import io
import random
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ragcov.analyzer import is_dense, tokens, word_spans

# Two characters a scanner reads as one, and the reverse (one read as two).
PAIR_CONFUSIONS = {"rn": "m", "cl": "d", "vv": "w", "li": "h"}
CHAR_CONFUSIONS = {
    "m": "rn", "w": "vv", "d": "cl", "l": "1", "1": "l", "I": "l", "i": "1", "O": "0",
    "0": "O", "o": "0", "S": "5", "5": "S", "B": "8", "8": "B", "e": "c", "c": "e",
    "h": "b", "b": "h", "u": "v", "v": "u", "g": "q", "q": "g", "Z": "2", "2": "Z",
    "G": "6", "6": "G", "3": "8", "4": "A", "7": "1", "9": "g", "t": "f", "f": "t",
    ",": ".", ".": ",",
}
# Other scripts' confusions: letters a scanner reads as a letter of like shape (a dot or
# a stroke lost or gained). A script with none here keeps its letters; the drift report
# says so (:func:`scripts_without_confusions`) rather than calling the relation robust.
SCRIPT_CONFUSIONS = {
    "Cyrillic": {"о": "0", "О": "0", "З": "3", "з": "3", "б": "6", "ш": "щ", "щ": "ш", "и": "й",
                 "й": "и", "п": "н", "н": "п", "е": "ё", "ё": "е", "ь": "ъ", "ъ": "ь"},
    "Greek": {"ο": "o", "Ο": "0", "ν": "v", "ρ": "p", "ι": "i", "Ι": "l", "η": "n", "κ": "k",
              "τ": "t", "υ": "u", "ε": "c", "α": "a"},
    "Arabic": {"ب": "ت", "ت": "ث", "ث": "ت", "ج": "ح", "ح": "خ", "خ": "ح", "د": "ذ", "ذ": "د",
               "ر": "ز", "ز": "ر", "س": "ش", "ش": "س", "ص": "ض", "ض": "ص", "ط": "ظ", "ظ": "ط",
               "ع": "غ", "غ": "ع", "ف": "ق", "ق": "ف", "ة": "ه", "ي": "ى", "ى": "ي"},
    "Hebrew": {"ה": "ח", "ח": "ה", "ב": "כ", "כ": "ב", "ו": "ז", "ז": "ו", "ד": "ר", "ר": "ד",
               "ס": "ם", "ם": "ס"},
    "Devanagari": {"ब": "व", "व": "ब", "घ": "ध", "ध": "घ", "म": "भ", "भ": "म", "ड": "ङ",
                   "ङ": "ड", "प": "ष", "ष": "प", "र": "२", "ि": "ी", "ी": "ि"},
    "Thai": {"ด": "ค", "ค": "ด", "บ": "ป", "ป": "บ", "ถ": "ภ", "ภ": "ถ", "ข": "ช", "ช": "ข",
             "พ": "ฟ", "ฟ": "พ", "ผ": "ฝ", "ฝ": "ผ", "ม": "น", "น": "ม", "ร": "ธ"},
    "Han": {"己": "已", "已": "巳", "巳": "己", "未": "末", "末": "未", "土": "士", "士": "土",
            "日": "曰", "曰": "日", "人": "入", "入": "人", "大": "太", "太": "犬", "千": "干",
            "干": "于", "天": "夭", "木": "本", "本": "木", "王": "玉", "玉": "王", "问": "间",
            "间": "问", "特": "持", "持": "特", "几": "凡", "力": "刀", "刀": "力"},
    "Katakana": {"シ": "ツ", "ツ": "シ", "ソ": "ン", "ン": "ソ", "ク": "ケ", "ロ": "口",
                 "エ": "工", "カ": "力", "ニ": "二", "ハ": "八", "リ": "り"},
    "Hiragana": {"へ": "ヘ", "り": "リ", "ぬ": "め", "め": "ぬ", "わ": "れ", "れ": "わ",
                 "は": "ほ", "ほ": "は"},
}
CONFUSIONS = dict(CHAR_CONFUSIONS)
for _table in SCRIPT_CONFUSIONS.values():
    for _k, _v in _table.items():
        CONFUSIONS.setdefault(_k, _v)
# Latin letters: each has a confusion above or breaks across a line.
NOISE_SCRIPTS = frozenset({"Latin", *SCRIPT_CONFUSIONS})
# A word this long or longer can be broken across a line with a hyphen.
HYPHENATE_FROM = 5

#: The surface forms of the ``format`` relation: three for tables, two for any text.
TABLE_FORMATS = ("rows", "markdown", "csv")
TEXT_FORMATS = ("whitespace", "case")
FORMATS = TABLE_FORMATS + TEXT_FORMATS


def chunk_rng(seed: int, relation: str, chunk_id: str) -> random.Random:
    """The random source of one chunk under one relation.

    Seeded from text (Python hashes a str seed with SHA-512), so the draw depends on
    nothing but the three values: not on ``PYTHONHASHSEED``, the corpus order or the
    platform.
    """
    return random.Random(f"ragcov-drift\x00{seed}\x00{relation}\x00{chunk_id}")


# --- OCR noise ------------------------------------------------------------------------------

def ocr_noise(text: str, rate: float, rng: random.Random,
              words: Collection[str] | None = None) -> str:
    """``text`` as a scanner might have read it: each character is misread with
    probability ``rate``.

    A misread character becomes its confusion (``m`` -> ``rn``, ``0`` -> ``O``; a pair
    such as ``rn`` becomes ``m``); a space is dropped or doubled; a letter inside a long
    word with no confusion of its own breaks the word across a line (``exam-\\nple``);
    anything else is lost. With ``words`` (lower-case), only the characters of those
    words are misread: what a query matches on, or everything else.
    """
    if rate <= 0 or not text:
        return text
    allowed = _word_mask(text, words) if words is not None else None
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if (allowed is None or allowed[i]) and rng.random() < rate:
            replacement, used = _misread(text, i, rng, allowed)
            out.append(replacement)
            i += used
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _word_mask(text: str, words: Collection[str]) -> list[bool]:
    """The characters of the words in ``words`` (folded by the house text rule): a word
    of a spaceless script is found by its bigrams."""
    mask = [False] * len(text)
    for start, end in word_spans(text):
        if any(t in words for t in tokens(text[start:end])):
            mask[start:end] = [True] * (end - start)
    return mask


def scripts_without_confusions(texts: Sequence[str]) -> dict[str, float]:
    """The scripts of ``texts`` (share of their letters) whose letters the noise relation
    has no confusion for: their characters are only dropped or broken across lines, so
    a 0% violation rate there says little about a scanner's noise."""
    from ragcov.analyzer import main_scripts, script_shares

    shares = script_shares(texts)
    return {s: shares[s] for s in main_scripts(shares) if s not in NOISE_SCRIPTS}


def _misread(text: str, i: int, rng: random.Random, allowed: list[bool] | None
             ) -> tuple[str, int]:
    """(what is read instead, how many characters it replaces) at position ``i``."""
    pair = text[i:i + 2]
    if pair in PAIR_CONFUSIONS and (allowed is None or allowed[i + 1]):
        return PAIR_CONFUSIONS[pair], 2
    ch = text[i]
    if ch == " ":
        return ("", 1) if rng.random() < 0.5 else ("  ", 1)
    if ch in CONFUSIONS:
        return CONFUSIONS[ch], 1
    # A scanner breaks an alphabetic word across a line; Chinese, Japanese, Korean or Thai
    # text is never hyphenated: a character with no confusion there is lost.
    if ch.isalpha() and not is_dense(ch) and _inside_long_word(text, i):
        return "-\n" + ch, 1
    if ch == "\n":
        return " ", 1
    return "", 1


def _inside_long_word(text: str, i: int) -> bool:
    start = i
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    end = i
    while end < len(text) and text[end].isalpha():
        end += 1
    return end - start >= HYPHENATE_FROM and start + 2 <= i <= end - 2


# --- surface form ----------------------------------------------------------------------------

TABLE_LINE = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
SEPARATOR_CELL = re.compile(r"^\s*:?-{3,}:?\s*$")
PIPE = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Table:
    """A Markdown pipe table found in a text: its lines and cells."""

    start: int                   # first line (0-based) of the table in the text
    end: int                     # one past its last line
    header: list[str] | None     # None: the rows continue a table cut off above
    rows: list[list[str]]


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in PIPE.split(inner)]


def find_tables(text: str) -> list[Table]:
    """The Markdown pipe tables in ``text``: two or more consecutive ``| ... |`` lines.

    A table whose second line is a ``|---|`` separator has a header; one without (the
    rest of a table a chunk boundary cut) is rows only.
    """
    lines = text.split("\n")
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        if not TABLE_LINE.match(lines[i]):
            i += 1
            continue
        j = i
        while j < len(lines) and TABLE_LINE.match(lines[j]):
            j += 1
        if j - i >= 2:
            rows = [_cells(line) for line in lines[i:j]]
            separator = len(rows) >= 2 and all(SEPARATOR_CELL.match(c) for c in rows[1] if c)
            if separator:
                tables.append(Table(i, j, rows[0], rows[2:]))
            else:
                tables.append(Table(i, j, None, rows))
        i = j
    return tables


def has_table(text: str) -> bool:
    return bool(find_tables(text))


def _rows_text(table: Table) -> list[str]:
    out = []
    for row in table.rows:
        if table.header is None:
            out.append("; ".join(c for c in row if c))
            continue
        header = table.header + [""] * max(0, len(row) - len(table.header))
        parts = []
        for n, cell in enumerate(row):
            if not cell:
                continue
            name = header[n] or f"column {n + 1}"
            parts.append(f"{name}: {cell}")
        out.append("; ".join(parts))
    return out


def _aligned_markdown(table: Table) -> list[str]:
    rows = ([table.header] if table.header is not None else []) + table.rows
    width = max(len(r) for r in rows)
    rows = [[c.replace("|", "\\|") for c in r] + [""] * (width - len(r)) for r in rows]
    widths = [max(3, *(len(r[c]) for r in rows)) for c in range(width)]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(cell.ljust(w) for cell, w in zip(r, widths)) + " |"

    out = [line(rows[0])]
    if table.header is not None:
        out.append("| " + " | ".join("-" * w for w in widths) + " |")
    out += [line(r) for r in rows[1:]]
    return out


def _csv(table: Table) -> list[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if table.header is not None:
        writer.writerow(table.header)
    writer.writerows(table.rows)
    return buffer.getvalue().rstrip("\n").split("\n")


_RENDER = {"rows": _rows_text, "markdown": _aligned_markdown, "csv": _csv}


def reformat(text: str, form: str) -> str:
    """``text`` in another surface form; the same words and numbers.

    ``rows``, ``markdown`` and ``csv`` rewrite the Markdown tables in it (a table
    as one line of ``header: value`` pairs per row; padded and aligned; CSV) and keep
    the rest; ``whitespace`` turns line breaks into spaces and doubles every space;
    ``case`` upper-cases everything.
    """
    if form == "whitespace":
        return re.sub(r"\s+", "  ", text.strip())
    if form == "case":
        return text.upper()
    render = _RENDER[form]
    tables = find_tables(text)
    if not tables:
        return text
    lines = text.split("\n")
    out: list[str] = []
    at = 0
    for t in tables:
        out += lines[at:t.start]
        out += render(t)
        at = t.end
    out += lines[at:]
    return "\n".join(out)


# --- updated versions ------------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")


def has_number(text: str) -> bool:
    return NUMBER.search(text) is not None


def updated_version(text: str, rng: random.Random) -> str:
    """``text`` with its numbers changed as a restatement changes them.

    A year (1900-2099, no decimals) moves on by one; any other number changes by 5% to
    25% up or down, keeping its decimals and thousands separators, and never stays the
    same. Words are untouched, so the two versions differ only in what was updated.
    """
    def change(m: re.Match[str]) -> str:
        raw = m.group()
        grouped = "," in raw
        plain = raw.replace(",", "")
        whole, _, decimals = plain.partition(".")
        if not decimals and not grouped and len(whole) == 4 and 1900 <= int(whole) <= 2099:
            return str(int(whole) + 1)
        factor = rng.uniform(1.05, 1.25) if rng.random() < 0.5 else rng.uniform(0.75, 0.95)
        value = float(plain) * factor
        places = len(decimals)
        shown = f"{value:,.{places}f}" if grouped else f"{value:.{places}f}"
        if shown == raw:  # a small number rounded back to itself: step it by one unit
            step = 10 ** -places if places else 1
            value = float(plain) + step
            shown = f"{value:,.{places}f}" if grouped else f"{value:.{places}f}"
        return shown

    return NUMBER.sub(change, text)


# --- the same chunk, copied --------------------------------------------------------------------

def colour(tests: Sequence[Sequence[int]], chunks: Sequence[int]) -> list[list[int]]:
    """``chunks`` split into groups no test's top-k holds two of.

    Copying (or updating) every chunk at once would let one test lose several slots
    to several copies, and the relation is about one chunk; one copy per chunk costs a
    re-index each. A greedy colouring of the "retrieved together" graph (most
    connected chunk first) needs about as many groups as a top-k has slots, and every
    test meets at most one changed chunk of its own top-k in each group.
    """
    wanted = set(chunks)
    neighbours: dict[int, set[int]] = {c: set() for c in chunks}
    for top in tests:
        mine = [c for c in dict.fromkeys(top) if c in wanted]
        for c in mine:
            neighbours[c].update(x for x in mine if x != c)
    order = sorted(chunks, key=lambda c: (-len(neighbours[c]), c))
    colour_of: dict[int, int] = {}
    for c in order:
        used = {colour_of[x] for x in neighbours[c] if x in colour_of}
        colour_of[c] = next(i for i in range(len(used) + 1) if i not in used)
    groups: list[list[int]] = [[] for _ in range(max(colour_of.values(), default=-1) + 1)]
    for c in sorted(chunks):
        groups[colour_of[c]].append(c)
    return groups
