"""Fixtures the research tests share: a private embedding cache, the datasets, the local
MiniLM model, and small pools (a BEIR folder, a FinQA slice).

The cache, datasets and model fixtures are in the repository's conftest.py, shared
with tests/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research.tests.helpers import write_pool


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    """A BEIR folder: 12 chunks over three topics, 18 queries (see helpers.py)."""
    return write_pool(tmp_path / "pool")


@pytest.fixture
def finqa_slice(tmp_path: Path, datasets_dir: Path) -> Path:
    """The first 80 FinQA dev records as one file."""
    records = json.loads((datasets_dir / "finqa" / "dev_200.json").read_text(encoding="utf-8"))
    p = tmp_path / "finqa_slice.json"
    p.write_text(json.dumps(records[:80]), encoding="utf-8")
    return p
