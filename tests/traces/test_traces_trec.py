"""TREC run files (ragcov.traces.trec): order by score then rank, refusals by line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_samples import ranked_ids, write

from ragcov.errors import InputFormatError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage
from ragcov.traces import import_traces


def test_trec_orders_by_score_then_rank(tmp_path, city_corpus):
    f = write(tmp_path / "run.trec", "\n".join([
        "q1 Q0 berlin 2 0.5 sys",
        "q1 Q0 paris 1 0.9 sys",
        "q2 Q0 tokyo 2 0.3 sys",
        "q2 Q0 madrid 1 0.3 sys",   # tie on score: rank decides
        "# a comment",
        "q2 Q0 dividends 3 0.1 sys",
    ]) + "\n")
    run = import_traces(f, "trec", city_corpus).run
    assert ranked_ids(run) == {"q1": ["paris", "berlin"], "q2": ["madrid", "tokyo", "dividends"]}
    assert run.k == 3
    assert run.queries == {"q1": "", "q2": ""}


def test_trec_query_texts_come_from_a_suite(tmp_path, city_corpus):
    f = write(tmp_path / "run.trec", "q1 Q0 paris 1 1.0 sys\n")
    run = import_traces(f, "trec", city_corpus, queries={"q1": "French capital"}).run
    assert run.queries == {"q1": "French capital"}


@pytest.mark.parametrize("bad, message", [
    ("q1 Q0 paris 1 0.9", "expected 6 columns"),
    ("q1 Q0 paris first 0.9 sys", "not a whole number"),
    ("q1 Q0 paris 1 high sys", "not a number"),
])
def test_trec_malformed_line_is_located(tmp_path, city_corpus, bad, message):
    f = write(tmp_path / "run.trec", "q0 Q0 tokyo 1 1.0 sys\n" + bad + "\n")
    with pytest.raises(InputFormatError, match=message) as info:
        import_traces(f, "trec", city_corpus)
    assert info.value.line == 2


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_trec_non_finite_score_is_refused_with_line(tmp_path, city_corpus, score):
    """NaN would make the ranking depend on line order (every comparison is false);
    an infinity would be written to JSON reports as a bare Infinity."""
    f = write(tmp_path / "run.trec", f"q1 Q0 paris 1 0.9 sys\nq1 Q0 tokyo 2 {score} sys\n"
                                     "q1 Q0 berlin 3 0.1 sys\n")
    with pytest.raises(InputFormatError, match="not a finite number") as info:
        import_traces(f, "trec", city_corpus)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{f}:2: query 'q1', doc 'tokyo': ")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["paris", "berlin", "madrid", "tokyo",
                                          "interest", "dividends"]), min_size=1, max_size=6,
                         unique=True), min_size=1, max_size=8),
       st.integers(min_value=1, max_value=6))
def test_trec_round_trip_keeps_every_ranked_list(tmp_path_factory, lists, k):
    """Whatever ranked lists are written as TREC (score = descending rank), import gives
    them back cut to k, and CC equals the union of those cut lists over the corpus."""
    from ragcov.corpus import Chunk, Corpus

    corpus = Corpus([Chunk(cid, f"text of {cid}", "doc") for cid in
                     ["paris", "berlin", "madrid", "tokyo", "interest", "dividends", "other"]])
    path = tmp_path_factory.mktemp("trec") / "run.trec"
    lines = [f"q{i} Q0 {cid} {r} {len(ids) - r + 1} sys"
             for i, ids in enumerate(lists) for r, cid in enumerate(ids, start=1)]
    write(path, "\n".join(lines) + "\n")
    run = import_traces(path, "trec", corpus, k=k).run
    assert ranked_ids(run) == {f"q{i}": ids[:k] for i, ids in enumerate(lists)}
    union = {cid for ids in lists for cid in ids[:k]}
    assert chunk_coverage(CoverageMatrix.from_run(run, corpus)) == pytest.approx(
        len(union) / len(corpus))
