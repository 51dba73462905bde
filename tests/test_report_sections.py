"""ragcov report's ranges, redundant tests and duplicate chunks, against hand counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import redundant_tests, subsumers
from ragcov.reporters.table import missing_ranges
from report_samples import write_sample


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_sample(tmp_path)


def _row(out: str, doc: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(doc + " "))


def test_show_missing_prints_consecutive_positions_as_ranges(sample, capsys):
    # guide: positions 2, 4, 6, 7 are not retrieved (0, 1, 3, 5 are); shown counted from 1,
    # as their Cobertura/lcov lines are.
    code, out, _ = cli(capsys, "report", "--show-missing")
    assert code == 0
    assert _row(out, "guide").endswith("   3, 5, 7-8")
    assert _row(out, "faq").endswith("   2")
    # With guide#4 (position 4, shown 5) excluded, the missing run 7-8 stays and 5 goes.
    code, out, _ = cli(capsys, "report", "-m", "--min-chunk-chars", "10")
    assert _row(out, "guide").endswith("   3, 7-8")
    code, out, _ = cli(capsys, "report", "-m", "--format", "markdown")
    assert "| guide | 8 | 4 | 4 | 50% | 3, 5, 7-8 |" in out


@pytest.mark.parametrize(("positions", "shown"), [
    ([], ""), ([3], "3"), ([12, 13, 14, 15, 16, 17, 18, 19, 20], "12-20"),
    ([5, 1, 2, 3, 9], "1-3, 5, 9"), ([0, 2, 4], "0, 2, 4"), ([7, 7, 8], "7-8"),
])
def test_missing_ranges(positions, shown):
    assert missing_ranges(positions) == shown


def test_ids_that_are_not_positions_are_listed_as_they_are(tmp_path: Path, capsys,
                                                            monkeypatch: pytest.MonkeyPatch):
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrieval import Run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in [
        {"id": "intro", "doc_id": "d", "text": "a"}, {"id": "d#1", "doc_id": "d", "text": "b"},
        {"id": "d#2", "doc_id": "d", "text": "c"}, {"id": "d#3", "doc_id": "d", "text": "e"}]))
    run = Run(k=1, retriever={"kind": "hand-made"})
    run.add("q", "q", [("d#2", 1.0)])
    CoverageData(tmp_path / ".ragcov").write(load_corpus(tmp_path / "c.jsonl"), run)
    code, out, _ = cli(capsys, "report", "-m")
    assert _row(out, "d").endswith("   1-2, 4")  # positions, whatever the ids
    code, out, _ = cli(capsys, "report", "-m", "--show-ids")
    assert _row(out, "d").endswith("   intro, d#1, d#3")


def test_redundant_tests_name_the_test_that_subsumes_them(sample, capsys):
    # Sets: q1 {g0,g1}, q2 {g0}, q3 {g5,t0}, q4 {g1,g0}, q5 {f0,g3}. Unique chunks: q3 (g5,
    # t0) and q5 (f0, g3); q1, q2, q4 have none. q2 is a subset of q1 and of q4 (both
    # Jaccard 1/2: the earlier, q1, is named). q4 = q1: the later is subsumed by the
    # earlier; q1 is named with its Jaccard-1 twin instead.
    code, out, _ = cli(capsys, "report", "--redundant")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("Redundant tests: 3 of 5 (no chunk of their own, or Jaccard >= 0.8 with "
                     "another)")
    # Dropped together: the cover keeps q3 and q5 (chunks of their own), then q1 (two new
    # chunks, ties to the earlier of q1 and q4); q2 and q4 can both go, q1 cannot then.
    assert [li.split(None, 2) for li in lines[at + 1:at + 4]] == [
        ["keep", "q1", "Jaccard 1.00 with q4"], ["drop", "q2", "retrieves a subset of q1"],
        ["drop", "q4", "retrieves a subset of q1"]]
    assert lines[at + 4].startswith("Droppable together: 2 of these (marked drop)")
    doc = json.loads(cli(capsys, "json", "-o", "-")[1])
    assert doc["redundant"] == {
        "q1": {"subsumed_by": None, "most_similar": "q4", "jaccard": 1.0, "unique_chunks": 0,
               "reasons": ["no-unique-contribution", "near-duplicate"], "droppable_together": False},
        "q2": {"subsumed_by": "q1", "most_similar": "q1", "jaccard": 0.5, "unique_chunks": 0,
               "reasons": ["no-unique-contribution"], "droppable_together": True},
        "q4": {"subsumed_by": "q1", "most_similar": "q1", "jaccard": 1.0, "unique_chunks": 0,
               "reasons": ["no-unique-contribution", "near-duplicate"], "droppable_together": True},
    }
    code, out, _ = cli(capsys, "report")
    assert "Redundant" not in out


def test_subsumers_prefer_the_smallest_superset_then_the_earlier_test():
    # q0 {0}, q1 {0,1,2}, q2 {0,1}, q3 {0,1}: q0 ⊂ q2 (J 1/2) beats q1 (J 1/3); q2 = q3,
    # so q3 is subsumed by q2 and q2 by q1; q1 by nothing; an empty set by nothing.
    m = CoverageMatrix.from_sets([[0], [0, 1, 2], [0, 1], [1, 0], []], 3)
    assert subsumers(m).tolist() == [2, -1, 1, 2, -1]
    listed = {t.query_id: t for t in redundant_tests(m)}
    assert listed["q4"].why == "retrieves nothing"


def test_duplicate_chunk_texts_are_reported(sample, capsys):
    code, out, _ = cli(capsys, "report")
    assert ("Duplicate chunk texts: 1 group (2 chunks in 1 document; first: guide#5, guide#6)"
            in out)
    doc = json.loads(cli(capsys, "json", "-o", "-")[1])
    assert doc["duplicates"] == [{"chunk_ids": ["guide#5", "guide#6"], "doc_ids": ["guide"],
                                  "covered": 1}]
    code, out, _ = cli(capsys, "report", "--omit", "guide")
    assert "Duplicate" not in out
