"""JSON as ragcov writes it: a document's plain sections written by orjson are byte for
byte what the standard library writes, on any mix of strings (control characters,
line separators, emoji, quotes), integers, lists and dicts; values orjson refuses fall
back to the standard library, and the strict NaN rule still holds for the rest."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.files import json_text

text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["\u2028", "\x00\x1f\x7f", '"\\', "é漢字🙂", "ragcov-"])
plain = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | text,
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(text, inner, max_size=4), max_leaves=25)


def _standard(doc: object) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(text, plain, max_size=4), plain, st.floats(allow_nan=False,
                                                                  allow_infinity=False))
def test_plain_sections_are_the_standard_librarys_bytes(rest, chunks, score) -> None:
    doc = {**rest, "chunks": chunks, "score": score}
    assert json_text(doc, plain=("chunks",)) == _standard(doc)
    assert json_text(doc, plain=("chunks", "absent")) == _standard(doc)


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    doc = {"chunks": {"c1": {"hit_count": 2**70}, "c2": "\ud800"}, "n": 1}
    assert json_text(doc, plain=("chunks",)) == _standard(doc)


def test_a_nan_outside_the_plain_sections_is_still_refused() -> None:
    with pytest.raises(ValueError):
        json_text({"chunks": {"c1": 1}, "gini": math.nan}, plain=("chunks",))
