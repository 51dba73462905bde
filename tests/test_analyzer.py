"""The house text rule (ragcov.analyzer): hand-worked examples per script, and the
properties every consumer relies on (no letter dropped, idempotent, the ASCII fast
path equal to the Unicode rule)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov import analyzer
from ragcov.analyzer import content_terms, fold, has_words, script_shares, term_tokens, terms, tokens


@pytest.mark.parametrize(("text", "expected"), [
    # Chinese: overlapping character bigrams, a lone character a unigram.
    ("中国人民", ["中国", "国人", "人民"]),
    ("2019年", ["2019", "年"]),
    ("iPhone手机", ["iphone", "手机"]),
    # Japanese: kana and kanji together, the prolonged sound mark inside the run.
    ("ポーランド", ["ポー", "ーラ", "ラン", "ンド"]),
    # Thai: bigrams of grapheme clusters (a consonant keeps its vowel sign and tone mark).
    ("สวัสดี", ["สวั", "วัส", "สดี"]),
    # Hindi: vowel signs are combining marks, and stay inside the word.
    ("भारत की राजधानी", ["भारत", "की", "राजधानी"]),
    # Korean: syllable bigrams (Lucene's CJK analyzer), since particles join the word.
    ("서울에서 만나요", ["서울", "울에", "에서", "만나", "나요"]),
    # Turkish dotted capital I folds to i (casefold alone gives i and a combining dot).
    ("İSTANBUL İngiltere", ["istanbul", "ingiltere"]),
    # A Kangxi radical (a symbol, from PDF text) folds to the Han character it is.
    ("\u2f03", ["丿"]),
    # Combining marks with no letter are no word; after a letter they are part of it.
    ("\u0301\u0308 a\u0301", ["á"]),
    # Arabic, Russian, Greek: words of their script, folded.
    ("القاهرة عاصمة", ["القاهرة", "عاصمة"]),
    ("Москва — Столица", ["москва", "столица"]),
    ("ΑΘΗΝΑ", ["αθηνα"]),
    # Case and width folding: casefold and NFKC.
    ("Straße", ["strasse"]),
    ("ＡＢＣ１２", ["abc12"]),
    ("café", ["café"]),
    ("cafe\u0301", ["café"]),
    # A zero-width non-joiner inside a word does not split or change it.
    ("می\u200cخواهم", ["میخواهم"]),
    # English as bm25s's pattern reads it.
    ("The year-end Q4 results_2019.", ["the", "year", "end", "q4", "results_2019"]),
])
def test_tokens_by_script(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_terms_drop_short_alphabetic_words_but_not_ideographs_or_syllables() -> None:
    # "a" and "x" are too short; 水 (water) and 서울 (Seoul) are whole words.
    assert terms("a x 水 서울 ab", min_chars=2) == ["水", "서울", "ab"]
    assert terms("the cat sat", frozenset({"the"}), 2) == ["cat", "sat"]


def test_content_terms_keep_hyphens_start_with_a_letter_and_read_every_script() -> None:
    assert content_terms("The year-end Q4 2019 results", frozenset({"the"})) == \
        ["year-end", "results"]
    # The ASCII-only rule made "caf" of café and nothing of Greek or Chinese.
    assert content_terms("café Αθήνα 北京大学") == ["café", "αθήνα", "北京", "京大", "大学"]


def test_has_words_means_a_letter_or_a_digit_in_any_script() -> None:
    assert has_words("한국어") and has_words("中") and has_words("١٢٣") and has_words("x")
    assert not has_words("— ... !!! \u200d") and not has_words("")


def test_script_shares_count_letters_of_each_script() -> None:
    shares = script_shares(["中国人民 abcd", "สวัสดี"])
    # 4 Han, 4 Latin, 6 Thai letters (the Thai vowel signs are marks, not letters).
    counted = {"Han": 4, "Latin": 4, "Thai": sum(unicodedata.category(c) == "Lo" for c in "สวัสดี")}
    total = sum(counted.values())
    assert shares == pytest.approx({s: n / total for s, n in counted.items()})
    assert analyzer.describe_scripts(shares).startswith(next(iter(shares)))


# --- properties ------------------------------------------------------------------------

# Letters, marks, digits and separators of many scripts, with joiners and emoji.
_ALPHABET = st.sampled_from(list(
    "abcXYZ09_ -.,éßİıΣσςАяΩω中国人民年ポーランドーですสวัสดีครับभारतकीहै서울에서القاهرة"
    "\u0301\u200c\u200d\u3000\u00a0\n\t😀ﬁ①Ⅻ")) | st.characters(codec="utf-8")


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_no_letter_or_digit_is_ever_dropped_nor_a_mark_that_follows_one(text: str) -> None:
    kept = set("".join(tokens(text)))
    folded = fold(text)
    for i, ch in enumerate(folded):
        category = unicodedata.category(ch)[0]
        after_letter = category == "M" and i and unicodedata.category(folded[i - 1])[0] in "LN"
        if category in "LN" or after_letter:
            assert ch in kept, (text, ch)
    assert has_words(text) == bool(tokens(text))


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_the_rule_is_idempotent(text: str) -> None:
    once = tokens(text)
    assert tokens(" ".join(once)) == once
    assert fold(fold(text)) == fold(text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(categories=["L"]), min_size=1, max_size=12))
def test_a_text_of_letters_in_any_script_is_never_wordless(text: str) -> None:
    assert has_words(text)
    assert tokens(text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(max_codepoint=127), max_size=60))
def test_the_ascii_fast_path_gives_what_the_unicode_rule_gives(text: str) -> None:
    assert tokens(text) == analyzer._words(fold(text), term_form=False)
    assert term_tokens(text) == analyzer._words(fold(text), term_form=True)
    # And what the patterns the house used before give: bm25s's ``\b\w\w+\b`` and the
    # TF-IDF words of three characters or more.
    # (a run of underscores alone is no word: it has no letter or digit)
    assert terms(text, min_chars=2) == [w for w in re.findall(r"(?u)\b\w\w+\b", text.lower())
                                        if w.strip("_")]
    assert content_terms(text) == [w for w in re.findall(r"[A-Za-z][A-Za-z0-9\-]+", text.lower())
                                   if len(w) > 2]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_word_spans_cover_the_tokens(text: str) -> None:
    # On folded text: folding itself can make a word character (NFKC opens "¯" into a
    # space and a combining macron), and a span is a place in the text as given.
    text = fold(text)
    spans = analyzer.word_spans(text)
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert [t for a, b in spans for t in tokens(text[a:b])] == tokens(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join), st.integers(1, 4),
       st.sampled_from([frozenset(), frozenset({"the", "ab", "中国"})]))
def test_terms_is_tokens_less_stopwords_and_short_words(text: str, min_chars: int, stop) -> None:
    # terms() leaves short words out in its pattern where it can: the same words.
    expected = [t for t in tokens(text) if t not in stop and analyzer.long_enough(t, min_chars)]
    assert terms(text, stop, min_chars) == expected
