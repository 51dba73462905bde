"""``ragcov gap`` and ``generate --targets``: half the sample as tests, half as traffic.

Every figure is recounted from the SQLite files with plain SQL; the traffic also
goes through ``ragcov import`` (a TREC run written from the raw retrieval lists).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.compare.gap import gap_recordings
from ragcov.compare.recording import Recording
from ragcov.data.schema import new_meta

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
PAGES = SAMPLE / "finqa_pages.jsonl"


def record(*args: str) -> None:
    from ragcov.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code in (0, None)


@pytest.fixture(scope="module")
def halves(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(tests data file, traffic data file, traffic questions)."""
    d = tmp_path_factory.mktemp("gap")
    lines = (SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    for name, part in (("tests", lines[0::2]), ("traffic", lines[1::2])):
        (d / f"{name}.jsonl").write_text("\n".join(part) + "\n", encoding="utf-8")
        record("run", "--corpus", str(PAGES), "--split", "--queries", str(d / f"{name}.jsonl"),
               "--retriever", "bm25", "--k", "5", "--data-file", str(d / f"{name}.ragcov"), "-q")
    return d / "tests.ragcov", d / "traffic.ragcov", d / "traffic.jsonl"


def hits(path: Path) -> list[tuple[str, str, int, str]]:
    """(query id, chunk id, rank, doc id) of every hit, by plain SQL."""
    con = sqlite3.connect(path)
    rows = con.execute("SELECT q.id, c.id, h.rank, c.doc_id FROM hits h JOIN queries q ON "
                       "q.idx = h.query_idx JOIN chunks c ON c.idx = h.chunk_idx").fetchall()
    con.close()
    return rows


def gap_json(capsys, tests: Path, traffic: Path, *extra: str) -> dict:
    code, out, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(traffic),
                         "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def check_recount(doc: dict, tests: Path, traffic: Path) -> None:
    tested = {c for _q, c, _r, _d in hits(tests)}
    prod = hits(traffic)
    per_chunk = Counter(c for _q, c, _r, _d in prod)
    assert doc["format"] == 1
    assert doc["traffic_weighted_coverage"] == pytest.approx(
        sum(c in tested for _q, c, _r, _d in prod) / len(prod))
    assert doc["traffic_chunk_coverage"] == pytest.approx(
        len(set(per_chunk) & tested) / len(per_chunk))
    untested = {c: n for c, n in per_chunk.items() if c not in tested}
    assert doc["untested_chunks"] == len(untested)
    listed = doc["untested"]
    assert [u["traffic_hits"] for u in listed] == sorted(
        [u["traffic_hits"] for u in listed], reverse=True)
    assert [u["traffic_hits"] for u in listed] == sorted(untested.values(), reverse=True)[
        :len(listed)]
    con = sqlite3.connect(traffic)
    order = dict(con.execute("SELECT id, idx FROM queries"))
    con.close()
    for u in listed:
        assert u["traffic_hits"] == untested[u["chunk_id"]]
        # best rank first; ties in the order the queries were recorded
        ranks = sorted((r, order[q], q) for q, c, r, _d in prod if c == u["chunk_id"])
        assert [(e["rank"], e["query_id"]) for e in u["example_queries"]] == [
            (r, q) for r, _i, q in ranks[:3]]
    docs = Counter(d for _q, c, _r, d in prod if c in untested)
    assert {d["doc_id"]: d["traffic_hits"] for d in doc["untested_documents"]} == docs


def test_half_against_half_matches_recount(capsys, halves) -> None:
    tests, traffic, _ = halves
    doc = gap_json(capsys, tests, traffic, "--top", "1000")
    check_recount(doc, tests, traffic)
    assert 0 < doc["traffic_weighted_coverage"] < 1
    for key in ("chunk_id", "doc_id", "traffic_hits", "example_queries"):
        assert all(key in u for u in doc["untested"])
    texts = {json.loads(line)["id"]: json.loads(line)["question"] for line in
             halves[2].read_text(encoding="utf-8").splitlines()}
    assert all(e["text"] == texts[e["query_id"]] for u in doc["untested"]
               for e in u["example_queries"])


def test_top_limits_the_list_not_the_totals(capsys, halves) -> None:
    # --top shortens what a person reads; the JSON stays whole (every untested chunk).
    small = gap_json(capsys, halves[0], halves[1], "--top", "5")
    assert len(small["untested"]) == small["untested_chunks"] > 5
    check_recount(small, halves[0], halves[1])


def test_imported_traces_as_traffic(capsys, halves, tmp_path: Path) -> None:
    tests, traffic, questions = halves
    run = tmp_path / "traffic.trec"
    run.write_text("".join(f"{q} Q0 {c} {r} {1.0 / r} prod\n" for q, c, r, _d in hits(traffic)),
                   encoding="utf-8")
    imported = tmp_path / "prod.ragcov"
    code, _, err = cli(capsys, "import", str(run), "--format", "trec", "--corpus", str(PAGES),
                       "--split", "--queries", str(questions), "--data-file", str(imported))
    assert code == 0, err
    doc = gap_json(capsys, tests, imported)  # a trace names no retriever: not compared
    check_recount(doc, tests, imported)
    assert doc == {**gap_json(capsys, tests, traffic),
                   "traffic": {**doc["traffic"]}}  # the same numbers as the original lists


def test_fail_under_and_refusals(capsys, halves, tmp_path: Path) -> None:
    tests, traffic, questions = halves
    twc = gap_json(capsys, tests, traffic)["traffic_weighted_coverage"] * 100
    args = ("gap", "--tests", str(tests), "--traffic", str(traffic))
    code, out, err = cli(capsys, *args, "--fail-under", f"{twc + 5:.0f}")
    assert code == 2 and "Coverage failure: traffic-weighted coverage" in err
    assert "Traffic-weighted coverage:" in out
    assert cli(capsys, *args, "--fail-under", f"{twc - 5:.0f}")[0] == 0
    assert cli(capsys, *args, "--fail-under", "101")[0] == 1
    k3 = tmp_path / "k3.ragcov"
    record("run", "--corpus", str(PAGES), "--split", "--queries", str(questions),
           "--retriever", "bm25", "--k", "3", "--data-file", str(k3), "-q")
    code, _, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(k3))
    assert code == 1 and "k differs" in err and "--allow-different-k" in err
    assert cli(capsys, "gap", "--tests", str(tests), "--traffic", str(k3),
               "--allow-different-k")[0] == 0
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(PAGES.read_text(encoding="utf-8").splitlines()[:50]) + "\n")
    small = tmp_path / "small.ragcov"
    record("run", "--corpus", str(other), "--split", "--queries", str(questions),
           "--retriever", "bm25", "--k", "5", "--data-file", str(small), "-q")
    code, _, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(small),
                       "--allow-different-retriever")
    assert code == 1 and "the corpus differs" in err
    # Traces over the other corpus: retriever and corpus differ, and no flag can let two
    # corpora be compared, so none is suggested.
    first = json.loads(other.read_text().splitlines()[0])["doc_id"]
    (tmp_path / "t.jsonl").write_text(json.dumps({"query_id": "t1", "retrieved": [f"{first}#0"]})
                                      + "\n")
    traced = tmp_path / "traced.ragcov"
    record("import", str(tmp_path / "t.jsonl"), "--format", "jsonl", "--corpus", str(other),
           "--split", "--data-file", str(traced), "-q")
    code, _, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(traced))
    assert code == 1 and "the corpus differs" in err and "--allow-different" not in err, err


def test_traffic_with_no_hits_has_no_coverage_not_zero(capsys, halves, tmp_path: Path) -> None:
    """Stopword-only production queries retrieve nothing under BM25: 0 of 0 hits is n/a
    (null in JSON), and a --fail-under gate has nothing to judge (exit 1, not 2)."""
    tests, _, _ = halves
    (tmp_path / "stop.jsonl").write_text('{"id": "s1", "text": "the of and"}\n'
                                         '{"id": "s2", "text": "!!!"}\n')
    record("run", "--corpus", str(PAGES), "--split", "--queries", str(tmp_path / "stop.jsonl"),
           "--retriever", "bm25", "--k", "5", "--data-file", str(tmp_path / "stop.ragcov"), "-q")
    stop = tmp_path / "stop.ragcov"
    doc = gap_json(capsys, tests, stop)
    assert doc["traffic_weighted_coverage"] is None and doc["traffic_chunk_coverage"] is None
    code, out, _ = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(stop))
    assert code == 0 and "Traffic-weighted coverage: n/a (0 of 0 production hits" in out
    code, out, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(stop),
                         "--fail-under", "50")
    assert code == 1 and "n/a" in out
    assert err.strip().splitlines() == [
        f"ragcov: error: {stop}: the traffic holds no production hits, so there is no "
        "traffic-weighted coverage for --fail-under to judge"]


def test_markdown(capsys, halves) -> None:
    code, out, _ = cli(capsys, "gap", "--tests", str(halves[0]), "--traffic", str(halves[1]),
                       "--format", "markdown")
    assert code == 0 and out.startswith("### Traffic-weighted coverage ")
    assert "<details>" in out and len(out) < 65536


def test_generate_aims_at_the_gap_most_used_first(capsys, halves, tmp_path: Path) -> None:
    tests, traffic, _ = halves
    gap_file = tmp_path / "gap.json"
    assert cli(capsys, "gap", "--tests", str(tests), "--traffic", str(traffic), "--format",
               "json", "-o", str(gap_file), "--top", "1000")[0] == 0
    data = tmp_path / "gen.ragcov"
    data.write_bytes(tests.read_bytes())  # generation starts from the test suite's coverage
    out = tmp_path / "gen.jsonl"
    code, _, err = cli(capsys, "generate", "--corpus", str(PAGES), "--split", "--retriever",
                       "bm25", "-k", "5", "--generator", "extractive", "--data-file", str(data),
                       "--targets", str(gap_file), "--budget", "6", "-o", str(out), "-q")
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    untested = [u["chunk_id"] for u in json.loads(gap_file.read_text())["untested"]]
    aimed = [r["targets"][0] for r in records]
    assert aimed and all(a in untested for a in aimed)
    # Most-used first: a gap chunk leaves the list only by being covered, so the targets
    # walk down it (one missed can be aimed at again: --max-attempts).
    places = [untested.index(a) for a in aimed]
    assert places == sorted(places) and places[0] == 0


def test_generate_against_a_data_file_that_covers_the_gap_says_so(capsys, halves,
                                                                   tmp_path: Path) -> None:
    """The traffic's own data file covers every gap chunk: nothing to aim at, and a hint."""
    tests, traffic, _ = halves
    gap_file = tmp_path / "gap.json"
    assert cli(capsys, "gap", "--tests", str(tests), "--traffic", str(traffic), "--format",
               "json", "-o", str(gap_file))[0] == 0
    data = tmp_path / "traffic-copy.ragcov"
    data.write_bytes(traffic.read_bytes())
    out = tmp_path / "none.jsonl"
    code, _, err = cli(capsys, "generate", "--corpus", str(PAGES), "--split", "--retriever",
                       "bm25", "-k", "5", "--data-file", str(data), "--targets", str(gap_file),
                       "--budget", "3", "-o", str(out), "-q")
    assert code == 0, err
    assert "already covered in" in err and "--data-file" in err
    assert not out.exists() or out.read_text(encoding="utf-8") == ""


def test_targets_file_checked(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1}')
    code, _, err = cli(capsys, "generate", "--corpus", str(PAGES), "--split", "--retriever",
                       "bm25", "--targets", str(bad), "-o", str(tmp_path / "g.jsonl"))
    assert code == 1 and "not a `ragcov gap --format json` file" in err


# ---------------------------------------------------------------- properties
def recording(sets: list[list[int]], name: str, n: int = 10) -> Recording:
    q = np.repeat(np.arange(len(sets)), [len(s) for s in sets]).astype(np.int64)
    return Recording(path=Path(name), meta=new_meta(3, {"kind": "test"}, "h"),
                     chunk_ids=[f"c{j}" for j in range(n)],
                     doc_ids=np.array([f"d{j // 4}" for j in range(n)], dtype=object),
                     _hashes=[f"h{j}" for j in range(n)],
                     query_ids=[f"{name}{i}" for i in range(len(sets))], hit_query=q,
                     hit_chunk=np.array([x for s in sets for x in s], dtype=np.int64),
                     hit_rank=np.array([r + 1 for s in sets for r in range(len(s))],
                                       dtype=np.int32),
                     texts=[f"question {i}" for i in range(len(sets))])


lists = st.lists(st.lists(st.integers(0, 9), max_size=3, unique=True), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(lists, lists)
def test_weighted_coverage_is_a_fraction_of_hits(tests: list[list[int]],
                                                 traffic: list[list[int]]) -> None:
    g = gap_recordings(recording(tests, "t"), recording(traffic, "p"), top=None)
    tested = {c for s in tests for c in s}
    prod = [c for s in traffic for c in s]
    if not prod:  # 0 of 0 is no coverage at all, not 0%
        assert g.traffic_weighted_coverage is None and g.traffic_chunk_coverage is None
    else:
        assert 0.0 <= g.traffic_weighted_coverage <= 1.0
        assert 0.0 <= g.traffic_chunk_coverage <= 1.0
        assert g.traffic_weighted_coverage == pytest.approx(
            sum(c in tested for c in prod) / len(prod))
    counts = Counter(c for c in prod if c not in tested)
    assert {u.chunk_id: u.traffic_hits for u in g.untested} == {f"c{c}": n
                                                                for c, n in counts.items()}
    assert [u.traffic_hits for u in g.untested] == sorted(counts.values(), reverse=True)
