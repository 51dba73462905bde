"""RQ3 end to end on a FinQA slice (BM25, fast), against an independent recount."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from ragcov.selection import select
from research.common import ExperimentSetup, prepare
from research.rq3 import run_rq3


def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


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
