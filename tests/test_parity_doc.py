"""Every row of docs/coverage-py-parity.md names tests that exist.

The table is the promise a coverage.py user reads; a row whose test was renamed or
deleted would be a promise nobody checks any more.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "coverage-py-parity.md"
REF = re.compile(r"`(?:(?P<file>tests/[\w/]+\.py)(?:::(?P<name>\w+))?|::(?P<more>\w+))`")


def _rows() -> list[str]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| coverage.py habit")
            and not ln.startswith("|---")]


def test_every_row_names_a_test_that_exists():
    rows = _rows()
    assert len(rows) >= 30
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 3, row
        refs = list(REF.finditer(cells[2]))
        assert refs, f"row without a test: {row}"
        current: Path | None = None
        for ref in refs:
            if ref.group("file"):
                current = ROOT / ref.group("file")
                assert current.is_file(), f"{ref.group('file')} named in: {row}"
            name = ref.group("name") or ref.group("more")
            if name is None:
                continue
            assert current is not None, row
            source = current.read_text(encoding="utf-8")
            assert re.search(rf"^(?:async )?def {name}\(", source, re.MULTILINE), \
                f"{current.name}::{name} named in the parity table does not exist"


def test_every_difference_gives_its_reason():
    for row in _rows():
        if "**differs" in row:
            ragcov_cell = row.strip("|").split("|")[1]
            assert ":" in ragcov_cell and len(ragcov_cell.split(":", 1)[1].strip()) > 20, row
