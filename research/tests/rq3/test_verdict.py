"""The verdict across runs: APFD against random beside the exploration cost, and the aim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcov.errors import RagcovError
from research.rq3.verdict import load, rows, write_verdict


def _run(folder: Path, dataset: str, k: int, orders: dict[str, tuple[float, float]]) -> Path:
    """An rq3.json with, per order, (APFD vs random, tests to 50%); coverage needs 50 tests."""
    folder.mkdir(parents=True)
    doc = {"setup": {"dataset": dataset, "retriever": "dense", "k": k},
           "pool": {"queries": 300}, "failure_definitions": ["hit"],
           "exploration": [{"order": o, "tests_to_50": t, "tests_to_80": 2 * t}
                           for o, (_, t) in orders.items()],
           "apfd": [{"failure": "hit", "tau": 0.8, "tests": 300, "order": o, "vs_random": g,
                     "a12_vs_random": 0.9, "p_vs_random": 0.01} for o, (g, _) in orders.items()]}
    (folder / "rq3.json").write_text(json.dumps(doc))
    return folder


def test_the_aim_needs_every_configuration(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "finqa", 5, {"coverage": (-0.1, 50), "random": (0.0, 80),
                                         "good": (0.12, 57), "slow": (0.30, 58)})
    b = _run(tmp_path / "b", "convfinqa", 5, {"coverage": (-0.1, 50), "random": (0.0, 80),
                                             "good": (0.10, 55), "slow": (0.20, 60)})
    table = {r["order"]: r for r in rows(load([a, b]), "hit", 0.8)}
    assert table["good"]["aim"] == "yes"           # +10% and 1.10x at worst
    assert table["slow"]["aim"] == "no"            # 60 / 50 = 1.20x
    assert table["slow"]["worst tests to 50%"] == "1.20x"
    assert table["good"]["worst APFD vs random"] == "+10.0%"
    assert table["good"]["finqa dense k5"] == "+12.0% / 1.14x"
    text = write_verdict([a, b], tmp_path / "v.md")
    assert (tmp_path / "v.md").read_text() == text.rstrip() + "\n"
    with pytest.raises(RagcovError, match="no such file"):
        load([tmp_path / "missing"])
