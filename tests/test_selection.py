"""Selection strategies against brute-force references, hand-worked tests-to-X%, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.selection import STRATEGIES, cut_order, select, tie_ranks
from ragcov.selection import tests_to as count_tests_to

pools = st.integers(1, 14).flatmap(
    lambda n_chunks: st.tuples(
        st.just(n_chunks),
        st.lists(st.lists(st.integers(0, n_chunks - 1), max_size=4, unique=True),
                 min_size=1, max_size=12),
    )
)


def brute_greedy(sets: list[list[int]], rank: np.ndarray, reset: bool) -> list[int]:
    """Recount every gain at every step; max gain, ties to the lowest rank."""
    left = list(range(len(sets)))
    covered: set[int] = set()
    order: list[int] = []
    while left:
        gains = {r: len(set(sets[r]) - covered) for r in left}
        best = max(gains.values())
        if best == 0:
            if reset and covered and any(sets[r] for r in left):
                covered = set()
                continue
            order += sorted(left, key=lambda r: rank[r])
            break
        r = min((r for r in left if gains[r] == best), key=lambda r: rank[r])
        order.append(r)
        covered |= set(sets[r])
        left.remove(r)
    return order


def brute_overlap(sets: list[list[int]], rank: np.ndarray) -> list[int]:
    left = sorted(range(len(sets)), key=lambda r: rank[r])
    order = [left.pop(0)]
    covered = set(sets[order[0]])
    while left:
        r = min(left, key=lambda q, cov=covered: (-len(set(sets[q]) & cov),
                                                  len(set(sets[q]) - cov), int(rank[q])))
        order.append(r)
        covered |= set(sets[r])
        left.remove(r)
    return order


@settings(max_examples=150, deadline=None)
@given(pools, st.integers(0, 3))
def test_greedy_picks_a_max_gain_query_until_saturation(pool, seed):
    n_chunks, sets = pool
    m = CoverageMatrix.from_sets(sets, n_chunks)
    sel = select(m, "coverage", seed=seed)
    covered: set[int] = set()
    left = set(range(len(sets)))
    for step, r in enumerate(sel.order.tolist()):
        best = max(len(set(sets[q]) - covered) for q in left)
        if best == 0:
            assert sel.saturated_at == step
            break
        assert len(set(sets[r]) - covered) == best
        covered |= set(sets[r])
        left.remove(r)
    else:
        assert sel.saturated_at == len(sets)
    assert sorted(sel.order.tolist()) == list(range(len(sets)))
    assert sel.order.tolist() == brute_greedy(sets, tie_ranks(len(sets), seed), reset=False)


@settings(max_examples=100, deadline=None)
@given(pools, st.integers(0, 3))
def test_reset_after_saturation_matches_reference(pool, seed):
    n_chunks, sets = pool
    m = CoverageMatrix.from_sets(sets, n_chunks)
    sel = select(m, "coverage", seed=seed, after_saturation="reset")
    assert sel.order.tolist() == brute_greedy(sets, tie_ranks(len(sets), seed), reset=True)


@settings(max_examples=100, deadline=None)
@given(pools, st.integers(0, 3))
def test_overlap_matches_reference(pool, seed):
    n_chunks, sets = pool
    m = CoverageMatrix.from_sets(sets, n_chunks)
    sel = select(m, "overlap", seed=seed)
    assert sel.order.tolist() == brute_overlap(sets, tie_ranks(len(sets), seed))


@settings(max_examples=60, deadline=None)
@given(pools, st.sampled_from(STRATEGIES), st.integers(0, 5))
def test_curve_is_the_coverage_of_each_prefix(pool, strategy, seed):
    n_chunks, sets = pool
    m = CoverageMatrix.from_sets(sets, n_chunks)
    sel = select(m, strategy, seed=seed)
    for n in range(1, len(sets) + 1):
        union = set().union(*(sets[r] for r in sel.order[:n]))
        assert sel.curve[n - 1] == pytest.approx(len(union) / n_chunks)
    assert sel.pool_coverage == pytest.approx(len(set().union(*sets)) / n_chunks)


def test_hand_worked_greedy_order():
    # q0 {0,1}, q1 {0,1,2,3}, q2 {4}, q3 {2,3}, q4 {} over 6 chunks.
    m = CoverageMatrix.from_sets([[0, 1], [0, 1, 2, 3], [4], [2, 3], []], 6)
    sel = select(m, "coverage", seed=0)
    assert sel.order[:2].tolist() == [1, 2]        # gain 4, then gain 1; then nothing adds
    assert sel.saturated_at == 2
    assert sel.curve.tolist() == pytest.approx([4 / 6, 5 / 6, 5 / 6, 5 / 6, 5 / 6])
    assert sel.pool_coverage == pytest.approx(5 / 6)
    # 50% of 5/6 is 2.5/6: the first test (4/6) gets there; 100% needs the second.
    assert sel.tests_to(50) == 1
    assert sel.tests_to(80) == 1                  # 0.8 * 5 = 4 chunks
    assert sel.tests_to(90) == 2
    assert sel.tests_to(100) == 2


def test_tests_to_hand_worked():
    curve = np.array([0.1, 0.2, 0.2, 0.35, 0.4])   # pool coverage 0.4
    assert count_tests_to(curve, 0.4, 50) == 2            # 0.2 >= 0.2
    assert count_tests_to(curve, 0.4, 80) == 4            # 0.35 >= 0.32
    assert count_tests_to(curve, 0.4, 90) == 5            # 0.36 only at the end
    assert count_tests_to(curve, 0.4, 100) == 5
    assert count_tests_to(curve[:3], 0.4, 80) is None     # a cut order never gets there
    assert count_tests_to(np.zeros(3), 0.0, 50) == 0      # nothing reachable: no test needed
    with pytest.raises(RagcovError):
        count_tests_to(curve, 0.4, 0)
    with pytest.raises(RagcovError):
        count_tests_to(curve, 0.4, 101)


def test_overlap_hand_worked():
    # Seed 1 ranks rows [0, 1, 2, 3], so q0 is the first pick. q1 and q2 then both
    # overlap q0 on 2 chunks; q2 adds fewer (1 vs 2), so it goes first despite its rank.
    sets = [[0, 1, 2], [0, 1, 5, 6], [0, 1, 7], [3, 4]]
    assert tie_ranks(4, 1).tolist() == [0, 1, 2, 3]
    sel = select(CoverageMatrix.from_sets(sets, 9), "overlap", seed=1)
    assert sel.order.tolist() == [0, 2, 1, 3]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_seeds_reproduce_orders(strategy):
    rng = np.random.default_rng(7)
    sets = [rng.choice(60, size=5, replace=False).tolist() for _ in range(80)]
    m = CoverageMatrix.from_sets(sets, 60)
    a = select(m, strategy, seed=3)
    b = select(m, strategy, seed=3)
    assert a.order.tolist() == b.order.tolist()
    others = {tuple(select(m, strategy, seed=s).order.tolist()) for s in range(4, 9)}
    assert len(others | {tuple(a.order.tolist())}) > 1    # the seed does matter


def test_bad_arguments():
    m = CoverageMatrix.from_sets([[0]], 1)
    with pytest.raises(RagcovError, match="unknown strategy"):
        select(m, "best", seed=0)
    with pytest.raises(RagcovError, match="after-saturation"):
        select(m, "coverage", after_saturation="stop")


def test_cut_order_budget_and_target():
    m = CoverageMatrix.from_sets([[0, 1], [0, 1, 2, 3], [4], [2, 3], []], 6)
    sel = select(m, "coverage", seed=0)
    assert cut_order(sel) == (5, None)
    assert cut_order(sel, budget=3)[0] == 3
    assert cut_order(sel, target=100)[0] == 2
    assert cut_order(sel, budget=1, target=100)[0] == 1


# CLI on a pool it has never seen: a BEIR-style folder, BM25 ------------------------
BEIR_CHUNKS = [
    ("paris", "Paris is the capital of France on the Seine."),
    ("berlin", "Berlin is the capital of Germany."),
    ("tokyo", "Tokyo is the capital of Japan."),
    ("plants", "Plants turn sunlight into sugar by photosynthesis."),
    ("cells", "Mitochondria power the cell."),
    ("debt", "Interest expense rose because of new long-term debt."),
    ("dividend", "The board declared a quarterly dividend."),
]
BEIR_QUERIES = [
    "capital of France", "capital of Germany", "photosynthesis sunlight",
    "interest expense debt", "which city is a capital", "mitochondria cell energy",
    "quarterly dividend board", "capital of Japan",
]


@pytest.fixture
def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pool"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in BEIR_CHUNKS), "utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{n}", "text": t}) + "\n" for n, t in enumerate(BEIR_QUERIES)),
        "utf-8")
    return folder


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from ragcov.cli import app

    return CliRunner().invoke(app, args)


def test_select_cli_on_a_beir_folder(beir_folder: Path, tmp_path: Path):
    data = tmp_path / ".ragcov"
    res = _cli(["run", "--corpus", str(beir_folder), "--queries", str(beir_folder / "queries.jsonl"),
                "--retriever", "bm25", "-k", "2", "--data-file", str(data), "-q"])
    assert res.exit_code == 0, res.output
    order_file, suite_file = tmp_path / "order.json", tmp_path / "suite.jsonl"
    res = _cli(["select", "--data-file", str(data), "--strategy", "coverage", "-o", str(order_file),
                "--suite-out", str(suite_file)])
    assert res.exit_code == 0, res.output
    doc = json.loads(order_file.read_text("utf-8"))
    assert sorted(doc["order"]) == sorted(f"q{n}" for n in range(len(BEIR_QUERIES)))
    assert len(doc["curve"]) == len(doc["order"])

    # Independent recount from the data file: each step up to saturation is max-gain,
    # the curve is the prefix coverage, and tests_to is the first prefix that reaches it.
    from ragcov.data import CoverageData

    m = CoverageData(data).matrix()
    sets = {q: set(m.retrieved(r)) for r, q in enumerate(m.query_ids)}
    covered: set[int] = set()
    left = set(sets)
    for n, q in enumerate(doc["order"], start=1):
        best = max(len(sets[o] - covered) for o in left)
        if best > 0:
            assert len(sets[q] - covered) == best
        covered |= sets[q]
        left.remove(q)
        assert doc["curve"][n - 1] == pytest.approx(len(covered) / m.n_chunks)
    assert doc["pool_coverage"] == pytest.approx(len(covered) / m.n_chunks)
    for pct, n in doc["tests_to"].items():
        goal = int(pct) / 100 * doc["pool_coverage"]
        assert n == next(i + 1 for i, c in enumerate(doc["curve"]) if c >= goal - 1e-12)
    lines = [json.loads(x) for x in suite_file.read_text("utf-8").splitlines()]
    # the records as the BEIR queries file holds them: its own "_id" key
    assert [x["_id"] for x in lines] == doc["order"]
    assert lines[0]["text"] in BEIR_QUERIES


def test_select_cli_budget_repeats_and_errors(beir_folder: Path, tmp_path: Path):
    data = tmp_path / ".ragcov"
    _cli(["run", "--corpus", str(beir_folder), "--queries", str(beir_folder / "queries.jsonl"),
          "--retriever", "bm25", "-k", "2", "--data-file", str(data), "-q"])
    out = tmp_path / "o.json"
    res = _cli(["select", "--data-file", str(data), "--strategy", "random", "--repeats", "3",
                "--budget", "4", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "budget" in res.output
    doc = json.loads(out.read_text("utf-8"))
    assert len(doc["order"]) == 4 and doc["cut"]["n"] == 4
    assert [r["seed"] for r in doc["runs"]] == [0, 1, 2]
    assert len(doc["mean_curve"]) == 4
    bad = tmp_path / "bad.json"
    res = _cli(["select", "--data-file", str(data), "--strategy", "nope", "-o", str(bad)])
    assert res.exit_code != 0 and not bad.exists()
    res = _cli(["select", "--data-file", str(tmp_path / "missing"), "-o", str(bad)])
    assert res.exit_code != 0 and not bad.exists()


def test_suite_out_keeps_every_field_and_orders_are_named_by_strategy(tmp_path: Path, monkeypatch):
    """Gold labels such as doc_id survive a selection (only {id, text} did), under the file's
    own key names; orders of two strategies no longer overwrite each other."""
    sample = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"
    monkeypatch.chdir(tmp_path)
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join((sample / "finqa_questions.jsonl").read_text().splitlines(True)[:12]))
    pages = tmp_path / "p.jsonl"
    pages.write_text("".join((sample / "finqa_pages.jsonl").read_text().splitlines(True)[:12]))
    assert _cli(["run", "--corpus", str(pages), "--split", "--queries", str(queries),
                 "--retriever", "bm25", "-k", "2", "-q"]).exit_code == 0
    res = _cli(["select", "--budget", "5", "--suite-out", "five.jsonl"])
    assert res.exit_code == 0, res.output
    original = {json.loads(x)["id"]: json.loads(x) for x in queries.read_text().splitlines()}
    written = [json.loads(x) for x in Path("five.jsonl").read_text().splitlines()]
    assert written == [original[r["id"]] for r in written] and "doc_id" in written[0]
    assert [r["id"] for r in written] == json.loads(Path("order-coverage.json").read_text())["order"]
    res = _cli(["select", "--strategy", "random"])
    assert Path("order-random.json").is_file() and "Replaced" not in res.output
    res = _cli(["select", "--strategy", "random"])
    assert "Replaced the existing order-random.json" in res.output
    assert json.loads(Path("order-coverage.json").read_text())["strategy"] == "coverage"
    # The suite's file gone: the cut is still written, with id and text, and it is said.
    queries.rename(tmp_path / "moved.jsonl")
    res = _cli(["select", "--budget", "5", "--suite-out", "five-again.jsonl"])
    assert res.exit_code == 0, res.output
    assert "cannot be read now" in res.output and str(queries) in res.output
    again = [json.loads(x) for x in Path("five-again.jsonl").read_text().splitlines()]
    assert [r["id"] for r in again] == [r["id"] for r in written]
    assert all(set(r) == {"id", "text"} for r in again)
    assert "unread_sources" not in json.loads(Path("order-coverage.json").read_text())
    res = _cli(["select", "--budget", "5"])  # nothing written from the suite: nothing said
    assert "cannot be read now" not in res.output
