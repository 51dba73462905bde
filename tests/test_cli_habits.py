"""coverage.py's habits that users bring to ragcov: --version, exit statuses, negatable flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import cli
from ragcov import __version__


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch, city_corpus_file: Path, capsys) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "Tokyo, the capital of Japan"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                       "--retriever", "bm25", "--k", "1", "-q")
    assert code == 0, err
    return tmp_path


def test_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "ragcov", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"ragcov {__version__}"


def test_usage_error_exits_1_and_fail_under_2(recorded: Path, capsys) -> None:
    """CI must tell a mistyped option (1) from coverage under the gate (2)."""
    code, _, err = cli(capsys, "report", "--fail-under", "40", "--skip-covred")
    assert code == 1 and "--skip-covred" in err
    code, _, err = cli(capsys, "report", "--precision", "many")
    assert code == 1
    code, _, err = cli(capsys, "report", "--fail-under", "40")
    assert code == 2 and "Coverage failure" in err


@pytest.mark.parametrize("value", ["150", "-5", "100.5"])
def test_fail_under_out_of_range_is_refused(recorded: Path, capsys, value: str) -> None:
    code, _, err = cli(capsys, "report", "--fail-under", value)
    assert code == 1 and "--fail-under must be a percentage from 0 to 100" in err


def test_show_missing_from_config_can_be_turned_off(recorded: Path, capsys) -> None:
    (recorded / "ragcov.toml").write_text("[report]\nshow_missing = true\n")
    _, with_missing, _ = cli(capsys, "report")
    _, without, _ = cli(capsys, "report", "--no-show-missing")
    assert "Missing" in with_missing or "berlin" in with_missing
    assert with_missing != without
    assert "berlin" not in without


def test_warnings_are_one_line_without_source(tmp_path: Path) -> None:
    (tmp_path / "chatty.py").write_text(textwrap.dedent("""
        import warnings
        def retriever(text, k):
            warnings.warn("ids matched by content", UserWarning)
            return ["a"]
    """))
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "y"}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "ragcov", "run", "--corpus", "c.jsonl",
                           "--queries", "q.jsonl", "--retriever", "chatty:retriever", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "ragcov: warning: ids matched by content"


def test_skip_covered_can_be_turned_off(recorded: Path, capsys) -> None:
    (recorded / "ragcov.toml").write_text("[report]\nskip_covered = true\n")
    _, skipping, _ = cli(capsys, "report")
    code, plain, _ = cli(capsys, "report", "--no-skip-covered")
    assert code == 0
    assert "asia" not in skipping and "asia" in plain


def test_skip_covered_says_how_many_documents_it_left_out(recorded: Path, capsys) -> None:
    _, out, _ = cli(capsys, "report", "--skip-covered")
    assert out.rstrip().endswith("1 document skipped due to complete coverage.")
    assert "asia" not in out
    _, out, _ = cli(capsys, "report")
    assert "skipped" not in out and "asia" in out
