"""``ragcov drift --engine dask``: the copies made, searched and judged on a real
LocalCluster give the drift run one process records, copy for copy and test for test."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import cli, cluster_losing_workers, kill_after_first_task

pytest.importorskip("dask.distributed")
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"


def _rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as con:
        tables = [t for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'drift%'")]
        out = []
        for table in sorted(tables):
            cols = [c[1] for c in con.execute(f"PRAGMA table_info({table})")]
            keep = [c for c in cols if c not in ("created", "finished", "started")]
            out.append((table, sorted(con.execute(f"SELECT {', '.join(keep)} FROM {table}"))))
    return out


def _drift_args(tmp_path: Path, questions: int, resamples: int) -> list[str]:
    """A drift of the sample's first ``questions`` questions over three relations, as JSON."""
    path = tmp_path / "q.jsonl"
    rows = [json.loads(line) for line in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["question"]}) + "\n"
                            for r in rows[:questions]))
    return ["--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split", "--queries", str(path),
            "--retriever", "bm25", "-k", "3", "--relation", "noise,format,duplicate",
            "--resamples", str(resamples), "--format", "json"]


def test_a_dask_drift_records_what_a_local_drift_records(capsys, tmp_path: Path,
                                                         cluster_address: str) -> None:
    args = _drift_args(tmp_path, 40, 200)
    code, here, err = cli(capsys, "drift", *args, "--data-file", str(tmp_path / "local.ragcov"))
    assert code == 0, err
    code, there, err = cli(capsys, "drift", *args, "--data-file", str(tmp_path / "dask.ragcov"),
                           "--engine", "dask", "--scheduler", cluster_address)
    assert code == 0, err
    assert json.loads(there) == json.loads(here)
    assert len(json.loads(here)["relations"]) >= 3
    assert _rows(tmp_path / "dask.ragcov") == _rows(tmp_path / "local.ragcov")


def test_dask_drift_refusals(capsys, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q", "text": "net revenue"}) + "\n")
    args = ["--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split", "--queries", str(questions),
            "--retriever", "bm25", "--relation", "noise", "--resamples", "100", "-q",
            "--data-file", str(tmp_path / "x.ragcov")]
    code, _, err = cli(capsys, "drift", *args, "--engine", "spark")
    assert code == 1 and "unknown --engine 'spark'" in err
    code, _, err = cli(capsys, "drift", *args, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1 and "cannot reach the Dask scheduler" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kill", ["one busy worker", "every worker"])
def test_a_worker_lost_mid_drift_changes_no_row(capsys, tmp_path: Path, monkeypatch,
                                                kill: str) -> None:
    """Workers killed (SIGKILL) once the first copy is back: one busy with a copy, or every
    worker (the job scattered to them goes too). Lost copies are sent again with the job
    scattered again, and the drift run is one process's, copy for copy."""
    args = _drift_args(tmp_path, 20, 100)
    code, here, err = cli(capsys, "drift", *args, "--data-file", str(tmp_path / "local.ragcov"))
    assert code == 0, err
    with cluster_losing_workers(kill) as (address, kill_now, killed):
        kill_after_first_task(monkeypatch, kill_now)
        code, there, err = cli(capsys, "drift", *args, "--data-file", str(tmp_path / "lost.ragcov"),
                               "--engine", "dask", "--scheduler", address)
    assert killed and code == 0, err
    assert json.loads(there) == json.loads(here)
    assert _rows(tmp_path / "lost.ragcov") == _rows(tmp_path / "local.ragcov")
