"""The corpus embeddings cached on disk, and the checks that decide a cache can be used.

Embedding a corpus is the slow part of a dense run, so the result is kept, keyed by
(corpus hash, model content digest, chunking, precision). The cache is a file anyone can
damage (a partial copy, a disk error, another tool writing there), and a damaged one is
worse than none: one NaN row makes every search return nothing and coverage read 0% with
no error. So it is checked on load and rebuilt with a warning when it is not sound.

Each file carries the key it was written for and a digest of its vectors. A file copied
over another corpus's or another model's entry has the right shape, finite values and
unit rows, and would pass every other check; the key inside it does not match, so it is
rebuilt. The digest finds bits changed on disk that leave the rows unit vectors.
Vectors are stored as float32 always (the search's dtype); an encoder that computes in
another precision writes under a key that names it, never into float32's entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir
from ragcov.user_warnings import NotSavedWarning, warn

_BLOCK = 1 << 24


def embedding_cache_key(corpus: Corpus, model_key: str, variant: str = "") -> str:
    """What a cache entry holds: this corpus (content and chunking) under this model
    (:attr:`ModelIdentity.cache_key`, its content digest) and encoder variant."""
    return recorded_cache_key(corpus.hash, corpus.chunking, model_key, variant)


def recorded_cache_key(corpus_hash: str, chunking: dict[str, Any], model_key: str,
                       variant: str = "") -> str:
    """The same key from what a data file records (its corpus hash, the run's chunking and
    model digest): ``ragcov topics`` finds a dense run's vectors without the corpus or the
    model."""
    return json.dumps({"corpus": corpus_hash, "model": model_key, "variant": variant,
                       "chunking": chunking, "normalized": True, "dtype": "float32"},
                      sort_keys=True)


def embedding_cache_path(key: str) -> Path:
    """Where the entry for ``key`` (:func:`embedding_cache_key`) lives."""
    return cache_dir() / "embeddings" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz"


def embeddings_digest(emb: np.ndarray) -> str:
    """A hash of an embedding matrix: its shape, dtype and every byte.

    SHA-256 of 16 MiB blocks on all cores (hashlib lets go of the GIL), then of their
    digests: the 1.5 GB of a million chunks' embeddings are hashed in parallel.
    """
    arr = np.ascontiguousarray(emb)
    flat = memoryview(arr.reshape(-1)).cast("B")
    blocks = [flat[i:i + _BLOCK] for i in range(0, len(flat), _BLOCK)]
    with ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1))) as pool:
        parts = list(pool.map(lambda b: hashlib.sha256(b).digest(), blocks))
    return hashlib.sha256(f"{arr.dtype.str}{arr.shape}".encode() + b"".join(parts)).hexdigest()[:32]


def load_cached_embeddings(path: Path, n: int, dim: int | None = None,
                           key: str | None = None) -> np.ndarray | None:
    """The cached embeddings when present and sound, else None (the caller rebuilds them):
    written for ``key``, their digest intact, a float matrix of ``n`` rows, ``dim``
    columns when known, finite, unit rows as written. A damaged entry is reported with
    a warning, never trusted."""
    if not path.is_file():
        return None
    try:
        entry = np.load(path, allow_pickle=False)
        if not isinstance(entry, np.lib.npyio.NpzFile):
            return _damaged(path, "a bare array with no key or digest (an older ragcov's entry, "
                                  "or another tool's file)")
        with entry:
            emb, stored = entry["embeddings"], _stored(entry)
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        return _damaged(path, f"unreadable ({exc})")
    if key is not None and stored.get("key") != key:
        return _damaged(path, "it was written for another corpus, model, chunking or precision "
                              "(copied over this entry?)")
    problem = cache_problem(emb, n, dim)
    if problem:
        return _damaged(path, problem)
    if stored.get("digest") != embeddings_digest(emb):
        return _damaged(path, "its vectors do not match the digest written with them")
    return emb


def _stored(entry: Any) -> dict[str, Any]:
    """The key and digest an entry was written with (an .npz member holding JSON text)."""
    meta = json.loads(str(entry["meta"][()]))
    if not isinstance(meta, dict):
        raise ValueError("its record is not an object")
    return meta


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


def save_embeddings(path: Path, emb: np.ndarray, key: str | None = None) -> None:
    """Write the entry with its key and digest, atomically: a reader sees the old entry or
    the whole new one. A cache folder that cannot be written costs the next run the
    embedding again, never this run: said once, and the run goes on."""
    meta = json.dumps({"key": key, "digest": embeddings_digest(emb)})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, embeddings=emb, meta=np.array(meta))
    except (OSError, RagcovError) as exc:  # RagcovError: atomic_path found it unwritable
        reason = getattr(exc, "strerror", None) or str(exc)
        warn(f"embedding cache {path}: not saved ({reason}); the next run embeds the corpus again",
             NotSavedWarning)
