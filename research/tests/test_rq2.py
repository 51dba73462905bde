"""RQ2: numbers from the selections, and RQ1 and RQ2 end to end (files written, dense slice)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from ragcov.selection import select
from research.common import ExperimentSetup, prepare
from research.rq1 import run_rq1
from research.rq2 import compare, run_rq2
from research.tests.helpers import QUERIES, random_matrix


def test_rq2_numbers_come_from_the_selections():
    m = random_matrix()
    runs, rows, speedups = compare(m, repeats=4, seed=2)
    by = {r["strategy"]: r for r in rows}
    assert by["coverage"]["tests_to_50"] == select(m, "coverage", seed=2).tests_to(50)
    rand = [select(m, "random", seed=s).tests_to(50) for s in range(2, 6)]
    assert by["random"]["tests_to_50"] == pytest.approx(np.mean(rand))
    assert by["random"]["tests_to_50_sd"] == pytest.approx(np.std(rand, ddof=1))
    s50 = next(s for s in speedups if s["versus"] == "overlap" and s["target_pct"] == 50)
    assert s50["speedup"] == pytest.approx(by["overlap"]["tests_to_50"]
                                           / by["coverage"]["tests_to_50"])
    assert s50["paper"] == 4.2
    # Greedy never needs more tests than any random run to reach any target.
    for t in (50, 80, 90, 100):
        assert all(by["coverage"][f"tests_to_{t}"] <= s.tests_to(t) for s in runs["random"])


def test_rq1_and_rq2_end_to_end_on_a_beir_folder(pool: Path, tmp_path: Path):
    setup = ExperimentSetup(str(pool), retriever="bm25", k=2, progress=False)
    prep = prepare(setup)
    assert prep.matrix.n_queries == len(QUERIES) and len(prep.corpus) == 12
    r1 = run_rq1(setup, sizes=[4, 8], suites=10, seed=0, out_dir=tmp_path / "rq1", prepared=prep)
    r2 = run_rq2(setup, repeats=3, seed=0, out_dir=tmp_path / "rq2", prepared=prep)
    for name in ("rq1.md", "rq1.csv", "rq1.json", "rq1_scatter.png"):
        assert (tmp_path / "rq1" / name).stat().st_size > 0
    for name in ("rq2.md", "rq2.csv", "rq2.json", "rq2_curves.png", "rq2_speedups.csv"):
        assert (tmp_path / "rq2" / name).stat().st_size > 0
    with open(tmp_path / "rq1" / "rq1.csv", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(r1.rows) == 10
    doc = json.loads((tmp_path / "rq2" / "rq2.json").read_text("utf-8"))
    assert doc["pool_queries"] == len(QUERIES)
    assert sorted(doc["coverage_order"]) == sorted(f"q{n}" for n in range(len(QUERIES)))
    assert "1.7x" in r2.markdown and "4.2x" in r2.markdown


@pytest.mark.slow
def test_rq2_dense_on_a_finqa_slice(datasets_dir: Path, tmp_path: Path, minilm_path: str):
    records = json.loads((datasets_dir / "finqa" / "dev_200.json").read_text("utf-8"))[:40]
    (tmp_path / "dev.json").write_text(json.dumps(records), "utf-8")
    setup = ExperimentSetup("finqa", tmp_path, retriever="dense", k=5, progress=False)
    r2 = run_rq2(setup, repeats=5, out_dir=tmp_path / "rq2")
    by = {r["strategy"]: r for r in r2.rows}
    assert by["coverage"]["tests_to_50"] <= by["random"]["tests_to_50"]
    assert by["coverage"]["tests_to_50"] <= by["overlap"]["tests_to_50"]
