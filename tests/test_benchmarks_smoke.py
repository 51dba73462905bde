"""The one benchmark command runs and prints its table (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "run"


def test_tiny_run_prints_a_table_and_writes_json(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(RUN), "--tiny", "--only", "metrics,index",
                           "--markdown", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ragcov benchmarks (tiny); command: benchmarks/run --tiny")
    assert lines[1] == ("| Benchmark | ragcov s | baseline s | ratio | aim | peak MiB | note |")
    body = [ln for ln in lines[3:] if ln.startswith("| ")]
    rows = json.loads(out.read_text())
    # metrics: 1 row; index (one size): search, build, load of the persisted HNSW
    assert len(body) == len(rows) == 4
    assert [r["bench"] for r in rows] == ["metrics", "index", "index", "index"]
    assert rows[3]["identical"] is True and rows[3]["n"] == 5_000
    metrics = rows[0]
    assert metrics["seconds"] > 0 and metrics["baseline_seconds"] > 0
    assert metrics["ratio"] == metrics["baseline_seconds"] / metrics["seconds"]
    assert "0.2M hits" in metrics["name"] and metrics["peak_mib"] > 0
    search = rows[1]
    assert 0.0 <= search["recall"] <= 1.0 and search["n"] == 5_000
    assert f"| {search['name']} |" in proc.stdout


def test_modes_and_names_are_checked(tmp_path):
    proc = subprocess.run([sys.executable, str(RUN), "--only", "nonsense"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown benchmark" in proc.stderr
    proc = subprocess.run([sys.executable, str(RUN), "--tiny", "--only", "metrics,nonsense"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "nonsense" in proc.stderr


@pytest.mark.slow
def test_every_benchmark_runs_at_its_smallest_size(tmp_path):
    """A change that breaks a benchmark (an internal it reaches for moved) fails here, not
    the next time someone measures: each one runs once, at its smallest size."""
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(RUN), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    failed = [r["name"] for r in rows if "FAILED" in r["name"] or "not run" in r["name"]]
    assert failed == [], failed
    listed = (RUN.read_text().split("BENCHMARKS = (", 1)[1].split(")", 1)[0])
    expected = {name.strip().strip('"') for name in listed.replace("\n", " ").split(",") if name.strip()}
    assert {r["bench"] for r in rows} == expected


def test_topics_benchmark_runs_at_a_small_size(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(RUN), "--tiny", "--only", "topics", "--json",
                           str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())
    assert [r["name"].split(",")[0] for r in rows] == [
        "topics: `ragcov topics` dense", "topics: `ragcov topics` tfidf",
        "topics: `ragcov topics` tfidf --engine dask --workers 2"]
    assert all(r["seconds"] > 0 and "1,000 chunks" in r["name"] for r in rows)
    # On a 2-worker LocalCluster: the one-process topics, chunk for chunk.
    assert rows[2]["note"].endswith("the same topics, chunk for chunk: True")
    # The synthetic subjects' own words lead the labels: "... in H/T topics".
    for r in rows[:2]:
        hits, topics = r["note"].rsplit(" in ", 1)[1].split(" ")[0].split("/")
        assert int(topics) > 0 and int(hits) >= int(topics) // 2


@pytest.mark.slow  # builds a model and starts ragcov once: half a minute on a quiet 2-core machine
def test_the_gpu_benchmark_at_its_smallest_size(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(RUN), "--tiny", "--only", "gpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())
    names = [r["name"] for r in rows]
    assert names[0].startswith("CPU: bare SentenceTransformer fp32, batch 64, 48 chunks")
    assert names[1].startswith("CPU: ragcov run --device cpu as typed")
    assert all(r["chunks_per_s"] > 0 and r["seconds"] > 0 for r in rows if "chunks_per_s" in r)
    import torch

    if torch.cuda.is_available():
        assert any(n.startswith("GPU (") and "ragcov run as typed" in n for n in names)
    else:  # one line says why the GPU rows are not there
        assert names[-1] == "GPU rows skipped"
        assert rows[-1]["note"].startswith("torch.cuda.is_available() is false")


def test_the_gpu_benchmark_checks_its_sizes_first():
    script = RUN.parent / "gpu.py"
    proc = subprocess.run([sys.executable, str(script), "--chunks", "0"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "--chunks and --cpu-chunks must be at least 1" in proc.stderr
