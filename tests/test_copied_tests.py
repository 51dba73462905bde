"""Tests whose question copies a run of 8 or more words of a chunk they retrieve are flagged
"copied", and every report shows coverage with and without them: a gate that rose by
adding copies of the corpus's sentences is seen to."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.copies import MIN_RUN, copied_tests, coverage_without, longest_run
from ragcov.matrix import CoverageMatrix


def test_longest_run_hand_worked() -> None:
    def w(text: str) -> list[str]:
        return text.split(" ") if text else []

    assert longest_run(w("a b c d"), w("x b c d y")) == 3
    assert longest_run(w("a b"), w("c d")) == 0
    assert longest_run(w(""), w("a")) == 0
    assert longest_run(w("a b a b c"), w("b a b c a")) == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=9), st.lists(st.sampled_from("abc"), max_size=12))
def test_longest_run_is_the_longest_shared_slice(a: list[str], b: list[str]) -> None:
    brute = max((n for n in range(len(a) + 1) for i in range(len(a) - n + 1)
                 if any(b[j:j + n] == a[i:i + n] for j in range(len(b) - n + 1))), default=0)
    assert longest_run(a, b) == brute


CHUNKS = {
    "c0": "Net revenue rose 12% in 2019, driven by the new payments network in Europe and Asia.",
    "c1": "The board declared a quarterly dividend of $0.25 per share payable in March.",
    "c2": "Operating expenses fell as the company closed two plants in Ohio.",
}


def _matrix(questions: list[str], retrieved: list[list[int]]) -> CoverageMatrix:
    m = CoverageMatrix.from_sets(retrieved, 3)
    m.chunk_ids = list(CHUNKS)
    m.query_texts = questions
    return m


def test_eight_words_in_a_row_after_the_text_rule_are_a_copy_and_seven_are_not() -> None:
    m = _matrix([
        # 8 words of c0 in a row, with other case and punctuation: folded by the text rule
        "NET REVENUE ROSE 12%, in 2019; driven by",
        # 7 in a row ("the board declared a quarterly dividend of"), then a word of its own
        "did the board declared a quarterly dividend of note",
        # 8 words of c2, but the test did not retrieve c2: nothing to flag
        "operating expenses fell as the company closed two plants",
    ], [[0, 1], [1], [0]])
    got = copied_tests(m, CHUNKS)
    assert [(c.query_id, c.chunk_id, c.run) for c in got] == [("q0", "c0", 8)]
    # Hand-worked: without q0, q1 covers c1 and q2 covers c0: 2 of 3 chunks, as with it.
    assert coverage_without(m, got) == (2, 2 / 3)
    assert MIN_RUN == 8


def test_report_shows_coverage_with_and_without_the_copied_tests(capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": cid, "doc_id": cid.upper(), "text": text}) + "\n"
                              for cid, text in CHUNKS.items()))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "asked", "question": "what dividend did the board declare"},
        {"id": "lifted", "question": "Operating expenses fell as the company closed two plants in Ohio."},
    ]))
    data = tmp_path / ".ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                       "--retriever", "bm25", "-k", "1", "--data-file", str(data), "-q")
    assert code == 0, err
    code, out, _ = cli(capsys, "report", "--data-file", str(data))
    assert code == 0
    # 2 of 3 chunks covered (c1 by the question, c2 by the copy); without the copy, 1 of 3.
    assert ("Copied: 1 of 2 tests copy 8 or more words in a row from a chunk they retrieve "
            "(first: lifted, 11 words of c2)") in out
    assert "chunk coverage 66.7% with them, 33.3% (1 of 3) without them" in out
    # A gate that passes only on the copy says so (and still passes: both numbers are shown).
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--fail-under", "50")
    assert code == 0 and ("Note: --fail-under 50 passes with the 1 copied tests; without them "
                          "chunk coverage is 33.3%") in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--fail-under", "30")
    assert code == 0 and "Note: --fail-under" not in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--format", "json")
    copied = json.loads(out)["copied"]
    assert copied["tests"] == 1 and copied["covered_without"] == 1
    assert copied["copies"] == [{"query_id": "lifted", "chunk_id": "c2", "words": 11}]
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(data), "-d", str(site))[0] == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="copied"' in index and "Without 1 copied tests" in index and "33.3% (1 / 3)" in index


def test_no_copy_no_line(capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": cid, "text": text}) + "\n"
                              for cid, text in CHUNKS.items()))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "asked", "question": "what dividend did the board declare"})
                       + "\n")
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries), "--retriever",
               "bm25", "-k", "1", "--data-file", str(data), "-q")[0] == 0
    code, out, _ = cli(capsys, "report", "--data-file", str(data))
    assert code == 0 and "Copied:" not in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--format", "json")
    assert "copied" not in json.loads(out)
