"""Streamed span reading (ragcov.traces.spanfile) and the fast decoding paths: the same
answers as the general code, spans read one line at a time, copies told apart by
fingerprint."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from trace_samples import otlp_export, ranked_ids, retriever_span, write

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError
from ragcov.traces import SpanFile, import_traces, read_spans
from ragcov.traces.otlp import NAN, otlp_key_values, otlp_value
from ragcov.traces.retrievals import _document_name

# ------------------------------------------------------------ fast paths = general path
any_value = st.recursive(
    st.one_of(
        st.builds(lambda s: {"stringValue": s}, st.text(max_size=8)),
        st.builds(lambda f: {"doubleValue": f}, st.floats(allow_nan=True)),
        st.builds(lambda i: {"intValue": str(i)}, st.integers(-2**63, 2**63 - 1)),
        st.builds(lambda b: {"boolValue": b}, st.booleans()),
        # Two members: the general path's order decides which is read.
        st.builds(lambda s, f: {"stringValue": s, "doubleValue": f}, st.text(max_size=4),
                  st.floats(allow_nan=False)),
        st.builds(lambda b, f: {"boolValue": b, "doubleValue": f}, st.booleans(),
                  st.floats(allow_nan=False)),
    ),
    lambda inner: st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3)),
    max_leaves=6)


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (wherever it sits in a list)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c.d"]), any_value), max_size=6))
@example([("a", {"doubleValue": float("nan")}), ("b", {"doubleValue": "NaN"})])
@example([("a", {"stringValue": "x", "intValue": "1"}), ("a", {"doubleValue": 2.5})])
def test_key_value_fast_path_reads_what_the_general_decoder_reads(pairs):
    """Strings and doubles take a shortcut; every value still decodes as otlp_value
    decodes it, a repeated key is refused on either path, and every NaN is the one NAN."""
    keys = [k for k, _v in pairs]
    if len(set(keys)) < len(keys):
        with pytest.raises(FieldError, match="is given more than once"):
            otlp_key_values([{"key": k, "value": v} for k, v in pairs], "attribute")
        return
    decoded = otlp_key_values([{"key": k, "value": v} for k, v in pairs], "attribute")
    expected: dict = {}
    for k, v in pairs:
        expected[k] = otlp_value(v)
    assert decoded.keys() == expected.keys()
    assert all(_same(decoded[k], expected[k]) for k in expected)
    assert all(v is NAN for v in decoded.values() if isinstance(v, float) and math.isnan(v))


_NAME = re.compile(r"retrieval\.documents\.(\d+)(?:\.(.+))?")


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.builds(lambda rest: "retrieval.documents." + rest,
              st.text(alphabet="0123456789.abc\n٣", max_size=8)),
    st.text(alphabet="retrival.dcumns0123", max_size=24)))
@example("retrieval.documents.0.document\nid")
@example("retrieval.documents.٣.document.id")
@example("retrieval.documents.0.")
@example("retrieval.documents.x")
def test_document_names_are_parsed_as_the_regex_reads_them(key):
    """``prefix.N`` and ``prefix.N.<sub>`` as the regex reads them; a name under the
    prefix it cannot read is refused, one outside the prefix ignored."""
    m = _NAME.fullmatch(key)
    if not key.startswith("retrieval.documents."):
        assert _document_name(key, "retrieval.documents", "f", 1) is None
    elif m is None:
        with pytest.raises(InputFormatError, match="is an object"):
            _document_name(key, "retrieval.documents", "f", 1)
    else:
        assert _document_name(key, "retrieval.documents", "f", 1) == (int(m.group(1)), m.group(2))


# ------------------------------------------------------------ streaming and duplicates
def test_spans_are_read_one_line_at_a_time(tmp_path):
    """The first line's spans arrive before a later line is read: a malformed third
    line is only met once the first two lines' spans have been handed on."""
    f = write(tmp_path / "spans.jsonl",
              json.dumps(otlp_export([retriever_span("A", "a1")])) + "\n"
              + json.dumps(otlp_export([retriever_span("B", "b1")])) + "\n"
              + "{not json\n")
    seen = []
    with pytest.raises(InputFormatError) as info:
        for span in SpanFile(f):
            seen.append(span.trace_id)
    assert seen == ["A", "B"]
    assert info.value.line == 3


def test_a_span_with_nan_exported_twice_is_one_span(tmp_path, city_corpus):
    """NaN is not equal to itself, yet two copies of a span recording one are copies:
    dropped and counted, not refused as different content."""
    span = retriever_span("A", "a1", extra=[{"key": "llm.temperature",
                                             "value": {"doubleValue": "NaN"}}])
    line = json.dumps(otlp_export([span])) + "\n"
    f = write(tmp_path / "spans.jsonl", line + line)
    result = import_traces(f, "openinference", city_corpus)
    assert result.duplicate_spans == 1
    assert ranked_ids(result.run) == {"A": ["paris"]}


def test_a_copy_with_a_list_value_is_compared_through_its_json(tmp_path, city_corpus):
    tags = {"key": "tag.tags", "value": {"arrayValue": {"values": [{"stringValue": "x"}]}}}
    other = {"key": "tag.tags", "value": {"arrayValue": {"values": [{"stringValue": "y"}]}}}
    same = json.dumps(otlp_export([retriever_span("A", "a1", extra=[tags])])) + "\n"
    f = write(tmp_path / "same.jsonl", same + same)
    assert import_traces(f, "openinference", city_corpus).duplicate_spans == 1
    g = write(tmp_path / "differ.jsonl", same + json.dumps(
        otlp_export([retriever_span("A", "a1", extra=[other])])) + "\n")
    with pytest.raises(InputFormatError, match="already appeared on line 1 with different"):
        import_traces(g, "openinference", city_corpus)


def test_reading_a_span_file_twice_counts_its_copies_once(tmp_path):
    line = json.dumps(otlp_export([retriever_span("A", "a1")])) + "\n"
    f = write(tmp_path / "spans.jsonl", line + line)
    spans = SpanFile(f)
    assert len(list(spans)) == 1 and spans.dropped == 1
    assert len(list(spans)) == 1 and spans.dropped == 1
    assert len(read_spans(f)) == 1


def test_lines_orjson_refuses_are_read_as_json_reads_them(tmp_path, city_corpus):
    """An intValue past 64 bits and a bare NaN token are JSON that Python's json reads
    and orjson refuses: such a line is still read, the same as before."""
    big = {"key": "llm.token_count.total", "value": {"intValue": 2**70}}
    text = json.dumps(otlp_export([retriever_span("A", "a1", extra=[big])]))
    nan = json.dumps(otlp_export([retriever_span(
        "B", "b1", docs=[("tokyo", 0.5)], extra=[{"key": "x", "value": {"doubleValue": 0.5}}])]))
    f = write(tmp_path / "spans.jsonl", text + "\n" + nan.replace("0.5}}]", "NaN}}]") + "\n")
    spans = read_spans(f)
    assert spans[0].attributes["llm.token_count.total"] == 2**70
    assert spans[1].attributes["x"] is NAN
    assert ranked_ids(import_traces(f, "openinference", city_corpus).run) == {
        "A": ["paris"], "B": ["tokyo"]}


def test_without_k_the_longest_list_counts_its_unknown_ids(tmp_path, city_corpus):
    """k is the longest list as recorded: an id skipped as unknown still counts, so
    the same file gives the same k with and without the id in the corpus."""
    f = write(tmp_path / "spans.jsonl", json.dumps(otlp_export([
        retriever_span("A", "a1", docs=[("paris", 0.9), ("atlantis", 0.8), ("tokyo", 0.7)]),
        retriever_span("B", "b1", start=2, docs=[("berlin", 0.9)]),
    ])) + "\n")
    result = import_traces(f, "openinference", city_corpus, ignore_unknown=True)
    assert result.run.k == 3
    assert ranked_ids(result.run) == {"A": ["paris", "tokyo"], "B": ["berlin"]}
    assert result.unknown == {"atlantis": 1}
