"""The distractor relation counts what it names: chunks displaced by a distractor entering
a test's top-k. Adding chunks also changes BM25's document frequencies and lengths, which
reorders the corpus's own chunks; that is reported beside it, as its own figure."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

import ragcov.api as api
from helpers import cli
from ragcov.analyzer import tokens
from ragcov.corpus import Chunk, Corpus, load_corpus
from ragcov.drift.relations import Copy, distractor_copy, judge_displaced
from ragcov.retrievers.bm25 import BM25Retriever
from ragcov.suite import load_suite

SAMPLE = Path(api.__file__).parents[1] / "data_sample"
ABCDE = Corpus([Chunk(id=x, text=x, doc_id="d") for x in "abcde"])


def test_a_distractor_in_the_top_k_displaces_the_chunks_below_it() -> None:
    judge = judge_displaced(ABCDE, 3, bound=0)
    # Searched at 2k: the corpus's own order is a, b, d, c; a distractor took slot 2.
    out = judge(Copy(ABCDE), [0, 1, 2], [("a", 3), ("drift-distractor:x", 2), ("b", 2), ("d", 1),
                                         ("c", 0.5)])
    # Without the distractor the top-3 would be a, b, d: c left to d (statistics), and the
    # distractor pushed d out, which the test never had. No chunk of the test was displaced.
    assert (out.value, out.violated, out.broke) == (0.0, False, [])
    assert out.extra["reordered"] == [2] and out.extra["by"] == ["drift-distractor:x"]
    out = judge(Copy(ABCDE), [0, 1, 2], [("a", 3), ("drift-distractor:x", 2), ("b", 2), ("c", 1)])
    assert (out.value, out.violated, out.broke, out.extra["reordered"]) == (1.0, True, [2], [])


def test_a_copy_displaces_one_slot_and_statistics_do_not_count_against_it() -> None:
    copy = Copy(ABCDE, twins={1: "b@drift-copy"})
    dup = judge_displaced(ABCDE, 3, bound=1)
    one = dup(copy, [0, 1, 2], [("a", 1), ("b", 1), ("b@drift-copy", 1), ("c", 0.5)])
    assert (one.value, one.violated, one.extra["reordered"]) == (1.0, False, [])
    # The copy took one slot (c's); a fell below d: reordered, not displaced by the copy.
    moved = dup(copy, [0, 1, 2], [("b", 1), ("b@drift-copy", 1), ("d", 0.5), ("c", 0.4), ("a", 0.3)])
    assert (moved.value, moved.violated, moved.extra["reordered"]) == (1.0, False, [0])


@pytest.fixture(scope="module")
def nonsense(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The bundled FinQA pages and questions, and 200 chunks of made-up words that share no
    word with any question (checked with the text rule)."""
    work = tmp_path_factory.mktemp("nonsense")
    pages, questions = work / "pages.jsonl", work / "questions.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:60]))
    questions.write_text("".join((SAMPLE / "finqa_questions.jsonl").read_text().splitlines(True)[:80]))
    asked = {w for q in load_suite(questions) for w in tokens(q.text)}
    rng = random.Random(7)
    rows = []
    for n in range(200):
        words = ["".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(rng.randint(5, 9)))
                 for _ in range(rng.randint(10, 40))]
        rows.append({"id": f"z{n}", "doc_id": f"z{n}", "text": " ".join(words)})
    assert not {w for r in rows for w in tokens(r["text"])} & asked
    distractors = work / "nonsense.jsonl"
    distractors.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pages, questions, distractors


def test_nonsense_distractors_displace_nothing_and_the_reordering_is_its_own_figure(
        nonsense, capsys, tmp_path: Path) -> None:
    pages, questions, distractors = nonsense
    data = tmp_path / ".ragcov"
    args = ["drift", "--corpus", str(pages), "--split", "--queries", str(questions),
            "--retriever", "bm25", "--k", "5", "--relation", "distractors", "--distractors",
            str(distractors), "--data-file", str(data)]
    code, out, err = cli(capsys, *args, "--format", "json")
    assert code == 0, err
    rel = json.loads(out)["relations"][0]
    assert rel["relation"] == "distractors" and rel["facts"]["displacing"] == []
    assert rel["violated"] == 0 and rel["rate"] == 0.0
    stats = rel["facts"]["reordered_by_statistics"]

    # Recounted by hand: BM25 on the corpus and on corpus + distractors; a test was
    # reordered when a chunk of its top-5 is not in the copy's top-5 (no distractor is).
    corpus = load_corpus(pages, split=True)
    suite = [(q.id, q.text) for q in load_suite(questions)]
    texts = [t for _, t in suite]
    before = BM25Retriever(corpus, progress=False).retrieve(texts, 5)
    copy = distractor_copy(corpus, load_corpus(distractors)).corpus
    after = BM25Retriever(copy, progress=False).retrieve(texts, 5)
    assert not any(cid.startswith("drift-distractor:") for r in after for cid, _ in r)
    moved = sum(1 for b, a in zip(before, after) if {c for c, _ in b} - {c for c, _ in a})
    assert moved > 0  # the case the relation used to count as displacement
    assert stats["tests"] == moved and stats["rate"] == pytest.approx(moved / len(suite))

    code, out, _ = cli(capsys, *args)
    share = f"{100 * moved / len(suite):.1f}%"
    assert re.search(r"^distractors\s+1\s+0\s+200\s+80\s+0\s+0\.0%", out, re.MULTILINE), out
    assert (f"Note: distractors: reordered by corpus statistics: {share} ({moved} of 80 tests) "
            "lost a chunk of their top-k to another chunk of the corpus") in out
    code, out, _ = cli(capsys, *args, "--format", "markdown")
    assert f"- distractors: reordered by corpus statistics: {share} ({moved} of 80 tests)" in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data))
    assert f"0 of 80 tests; {moved} reordered by corpus statistics (not counted)" in out
    site = tmp_path / "site"
    code, _, _ = cli(capsys, *args, "--html", str(site))
    assert code == 0
    assert f"reordered by corpus statistics: {share} ({moved} of 80 tests)" in \
        (site / "drift.html").read_text(encoding="utf-8")
