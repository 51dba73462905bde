"""The HNSW index kept on disk beside the embedding cache, loaded instead of rebuilt.

Building the graph is the slow part of an approximate run (minutes at a million
chunks) and it is the same work every time the same embeddings are indexed with the
same parameters, so the built index is saved under the cache folder, keyed by a hash
of the embeddings and the parameters that shape the graph (M, efConstruction, the
metric, the faiss version). efSearch is not part of the key: it does not change the
graph, and it is set on the loaded index, so a search is the same as on a fresh one.

The file is one of the cache's biggest and anyone can damage it (a partial copy, a
full disk, another tool), and faiss's reader is not meant for hostile bytes. So the
file carries a header with the key, the payload's length and its BLAKE2b digest, and
faiss reads nothing that failed those checks; a read index is then checked against
the embeddings (count, dimension, metric, a few stored vectors, and that searching
them finds them). Anything that fails is rebuilt with a warning, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir
from ragcov.user_warnings import warn

MAGIC = b"ragcov-hnsw-index 1\n"
FORMAT = 1
SPOT_CHECKS = 8
_BLOCK = 16 << 20
_HEADER_LIMIT = 1 << 16
_SIZE_WIDTH = 20


def embeddings_digest(emb: np.ndarray) -> str:
    """A hash of the embedding matrix: its shape, dtype and every byte."""
    arr = np.ascontiguousarray(emb)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{arr.dtype.str}{arr.shape}".encode())
    h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


def hnsw_key(emb: np.ndarray, m: int, ef_construction: int) -> dict[str, Any]:
    """What decides the graph: the embeddings and the build parameters (not efSearch)."""
    import faiss

    return {"format": FORMAT, "embeddings": embeddings_digest(emb), "n": int(emb.shape[0]),
            "dim": int(emb.shape[1]), "M": int(m), "efConstruction": int(ef_construction),
            "metric": "inner_product", "faiss": faiss.__version__}


def hnsw_cache_path(key: dict[str, Any]) -> Path:
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / "indexes" / f"hnsw-{name}.faiss"


def new_hnsw(dim: int, m: int, ef_search: int) -> Any:
    import faiss

    index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = ef_search
    return index


def hnsw_index(emb: np.ndarray, m: int = 32, ef_search: int = 128, persist: bool = True) -> Any:
    """The HNSW index over ``emb``: loaded from the cache when a sound one is there, else
    built (and saved when ``persist``). A loaded index answers exactly as the one saved."""
    index = new_hnsw(emb.shape[1], m, ef_search)
    if not persist:
        index.add(emb)
        return index
    key = hnsw_key(emb, m, index.hnsw.efConstruction)
    path = hnsw_cache_path(key)
    loaded = load_hnsw(path, key, emb, ef_search)
    if loaded is not None:
        return loaded
    index.add(emb)
    try:
        save_hnsw(path, index, key)
    except (OSError, RagcovError) as exc:  # a full or read-only disk costs the next run a build
        warn(f"HNSW index cache {path}: not saved ({exc}); the next run builds it again")
    return index


def save_hnsw(path: Path, index: Any, key: dict[str, Any]) -> None:
    """Write header + faiss payload atomically; the header's length and digest are filled
    in after the payload is streamed, so the index is never held twice in memory."""
    import faiss

    def header(size: int, digest: str) -> bytes:
        meta = {"key": key, "payload_bytes": f"{size:0{_SIZE_WIDTH}d}", "payload_blake2b": digest}
        return json.dumps(meta, sort_keys=True).encode() + b"\n"

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(MAGIC)
        placeholder = header(0, "0" * 32)
        fh.write(placeholder)
        h = hashlib.blake2b(digest_size=16)
        size = 0

        def write(chunk: bytes) -> None:
            nonlocal size
            h.update(chunk)
            size += len(chunk)
            fh.write(chunk)

        faiss.write_index(index, faiss.PyCallbackIOWriter(write))
        final = header(size, h.hexdigest())
        assert len(final) == len(placeholder)
        fh.seek(len(MAGIC))
        fh.write(final)


def load_hnsw(path: Path, key: dict[str, Any], emb: np.ndarray, ef_search: int) -> Any | None:
    """The saved index when present and sound for ``emb`` and ``key``, else None (the
    caller rebuilds it). A damaged or mismatched file is reported with a warning."""
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as fh:
            index_or_problem = _read(fh, key)
    except OSError as exc:
        index_or_problem = f"unreadable ({exc.strerror or exc})"
    if isinstance(index_or_problem, str):
        return _damaged(path, index_or_problem)
    index = index_or_problem
    problem = index_problem(index, emb, key["M"], ef_search)
    if problem:
        return _damaged(path, problem)
    return index


def _read(fh: BinaryIO, key: dict[str, Any]) -> Any:
    """The index read from an open file, or a string saying what is wrong with the file."""
    import faiss

    if fh.read(len(MAGIC)) != MAGIC:
        return "not a ragcov HNSW index file"
    line = fh.readline(_HEADER_LIMIT)
    try:
        meta = json.loads(line)
        size = int(meta["payload_bytes"])
        digest = str(meta["payload_blake2b"])
        saved_key = meta["key"]
    except (ValueError, KeyError, TypeError):
        return "its header is damaged"
    if saved_key != key:
        changed = sorted(k for k in set(key) | set(saved_key or {})
                         if (saved_key or {}).get(k) != key.get(k))
        return f"made for other embeddings or parameters ({', '.join(changed)} differ)"
    start = fh.tell()
    actual = os.fstat(fh.fileno()).st_size - start
    if actual != size:
        return f"truncated or padded ({actual} bytes of index, the header says {size})"
    h = hashlib.blake2b(digest_size=16)
    while chunk := fh.read(_BLOCK):
        h.update(chunk)
    if h.hexdigest() != digest:
        return "its content does not match its checksum"
    fh.seek(start)
    try:
        return faiss.read_index(faiss.PyCallbackIOReader(fh.read, _BLOCK))
    except RuntimeError as exc:
        return f"faiss cannot read it ({str(exc).splitlines()[0] if str(exc) else 'error'})"


def index_problem(index: Any, emb: np.ndarray, m: int, ef_search: int) -> str | None:
    """What makes a read index unfit for ``emb``, or None. Sets efSearch when fit."""
    import faiss

    if not isinstance(index, faiss.IndexHNSWFlat):
        return f"not an HNSW index ({type(index).__name__})"
    n, dim = emb.shape
    if index.ntotal != n:
        return f"{index.ntotal} vectors for {n} embeddings"
    if index.d != dim:
        return f"{index.d} dimensions, the embeddings have {dim}"
    if index.metric_type != faiss.METRIC_INNER_PRODUCT:
        return "not an inner-product index"
    if index.hnsw.nb_neighbors(1) != m:
        return f"built with M = {index.hnsw.nb_neighbors(1)}, not {m}"
    index.hnsw.efSearch = ef_search
    if n == 0:
        return None
    rows = np.sort(np.random.default_rng(0).choice(n, size=min(SPOT_CHECKS, n), replace=False))
    stored = np.vstack([index.reconstruct(int(i)) for i in rows])
    if not np.array_equal(stored, emb[rows]):
        return "its stored vectors differ from the embeddings"
    queries = np.ascontiguousarray(emb[rows], dtype=np.float32)
    scores, found = index.search(queries, min(10, n))
    own = np.einsum("ij,ij->i", queries, queries)
    for j, row in enumerate(rows):
        # A stored vector finds itself, or a duplicate of itself scoring as high.
        if row not in found[j] and not scores[j, 0] >= own[j] - 1e-5:
            return f"searching stored vector {int(row)} does not find it"
    return None


def _damaged(path: Path, problem: str) -> None:
    warn(f"HNSW index cache {path}: {problem}; rebuilding it")
    return None
