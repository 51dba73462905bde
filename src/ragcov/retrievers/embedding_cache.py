"""The corpus embeddings cached on disk, and the checks that decide a cache can be used.

Embedding a corpus is the slow part of a dense run, so the result is kept, keyed by
(corpus hash, model, chunking). The cache is a file anyone can damage (a partial
copy, a disk error, another tool writing there), and a damaged one is worse than
none: one NaN row makes every search return nothing and coverage read 0% with no
error. So it is checked on load and rebuilt with a warning when it is not sound.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ragcov.corpus import Corpus
from ragcov.files import atomic_path, cache_dir
from ragcov.user_warnings import warn


def embedding_cache_path(corpus: Corpus, model_name: str) -> Path:
    """Where the corpus embeddings of ``model_name`` are cached: keyed by corpus, model, chunking."""
    return cached_embeddings_of(corpus.hash, corpus.chunking, model_name)


def cached_embeddings_of(corpus_hash: str, chunking: dict, model_name: str) -> Path:
    """The same place from what a data file records (its corpus hash, the run's chunking):
    ``ragcov topics`` finds a dense run's vectors without the corpus or the model."""
    key = json.dumps({"corpus": corpus_hash, "model": model_name,
                      "chunking": chunking, "normalized": True}, sort_keys=True)
    return cache_dir() / "embeddings" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npy"


def load_cached_embeddings(path: Path, n: int, dim: int | None = None) -> np.ndarray | None:
    """The cached embeddings when present and sound, else None (the caller rebuilds them):
    a float matrix of ``n`` rows, ``dim`` columns when known, finite, unit rows as
    written. A damaged entry is reported with a warning, never trusted."""
    if not path.is_file():
        return None
    try:
        emb = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        return _damaged(path, f"unreadable ({exc})")
    problem = cache_problem(emb, n, dim)
    if problem:
        return _damaged(path, problem)
    return emb


def cache_problem(emb: np.ndarray, n: int, dim: int | None) -> str | None:
    """What is wrong with cached embeddings for ``n`` chunks, or None when nothing is."""
    if emb.ndim != 2 or emb.dtype.kind != "f":
        return f"not a matrix of floats (shape {emb.shape}, dtype {emb.dtype})"
    if emb.shape[0] != n:
        return f"{emb.shape[0]} rows for {n} chunks"
    if dim is not None and emb.shape[1] != dim:
        return f"{emb.shape[1]} dimensions, the model gives {dim}"
    finite = np.isfinite(emb).all(axis=1)
    if not finite.all():
        return f"{int((~finite).sum())} rows hold NaN or infinite values"
    norms = np.linalg.norm(emb.astype(np.float64), axis=1)
    off = (np.abs(norms - 1.0) > 1e-3) & (norms > 1e-6)  # an empty text embeds to zeros
    if off.any():
        return f"{int(off.sum())} rows are not unit vectors as saved"
    return None


def _damaged(path: Path, problem: str) -> None:
    warn(f"embedding cache {path}: {problem}; rebuilding it")
    return None


def save_embeddings(path: Path, emb: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, emb)
