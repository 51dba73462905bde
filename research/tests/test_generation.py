"""The generation experiment: slicing, tests-to-X%, and a small end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcov.corpus import Chunk, Corpus
from ragcov.errors import RagcovError
from research.common import ExperimentSetup
from research.generation import questions_to, run_generation_experiment, slice_corpus


def test_tests_to_counts_questions_until_the_level() -> None:
    curve = [0.05, 0.1, 0.1, 0.25, 0.3]
    assert questions_to(curve, 0.1) == 2
    assert questions_to(curve, 0.3) == 5
    assert questions_to(curve, 0.31) is None
    assert questions_to([], 0.1) is None


def test_slice_keeps_whole_first_documents() -> None:
    chunks = [Chunk(f"{d}#{i}", f"text {d} {i}", d, i) for d in "abc" for i in range(2)]
    whole = Corpus(chunks)
    c = slice_corpus(whole, 2)
    assert c.ids == ["a#0", "a#1", "b#0", "b#1"]
    assert c.chunking["documents"] == 2               # the slice is part of the fingerprint
    assert slice_corpus(whole, None) is whole          # no --docs: the corpus itself
    assert slice_corpus(whole, 9).ids == whole.ids     # more documents than there are: all
    with pytest.raises(RagcovError):
        slice_corpus(Corpus(chunks), 0)


def test_small_run_writes_tables_curves_and_plot(datasets_dir: Path, tmp_path: Path) -> None:
    setup = ExperimentSetup("pubmedqa", datasets_dir / "pubmedqa", retriever="bm25", k=3,
                            progress=False)
    res = run_generation_experiment(setup, "extractive", budget=6, repeats=2,
                                    arms=["coverage", "random", "overlap"], docs=8, seed=1,
                                    thresholds=[10, 90], out_dir=tmp_path)
    assert [r["arm"] for r in res.rows] == ["coverage", "random", "overlap"]
    assert len(res.runs) == 6
    for run in res.runs:
        assert run["curve"] == sorted(run["curve"])
        # overlap may stall: with few covered chunks the extractive questions repeat
        assert run["accepted"] == 6 or (run["arm"] == "overlap"
                                        and run["stop_reason"] == "call limit")
        assert run["to_90"] is None or run["curve"][run["to_90"] - 1] >= 0.9
    random_row = next(r for r in res.rows if r["arm"] == "random")
    assert random_row["margin_vs_random"] == 0
    doc = json.loads((tmp_path / "generation.json").read_text())
    assert len(list((tmp_path / "runs").glob("*-r?.jsonl"))) == 6
    assert doc["human_reference"]["questions"] == 8
    for name in ("generation.md", "generation.csv", "generation-curves.csv",
                 "generation-curves.png"):
        assert (tmp_path / name).stat().st_size > 0
    # rerunning resumes every run instead of generating again
    again = run_generation_experiment(setup, "extractive", budget=6, repeats=2,
                                      arms=["coverage", "random", "overlap"], docs=8, seed=1,
                                      thresholds=[10, 90], out_dir=tmp_path)
    assert [r["curve"] for r in again.runs] == [r["curve"] for r in res.runs]


def test_unknown_arm_is_refused(datasets_dir: Path, tmp_path: Path) -> None:
    setup = ExperimentSetup("pubmedqa", datasets_dir / "pubmedqa", retriever="bm25")
    with pytest.raises(RagcovError, match="unknown arm"):
        run_generation_experiment(setup, "extractive", budget=2, arms=["greedy"],
                                  out_dir=tmp_path)
    assert not any(tmp_path.iterdir())
