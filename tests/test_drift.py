"""``ragcov drift``: metamorphic relations of retrieval under corpus change.

The transforms and verdicts are checked against hand-worked examples and properties;
the relations run end to end with the real BM25 retriever on the city corpus and a
slice of the bundled FinQA sample, recorded in a real data file. Dense and the vector
stores (rebuilt into scratch copies) are the ``slow`` tests at the end.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragcov.api as api
from conftest import CITY_CHUNKS
from helpers import cli
from ragcov.corpus import Chunk, Corpus, load_corpus
from ragcov.drift.relations import (
    Copy,
    expand_relations,
    judge_displaced,
    judge_same,
    judge_stale,
    judge_versions,
    transformed,
)
from ragcov.drift.summary import bootstrap_interval
from ragcov.drift.transforms import (
    NUMBER,
    chunk_rng,
    colour,
    find_tables,
    ocr_noise,
    reformat,
    updated_version,
)
from ragcov.drift.versions import find_versions
from ragcov.errors import RagcovError

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
PAGES, QUESTIONS = 12, 20
TOKEN = re.compile(r"(?u)\b\w\w+\b")  # BM25's own token pattern (bm25s's default)


@pytest.fixture(scope="module")
def finqa_slice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first pages and questions of the bundled sample (it has Markdown tables)."""
    work = tmp_path_factory.mktemp("finqa")
    pages, questions = work / "pages.jsonl", work / "questions.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:PAGES]))
    questions.write_text("".join(
        (SAMPLE / "finqa_questions.jsonl").read_text().splitlines(True)[:QUESTIONS]))
    return pages, questions


@pytest.fixture(scope="module")
def drifted(finqa_slice, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every relation on the slice with BM25, recorded once for the reading tests."""
    pages, questions = finqa_slice
    data = tmp_path_factory.mktemp("drifted") / ".ragcov"
    api.corpus_drift(pages, questions, retriever="bm25", split=True, data_file=data,
                     relations=["identity", "noise", "format", "stale", "distractors",
                                "duplicate"], progress=False)
    return data


def city_queries(tmp_path: Path) -> Path:
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps({"id": i, "query": t}) + "\n" for i, t in (
        ("tokyo", "Tokyo Japan"), ("plants", "photosynthesis sunlight"),
        ("cells", "mitochondria energy cell"), ("board", "dividends board share"))))
    return q


# --- transforms, by hand -----------------------------------------------------------------------

def test_ocr_confusions_by_hand() -> None:
    rng = random.Random(0)
    assert ocr_noise("rn", 1.0, rng) == "m"      # two characters read as one
    assert ocr_noise("O0l1", 1.0, rng) == "0O1l"  # and one read as another
    assert ocr_noise("cl", 1.0, rng) == "d"
    assert ocr_noise("a x", 1.0, rng) in ("", "  ")  # lone letters lost; a space dropped or doubled


@given(st.text(max_size=200), st.integers(0, 2**32))
@settings(max_examples=60, deadline=None)
def test_noise_at_rate_zero_changes_nothing(text: str, seed: int) -> None:
    assert ocr_noise(text, 0.0, random.Random(seed)) == text


def test_noise_touches_only_the_words_given() -> None:
    text = "Paris is the capital of France and sits on the Seine."
    noisy = ocr_noise(text, 1.0, random.Random(3), words={"capital", "seine"})
    assert noisy.startswith("Paris is the ") and " of France and sits on the " in noisy
    assert "capital" not in noisy and "Seine" not in noisy


def test_noise_depends_on_seed_and_chunk_id_only() -> None:
    text = "Interest expense rose in 2009 because the company issued new long-term debt."
    a = ocr_noise(text, 0.2, chunk_rng(7, "noise", "interest"))
    assert a == ocr_noise(text, 0.2, chunk_rng(7, "noise", "interest"))
    assert a != ocr_noise(text, 0.2, chunk_rng(8, "noise", "interest"))
    assert a != ocr_noise(text, 0.2, chunk_rng(7, "noise", "dividends"))


TABLE = "before\n| a | b |\n|---|---|\n| 1 | x |\n| 2 | y, z |\nafter"


def test_table_forms_by_hand() -> None:
    assert reformat(TABLE, "rows") == "before\na: 1; b: x\na: 2; b: y, z\nafter"
    assert reformat(TABLE, "csv") == 'before\na,b\n1,x\n2,"y, z"\nafter'
    assert reformat(TABLE, "markdown") == ("before\n| a   | b    |\n| --- | ---- |\n"
                                           "| 1   | x    |\n| 2   | y, z |\nafter")
    assert reformat(TABLE, "whitespace") == "before  |  a  |  b  |  |---|---|  |  1  |  x  |  |  2" \
                                            "  |  y,  z  |  after"
    assert reformat(TABLE, "case") == TABLE.upper()
    assert reformat("no table here", "csv") == "no table here"


def test_a_table_cut_by_a_chunk_boundary_is_rows_without_a_header() -> None:
    (t,) = find_tables("| 1 | x |\n| 2 | a\\|b |")
    assert t.header is None and t.rows == [["1", "x"], ["2", "a|b"]]
    assert reformat("| 1 | x |\n| 2 | y |", "rows") == "1; x\n2; y"
    assert find_tables("| one line |") == []


def test_an_updated_version_moves_years_and_changes_numbers() -> None:
    text = "In 2008 revenue was 1,234.5 million across 17 stores (2.50 per share)."
    new = updated_version(text, random.Random(1))
    assert "In 2009 revenue" in new
    assert NUMBER.sub("#", new) == NUMBER.sub("#", text)  # only the numbers changed
    old_numbers, new_numbers = NUMBER.findall(text), NUMBER.findall(new)
    assert all(a != b for a, b in zip(old_numbers, new_numbers))
    assert re.fullmatch(r"\d{1,3}(,\d{3})+\.\d", new_numbers[1])  # separators and decimals kept
    assert re.fullmatch(r"\d+\.\d\d", new_numbers[3])


@given(st.lists(st.one_of(st.sampled_from(["cash", "rose", "by", "in", "the"]),
                          st.integers(0, 10**7).map(str),
                          st.floats(0, 10**5, allow_nan=False).map(lambda x: f"{x:.2f}")),
                min_size=1, max_size=20), st.integers(0, 1000))
@settings(max_examples=80, deadline=None)
def test_every_number_changes_and_nothing_else(words: list[str], seed: int) -> None:
    text = " ".join(words)
    new = updated_version(text, random.Random(seed))
    assert NUMBER.sub("#", new) == NUMBER.sub("#", text)
    assert all(a != b for a, b in zip(NUMBER.findall(text), NUMBER.findall(new)))


@given(st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=5), min_size=1, max_size=40))
@settings(max_examples=80, deadline=None)
def test_colouring_gives_no_test_two_changed_chunks_at_once(tests: list[list[int]]) -> None:
    chunks = sorted({c for t in tests for c in t})
    groups = colour(tests, chunks)
    assert sorted(c for g in groups for c in g) == chunks  # each chunk in exactly one group
    for g in groups:
        members = set(g)
        assert all(len(members & set(t)) <= 1 for t in tests)
    assert len(groups) >= max(len(set(t)) for t in tests)


def _versioned(versions: list, key: str = "version") -> Corpus:
    chunks = [Chunk(id=f"c{i}", text=f"text {i}", doc_id=doc, metadata={key: v} if v is not None
                    else {}) for i, (doc, v) in enumerate(versions)]
    return Corpus(chunks)


def test_own_versions_by_hand() -> None:
    v = find_versions(_versioned([("d1", 1), ("d1", 1), ("d1", 2), ("d1", 2), ("d1", 3),
                                  ("d2", 1), ("d3", None)]))
    # d1's versions 1 and 2 are superseded by version 3, which has one chunk
    assert v is not None and v.current == {0: 4, 1: -1, 2: 4, 3: -1} and v.versioned_documents == 1
    dates = find_versions(_versioned([("d", "2024-01-05T10:00:00Z"), ("d", "2023-12-31")],
                                     key="updated_at"))
    assert dates is not None and dates.current == {1: 0}
    assert find_versions(_versioned([("d", None)])) is None
    with pytest.raises(RagcovError, match="mixes numbers, dates"):
        find_versions(_versioned([("d", 1), ("d", "2024-01-01")]))


def test_bootstrap_interval() -> None:
    assert bootstrap_interval(0, 0) == (0.0, 0.0)
    assert bootstrap_interval(0, 50) == (0.0, 0.0)
    assert bootstrap_interval(50, 50) == (1.0, 1.0)
    lo, hi = bootstrap_interval(30, 100, seed=4)
    assert bootstrap_interval(30, 100, seed=4) == (lo, hi)  # the seed fixes the interval
    # A resampling bootstrap of the 0/1 verdicts, done the long way, agrees.
    verdicts = np.array([1] * 30 + [0] * 70)
    rng = np.random.default_rng(9)
    direct = rng.choice(verdicts, size=(4000, verdicts.size)).mean(axis=1)
    d_lo, d_hi = np.quantile(direct, [0.025, 0.975])
    assert lo < 0.3 < hi and abs(lo - d_lo) <= 0.03 and abs(hi - d_hi) <= 0.03


# --- verdicts, by hand -----------------------------------------------------------------------

ABCD = Corpus([Chunk(id=x, text=x, doc_id="d") for x in "abcd"])


def test_same_top_k_judge() -> None:
    judge = judge_same(ABCD, 3)
    copy = Copy(ABCD)
    out = judge(copy, [0, 1, 2], [("a", 1.0), ("b", 0.9), ("c", 0.8)])
    assert (out.value, out.violated, out.broke) == (1.0, False, [])
    out = judge(copy, [0, 1, 2], [("a", 1.0), ("d", 0.9), ("b", 0.8)])
    assert out.value == pytest.approx(2 / 4) and out.violated and out.broke == [2]


def test_displacement_judges() -> None:
    copy = Copy(ABCD, twins={1: "b@drift-copy"})
    dup = judge_displaced(ABCD, 3, bound=1)
    one = dup(copy, [0, 1, 2], [("a", 1), ("b", 1), ("b@drift-copy", 1)])
    assert (one.value, one.violated, one.broke) == (1.0, False, [])  # one slot: allowed
    two = dup(copy, [0, 1, 2], [("b", 1), ("b@drift-copy", 1), ("d", 0.5)])
    assert (two.value, two.violated, two.broke) == (2.0, True, [0, 2])
    dis = judge_displaced(ABCD, 3, bound=0)
    out = dis(Copy(ABCD), [0, 1, 2], [("a", 1), ("drift-distractor:x", 1), ("b", 1)])
    assert out.violated and out.broke == [2] and out.extra["by"] == ["drift-distractor:x"]


def test_stale_judge() -> None:
    copy = Copy(ABCD, twins={1: "b@drift-v2"})
    judge = judge_stale(ABCD, 3)
    assert judge(copy, [0, 2], [("a", 1.0)]) is None  # no chunk of this test was updated
    ok = judge(copy, [0, 1], [("b@drift-v2", 2.0), ("b", 1.0), ("a", 0.5)])
    assert not ok.violated and ok.extra["pairs"] == [[1, 2, 1, False]]
    tie = judge(copy, [0, 1], [("b", 1.0), ("b@drift-v2", 1.0)])
    assert tie.violated and tie.broke == [1] and tie.extra["pairs"] == [[1, 1, 2, True]]
    gone = judge(copy, [0, 1], [("b", 1.0), ("a", 0.5)])
    assert gone.violated and gone.extra["pairs"] == [[1, 1, None, False]]


def test_own_versions_judge() -> None:
    v = find_versions(_versioned([("d", 1), ("d", 2), ("e", None)]))
    assert v is not None
    judge = judge_versions(v)
    base = Copy(ABCD)
    assert judge(base, [1, 0], []).violated is False  # the current version ranks first
    stale = judge(base, [0, 1], [])
    assert stale.violated and stale.value == 1 and stale.extra["superseded"] == [[0, 1, 1, 2]]
    alone = judge(base, [0, 2], [])  # the current version is not retrieved at all
    assert alone.violated and alone.extra["superseded"] == [[0, 1, 1, None]]
    assert judge(base, [2], []).value == 0 and not judge(base, [2], []).violated


def test_relation_names() -> None:
    assert expand_relations(["duplicate,noise", "format:csv"]) == ["noise", "format:csv",
                                                                  "duplicate"]
    assert expand_relations(["format"])[0] == "format:rows"
    with pytest.raises(RagcovError, match="unknown relation 'ocr'"):
        expand_relations(["ocr"])


# --- with the real BM25 ------------------------------------------------------------------------

def test_identity_gives_no_violation(drifted: Path) -> None:
    s = api.drift_summary(drifted)
    identity = s.relation("identity")
    assert identity.n == QUESTIONS and identity.violated == 0
    assert all(t.value == 1.0 for t in identity.tests)
    assert s.finished and [r.relation for r in s.relations][:2] == ["identity", "noise"]


def test_bm25_is_sensitive_to_noise_on_exactly_the_words_a_query_uses(tmp_path: Path) -> None:
    from ragcov.retrieval import run_retriever
    from ragcov.retrievers.bm25 import BM25Retriever

    corpus = Corpus([Chunk(**c) for c in CITY_CHUNKS])
    queries = [(q["id"], q["query"]) for q in map(json.loads, city_queries(tmp_path).open())]
    base = run_retriever(BM25Retriever(corpus, progress=False), queries, 1, progress=False)
    baseline = {qid: [corpus.index_of(c) for c, _ in base.results[qid]] for qid, _ in queries}
    assert all(len(v) == 1 for v in baseline.values())
    used = {w for _, text in queries for w in TOKEN.findall(text.lower())}
    others = {w for c in corpus for w in TOKEN.findall(c.text.lower())} - used

    def violations(words: set[str]) -> int:
        copy = transformed(corpus, lambda c: ocr_noise(c.text, 1.0, chunk_rng(0, "noise", c.id),
                                                       words=words))
        assert copy.changed > 0
        run = run_retriever(BM25Retriever(copy.corpus, progress=False), queries, 1, progress=False,
                            warn_short=False)  # losing the chunk is the point
        judge = judge_same(corpus, 1)
        return sum(judge(copy, baseline[qid], run.results[qid]).violated for qid, _ in queries)

    assert violations(used) == len(queries)  # every character of every query word misread
    assert violations(others) == 0           # every other word misread: nothing moves


def test_cli_reports_every_form(drifted: Path, finqa_slice, capsys, tmp_path: Path) -> None:
    pages, questions = finqa_slice
    args = ["drift", "--corpus", str(pages), "--split", "--queries", str(questions),
            "--retriever", "bm25", "--data-file", str(drifted), "--relation",
            "identity,noise,format,stale,distractors,duplicate"]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    assert "0 searched now" in err  # the recorded run is read back, not searched again
    for name in ("identity", "noise (rate 0.02)", "format:rows", "format:csv", "stale",
                 "distractors", "duplicate"):
        assert re.search(rf"^{re.escape(name)}\s+\d", out, re.MULTILINE), name
    code, out, _ = cli(capsys, *args, "--format", "json")
    doc = json.loads(out)
    s = api.drift_summary(drifted)
    for rel in doc["relations"]:
        per_test = rel["per_test"]
        assert rel["violated"] == sum(t["violated"] for t in per_test)
        assert rel["rate"] == pytest.approx(rel["violated"] / len(per_test))
        assert rel["rate"] == pytest.approx(s.relation(rel["relation"]).rate)
    code, out, _ = cli(capsys, *args, "--format", "markdown")
    assert "| relation | copies |" in out and "<details>" in out
    code, out, _ = cli(capsys, "report", "--data-file", str(drifted))
    assert "Drift (ragcov drift, seed 0): violation rate per relation" in out
    code, out, _ = cli(capsys, "json", "--data-file", str(drifted), "-o", "-")
    assert [r["relation"] for r in json.loads(out)["drift"]["relations"]] == \
        [r.relation for r in s.relations]
    code, out, _ = cli(capsys, "html", "--data-file", str(drifted), "-d", str(tmp_path / "site"))
    assert code == 0 and (tmp_path / "site" / "drift.html").is_file()
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_gate(drifted: Path, finqa_slice, capsys) -> None:
    pages, questions = finqa_slice
    base = ["drift", "--corpus", str(pages), "--split", "--queries", str(questions),
            "--retriever", "bm25", "--data-file", str(drifted), "-q", "--relation",
            "identity,noise,format,stale,distractors,duplicate"]
    s = api.drift_summary(drifted)
    assert s.relation("noise").rate > 0 and s.relation("format:csv").rate == 0
    code, _, err = cli(capsys, *base, "--max-violation-rate", "noise=0")
    assert code == 2 and "noise violation rate" in err and "noise=0" in err
    code, _, err = cli(capsys, *base, "--max-violation-rate", "1")
    assert code == 0, err
    code, _, err = cli(capsys, *base, "--max-violation-rate", "format:csv=0",
                       "--max-violation-rate", "identity=0")
    assert code == 0, err
    # The most specific name wins: noise's own limit, not the one for all.
    code, _, err = cli(capsys, *base, "--max-violation-rate", "0", "--max-violation-rate",
                       "noise=1")
    assert code == 2 and "drift: stale violation rate" in err and "noise" not in err


@pytest.mark.parametrize("extra, words", [
    (["--noise-rate", "1.5"], "--noise-rate must be a rate from 0 to 1"),
    (["--noise-rate", "-0.1"], "--noise-rate must be a rate from 0 to 1"),
    (["--noise-rate", "nan"], "--noise-rate must be a rate from 0 to 1"),
    (["--max-violation-rate", "2"], "the rate must be from 0 to 1"),
    (["--max-violation-rate", "ocr=0.1"], "unknown relation 'ocr'"),
    (["--max-violation-rate", "noise=high"], "'high' is not a rate"),
    (["--relation", "ocr"], "unknown relation 'ocr'"),
    (["--relation", "format"], "no table to re-express for format:rows"),
    (["--distractors", "CORPUS"], "--distractors is the corpus itself"),
    (["--distractors", "COPY"], "the distractors are the corpus itself (8 of 8"),
    (["--retriever", "http://127.0.0.1:9/search"], "an HTTP retriever searches its own index"),
])
def test_bad_input_is_one_line_and_writes_nothing(extra, words, capsys, tmp_path: Path,
                                                  city_corpus_file: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copy(city_corpus_file, copy)
    extra = [str(city_corpus_file) if x == "CORPUS" else str(copy) if x == "COPY" else x
             for x in extra]
    data = tmp_path / ".ragcov"
    code, out, err = cli(capsys, "drift", "--corpus", str(city_corpus_file), "--queries",
                         str(city_queries(tmp_path)), "--retriever", "bm25", "--data-file",
                         str(data), "-k", "1", *extra)
    assert code == 1 and words in err and err.strip().count("\n") == 0, err
    assert not data.exists() and out == ""


def test_a_corpus_without_tables_tests_only_text_forms(city_corpus_file: Path, tmp_path: Path,
                                                       capsys) -> None:
    code, out, err = cli(capsys, "drift", "--corpus", str(city_corpus_file), "--queries",
                         str(city_queries(tmp_path)), "--retriever", "bm25", "-k", "1",
                         "--data-file", str(tmp_path / ".ragcov"))
    assert code == 0, err
    s = api.drift_summary(tmp_path / ".ragcov")
    assert [r.relation for r in s.relations] == ["noise", "format:whitespace", "format:case",
                                                 "stale", "distractors", "duplicate"]
    assert "the corpus has no table: its rows, markdown and csv forms were not tested" in out
    # BM25 lower-cases and tokenises: these two forms cannot move it.
    assert s.relation("format:case").violated == s.relation("format:whitespace").violated == 0


def test_an_interrupted_run_resumes_where_it_stopped(finqa_slice, tmp_path: Path) -> None:
    pages, questions = finqa_slice
    options = dict(retriever="bm25", split=True, relations=["noise", "stale", "duplicate"],
                   progress=False)
    seen: list[str] = []

    def stop_after_three(name: str) -> None:
        seen.append(name)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.corpus_drift(pages, questions, data_file=tmp_path / "a", on_copy=stop_after_three,
                         **options)
    partial = api.drift_summary(tmp_path / "a")
    assert not partial.finished and sum(r.copies for r in partial.relations) == 3
    again = api.corpus_drift(pages, questions, data_file=tmp_path / "a", **options)
    assert again.resumed == 3 and again.searched == again.copies - 3
    whole = api.corpus_drift(pages, questions, data_file=tmp_path / "b", **options)
    assert whole.resumed == 0 and whole.searched == again.copies
    for r, w in zip(again.summary.relations, whole.summary.relations):
        assert r.relation == w.relation and r.copies == w.copies
        assert [(t.query_id, t.value, t.violated) for t in r.tests] == \
            [(t.query_id, t.value, t.violated) for t in w.tests]
    assert again.summary.finished
    said: list[str] = []
    api.corpus_drift(pages, questions, data_file=tmp_path / "b", seed=1, notify=said.append,
                     **options)
    assert any("replacing the drift run" in line for line in said)


def test_the_corpus_own_versions_give_the_blast_radius(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "policies.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in [
        {"id": "refund-v1", "doc_id": "refunds", "version": 1,
         "text": "Refunds are paid within 30 days of the return."},
        {"id": "refund-v2", "doc_id": "refunds", "version": 2,
         "text": "Refunds are paid within 14 days of the return."},
        {"id": "ship", "doc_id": "shipping", "text": "Parcels ship within two working days."},
    ]))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": i, "query": t}) + "\n" for i, t in (
        ("old", "refunds within 30 days"), ("new", "refunds within 14 days"),
        ("ship", "parcels ship on working days"), ("post", "parcels ship"))))
    code, out, err = cli(capsys, "drift", "--corpus", str(corpus), "--queries", str(queries),
                         "--retriever", "bm25", "-k", "2", "--relation", "stale",
                         "--data-file", str(tmp_path / ".ragcov"))
    assert code == 0, err
    assert "stale (own versions)" in out and "1 superseded chunks in 1 documents" in out
    # The blast radius: every test retrieving the superseded chunk, at its rank and the
    # current version's (- where it is not retrieved).
    assert "refund-v1 (current: refund-v2): old r1/2, new r2/1, ship r2/-" in out
    r = api.drift_summary(tmp_path / ".ragcov").relation("stale:versions")
    verdicts = {t.query_id: (t.violated, t.value) for t in r.tests}
    # "old" ranks the superseded version first: violated; "new" ranks the current first.
    assert verdicts["old"] == (True, 1.0) and verdicts["new"] == (False, 1.0)
    # "days" pulls a refund chunk into the top 2, and ties go to corpus order: the superseded
    # one comes first and its current version is not retrieved at all.
    assert verdicts["ship"] == (True, 1.0) and verdicts["post"] == (False, 0.0)
    assert r.copies == 1 and r.added == 0  # judged on the recorded run: no copy searched


def test_a_factory_of_the_users_own_is_built_on_each_copy(finqa_slice, tmp_path: Path,
                                                          monkeypatch) -> None:
    (tmp_path / "drift_factory.py").write_text(
        "from ragcov.retrievers.bm25 import BM25Retriever\n"
        "def make(corpus):\n    return BM25Retriever(corpus, progress=False)\n"
        "def search(query, k):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pages, questions = finqa_slice
    mine = api.corpus_drift(pages, questions, retriever="drift_factory:make", split=True,
                            relations=["identity", "noise"], data_file=tmp_path / "a",
                            progress=False)
    built_in = api.corpus_drift(pages, questions, retriever="bm25", split=True,
                                relations=["identity", "noise"], data_file=tmp_path / "b",
                                progress=False)
    assert mine.summary.relation("identity").violated == 0
    assert [t.value for t in mine.summary.relation("noise").tests] == \
        [t.value for t in built_in.summary.relation("noise").tests]
    with pytest.raises(RagcovError, match="built without the corpus"):
        api.corpus_drift(pages, questions, retriever="drift_factory:search", split=True,
                         data_file=tmp_path / "c", progress=False)


def test_diff_shows_each_relation_on_both_sides(finqa_slice, tmp_path: Path, capsys) -> None:
    pages, questions = finqa_slice
    for name, rate in (("base", 0.0), ("head", 0.05)):
        api.corpus_drift(pages, questions, retriever="bm25", split=True, relations=["noise"],
                         noise_rate=rate, data_file=tmp_path / name, progress=False)
    head = api.drift_summary(tmp_path / "head").relation("noise")
    assert head.violated > 0
    code, out, _ = cli(capsys, "diff", str(tmp_path / "base"), str(tmp_path / "head"))
    assert f"Drift violation rates (ragcov drift): noise 0.0% -> {100 * head.rate:.1f}%" in out
    code, out, _ = cli(capsys, "diff", str(tmp_path / "base"), str(tmp_path / "head"),
                       "--format", "json")
    assert json.loads(out)["drift"] == [{"relation": "noise", "base_rate": 0.0,
                                         "head_rate": head.rate, "base_tests": QUESTIONS,
                                         "head_tests": QUESTIONS}]


def test_the_page_escapes_what_it_shows(tmp_path: Path) -> None:
    corpus = Corpus([Chunk(**c) for c in CITY_CHUNKS])
    from ragcov.suite import Query, Suite

    hostile = "<script>alert('q')</script> Tokyo Japan"
    suite = Suite([Query("x", hostile), Query("y", "photosynthesis")])
    api.corpus_drift(corpus, suite, retriever="bm25", k=1, relations=["noise"],
                     noise_rate=1.0, data_file=tmp_path / ".ragcov", progress=False)
    page = api.write_drift_html(tmp_path / ".ragcov", tmp_path / "site")
    html = page.read_text()
    assert "&lt;script&gt;alert(" in html and "<script>alert" not in html
    plain = tmp_path / "plain.ragcov"
    api.measure(corpus, suite, api.make_retriever("bm25", corpus), k=1, data_file=plain,
                progress=False)
    assert api.write_drift_html(plain, tmp_path / "other") is None  # no drift run recorded
    assert api.drift_summary(plain) is None


# --- dense and the stores: a real model (slow) ---------------------------------------------------

@pytest.mark.slow
def test_dense_embeds_only_what_changed_and_cannot_violate_identity_or_duplicate(
        minilm_path: str, tmp_path: Path) -> None:
    pages, questions = tmp_path / "pages.jsonl", tmp_path / "questions.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:4]))
    questions.write_text("".join((SAMPLE / "finqa_questions.jsonl").read_text().splitlines(True)[:10]))
    done = api.corpus_drift(pages, questions, retriever="dense", backend="torch", split=True,
                            relations=["identity", "noise", "duplicate"],
                            data_file=tmp_path / ".ragcov", progress=False)
    s = done.summary
    assert s.relation("identity").violated == 0  # the very vectors the baseline searched
    # A copy scores exactly as its original and ties go to corpus order: it can take the
    # one slot after its original, never two.
    duplicate = s.relation("duplicate")
    assert duplicate.violated == 0 and {t.value for t in duplicate.tests} <= {0.0, 1.0}
    assert done.embedded == s.relation("noise").changed > 0  # nothing else was embedded
    again = api.corpus_drift(pages, questions, retriever="dense", backend="torch", split=True,
                             relations=["noise"], data_file=tmp_path / "again", progress=False)
    assert again.embedded == 0  # the noisy chunks' vectors come back from the cache
    assert [t.value for t in again.summary.relation("noise").tests] == \
        [t.value for t in s.relation("noise").tests]


def _stores(tmp_path: Path, vectors: np.ndarray) -> dict[str, str]:
    import chromadb
    import lancedb
    from langchain_community.vectorstores import FAISS
    from langchain_core.embeddings import FakeEmbeddings

    ids, texts = [c["id"] for c in CITY_CHUNKS], [c["text"] for c in CITY_CHUNKS]
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    col = client.create_collection("cities", configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=ids, documents=texts, embeddings=vectors.tolist(),
            metadatas=[{"doc_id": c["doc_id"]} for c in CITY_CHUNKS])
    lancedb.connect(str(tmp_path / "lance")).create_table("cities", data=[
        {"id": i, "text": t, "vector": v.tolist(), "metadata": {"document_id": c["doc_id"]}}
        for i, t, v, c in zip(ids, texts, vectors, CITY_CHUNKS)])
    FAISS.from_embeddings(list(zip(texts, vectors.tolist())), FakeEmbeddings(size=384),
                          metadatas=[{"source": c["doc_id"]} for c in CITY_CHUNKS],
                          ids=ids).save_local(str(tmp_path / "faiss"))
    return {"chroma": f"chroma://{tmp_path}/chroma?collection=cities",
            "lancedb": f"lancedb://{tmp_path}/lance?table=cities",
            "faiss": f"faiss://{tmp_path}/faiss?trust=pickle"}


def _held(kind: str, tmp_path: Path) -> object:
    """What the store holds, read with its own client: the drift run must leave it as it was."""
    if kind == "chroma":
        import chromadb

        got = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_collection(
            "cities").get(include=["documents", "embeddings", "metadatas"])
        return got["ids"], got["documents"], np.asarray(got["embeddings"]).tolist(), got["metadatas"]
    if kind == "lancedb":
        import lancedb

        table = lancedb.connect(str(tmp_path / "lance")).open_table("cities")
        return table.version, table.to_arrow().to_pylist()
    return [(p.name, p.read_bytes()) for p in sorted((tmp_path / "faiss").iterdir())]


@pytest.mark.slow
def test_stores_are_rebuilt_into_scratch_copies_and_never_changed(minilm_path: str, minilm_vectors,
                                                                  tmp_path: Path) -> None:
    import tempfile

    vectors = minilm_vectors([c["text"] for c in CITY_CHUNKS])
    urls = _stores(tmp_path, vectors)
    queries = city_queries(tmp_path)
    before = {kind: _held(kind, tmp_path) for kind in urls}
    scratch = set(Path(tempfile.gettempdir()).glob("ragcov-drift-*"))
    results = {}
    for kind, url in urls.items():
        done = api.corpus_drift(url, queries, retriever="store", model=minilm_path, k=2,
                                relations=["identity", "noise", "duplicate"], noise_rate=0.3,
                                data_file=tmp_path / f"{kind}.ragcov", progress=False)
        s = done.summary
        assert s.relation("identity").violated == 0, kind
        assert s.relation("duplicate").violated == 0, kind
        # Only the noisy texts were embedded; unchanged chunks kept the store's own vectors.
        assert done.embedded == s.relation("noise").changed, kind
        results[kind] = [(t.query_id, t.value) for t in s.relation("noise").tests]
        assert _held(kind, tmp_path) == before[kind], kind
    assert results["chroma"] == results["lancedb"] == results["faiss"]
    assert set(Path(tempfile.gettempdir()).glob("ragcov-drift-*")) == scratch  # scratch removed
    with pytest.raises(RagcovError, match="not a qdrant store"):
        from ragcov.drift.scratch import StoreRebuilder

        fake = load_corpus(urls["chroma"])
        fake.store.describe = lambda: {"store": "qdrant"}  # the refusal, without a Qdrant folder
        StoreRebuilder(fake, minilm_path, None)


@pytest.mark.browser
def test_the_drift_page_in_headless_chromium(drifted: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from test_html import _chrome

    page = api.write_drift_html(drifted, tmp_path / "site")
    driver = _chrome()
    try:
        driver.get(page.as_uri())
        rows = driver.find_elements(By.CSS_SELECTOR, "#relations tbody tr")
        s = api.drift_summary(drifted)
        assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == \
            ["identity", "noise (rate 0.02)", *(r.relation for r in s.relations[2:])]
        tests = driver.find_elements(By.CSS_SELECTOR, "#stability tbody tr")
        assert len(tests) == QUESTIONS
        bad = driver.find_elements(By.CSS_SELECTOR, "#stability td.bad")
        assert len(bad) == sum(r.violated for r in s.relations)
        assert driver.find_element(By.ID, "relation-noise").is_displayed()
        driver.save_screenshot(str(tmp_path / "drift.png"))
    finally:
        driver.quit()


def test_a_data_file_of_another_run_is_refused_before_any_work(city_corpus_file: Path,
                                                               tmp_path: Path, capsys) -> None:
    data = tmp_path / ".ragcov"
    queries = city_queries(tmp_path)
    assert cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
               "--retriever", "bm25", "-k", "1", "--data-file", str(data), "-q")[0] == 0
    before = data.read_bytes()
    code, _, err = cli(capsys, "drift", "--corpus", str(city_corpus_file), "--queries",
                       str(queries), "--retriever", "bm25", "-k", "2", "--data-file", str(data))
    assert code == 1 and "k differs (1 in" in err and "another --data-file" in err
    assert err.strip().count("\n") == 0 and data.read_bytes() == before
