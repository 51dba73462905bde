"""Helpers shared by test modules (imported as ``from helpers import ...``)."""

from __future__ import annotations

import pytest

from ragcov.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``ragcov ARGS`` in process: (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, captured.out, captured.err
