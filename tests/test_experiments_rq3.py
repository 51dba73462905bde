"""RQ3 runner: research orders against references, and the experiment end to end on a FinQA slice."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.cli import main
from ragcov.errors import RagcovError
from ragcov.experiments.rq3 import (
    FailureDef,
    a12,
    confidence_priority,
    dissimilar_order,
    greedy_order,
    interleave,
    parse_failure_defs,
    parse_floats,
    run_rq3,
    top_scores,
)
from ragcov.matrix import CoverageMatrix
from ragcov.selection import select, tie_ranks

set_lists = st.lists(st.sets(st.integers(0, 9), max_size=4), min_size=1, max_size=15)


@settings(max_examples=60, deadline=None)
@given(set_lists, st.integers(0, 50))
def test_greedy_order_with_tie_ranks_is_the_selection_order(sets, seed: int) -> None:
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 10)
    mine = greedy_order(m, tie_ranks(m.n_queries, seed))
    assert mine.tolist() == select(m, "coverage", seed=seed).order.tolist()


def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@settings(max_examples=60, deadline=None)
@given(set_lists, st.integers(0, 50))
def test_dissimilar_order_is_farthest_first(sets, seed: int) -> None:
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 10)
    prio = tie_ranks(m.n_queries, seed)
    # Reference: the first pick is the lowest priority; then the query whose highest Jaccard
    # with any picked query is smallest, ties to the lowest priority.
    left = set(range(len(sets)))
    ref = [min(left, key=lambda r: prio[r])]
    left.remove(ref[0])
    while left:
        nxt = min(left, key=lambda r: (max(_jaccard(sets[r], sets[p]) for p in ref), prio[r]))
        ref.append(nxt)
        left.remove(nxt)
    assert dissimilar_order(m, prio).tolist() == ref


def test_interleave_and_a12() -> None:
    assert interleave(np.array([0, 1, 2, 3]), np.array([3, 2, 1, 0])).tolist() == [0, 3, 1, 2]
    assert interleave(np.array([2, 0, 1]), np.array([2, 1, 0])).tolist() == [2, 1, 0]
    assert a12([3, 4], [1, 2]) == 1.0
    assert a12([1, 2], [1, 2]) == 0.5
    assert a12([1], [2, 0]) == 0.5


def test_confidence_priority_puts_low_scores_first() -> None:
    m = CoverageMatrix.from_triples(
        rows=[0, 0, 1, 2, 2], cols=[0, 1, 1, 2, 0], ranks=[1, 2, 1, 1, 2],
        scores=[0.9, 0.5, 0.2, 0.6, 0.1], query_ids=["a", "b", "c", "d"],
        chunk_ids=["x", "y", "z"])
    assert top_scores(m).tolist() == [0.9, 0.2, 0.6, -np.inf]
    prio = confidence_priority(m, seed=0)
    assert np.argsort(prio).tolist() == [3, 1, 2, 0]
    unscored = CoverageMatrix.from_sets([[0], [1]], 2)
    assert confidence_priority(unscored, 0) is None


def test_parsers() -> None:
    assert parse_failure_defs("hit, context_relevance<0.5") == [
        FailureDef("hit", None), FailureDef("context_relevance", 0.5)]
    assert FailureDef("context_relevance", 0.5).name == "context_relevance<0.5"
    for bad in ("ndcg", "", "hit<x"):
        with pytest.raises(RagcovError):
            parse_failure_defs(bad)
    assert parse_floats("0.6,0.8", "--taus", 0, 1) == [0.6, 0.8]
    with pytest.raises(RagcovError):
        parse_floats("0.6,1.5", "--taus", 0, 1)


# ------------------------------------------------------------------ end to end (BM25, fast)

@pytest.fixture
def finqa_slice(tmp_path: Path, datasets_dir: Path) -> Path:
    records = json.loads((datasets_dir / "finqa" / "dev_200.json").read_text(encoding="utf-8"))
    p = tmp_path / "finqa_slice.json"
    p.write_text(json.dumps(records[:80]), encoding="utf-8")
    return p


def _components(sets: list[set[int]], rows: list[int], tau: float) -> list[set[int]]:
    groups = [{r} for r in rows]
    for a, b in combinations(rows, 2):
        if _jaccard(sets[a], sets[b]) > tau:
            ga = next(g for g in groups if a in g)
            gb = next(g for g in groups if b in g)
            if ga is not gb:
                ga |= gb
                groups.remove(gb)
    return groups


def test_rq3_end_to_end_agrees_with_an_independent_recount(tmp_path: Path,
                                                           finqa_slice: Path) -> None:
    from ragcov.experiments.common import ExperimentSetup, prepare

    setup = ExperimentSetup("finqa", finqa_slice, "bm25", None, 2, progress=False)
    prep = prepare(setup)
    out = tmp_path / "out"
    result = run_rq3(setup, repeats=3, taus=[0.3, 0.8], budgets=[0.25], out_dir=out,
                     prepared=prep)
    for name in ("rq3.md", "rq3.csv", "rq3.json", "rq3-apfd-box.png", "rq3-detection.png",
                 "rq3-failure-rate.png"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "rq3.json").read_text())
    m = prep.matrix
    relevant = prep.dataset.relevant_docs
    sets = [set(m.retrieved(r)) for r in range(m.n_queries)]
    docs_of = [{m.doc_ids[c] for c in s} for s in sets]
    failing = [r for r, q in enumerate(m.query_ids) if not (docs_of[r] & relevant[q])]
    assert failing, "the slice should have failures"
    for tau in (0.3, 0.8):
        groups = _components(sets, failing, tau)
        row = next(x for x in doc["multiplicity"] if x["failure"] == "hit" and x["tau"] == tau)
        assert (row["failures"], row["faults"]) == (len(failing), len(groups))
        # APFD of the seed-0 random order, by hand.
        order = select(m, "random", seed=0).order.tolist()
        tf = [min(order.index(r) for r in g) + 1 for g in groups]
        expected = 1 - sum(tf) / (len(order) * len(groups)) + 1 / (2 * len(order))
        runs = doc["runs"][f"hit|tau={tau:g}"]
        assert runs["random"]["all"][0] == pytest.approx(expected, abs=1e-6)  # stored to 6 places
        cov, rnd = np.mean(runs["coverage"]["all"]), np.mean(runs["random"]["all"])
        line = next(x for x in doc["improvements"]
                    if x["failure"] == "hit" and x["tau"] == tau and x["order"] == "coverage")
        assert line["vs_random"] == pytest.approx((cov - rnd) / rnd, abs=1e-5)
    # context_relevance < 0.4: fewer than 40% of the retrieved chunks from the relevant page.
    cr_fail = sum(
        1 for r, q in enumerate(m.query_ids)
        if sum(m.doc_ids[c] in relevant[q] for c in sets[r]) / max(len(sets[r]), 1) < 0.4)
    cr = next(x for x in doc["explain"] if x["failure"] == "context_relevance<0.4")
    assert cr["failing"] == cr_fail
    assert "+10% to +25%" in result.markdown
    assert doc["budgets"] == [20]


def test_rq3_cli(capsys, tmp_path: Path, finqa_slice: Path) -> None:
    out = tmp_path / "cli"
    with pytest.raises(SystemExit) as exc:
        main(["experiment", "rq3", "--dataset", "finqa", "--data", str(finqa_slice),
              "--retriever", "bm25", "--k", "2", "--repeats", "2", "--taus", "0.8", "--metrics", "hit",
              "--out", str(out)])
    assert exc.value.code in (0, None)
    assert "Coverage-guided against random" in capsys.readouterr().out
    assert (out / "rq3.json").is_file()
    bad = tmp_path / "bad"
    with pytest.raises(SystemExit) as exc:
        main(["experiment", "rq3", "--dataset", "finqa", "--data", str(finqa_slice),
              "--retriever", "bm25", "--taus", "0.8,7", "--out", str(bad)])
    assert exc.value.code == 1 and "--taus" in capsys.readouterr().err
    assert not bad.exists()
