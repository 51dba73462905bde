"""JSONL traces (ragcov.traces.jsonl): ids, pairs, objects, RAGAS fields, refusals by line."""

from __future__ import annotations

import json

import pytest
from trace_samples import jsonl, ranked_ids, write

from ragcov.errors import InputFormatError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage
from ragcov.retrievers import AdapterWarning
from ragcov.traces import import_traces


def test_jsonl_ids_pairs_objects_and_parallel_scores(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [
        {"query_id": "q1", "query": "capital of France?", "retrieved": ["paris", "berlin"],
         "scores": [0.9, 0.4]},
        {"query_id": "q2", "query": "plants", "retrieved": [["photosynthesis", 0.8]]},
        {"query_id": "q3", "query": "energy", "retrieved": [{"chunk_id": "mitochondria",
                                                             "score": 0.7}]},
    ])
    result = import_traces(f, "jsonl", city_corpus)
    assert result.run.k == 2  # the longest list
    assert result.run.results["q1"] == [("paris", 0.9), ("berlin", 0.4)]
    assert result.run.results["q2"] == [("photosynthesis", 0.8)]
    assert result.run.results["q3"] == [("mitochondria", 0.7)]
    assert result.run.queries["q1"] == "capital of France?"
    m = CoverageMatrix.from_run(result.run, city_corpus)
    assert chunk_coverage(m) == pytest.approx(4 / 8)


def test_jsonl_ragas_ids_and_contexts_matched_by_content(tmp_path, city_corpus):
    tokyo = city_corpus.get("tokyo").text
    f = jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "Where is Madrid?", "retrieved_context_ids": ["madrid"]},
        {"user_input": "Japan", "retrieved_contexts": ["  " + tokyo + "\n"]},
    ])
    with pytest.warns(AdapterWarning, match="content hash"):
        result = import_traces(f, "jsonl", city_corpus)
    assert ranked_ids(result.run) == {"line-1": ["madrid"], "line-2": ["tokyo"]}
    assert result.run.queries["line-1"] == "Where is Madrid?"
    assert result.fallbacks == {"content hash": 1}


@pytest.mark.parametrize("line, message", [
    ('{"query_id": "q", "retrieved": "paris"}', "'retrieved' is not a list"),
    ('{"query_id": "q"}', "no retrieved ids"),
    ('{"query_id": "q", "retrieved": ["paris"], "scores": [1, 2]}', "'scores'"),
    ('{"query_id": "q", "retrieved": [["paris", "high"]]}', "not a number"),
    ('{"query_id": "q", "retrieved": [{"score": 1}]}', "has no id"),
    ('not json', "invalid JSON"),
    ('{"query_id": "q", "query": 3, "retrieved": []}', "not a string"),
    # two keys for the retrieval that disagree: the first would have won unseen
    ('{"query_id": "q", "retrieved": [], "retrieved_context_ids": ["paris"]}',
     "'retrieved' and 'retrieved_context_ids' give different retrieved lists"),
])
def test_jsonl_malformed_line_is_located(tmp_path, city_corpus, line, message):
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n\n' + line + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 3
    assert str(f) in str(info.value)


def test_jsonl_repeated_query_id_names_first_line(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q", "retrieved": ["paris"]},
                                     {"query_id": "q", "retrieved": ["tokyo"]}])
    with pytest.raises(InputFormatError, match="already appeared on line 1"):
        import_traces(f, "jsonl", city_corpus)


@pytest.mark.parametrize("record, message", [
    ({"query_id": ["q"], "retrieved": ["paris"]}, r"query id: \['q'\] is not an id"),
    ({"query_id": True, "retrieved": ["paris"]}, "query id: True is not an id"),
    ({"query_id": "  ", "retrieved": ["paris"]}, "query id: the id is blank"),
    ({"query_id": "q", "retrieved": ["paris", ""]}, r"retrieved\[1\]: the id is blank"),
    ({"query_id": "q", "retrieved": [True]}, r"retrieved\[0\]: True is not an id"),
    ({"query_id": "q", "retrieved": [1.5]}, r"retrieved\[0\]: 1.5 is not an id"),
    ({"query_id": "q", "retrieved": [[{"id": "paris"}, 0.5]]}, "is not an id"),
    ({"query_id": "q", "retrieved": [{"id": ["paris"], "score": 1}]}, r"\['paris'\] is not an id"),
    ({"query_id": "q", "retrieved": [{"chunk_id": {"v": "paris"}}]}, "is not an id"),
    # A blank id is refused even where content could have matched a chunk.
    ({"query_id": "q", "retrieved": [{"id": "", "text": "Tokyo is the capital of Japan and "
                                      "a huge metropolis."}]}, "the id is blank"),
])
def test_jsonl_ids_that_are_not_ids_are_refused(tmp_path, city_corpus, record, message):
    """Lists, dicts, booleans, floats and blank strings are not ids: never stored as their
    Python text ("['q']", "True") nor dropped in favour of another match."""
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n'
              + json.dumps(record) + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: ")


@pytest.mark.parametrize("line", [
    '{"query_id": "q", "retrieved": [["paris", NaN]]}',
    '{"query_id": "q", "retrieved": [{"id": "paris", "score": Infinity}]}',
    '{"query_id": "q", "retrieved": ["paris"], "scores": [-Infinity]}',
    '{"query_id": "q", "retrieved": [["paris", "nan"]]}',
    '{"query_id": "q", "retrieved": [["paris", 1e999]]}',
])
def test_jsonl_non_finite_scores_are_refused_with_line(tmp_path, city_corpus, line):
    f = write(tmp_path / "t.jsonl", '{"query_id": "ok", "retrieved": ["paris"]}\n' + line + "\n")
    with pytest.raises(InputFormatError, match="not a finite number") as info:
        import_traces(f, "jsonl", city_corpus)
    assert info.value.line == 2


def test_jsonl_numeric_string_scores_still_read(tmp_path, city_corpus):
    """JSONL logs are loosely typed (text_ok): "0.9" is the number 0.9, as before."""
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q", "retrieved": [["paris", "0.9"]],
                                      "scores": ["0.8"]}])
    assert import_traces(f, "jsonl", city_corpus).run.results["q"] == [("paris", 0.8)]


def test_jsonl_query_keys_are_the_shared_vocabulary(tmp_path, city_corpus):
    """The query id and text are read with ragcov.fields' keys, the first present winning,
    so a trace line means what the same record means in a suite or a label file."""
    from ragcov.fields import QUERY_ID_KEYS, QUERY_TEXT_KEYS

    records = [{key: f"q-{key}", "retrieved": ["paris"]} for key in QUERY_ID_KEYS]
    records += [{**{key: f"text-{key}" for key in QUERY_TEXT_KEYS}, "retrieved": ["paris"]}]
    records += [{**{key: f"all-{key}" for key in QUERY_ID_KEYS}, "retrieved": ["paris"]}]
    run = import_traces(jsonl(tmp_path / "t.jsonl", records), "jsonl", city_corpus).run
    assert list(run.queries) == ([f"q-{key}" for key in QUERY_ID_KEYS]
                                 + [f"line-{len(QUERY_ID_KEYS) + 1}", f"all-{QUERY_ID_KEYS[0]}"])
    assert run.queries[f"line-{len(QUERY_ID_KEYS) + 1}"] == f"text-{QUERY_TEXT_KEYS[0]}"


def test_jsonl_two_keys_with_the_same_list_are_one(tmp_path, city_corpus):
    f = write(tmp_path / "t.jsonl", '{"query_id": "q", "retrieved": ["paris"], '
                                    '"retrieved_ids": ["paris"]}\n')
    assert import_traces(f, "jsonl", city_corpus).run.results == {"q": [("paris", None)]}
