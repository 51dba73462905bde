"""``ragcov probe --engine dask``: the self-queries retrieved on a real LocalCluster give
the probes one process records, probe for probe and rank for rank; a run stopped part
way resumes from what it recorded; refusals are one line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers import cli, cluster_losing_workers

pytest.importorskip("dask.distributed")
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"


def _probes(path: Path) -> dict[str, list[tuple[int, int, float]]]:
    with sqlite3.connect(path) as con:
        ids = dict(con.execute("SELECT idx, id FROM probes"))
        hits: dict[str, list[tuple[int, int, float]]] = {}
        for pidx, chunk, rank, score in con.execute(
                "SELECT probe_idx, chunk_idx, rank, score FROM probe_hits ORDER BY probe_idx, rank"):
            hits.setdefault(ids[pidx], []).append((rank, chunk, round(score, 9)))
    return hits


def _run(capsys, tmp_path: Path, name: str) -> list[str]:
    data = tmp_path / name
    args = ["--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split", "--data-file", str(data)]
    code, _, err = cli(capsys, "run", *args, "--queries", str(SAMPLE / "finqa_questions.jsonl"),
                       "--retriever", "bm25", "-k", "3", "-q")
    assert code == 0, err
    return [*args, "--sample", "400", "-q"]


def test_a_dask_probe_records_what_a_local_probe_records(capsys, tmp_path: Path,
                                                         cluster_address: str) -> None:
    local = _run(capsys, tmp_path, "local.ragcov")
    code, _, err = cli(capsys, "probe", *local)
    assert code == 0, err
    dask = _run(capsys, tmp_path, "dask.ragcov")
    code, _, err = cli(capsys, "probe", *dask, "--engine", "dask", "--scheduler", cluster_address)
    assert code == 0, err
    here, there = _probes(tmp_path / "local.ragcov"), _probes(tmp_path / "dask.ragcov")
    assert len(here) > 512  # two probes a chunk: more than one batch of 512
    assert there == here
    code, a, _ = cli(capsys, "report", "--reachable", "--data-file", str(tmp_path / "local.ragcov"))
    code, b, _ = cli(capsys, "report", "--reachable", "--data-file", str(tmp_path / "dask.ragcov"))
    assert a.replace("local.ragcov", "") == b.replace("dask.ragcov", "")


def test_an_interrupted_dask_probe_resumes(capsys, tmp_path: Path, cluster_address: str,
                                           monkeypatch) -> None:
    from ragcov import distributed

    args = _run(capsys, tmp_path, "r.ragcov")
    real = distributed.probe_dask

    def stopped_after_one_batch(*a, **kw):
        # SIMULATED interruption (a Ctrl-C cannot be timed from a test): the driver stops
        # after recording one batch, as a KeyboardInterrupt there would.
        record = a[5]
        seen = []

        def record_then_stop(i, results):
            record(i, results)
            seen.append(i)
            if len(seen) == 1:
                raise KeyboardInterrupt

        return real(*a[:5], record_then_stop, *a[6:], **kw)

    monkeypatch.setattr(distributed, "probe_dask", stopped_after_one_batch)
    code, _, err = cli(capsys, "probe", *args, "--engine", "dask", "--scheduler", cluster_address)
    assert code == 130, err  # interrupted, as Ctrl-C ends a command
    kept = _probes(tmp_path / "r.ragcov")
    assert 0 < len(kept) <= 512  # one batch recorded before the stop
    monkeypatch.setattr(distributed, "probe_dask", real)
    code, _, err = cli(capsys, "probe", *args[:-1], "--engine", "dask", "--scheduler", cluster_address)
    assert code == 0, err
    assert f"{len(kept)} already recorded" in err
    local = _run(capsys, tmp_path, "l.ragcov")
    assert cli(capsys, "probe", *local)[0] == 0
    assert _probes(tmp_path / "r.ragcov") == _probes(tmp_path / "l.ragcov")


def test_dask_probe_refusals(capsys, tmp_path: Path) -> None:
    args = _run(capsys, tmp_path, "x.ragcov")
    code, _, err = cli(capsys, "probe", *args, "--engine", "spark")
    assert code == 1 and "unknown --engine 'spark'" in err
    code, _, err = cli(capsys, "probe", *args, "--engine", "dask", "--workers", "0")
    assert code == 1 and "--workers must be at least 1" in err
    code, _, err = cli(capsys, "probe", *args, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1 and "cannot reach the Dask scheduler" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kill", ["one busy worker", "every worker"])
def test_a_worker_lost_mid_probe_changes_no_probe(capsys, tmp_path: Path, monkeypatch,
                                                  kill: str) -> None:
    """Workers killed (SIGKILL) after the first batch is recorded: one busy with a batch,
    or every worker (the scattered corpus goes with them). The scheduler hands the lost
    batches on, the nannies start new workers, a batch lost with its corpus is sent again
    with the corpus scattered again, and the probes recorded are a local probe's, rank
    for rank."""
    from ragcov import distributed

    local = _run(capsys, tmp_path, "local.ragcov")[:-3]  # every chunk: five batches
    assert cli(capsys, "probe", *local, "-q")[0] == 0
    args = [*_run(capsys, tmp_path, "lost.ragcov")[:-3], "-q"]
    real = distributed.probe_dask
    with cluster_losing_workers(kill) as (address, kill_now, killed):

        def kill_after_a_batch(*a, **kw):
            record = a[5]

            def record_then_kill(i, results):
                record(i, results)
                kill_now()  # the workers busy with a batch: their work is what is lost

            return real(*a[:5], record_then_kill, *a[6:], **kw)

        monkeypatch.setattr(distributed, "probe_dask", kill_after_a_batch)
        code, _, err = cli(capsys, "probe", *args, "--engine", "dask", "--scheduler", address)
    assert killed and code == 0, err
    assert _probes(tmp_path / "lost.ragcov") == _probes(tmp_path / "local.ragcov")
