"""RQ1 and RQ2 experiments: numbers recomputed independently, files written, CLI errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ragcov.errors import RagcovError
from ragcov.experiments.common import ExperimentSetup, prepare
from ragcov.experiments.rq1 import correlate, run_rq1
from ragcov.experiments.rq2 import compare, run_rq2
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage, mean_pairwise_jaccard, normalized_entropy
from ragcov.selection import select

TOPICS = {
    "capital": ["Paris is the capital of France.", "Berlin is the capital of Germany.",
                "Tokyo is the capital of Japan.", "Rome is the capital of Italy."],
    "biology": ["Plants make sugar by photosynthesis.", "Mitochondria power the cell.",
                "DNA carries genetic information.", "Enzymes speed up reactions."],
    "finance": ["Interest expense rose with new debt.", "The board declared a dividend.",
                "Revenue grew ten percent in 2009.", "Operating margin fell last year."],
}
QUERIES = [
    "capital of France", "capital of Germany", "capital of Japan", "capital of Italy",
    "capital city", "photosynthesis sugar", "mitochondria cell", "genetic DNA", "enzymes",
    "interest expense debt", "dividend board", "revenue growth 2009", "operating margin",
    "which capital", "cell energy", "debt and interest", "sugar plants", "margin and revenue",
]


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    folder = tmp_path / "pool"
    folder.mkdir()
    rows = [{"_id": f"{t}{i}", "doc_id": t, "text": s}
            for t, texts in TOPICS.items() for i, s in enumerate(texts)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{n}", "text": t}) + "\n" for n, t in enumerate(QUERIES)),
        "utf-8")
    return folder


def _random_matrix(n: int = 40, n_chunks: int = 60, k: int = 4, seed: int = 3) -> CoverageMatrix:
    rng = np.random.default_rng(seed)
    # Skewed popularity so suites differ in redundancy.
    sets = []
    for _ in range(n):
        p = np.arange(n_chunks, 0, -1, dtype=float) ** 2
        sets.append(rng.choice(n_chunks, size=k, replace=False, p=p / p.sum()).tolist())
    return CoverageMatrix.from_sets(sets, n_chunks)


def test_rq1_correlations_match_an_independent_recount():
    m = _random_matrix()
    rows, samples = correlate(m.hits, [5, 10], suites=20, seed=4)
    assert len(samples) == 40 and len(rows) == 2 * 5
    # Redraw the same suites and recompute every measure through the matrix API.
    rng = np.random.default_rng(4)
    for size in (5, 10):
        drawn = [np.sort(rng.choice(m.n_queries, size=size, replace=False)) for _ in range(20)]
        mine = [s for s in samples if s["size"] == size]
        cc, ent, jac = [], [], []
        for idx, s in zip(drawn, mine):
            sub = m.select_rows(idx)
            cc.append(chunk_coverage(sub))
            ent.append(normalized_entropy(sub.chunk_frequencies(), "retrieved"))
            jac.append(mean_pairwise_jaccard(sub))
            assert s["cc"] == pytest.approx(cc[-1])
            assert s["jaccard"] == pytest.approx(jac[-1])
        by = {r["measure"]: r for r in rows if r["size"] == size}
        assert by["entropy_retrieved"]["pearson_r"] == pytest.approx(stats.pearsonr(cc, ent)[0])
        assert by["jaccard"]["spearman_rho"] == pytest.approx(stats.spearmanr(cc, jac)[0])
        assert by["jaccard"]["pearson_p"] == pytest.approx(stats.pearsonr(cc, jac)[1])


def test_rq1_constant_measures_give_no_correlation():
    # Every query retrieves its own two chunks: all suites of a size have the same CC.
    m = CoverageMatrix.from_sets([[2 * i, 2 * i + 1] for i in range(10)], 20)
    rows, _ = correlate(m.hits, [3], suites=5, seed=0)
    assert all(r["pearson_r"] is None and r["agrees"] is None for r in rows)


def test_rq1_rejects_suites_larger_than_the_pool():
    m = _random_matrix(n=8)
    with pytest.raises(RagcovError, match="exceed the pool"):
        correlate(m.hits, [5, 10], suites=10, seed=0)


def test_rq2_numbers_come_from_the_selections():
    m = _random_matrix()
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


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from ragcov.cli import app

    return CliRunner().invoke(app, args)


def test_experiment_cli(pool: Path, tmp_path: Path):
    out = tmp_path / "out"
    res = _cli(["experiment", "rq2", "--dataset", str(pool), "--retriever", "bm25", "-k", "2",
                "--repeats", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "tests to 50%" in res.output and (out / "rq2.md").exists()
    res = _cli(["experiment", "rq1", "--dataset", str(pool), "--retriever", "bm25", "-k", "2",
                "--sizes", "3,5", "--suites", "8", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Pearson r" in res.output and (out / "rq1_scatter.png").exists()


@pytest.mark.parametrize("args", [
    ["experiment", "rq1", "--dataset", "finqa"],                          # no --data
    ["experiment", "rq1", "--dataset", "POOL", "--sizes", "0,5"],
    ["experiment", "rq1", "--dataset", "POOL", "--sizes", "500", "--retriever", "bm25"],
    ["experiment", "rq2", "--dataset", "POOL", "--repeats", "0", "--retriever", "bm25"],
])
def test_experiment_cli_errors_write_nothing(pool: Path, tmp_path: Path, args: list[str]):
    out = tmp_path / "never"
    res = _cli([str(pool) if a == "POOL" else a for a in args] + ["--out", str(out)])
    assert res.exit_code != 0
    assert not out.exists()


@pytest.mark.slow
def test_rq2_dense_on_a_finqa_slice(datasets_dir: Path, tmp_path: Path, minilm_path: str):
    records = json.loads((datasets_dir / "finqa" / "dev_200.json").read_text("utf-8"))[:40]
    (tmp_path / "dev.json").write_text(json.dumps(records), "utf-8")
    setup = ExperimentSetup("finqa", tmp_path, retriever="dense", k=5, progress=False)
    r2 = run_rq2(setup, repeats=5, out_dir=tmp_path / "rq2")
    by = {r["strategy"]: r for r in r2.rows}
    assert by["coverage"]["tests_to_50"] <= by["random"]["tests_to_50"]
    assert by["coverage"]["tests_to_50"] <= by["overlap"]["tests_to_50"]
