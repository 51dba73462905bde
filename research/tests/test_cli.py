"""``python -m research``: the four experiments, their shared options, errors that write nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from research.cli import SHARED_FIRST, SHARED_LAST, app, main

ROOT = Path(__file__).resolve().parents[2]


def _cli(args: list[str]):
    from typer.testing import CliRunner

    return CliRunner().invoke(app, args)


def test_python_dash_m_research_lists_the_four_experiments() -> None:
    proc = subprocess.run([sys.executable, "-m", "research", "--help"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    for command in ("rq1", "rq2", "rq3", "generation"):
        assert command in proc.stdout


def test_every_experiment_takes_the_shared_options() -> None:
    group = typer.main.get_command(app)
    shared = [name for name, _, _ in SHARED_FIRST + SHARED_LAST]
    assert sorted(group.commands) == ["generation", "rq1", "rq2", "rq3", "rq3-verdict", "topics"]
    for name, command in group.commands.items():
        if name == "rq3-verdict":       # reads the runs' outputs: no experiment of its own
            continue
        params = [p.name for p in command.params]
        assert params[:5] == shared[:5] and params[-4:] == shared[5:], name
        opts = {o for p in command.params for o in p.opts}
        assert {"--dataset", "--data", "--retriever", "--model", "--k", "-k", "--seed",
                "--chunk-size", "--chunk-overlap", "--out"} <= opts, name


def test_experiment_cli(pool: Path, tmp_path: Path):
    out = tmp_path / "out"
    res = _cli(["rq2", "--dataset", str(pool), "--retriever", "bm25", "-k", "2",
                "--repeats", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "tests to 50%" in res.output and (out / "rq2.md").exists()
    res = _cli(["rq1", "--dataset", str(pool), "--retriever", "bm25", "-k", "2",
                "--sizes", "3,5", "--suites", "8", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Pearson r" in res.output and (out / "rq1_scatter.png").exists()


@pytest.mark.parametrize("args", [
    ["rq1", "--dataset", "finqa"],                          # no --data
    ["rq1", "--dataset", "POOL", "--sizes", "0,5"],
    ["rq1", "--dataset", "POOL", "--sizes", "500", "--retriever", "bm25"],
    ["rq2", "--dataset", "POOL", "--repeats", "0", "--retriever", "bm25"],
])
def test_experiment_cli_errors_write_nothing(pool: Path, tmp_path: Path, args: list[str]):
    out = tmp_path / "never"
    res = _cli([str(pool) if a == "POOL" else a for a in args] + ["--out", str(out)])
    assert res.exit_code != 0
    assert not out.exists()


def test_rq3_cli(capsys, tmp_path: Path, finqa_slice: Path) -> None:
    out = tmp_path / "cli"
    with pytest.raises(SystemExit) as exc:
        main(["rq3", "--dataset", "finqa", "--data", str(finqa_slice),
              "--retriever", "bm25", "--k", "2", "--repeats", "2", "--taus", "0.8", "--metrics", "hit",
              "--out", str(out)])
    assert exc.value.code in (0, None)
    assert "Coverage-guided against random" in capsys.readouterr().out
    assert (out / "rq3.json").is_file()
    bad = tmp_path / "bad"
    with pytest.raises(SystemExit) as exc:
        main(["rq3", "--dataset", "finqa", "--data", str(finqa_slice),
              "--retriever", "bm25", "--taus", "0.8,7", "--out", str(bad)])
    assert exc.value.code == 1 and "--taus" in capsys.readouterr().err
    assert not bad.exists()
