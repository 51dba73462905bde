"""ranx JSON (ragcov.traces.ranx): order by score, refusals at the line of their key."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_samples import ranked_ids, write

from ragcov.errors import InputFormatError
from ragcov.traces import import_traces, read_traces


def test_ranx_json_orders_by_score(tmp_path, city_corpus):
    f = write(tmp_path / "run.json", json.dumps(
        {"q1": {"berlin": 0.2, "paris": 0.8, "madrid": 0.5}, "q2": {"tokyo": 1}}))
    result = import_traces(f, "ranx", city_corpus, k=2)
    assert ranked_ids(result.run) == {"q1": ["paris", "madrid"], "q2": ["tokyo"]}
    assert result.run.results["q1"][0] == ("paris", 0.8)


@pytest.mark.parametrize("doc, message", [
    ([1, 2], "expected a JSON object"),
    ({"q1": ["paris"]}, "query 'q1': expected an object"),
    ({"q1": {"paris": "x"}}, "not a number"),
    ({"q1": {"paris": None}}, "no score"),
])
def test_ranx_malformed(tmp_path, city_corpus, doc, message):
    f = write(tmp_path / "run.json", json.dumps(doc))
    with pytest.raises(InputFormatError, match=message):
        import_traces(f, "ranx", city_corpus)


def test_ranx_errors_name_the_line_in_a_pretty_printed_file(tmp_path, city_corpus):
    f = write(tmp_path / "run.json", '{\n  "q1": {"paris": 0.9},\n  "q2": {\n'
                                     '    "tokyo": 0.5,\n    "berlin": NaN\n  }\n}\n')
    with pytest.raises(InputFormatError, match="query 'q2', doc 'berlin': .*not a finite") \
            as info:
        import_traces(f, "ranx", city_corpus)
    assert info.value.line == 5
    assert str(info.value).startswith(f"{f}:5: ")


@pytest.mark.parametrize("text, line, message", [
    ('{"q1": {"paris": Infinity}}', 1, "not a finite number"),
    ('{\n"q1": {"paris": -Infinity}}', 2, "not a finite number"),
    ('{\n"q1": {"paris": "0.5"}}', 2, "is a string, not a number"),
    ('{\n"q1": {"paris": true}}', 2, "not a number"),
    ('{\n"": {"paris": 1}}', 2, "query id: the id is blank"),
    ('{\n"q1": {\n"paris": 1,\n" ": 0.5}}', 4, "doc id: the id is blank"),
    # json.loads would keep only the last of a repeated key, silently.
    ('{"q1": {"paris": 1},\n"q1": {"tokyo": 1}}', 2, "query 'q1' already appeared on line 1"),
    ('{"q1": {"paris": 1,\n"paris": 2}}', 2, "doc 'paris' already appeared on line 1"),
    ('{"q1": {"paris": 1}}\n{"q2": {}}', 2, "invalid JSON"),
    ('{"q1": {"paris": 1,}}', 1, "invalid JSON"),
    ('\n[1, 2]', 2, "expected a JSON object"),
])
def test_ranx_refused_values_are_located(tmp_path, city_corpus, text, line, message):
    f = write(tmp_path / "run.json", text)
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "ranx", city_corpus)
    assert info.value.line == line


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(
    st.text(min_size=1, max_size=6).filter(str.strip),
    st.dictionaries(st.sampled_from(["paris", "berlin", "madrid", "tokyo", "dividends"]),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=5),
    min_size=1, max_size=5),
    st.sampled_from([None, 0, 2]), st.booleans())
def test_ranx_located_reader_agrees_with_json(tmp_path_factory, run, indent, ascii_only):
    """The line-keeping reader reads every ranx file as json.loads does: same queries,
    same scores, ordered by score (ties in file order), whatever the layout or escapes."""
    path = tmp_path_factory.mktemp("ranx") / "run.json"
    write(path, json.dumps(run, indent=indent, ensure_ascii=ascii_only))
    traces = read_traces(path, "ranx")
    assert [t.query_id for t in traces] == list(run)
    for trace in traces:
        docs = run[trace.query_id]
        expected = sorted(docs.items(), key=lambda kv: -kv[1])  # stable: file order on ties
        assert [(i.id, i.score) for i in trace.items] == expected
