"""The workload ceiling: queries x k / chunks, the most a suite can cover, beside every total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import cli
from ragcov.summary import workload_ceiling


def test_the_issue_s_example_by_hand() -> None:
    # 80 questions at k=5 over 3,190 chunks retrieve at most 400 chunks: 12.54%.
    assert workload_ceiling(80, 5, 3190) == pytest.approx(400 / 3190)
    assert workload_ceiling(10, 5, 20) == 1.0  # capped: 50 retrievals over 20 chunks
    assert workload_ceiling(3, 2, 0) == 0.0


@given(st.integers(0, 10_000), st.integers(1, 100), st.integers(1, 100_000))
def test_the_ceiling_bounds_every_coverage(queries: int, k: int, chunks: int) -> None:
    ceiling = workload_ceiling(queries, k, chunks)
    assert 0.0 <= ceiling <= 1.0
    # No suite covers more distinct chunks than it retrieves.
    assert min(queries * k, chunks) / chunks == pytest.approx(ceiling)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch, city_corpus_file: Path) -> Path:
    (tmp_path / "queries.jsonl").write_text(json.dumps({"id": "q1", "query": "capital of France"}) + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_beside_every_total_and_a_gate_above_it_warned_at_once(capsys, workdir: Path) -> None:
    code, out, _ = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                       "--retriever", "bm25", "--k", "2")
    assert code == 0
    assert "; workload ceiling 25.0% (1 query x k=2 of 8 chunks)" in out  # the run's headline
    code, out, err = cli(capsys, "report")
    assert out.splitlines()[0].endswith("; workload ceiling 25% (1 query x k=2 of 8 chunks)")
    code, out, err = cli(capsys, "report", "--format", "markdown")
    assert "workload ceiling 25% (1 query x k=2 of 8 chunks)" in out
    code, out, err = cli(capsys, "json", "-o", "-")
    assert json.loads(out)["totals"]["workload_ceiling"] == pytest.approx(0.25)
    # --fail-under above the ceiling: one line on stderr, before the report, and the gate fails.
    code, out, err = cli(capsys, "report", "--fail-under", "80")
    assert code == 2
    warning = [line for line in err.splitlines() if "ceiling" in line]
    assert warning == ["ragcov: warning: --fail-under 80 is above the workload ceiling 25.00% (1 query x "
                       "k=2 of 8 chunks): no retriever can pass it with this suite; add queries, raise k, "
                       "or gate at or below the ceiling"]
    code, out, err = cli(capsys, "report", "--fail-under", "20")
    assert "ceiling" not in err
    code, out, err = cli(capsys, "xml", "-o", "cov.xml", "--fail-under", "30")
    assert code == 2 and "above the workload ceiling" in err
