"""Coverage by topic (research/topics.py): the figures it derives, and one run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragcov.matrix import CoverageMatrix
from research.common import ExperimentSetup
from research.topics import SUITES, label_agreement, per_topic_cc, run_topics


def test_per_topic_cc_of_a_sub_suite():
    # Chunks 0-2 in topic 1, 3-4 in topic 2; query 0 retrieves 0 and 3, query 1 retrieves 1.
    m = CoverageMatrix.from_sets([[0, 3], [1]], n_chunks=5)
    topic = np.array([1, 1, 1, 2, 2])
    assert per_topic_cc(m, np.array([0]), topic, 2)[1:].tolist() == [1 / 3, 1 / 2]
    assert per_topic_cc(m, np.array([0, 1]), topic, 2)[1:].tolist() == [2 / 3, 1 / 2]
    assert per_topic_cc(m, np.array([1]), topic, 2)[1:].tolist() == [1 / 3, 0.0]


def test_label_agreement_follows_the_topic_sharing_most_chunks():
    a = np.array([1, 1, 1, 2, 2, 3])
    b = np.array([2, 2, 1, 1, 1, 1])      # A's topic 1 lives mostly in B's 2; A's 2 and 3 in B's 1
    a_terms = [["tax"], ["lease"], ["pension"]]
    b_terms = [["lease"], ["tax"]]
    assert label_agreement(a, a_terms, b, b_terms) == 2   # tax -> tax, lease -> lease
    assert label_agreement(a, a_terms, b, [["x"], ["y"]]) == 0


def test_run_topics_end_to_end(pool: Path, tmp_path: Path):
    setup = ExperimentSetup(str(pool), retriever="bm25", k=2, progress=False)
    result = run_topics(setup, budget=6, seed=0, generate_budget=2, out_dir=tmp_path / "out")
    assert [p.name for p in result.paths] == ["topics.md", "topics.csv", "topics.json"]
    doc = json.loads((tmp_path / "out" / "topics.json").read_text())
    by = {row["suite"]: row for row in result.summary}
    assert [r["suite"] for r in result.summary] == list(SUITES)
    assert by["pool"]["questions"] == 18 and by["shipped"]["questions"] == 6 == by["selected"]["questions"]
    # Greedy selection covers at least as much as the random draw of the same size.
    assert by["selected"]["cc"] >= by["shipped"]["cc"]
    assert sum(t["chunks"] for t in result.topics) == 12 == sum(t.get("chunks") for t in doc["topics"])
    weighted = sum(t["cc_pool"] * t["chunks"] for t in result.topics) / 12
    assert weighted == pytest.approx(by["pool"]["cc"])
    assert len(result.stability) == 4 and all(-1 <= r["ari"] <= 1 for r in result.stability)
    assert {m["method"].split(",")[0] for m in result.methods} == {"KMeans", "MiniBatchKMeans",
                                                                    "HDBSCAN"}
    g = result.generation
    assert g["topic"] == result.topics[0]["topic"]  # the darkest topic of the shipped suite
    assert g["topic_cc_after"] >= g["topic_cc_before"] == pytest.approx(result.topics[0]["cc_shipped"])
    assert "Coverage by topic" in result.markdown
