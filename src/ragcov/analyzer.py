"""One text rule for every place that cuts text into words.

BM25, the self-query probes, junk detection, TF-IDF topics and their labels, drift's
transforms, the extractive generator and the answerability check all ask this module,
so a chunk that one of them can read is never "wordless" to another. The rule is what a
search engine's analyzer does, in any script:

- **fold**: NFKC (full-width ``ＡＢＣ`` is ``ABC``, ligatures open up, a base letter
  and its combining accent become one character) then casefold (``Straße`` matches
  ``STRASSE``), then NFKC again so folding is idempotent;
- **words** are maximal runs of letters, combining marks, digits and connector
  punctuation in any script (``\\p{L}\\p{M}\\p{N}\\p{Pc}``): Python's ``\\w`` misses
  combining marks, which cut every Hindi, Bengali or Thai word at its first vowel sign;
  zero-width (non-)joiners inside a word are dropped, so a word matches whether or not
  the writer used one;
- **scripts written without spaces** are cut as Lucene's CJK analyzer cuts them:
  overlapping bigrams of characters for Han, Hiragana, Katakana and Hangul (a lone character is
  a unigram), and overlapping bigrams of grapheme clusters for Thai, Lao, Khmer and
  Myanmar (a cluster keeps a consonant with its vowel signs and tone marks). A run that
  mixes scripts (``iPhone手机``, ``2019年``) is cut at each change of script.

Hangul is cut into syllable bigrams too, as Lucene's CJK analyzer cuts it: Korean
writes its particles onto the word (서울에서, "in Seoul"), so whole words rarely match a
question's form of them. Stopwords are removed only by the
caller that wants them, and only where a list for the language exists (English for the
TF-IDF statistics, bm25s's lists for BM25). docs/languages.md says which script gets
which treatment and what each measured.

Text that is pure ASCII takes a fast path with the standard ``re`` module and gives
exactly what the general rule gives (``tests/test_analyzer.py`` checks the two agree):
a million-chunk English corpus pays nothing for the other scripts.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import filterfalse

# Scripts written without spaces between words, and how they are cut.
_CJK = r"\p{Han}\p{scx=Hiragana}\p{scx=Katakana}\p{Hangul}"
_SEA = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_WORD_CHARS = r"\p{L}\p{M}\p{N}\p{Pc}"
_JOINERS = str.maketrans("", "", "\u200c\u200d")

# What makes a text need more than finding its word runs: a spaceless script. The Unicode
# blocks that hold them, for a quick ``re`` search (a superset: a false alarm only takes
# the longer path, which gives the same words).
_MAYBE_SPECIAL = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\u2e80-\u2fdf"
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3040-\u30ff\u31f0-\u31ff"
    "\u3300-\u33ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\ua9e0-\ua9ff"
    "\uaa60-\uaa7f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\ua960-\ua97f\ud7b0-\ud7ff"
    "\U0001b000-\U0001b16f\U00020000-\U0003ffff]")

# ... and the scripts whose words are never too short (ideographs and syllables: Yi
# besides the above), for the same quick search.
_MAYBE_DENSE = re.compile(_MAYBE_SPECIAL.pattern[:-1] + "\ua000-\ua4cf]")

# The ASCII fast path: the same rules where every character is ASCII.
_ASCII_WORD = re.compile(r"_*[A-Za-z0-9]\w*", re.ASCII)  # a run with a letter or digit
_ASCII_TERM = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


class _Patterns:
    """The Unicode patterns, compiled on first use: ``regex`` (which knows scripts, marks
    and grapheme clusters, as ``re`` does not) is imported only where a text is not ASCII,
    so the reading commands start as fast as before."""

    def __init__(self) -> None:
        import regex

        # A run with at least one letter or digit: combining marks alone are no word.
        self.word = regex.compile(rf"[\p{{M}}\p{{Pc}}]*[\p{{L}}\p{{N}}][{_WORD_CHARS}]*")
        # The TF-IDF form of a word: it starts with a letter and may hold hyphens.
        self.term = regex.compile(r"\p{L}[\p{L}\p{M}\p{N}-]*")
        self.spaceless = regex.compile(rf"[{_CJK}{_SEA}]")
        self.segment = regex.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<sea>[{_SEA}]+)|[^{_CJK}{_SEA}]+")
        self.grapheme = regex.compile(r"\X")
        # Ideographs and syllables: a word of one or two of them is a real word (서울, 水),
        # so the length floors for alphabetic words do not apply.
        self.dense = regex.compile(rf"[{_CJK}{_SEA}\p{{Yi}}]")
        self.letter_or_digit = regex.compile(r"[\p{L}\p{N}]")


@lru_cache(maxsize=1)
def _rx() -> _Patterns:
    return _Patterns()


def fold(text: str) -> str:
    """Case and width folded: NFKC, casefold, NFKC (idempotent)."""
    if text.isascii():
        return text.lower()
    # casefold makes Turkish İ "i" + a combining dot: "İstanbul" would match no "istanbul".
    folded = unicodedata.normalize("NFKC", text.translate(_JOINERS)).casefold().replace("i\u0307", "i")
    if unicodedata.is_normalized("NFKC", folded):
        return folded
    return unicodedata.normalize("NFKC", folded)


def _bigrams(units: Sequence[str]) -> list[str]:
    if len(units) < 2:
        return ["".join(units)] if units else []
    return [units[i] + units[i + 1] for i in range(len(units) - 1)]


def _cut(run: str, rx: _Patterns) -> list[str]:
    """A word run cut at its changes of script; spaceless scripts into bigrams. Marks
    that follow a letter of another script (a Thai vowel sign after a Latin letter) stay
    on the token before them, so no mark is dropped and the rule stays idempotent."""
    if not rx.spaceless.search(run):
        return [run]
    out: list[str] = []
    for m in rx.segment.finditer(run):
        part = m.group()
        if not rx.letter_or_digit.search(part):  # marks only: they belong to the letter before
            if out:
                out[-1] += part
            continue
        if m.group("cjk"):
            out.extend(_bigrams(part))
        elif m.group("sea"):
            out.extend(_bigrams(rx.grapheme.findall(part)))
        else:
            out.append(part)
    return out


def _words(folded: str, term_form: bool) -> list[str]:
    rx = _rx()
    pattern = rx.term if term_form else rx.word
    if not _MAYBE_SPECIAL.search(folded):  # the common case: words as found, nothing to cut
        return pattern.findall(folded)
    out: list[str] = []
    for run in pattern.findall(folded):
        out.extend(_cut(run, rx))
    return out


def tokens(text: str) -> list[str]:
    """Every word of ``text``, folded, in order: no letter, mark or digit is dropped.

    The retrieval form (BM25's): digits and underscores count as word characters, as
    in ``\\w``; the caller drops short words and stopwords.
    """
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    return _words(fold(text), term_form=False)


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where each word run of ``text`` (unfolded) starts and ends: for edits that must
    land on the words a query matches (drift's noise on a query's words)."""
    if text.isascii():
        return [m.span() for m in _ASCII_WORD.finditer(text)]
    return [m.span() for m in _rx().word.finditer(text)]


def term_runs(text: str) -> list[str]:
    """The TF-IDF-form word runs of ``text`` as written (not folded, not cut): a word's
    surface form, for a question that keeps the chunk's own casing."""
    if text.isascii():
        return _ASCII_TERM.findall(text)
    return _rx().term.findall(text)


def is_spaceless(text: str) -> bool:
    """Holds a character of a script written without spaces (cut into bigrams)."""
    return not text.isascii() and _rx().spaceless.search(text) is not None


def term_tokens(text: str) -> list[str]:
    """The TF-IDF form: words that start with a letter, hyphens kept inside them."""
    if text.isascii():
        return _ASCII_TERM.findall(text.lower())
    return _words(fold(text), term_form=True)


def is_dense(token: str) -> bool:
    """A token of ideographs or syllables (Han, kana, Hangul, Thai...): never too short."""
    return not token.isascii() and _rx().dense.search(token) is not None


def long_enough(token: str, min_chars: int) -> bool:
    return len(token) >= min_chars or (min_chars > 1 and is_dense(token))


def terms(text: str, stopwords: frozenset[str] = frozenset(), min_chars: int = 2) -> list[str]:
    """Retrieval words without stopwords and alphabetic words under ``min_chars``:
    ``[t for t in tokens(text) if t not in stopwords and long_enough(t, min_chars)]``,
    with the short words left out by the pattern where no word can be exempt (a corpus is
    tokenised whole, so this is BM25's hot path)."""
    if min_chars > 1:
        if text.isascii():
            found = _long_words(min_chars, True).findall(text.lower())
        else:
            folded = fold(text)
            if _MAYBE_DENSE.search(folded):
                found = [t for t in _words(folded, term_form=False)
                         if len(t) >= min_chars or is_dense(t)]
            else:
                found = _long_words(min_chars, False).findall(folded)
    else:
        found = tokens(text)
    return list(filterfalse(stopwords.__contains__, found)) if stopwords else found


@lru_cache(maxsize=8)
def _long_words(min_chars: int, ascii_only: bool) -> re.Pattern[str]:
    """Word runs of at least ``min_chars`` characters (a maximal run is matched whole or
    not at all, so this finds what ``len(t) >= min_chars`` keeps)."""
    if ascii_only:
        return re.compile(r"(?=\w{" + str(min_chars) + r"})_*[A-Za-z0-9]\w*", re.ASCII)
    import regex

    return regex.compile(  # type: ignore[return-value]
        rf"(?=[{_WORD_CHARS}]{{{min_chars}}})[\p{{M}}\p{{Pc}}]*[\p{{L}}\p{{N}}][{_WORD_CHARS}]*")


@lru_cache(maxsize=8)
def _ascii_term(min_chars: int) -> re.Pattern[str]:
    # A maximal run's start class is in its continuation class, so ``{n-1,}`` finds the
    # same words ``len(w) >= n`` keeps, without making the short ones.
    return re.compile(r"[A-Za-z][A-Za-z0-9\-]{" + str(max(0, min_chars - 1)) + ",}")


def content_terms(text: str, stopwords: frozenset[str] = frozenset(), min_chars: int = 3
                  ) -> list[str]:
    """The TF-IDF form without stopwords and alphabetic words under ``min_chars``: the
    words that say what a chunk is about (probes, topics, extractive questions)."""
    if text.isascii():
        found = _ascii_term(min_chars).findall(text.lower())
        return list(filterfalse(stopwords.__contains__, found)) if stopwords else found
    return [t for t in term_tokens(text) if t not in stopwords and long_enough(t, min_chars)]


def has_words(text: str) -> bool:
    """A letter or a digit in any script: something a query could match."""
    if text.isascii():
        return any(c.isalnum() for c in text)
    # After folding, as the words are found: a Kangxi radical (a symbol) folds to a Han
    # character, a word; combining marks with no letter are none.
    return _rx().letter_or_digit.search(fold(text)) is not None


# --- What a corpus is written in -------------------------------------------------------

# Unicode character names begin with their script for most letters; the few that do not
# are named here. Only letters are counted: digits and punctuation belong to every script.
_NAME_SCRIPT = {
    "CJK": "Han", "HIRAGANA": "Hiragana", "KATAKANA": "Katakana", "HANGUL": "Hangul",
    "LATIN": "Latin", "CYRILLIC": "Cyrillic", "GREEK": "Greek", "ARABIC": "Arabic",
    "HEBREW": "Hebrew", "DEVANAGARI": "Devanagari", "BENGALI": "Bengali", "THAI": "Thai",
    "LAO": "Lao", "KHMER": "Khmer", "MYANMAR": "Myanmar", "TAMIL": "Tamil", "TELUGU": "Telugu",
    "GUJARATI": "Gujarati", "GURMUKHI": "Gurmukhi", "KANNADA": "Kannada",
    "MALAYALAM": "Malayalam", "GEORGIAN": "Georgian", "ARMENIAN": "Armenian",
    "ETHIOPIC": "Ethiopic", "SINHALA": "Sinhala", "TIBETAN": "Tibetan",
    "FULLWIDTH": "Latin", "HALFWIDTH": "Katakana",
}
# Characters read per corpus to name its scripts: enough for a share to the percent.
SCRIPT_SAMPLE_CHARS = 200_000
# A script named in the header holds at least this share of the corpus's letters.
MAIN_SCRIPT_SHARE = 0.05


@lru_cache(maxsize=65536)
def script_of(ch: str) -> str:
    """The script of a letter, from its Unicode name ("Other" when the name says none)."""
    if ch.isascii():
        return "Latin"
    try:
        first = unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return "Other"
    return _NAME_SCRIPT.get(first.split("-", 1)[0], first.title() if first.isalpha() else "Other")


def _sample(texts: Sequence[str], limit: int) -> Iterable[str]:
    """Evenly spaced texts up to ``limit`` characters: a corpus sorted by language still
    shows each of its languages."""
    n = len(texts)
    if n == 0:
        return
    total = 0
    step = max(1, n // max(1, min(n, 2000)))
    for i in range(0, n, step):
        t = texts[i][:4000]
        yield t
        total += len(t)
        if total >= limit:
            return


def script_shares(texts: Sequence[str], limit: int = SCRIPT_SAMPLE_CHARS) -> dict[str, float]:
    """Each script's share of the letters in a sample of ``texts``, largest first."""
    counts: Counter[str] = Counter()
    for t in _sample(texts, limit):
        if t.isascii():
            counts["Latin"] += sum(c.isalpha() for c in t)
            continue
        counts.update(script_of(c) for c in t if c.isalpha())
    total = sum(counts.values())
    if not total:
        return {}
    return {s: c / total for s, c in counts.most_common()}


def main_scripts(shares: dict[str, float]) -> list[str]:
    """Scripts named in a run's header: those holding at least 5% of the letters.
    Japanese counts Han, Hiragana and Katakana apart, as the text does."""
    return [s for s, share in shares.items() if share >= MAIN_SCRIPT_SHARE]


def describe_scripts(shares: dict[str, float]) -> str:
    """``Han 91%, Latin 9%``: the main scripts and their shares, for a header."""
    shown = [f"{s} {round(100 * shares[s])}%" for s in main_scripts(shares)]
    return ", ".join(shown) if shown else "no letters"


# English's commonest function words: a Latin-script text in which they are frequent is
# English (they make up about 40% of English running text, a few percent of other
# Latin-script languages': "de", "la" and "die" are not among them).
ENGLISH_FUNCTION_WORDS = frozenset((
    "the", "of", "and", "to", "in", "is", "was", "for", "that", "with", "as", "by", "on",
    "are", "from", "it", "at", "which", "be", "this", "an", "or", "were", "has", "have",
    "had", "not", "but", "its", "their", "they", "he", "she", "his", "her", "been", "also"))
# A text is English when at least this share of its words are the words above.
ENGLISH_WORD_SHARE = 0.12


def english_share(texts: Sequence[str], limit: int = SCRIPT_SAMPLE_CHARS) -> float:
    """The share of a sample of ``texts`` (by characters) that reads as English."""
    english = total = 0
    for t in _sample(texts, limit):
        words = tokens(t)
        if not words:
            continue
        total += len(t)
        if sum(w in ENGLISH_FUNCTION_WORDS for w in words) >= ENGLISH_WORD_SHARE * len(words):
            english += len(t)
    return english / total if total else 1.0


# --- Which language, and its stemmer ---------------------------------------------------

# Snowball stemmers (PyStemmer) by ISO 639-1 code: the languages BM25 can stem.
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "fa": "persian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
# Texts read to name a corpus's language: a vote of this many evenly spaced chunks.
LANGUAGE_SAMPLE = 300
# Below this many letters in the sample, or this many letters in a chunk, a language is
# a guess (a few words are "French" as easily as "English"): no vote, no language.
LANGUAGE_MIN_LETTERS = 150
LANGUAGE_MIN_CHUNK_LETTERS = 40


def corpus_language(texts: Sequence[str]) -> tuple[str | None, float]:
    """The corpus's main language (ISO 639-1) and the share of sampled chunks in it.

    English text in ASCII is known without a model (its function words). Otherwise
    py3langid (a bundled model, no network) votes over a sample of chunks; without it
    installed the language is unknown (None), and nothing that depends on it happens.
    """
    n = len(texts)
    if n == 0:
        return None, 0.0
    step = max(1, n // LANGUAGE_SAMPLE)
    sample = [texts[i][:2000] for i in range(0, n, step)][:LANGUAGE_SAMPLE]
    if all(t.isascii() for t in sample):
        share = english_share(sample)
        if share >= 0.5:
            return "en", share
    try:
        import py3langid
    except ImportError:
        return None, 0.0
    letters = [sum(c.isalpha() for c in t) for t in sample]
    if sum(letters) < LANGUAGE_MIN_LETTERS:
        return None, 0.0
    votes = Counter(py3langid.classify(t)[0] for t, n in zip(sample, letters)
                    if n >= LANGUAGE_MIN_CHUNK_LETTERS)
    if not votes:
        return None, 0.0
    lang, count = votes.most_common(1)[0]
    return lang, count / sum(votes.values())


# Names of the languages a prompt may ask for (ISO 639-1 code -> English name); a code not
# here is named by its script instead.
LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
    "fa": "Persian", "fi": "Finnish", "fr": "French", "he": "Hebrew", "hi": "Hindi",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean",
    "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sv": "Swedish", "ta": "Tamil", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}


def language_name(texts: Sequence[str]) -> str | None:
    """The language to ask a question in, in words ("Chinese"), or None for English (the
    prompts are written in English, and ask for nothing more there)."""
    lang, share = corpus_language(texts)
    if lang == "en":
        return None
    if lang in LANGUAGE_NAMES and share >= 0.5:
        return LANGUAGE_NAMES[lang]
    shares = script_shares(texts)
    if not shares or next(iter(shares)) == "Latin" and lang is None:
        return None
    main = next(iter(shares))
    if main in ("Hiragana", "Katakana") or main == "Han" and (
            shares.get("Hiragana", 0) + shares.get("Katakana", 0)) >= 0.05:
        return "Japanese"
    return _SCRIPT_LANGUAGE.get(main, f"the passage's own language ({main} script)")


# Scripts written in one main language: named by it when no language model is installed.
_SCRIPT_LANGUAGE = {"Han": "Chinese", "Hangul": "Korean", "Thai": "Thai", "Greek": "Greek",
                    "Hebrew": "Hebrew", "Lao": "Lao", "Khmer": "Khmer", "Myanmar": "Burmese",
                    "Georgian": "Georgian", "Armenian": "Armenian"}


def stopwords_for(lang: str | None) -> frozenset[str]:
    """The stopwords of a language (ISO 639-1), folded, from stopwordsiso where it is
    installed (the ``topics`` extra): what topic labels and TF-IDF leave out besides
    English's. Empty where no list exists or the package is absent."""
    if not lang:
        return frozenset()
    try:
        import stopwordsiso
    except ImportError:
        return frozenset()
    if not stopwordsiso.has_lang(lang):
        return frozenset()
    # A stopword the rule cuts into several tokens (a Chinese word of three characters)
    # is left out: its bigrams are parts of other words too.
    return frozenset(toks[0] for w in stopwordsiso.stopwords(lang) if len(toks := tokens(w)) == 1)
