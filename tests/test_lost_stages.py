"""Where a chunk is lost (embedding, index, reranker): the exact search, the attribution,
the reranking stage, the reports and gates, and diff's two fairness gates.

No model is loaded here: the exact search is checked against numpy on vectors made in
the test, the reranking stage runs BM25 with a reranker given as ``module:attr``
(tests/rerankers.py), and every recount reads the data file with plain sqlite3.
The real indexes (HNSW, Chroma, FAISS, pgvector) are in test_lost_indexes.py.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragcov
from helpers import cli
from ragcov.data.probes import ProbeMatrix
from ragcov.data.stages import PROBE, TEST, StageHits, StageRecord
from ragcov.matrix import CoverageMatrix
from ragcov.reachability.stages import EMBEDDING, INDEX, RERANKER, attribute
from ragcov.retrievers.exact import ExactVectors

SAMPLE = Path(ragcov.__file__).parent / "data_sample"
PAGES = SAMPLE / "finqa_pages.jsonl"
QUESTIONS = SAMPLE / "finqa_questions.jsonl"
K = 3
DEPTH = 8


# ---------------------------------------------------------------- exact search, by hand
def test_judge_by_hand_ties_are_never_held_against_the_index() -> None:
    """Four chunks, one query, depth 2, inner product. Chunks 1 and 2 are the same vector:
    exact search must rank one of them second, but neither is *surely* in the top 2, and
    an index that returns either one has found what it could."""
    v = ExactVectors(np.array([[1.0, 0.0], [0.6, 0.8], [0.6, 0.8], [0.0, 1.0]]), "ip", "test")
    q = np.array([[0.9, 0.1]])      # scores: 0.90, 0.62, 0.62, 0.10
    judged = v.judge(q, [[0, 2]], depth=2)
    assert judged.positions.tolist() == [[0, 1]]            # ties by corpus position
    assert judged.sure.tolist() == [[True, False]]          # 0.62 ties the first one outside
    assert judged.found.tolist() == [2] and judged.expected == 2
    # An index that returns chunk 3 (0.10) instead of the tied pair found one of two.
    assert v.judge(q, [[0, 3]], depth=2).found.tolist() == [1]
    # An index that returns nothing found nothing; one that repeats a chunk counts it once.
    assert v.judge(q, [[]], depth=2).found.tolist() == [0]
    assert v.judge(q, [[0, 0]], depth=2).found.tolist() == [1]


def test_metrics_rank_as_the_store_ranks() -> None:
    """cosine ignores length, l2 prefers the near point, ip the long one."""
    m = np.array([[10.0, 0.0], [0.9, 0.1]])
    q = np.array([[1.0, 0.0]])
    assert ExactVectors(m, "ip", "t").top(q, 1)[1].tolist() == [[0]]
    assert ExactVectors(m, "l2", "t").top(q, 1)[1].tolist() == [[1]]
    cos = ExactVectors(m, "cosine", "t")
    assert cos.top(q, 2)[1].tolist() == [[0, 1]]
    assert cos.top(q, 1)[0][0, 0] == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), d=st.integers(1, 6), queries=st.integers(1, 5),
       depth=st.integers(1, 8), metric=st.sampled_from(["ip", "cosine", "l2"]),
       seed=st.integers(0, 10_000), grid=st.booleans())
def test_exact_search_and_recall_are_numpy_brute_force(n, d, queries, depth, metric, seed,
                                                       grid) -> None:
    """Top-d, the sure flags and the tie-aware recall of any index list, recounted with a
    full numpy score matrix (``grid`` draws small integer vectors: many exact ties)."""
    rng = np.random.default_rng(seed)
    m = (rng.integers(-2, 3, (n, d)) if grid else rng.normal(size=(n, d))).astype(np.float64)
    q = (rng.integers(-2, 3, (queries, d)) if grid else rng.normal(size=(queries, d)))
    if metric == "cosine":
        m[np.linalg.norm(m, axis=1) == 0] = 1.0
        q[np.linalg.norm(q, axis=1) == 0] = 1.0
    lists = [rng.choice(n, size=min(n, int(rng.integers(0, depth + 2))), replace=False).tolist()
             for _ in range(queries)]
    judged = ExactVectors(m, metric, "t").judge(q, lists, depth)

    def scores(qv):
        if metric == "ip":
            return m @ qv
        if metric == "cosine":
            return (m / np.linalg.norm(m, axis=1, keepdims=True)) @ (qv / np.linalg.norm(qv))
        return -((m - qv) ** 2).sum(axis=1)

    dd = min(depth, n)
    for i in range(queries):
        s = scores(q[i])
        order = np.lexsort((np.arange(n), -s))
        tol = 1e-4 * max(1.0, float(np.abs(s).max()))
        # The same scores in the same order, whatever breaks ties.
        assert np.allclose(np.sort(s)[::-1][:dd], judged.scores[i], atol=tol)
        assert np.allclose(s[judged.positions[i]], s[order[:dd]], atol=tol)
        nxt = s[order[dd]] if n > dd else -np.inf
        for j, pos in enumerate(judged.positions[i]):
            if abs(s[pos] - nxt) > tol:  # clear of the boundary: sure exactly when above it
                assert judged.sure[i, j] == (s[pos] > nxt)
        threshold = s[order[dd - 1]]
        found = sum(1 for c in set(lists[i]) if s[c] >= threshold - tol)
        near = sum(1 for c in set(lists[i]) if abs(s[c] - threshold) <= tol)
        assert min(found, dd) - near <= judged.found[i] <= min(found, dd)


# ------------------------------------------------------------------ attribution, by hand
def test_each_unreachable_chunk_gets_its_stage() -> None:
    """Five chunks, three probes, one test, depth 2. Chunk 2 is in a probe's first stage
    only (the reranker dropped it), chunk 3 in a probe's exact top 2 only (the index hid
    it), chunk 4 nowhere (the embedding); chunk 1 is tied at the exact boundary, so
    although no index list holds it, it is not said to be hidden."""
    tests = CoverageMatrix.from_triples(np.array([0]), np.array([0]), np.array([1]),
                                        np.array([1.0]), ["t1"], ["c0", "c1", "c2", "c3", "c4"],
                                        k=1)
    # Final lists: probe 0 -> c0, probe 1 -> c0, probe 2 -> nothing.
    probes = ProbeMatrix(ids=["p0", "p1", "p2"], source=np.array([2, 3, 4]),
                         kinds=["terms", "terms", "sentence"], n_chunks=5,
                         indptr=np.array([0, 1, 2, 2]), indices=np.array([0, 0]),
                         rank_data=np.array([1, 1], dtype=np.int32))
    exact = StageHits(rows=np.array([0, 0, 1, 1, 2, 2]), chunks=np.array([0, 1, 0, 3, 0, 1]),
                      sure=np.array([True, False, True, True, True, False]))
    first = StageHits(rows=np.array([0, 0, 1, 1]), chunks=np.array([0, 2, 0, 0]),
                      sure=np.ones(4, bool))
    record = StageRecord(meta={"exact": {"checked": True, "depth": 2}},
                         exact={PROBE: exact, TEST: StageHits.empty()},
                         first={PROBE: first, TEST: StageHits.empty()},
                         found={PROBE: np.array([1, 1, 1]), TEST: np.array([-1])},
                         expected={PROBE: np.array([2, 2, 2]), TEST: np.array([-1])})
    lost = np.array([False, True, True, True, True])
    st = attribute(record, np.array(["covered", *["unreachable"] * 4], object), lost, probes, tests)
    assert st.cause.tolist() == [None, EMBEDDING, RERANKER, INDEX, EMBEDDING]
    assert st.hidden_probes == {3: ["p1"]}
    assert st.recall(PROBE) == pytest.approx(0.5) and st.recall(TEST) is None
    # A probe with words and no exact check recorded: a chunk no list holds has no cause.
    record.expected[PROBE] = np.array([2, 2, -1])
    st = attribute(record, np.array(["covered", *["unreachable"] * 4], object), lost, probes, tests)
    assert st.cause.tolist() == [None, None, RERANKER, INDEX, None]
    assert st.probes_unchecked == 1


# ---------------------------------------------------------- a reranking stage, end to end
@pytest.fixture(scope="module")
def slice_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slice")
    path = folder / "pages.jsonl"
    path.write_text("".join(PAGES.read_text(encoding="utf-8").splitlines(True)[:25]),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reranked(tmp_path_factory: pytest.TempPathFactory, slice_corpus: Path) -> dict:
    """BM25 first, reranked by rerankers:by_id from depth 8 to k 3: run and probe."""
    from ragcov.cli import main

    folder = tmp_path_factory.mktemp("reranked")
    data = folder / ".ragcov"
    args = ["--corpus", str(slice_corpus), "--split", "--retriever", "bm25",
            "--data-file", str(data), "-q"]
    for argv in (["run", *args, "--queries", str(QUESTIONS), "-k", str(K), "--rerank",
                  "rerankers:by_id", "--rerank-depth", str(DEPTH)],
                 ["probe", *args, "--format", "json", "-o", str(folder / "reach.json")]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code in (0, None)
    return {"data": data, "doc": json.loads((folder / "reach.json").read_text()),
            "corpus": slice_corpus}


def _rows(data: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(data)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_reranker_stage_is_recorded_and_blamed(reranked: dict) -> None:
    """The final lists are the first stage by id, cut to k; the chunks lost at the
    reranker are exactly the unreachable ones some probe's first stage held (recounted
    from the rows), and the first stage is BM25's own top 8."""
    from ragcov.corpus import load_corpus
    from ragcov.retrievers.bm25 import BM25Retriever

    data, doc = reranked["data"], reranked["doc"]
    first: dict[int, list[int]] = {}
    for row, chunk in _rows(data, "SELECT row_idx, chunk_idx FROM stage_hits WHERE side = "
                                  "'probe' AND stage = 'first' ORDER BY row_idx, rank"):
        first.setdefault(row, []).append(chunk)
    final: dict[int, list[int]] = {}
    for row, chunk in _rows(data, "SELECT probe_idx, chunk_idx FROM probe_hits "
                                  "ORDER BY probe_idx, rank"):
        final.setdefault(row, []).append(chunk)
    ids = dict(_rows(data, "SELECT idx, id FROM chunks"))
    assert first and all(final.get(r, []) == sorted(lst, key=ids.get, reverse=True)[:K]
                         for r, lst in first.items())
    corpus = load_corpus(reranked["corpus"], split=True)
    texts = dict(_rows(data, "SELECT idx, text FROM probes"))
    some = sorted(first)[:20]
    bm25 = BM25Retriever(corpus, progress=False).retrieve([texts[r] for r in some], DEPTH)
    assert [[corpus.index_of(c) for c, _ in ranked] for ranked in bm25] == [first[r] for r in some]

    reached_first = {ids[c] for lst in first.values() for c in lst}
    unreachable = {c["chunk_id"] for c in doc["chunks"] if c["status"] == "unreachable"}
    blamed = {c["chunk_id"] for c in doc["chunks"] if c.get("lost_at") == "reranker"}
    assert blamed == unreachable & reached_first and blamed
    # BM25 has no vectors: the rest have no cause, and no recall is made up.
    assert {c.get("lost_at") for c in doc["chunks"] if c["status"] == "unreachable"} <= {
        "reranker", None}
    t = doc["totals"]
    assert t["lost_at"]["reranker"] == len(blamed)
    assert t["index_recall"]["tests"] is None and t["index_recall"]["probes"] is None
    assert t["exact_check"]["checked"] is False and "bm25" in t["exact_check"]["reason"]


def test_first_stage_coverage_beside_final(capsys, reranked: dict) -> None:
    data = reranked["data"]
    tests_first = {c for (c,) in _rows(data, "SELECT DISTINCT chunk_idx FROM stage_hits "
                                              "WHERE side = 'test' AND stage = 'first'")}
    final = {c for (c,) in _rows(data, "SELECT DISTINCT chunk_idx FROM hits")}
    n = _rows(data, "SELECT COUNT(*) FROM chunks")[0][0]
    assert final < tests_first  # the reranker keeps 3 of each test's 8 candidates
    code, out, _ = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code == 0
    t = json.loads(out)["totals"]
    assert t["first_stage_covered_chunks"] == len(tests_first)
    assert t["first_stage_coverage"] == pytest.approx(len(tests_first) / n)
    assert t["reranker_dropped_chunks"] == len(tests_first - final)
    code, out, _ = cli(capsys, "report", "--data-file", str(data))
    assert code == 0
    assert (f"first-stage coverage {len(tests_first) / n * 100:.1f}% ({len(tests_first)} chunks)"
            in out)
    assert f"the reranker drops {len(tests_first - final)} chunks" in out


def test_reranker_settings_are_checked_and_recorded(capsys, tmp_path: Path, slice_corpus: Path,
                                                   reranked: dict) -> None:
    base = ["run", "--corpus", str(slice_corpus), "--split", "--retriever", "bm25", "--queries",
            str(QUESTIONS), "-k", "3", "--data-file", str(tmp_path / "x.ragcov"), "-q"]
    for extra, said in ((["--rerank", "rerankers:by_id"], "go together"),
                        (["--rerank", "rerankers:by_id", "--rerank-depth", "2"], "below k=3"),
                        (["--rerank", "rerankers:stranger", "--rerank-depth", "5"],
                         "not one of the 5 candidates"),
                        (["--rerank", "rerankers:nothing_here", "--rerank-depth", "5"],
                         "has no attribute")):
        code, _, err = cli(capsys, *base, *extra)
        assert code == 1 and said in err and len(err.strip().splitlines()) == 1, err
    # probe takes the reranker from the recorded run; another pipeline is refused.
    fp = json.loads(_rows(reranked["data"], "SELECT value FROM meta WHERE key = 'retriever'")[0][0])
    assert fp["rerank"] == {"reranker": "function", "name": "rerankers:by_id", "depth": DEPTH}
    code, _, err = cli(capsys, "probe", "--corpus", str(slice_corpus), "--split", "--retriever",
                       "bm25", "--data-file", str(reranked["data"]), "-q", "--rerank",
                       "rerankers:by_id", "--rerank-depth", str(DEPTH + 1))
    assert code == 1 and "cannot mix coverage data" in err


# -------------------------------------------------------------- no vectors: said, not faked
def test_a_retriever_without_vectors_skips_the_check_in_one_line(capsys, tmp_path: Path,
                                                                slice_corpus: Path) -> None:
    data = tmp_path / ".ragcov"
    common = ["--corpus", str(slice_corpus), "--split", "--retriever", "rerankers:overlap",
              "--data-file", str(data)]
    code, _, err = cli(capsys, "run", *common, "--queries", str(QUESTIONS), "-q")
    assert code == 0, err
    code, out, err = cli(capsys, "probe", *common, "--sample", "30")
    assert code == 0, err
    skipped = [line for line in err.splitlines() if "exact check skipped" in line]
    assert skipped == ["ragcov: exact check skipped: the callable retriever gives no vectors to "
                       "search exactly (the built-in dense retriever and vector stores do); "
                       "unreachable chunks get no cause (embedding or index) and no index "
                       "recall is reported"]
    assert "Exact check skipped: the callable retriever gives no vectors" in out
    assert "Index recall" not in out
    # A gate that cannot be judged is an error (exit 1), never a pass.
    for command in (["probe", *common, "--sample", "30", "-q"], ["report", "--data-file", str(data)]):
        code, _, err = cli(capsys, *command, "--min-index-recall", "90")
        assert code == 1, err
        assert "--min-index-recall need the exact check, which was not done" in err
    code, _, err = cli(capsys, "report", "--data-file", str(data), "--max-index-hidden", "-1")
    assert code == 1 and "--max-index-hidden must be 0 or more" in err


def test_index_options_are_refused_where_nothing_takes_them(capsys, tmp_path: Path,
                                                           slice_corpus: Path) -> None:
    code, _, err = cli(capsys, "run", "--corpus", str(slice_corpus), "--split", "--retriever",
                       "bm25", "--queries", str(QUESTIONS), "--hnsw-ef-search", "4",
                       "--data-file", str(tmp_path / "x.ragcov"))
    assert code == 1 and "--hnsw-ef-search shape the dense retriever's --index hnsw" in err


# ------------------------------------------------------------------ diff's fairness gates
def _gini(x: np.ndarray) -> float:
    """Mean absolute difference over twice the mean: the textbook definition, no sorting."""
    x = x.astype(float)
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size ** 2 * x.mean()))


def test_diff_gini_rise_and_query_overlap(capsys, tmp_path: Path, slice_corpus: Path) -> None:
    files = {}
    for name, retriever in (("bm25", "bm25"), ("overlap", "rerankers:overlap")):
        files[name] = tmp_path / f"{name}.ragcov"
        code, _, err = cli(capsys, "run", "--corpus", str(slice_corpus), "--split", "--retriever",
                           retriever, "--queries", str(QUESTIONS), "-k", "3", "--data-file",
                           str(files[name]), "-q")
        assert code == 0, err
    reports = {}
    for name, path in files.items():
        code, out, _ = cli(capsys, "json", "--data-file", str(path), "-o", "-")
        reports[name] = json.loads(out)
    chunk_ids = list(reports["bm25"]["chunks"])

    def exposure(doc):
        counts = {c: 0 for c in chunk_ids}
        for q in doc["queries"].values():
            for c in set(q["retrieved"]):
                counts[c] += 1
        return np.array([counts[c] for c in chunk_ids])

    gini = {name: _gini(exposure(doc)) for name, doc in reports.items()}
    same = [set(reports["bm25"]["queries"][q]["retrieved"]) == set(v["retrieved"])
            for q, v in reports["overlap"]["queries"].items()]
    overlap = sum(same) / len(same)
    assert 0 < overlap < 1
    base = ["diff", str(files["bm25"]), str(files["overlap"]), "--allow-different-retriever"]
    code, out, _ = cli(capsys, *base, "--format", "json")
    doc = json.loads(out)
    assert doc["exposure_gini"]["base"] == pytest.approx(gini["bm25"])
    assert doc["exposure_gini"]["head"] == pytest.approx(gini["overlap"])
    assert doc["query_overlap"] == pytest.approx(overlap)
    rise = gini["overlap"] - gini["bm25"]
    code, _, err = cli(capsys, *base, "--max-gini-rise", str(max(0.0, rise) + 0.001),
                       "--min-query-overlap", str(overlap * 100 - 0.01))
    assert code == 0, err
    code, _, err = cli(capsys, *base, "--min-query-overlap", str(overlap * 100 + 0.01))
    assert code == 2 and "Overlap failure" in err and f"{overlap * 100:.2f}%" in err
    if rise > 0:
        code, _, err = cli(capsys, *base, "--max-gini-rise", str(rise / 2))
        assert code == 2 and "Gini failure" in err
    code, _, err = cli(capsys, *base, "--max-gini-rise", "2")
    assert code == 1 and "--max-gini-rise must be 0 to 1" in err
