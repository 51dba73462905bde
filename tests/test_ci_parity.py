"""ragcov in CI as coverage.py is: the gate, names a person reads, usage errors, warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.demo import sample_path

REPORTERS = ["report", "json", "xml", "lcov", "html", "badge"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled FinQA sample measured with bm25 (under a second): 55.07% at k=5."""
    from ragcov.cli import main

    folder = tmp_path_factory.mktemp("sample")
    args = ["run", "--corpus", str(sample_path("finqa_pages.jsonl")), "--split",
            "--queries", str(sample_path("finqa_questions.jsonl")), "--retriever", "bm25",
            "--data-file", str(folder / ".ragcov"), "-q"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code in (0, None)
    return folder


@pytest.fixture
def in_sample(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample)
    return sample


# 1. The gate compares the total as it is printed ---------------------------------------

def test_ratchet_on_the_printed_total_passes(in_sample: Path, capsys) -> None:
    """`--fail-under "$(ragcov report --format total)"` is the ratchet CI writes: it must pass."""
    code, total, _ = cli(capsys, "report", "--format", "total")
    assert code == 0
    total = total.strip()
    assert total == "55.07"
    assert cli(capsys, "report", "--fail-under", total)[0] == 0
    assert cli(capsys, "report", "--fail-under", "55.06")[0] == 0


def test_gate_failure_prints_the_total_at_the_compared_precision(in_sample: Path, capsys) -> None:
    code, _, err = cli(capsys, "report", "--fail-under", "55.08")
    assert code == 2
    assert "Coverage failure: total of 55.07% is less than fail-under=55.08" in err
    # An explicit precision is the precision the gate compares at, as coverage.py's.
    code, _, err = cli(capsys, "report", "--precision", "0", "--fail-under", "55.07")
    assert code == 2 and "total of 55% is less than fail-under=55.07" in err
    assert cli(capsys, "report", "--precision", "1", "--fail-under", "55.1")[0] == 0


# 2. --fail-under on every reporter, and in each reporter's config table -----------------

@pytest.mark.parametrize("command", REPORTERS)
def test_every_reporter_has_the_same_gate(in_sample: Path, capsys, command: str) -> None:
    code, _, err = cli(capsys, command, "--fail-under", "55.08")
    assert code == 2, err
    assert err.strip().splitlines()[-1] == ("Coverage failure: total of 55.07% is less than "
                                            "fail-under=55.08")
    assert cli(capsys, command, "--fail-under", "55.07")[0] == 0
    code, _, err = cli(capsys, command, "--fail-under", "101")
    assert code == 1 and "--fail-under must be a percentage from 0 to 100" in err


@pytest.mark.parametrize("command", REPORTERS)
def test_fail_under_in_a_reporters_own_table(in_sample: Path, capsys, command: str) -> None:
    (in_sample / "pyproject.toml").write_text(f"[tool.ragcov.{command}]\nfail_under = 60\n")
    try:
        code, _, err = cli(capsys, command)
        assert code == 2 and "fail-under=60" in err
        # The flag still wins over the file.
        assert cli(capsys, command, "--fail-under", "50")[0] == 0
    finally:
        (in_sample / "pyproject.toml").unlink()


def test_flat_fail_under_gates_every_reporter_but_not_gap(in_sample: Path, capsys) -> None:
    (in_sample / "ragcov.toml").write_text("fail_under = 60\n")
    try:
        for command in ("xml", "lcov"):
            code, _, err = cli(capsys, command)
            assert code == 2 and "fail-under=60" in err
        code, _, err = cli(capsys, "gap", "--tests", ".ragcov", "--traffic", ".ragcov")
        assert code == 0, err
    finally:
        (in_sample / "ragcov.toml").unlink()


def test_gate_writes_the_report_before_failing(in_sample: Path, capsys) -> None:
    """As coverage.py: the report a failing gate was run for is still there to read."""
    (in_sample / "gated.json").unlink(missing_ok=True)
    code, _, _ = cli(capsys, "json", "-o", "gated.json", "--fail-under", "99")
    assert code == 2
    assert json.loads((in_sample / "gated.json").read_text())["totals"]
