"""The HNSW index kept on disk beside the embedding cache, loaded instead of rebuilt.

Building the graph is the slow part of an approximate run (minutes at a million
chunks) and it is the same work every time the same embeddings are indexed with the
same parameters, so the built index is saved under the cache folder, keyed by a hash
of the embeddings and the parameters that shape the graph (M, efConstruction, the
metric, the faiss version). efSearch is not part of the key: it does not change the
graph, and it is set on the loaded index, so a search is the same as on a fresh one.

The file is one of the cache's biggest and anyone can damage it (a partial copy, a
full disk, another tool), and faiss's reader is not meant for hostile bytes. So the
file (faiss's own format) ends in a trailer with the key, the payload's length and a
CRC-32 of each 16 MiB block of it (computed on all cores), and faiss reads nothing that
failed those checks; a read index is then checked against the embeddings (count,
dimension, metric, M, a few stored vectors, and that searching them finds them).
Anything that fails is rebuilt with a warning, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir
from ragcov.retrievers.embedding_cache import embeddings_digest
from ragcov.user_warnings import NotSavedWarning, warn

MAGIC = b"ragcov-hnsw-index 1\n"
FORMAT = 1
SPOT_CHECKS = 8
SPOT_EF_SEARCH = 256  # the spot checks' own search width
_BLOCK = 16 << 20  # hashed by one thread
_TRAILER_LIMIT = 1 << 16
_LEN_WIDTH = 20


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _tree_digest(header: bytes, parts: list[bytes]) -> str:
    return hashlib.sha256(header + b"".join(parts)).hexdigest()[:32]


def file_digest(fd: int, size: int) -> str:
    """A check of the first ``size`` bytes of an open file against accidental damage:
    the CRC-32 of each 16 MiB block (twice SHA-256's speed; zlib lets go of the GIL, so
    the blocks go on all cores), then a SHA-256 of those.

    Read with ``pread`` rather than a memory map: a file cut short by another program
    while it is checked is then an error (rebuild), not a SIGBUS that kills the run."""

    def block(offset: int) -> bytes:
        chunk = os.pread(fd, min(_BLOCK, size - offset), offset)
        if len(chunk) != min(_BLOCK, size - offset):
            raise OSError("the file got shorter while it was read")
        return zlib.crc32(chunk).to_bytes(4, "big")

    with ThreadPoolExecutor(_workers()) as pool:
        parts = list(pool.map(block, range(0, size, _BLOCK)))
    return _tree_digest(str(size).encode(), parts)


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
        warn(f"HNSW index cache {path}: not saved ({exc}); the next run builds it again",
             NotSavedWarning)
    return index


def save_hnsw(path: Path, index: Any, key: dict[str, Any]) -> None:
    """Write faiss's own file, then a trailer (key, payload length and digest, magic) after
    it, atomically. faiss reads an index and ignores what follows, so the loader hands
    faiss the file itself: no copy of the index passes through Python."""
    import faiss

    with atomic_path(path) as tmp:
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb+") as fh:
            size = os.fstat(fh.fileno()).st_size
            meta = {"key": key, "payload_bytes": size, "payload_crc32_blocks": file_digest(fh.fileno(), size)}
            trailer = json.dumps(meta, sort_keys=True).encode()
            fh.seek(size)
            fh.write(b"\n" + trailer + f"{len(trailer):0{_LEN_WIDTH}d}".encode() + MAGIC)


def load_hnsw(path: Path, key: dict[str, Any], emb: np.ndarray, ef_search: int) -> Any | None:
    """The saved index when present and sound for ``emb`` and ``key``, else None (the
    caller rebuilds it). A damaged or mismatched file is reported with a warning."""
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as fh:
            index_or_problem = _read(fh, path, key)
    except OSError as exc:
        index_or_problem = f"unreadable ({exc.strerror or exc})"
    if isinstance(index_or_problem, str):
        return _damaged(path, index_or_problem)
    index = index_or_problem
    problem = index_problem(index, emb, key["M"], ef_search)
    if problem:
        return _damaged(path, problem)
    return index


def _read(fh: BinaryIO, path: Path, key: dict[str, Any]) -> Any:
    """The index read from an open file, or a string saying what is wrong with the file."""
    import faiss

    fd = fh.fileno()
    size = os.fstat(fd).st_size
    tail = len(MAGIC) + _LEN_WIDTH
    end = os.pread(fd, tail, size - tail) if size >= tail else b""
    if not end.endswith(MAGIC) or not end[:_LEN_WIDTH].isdigit():
        return "truncated, or not a ragcov HNSW index file"
    length = int(end[:_LEN_WIDTH])
    payload = size - tail - length - 1
    if length > _TRAILER_LIMIT or payload < 0:
        return "its trailer is damaged"
    raw = os.pread(fd, length + 1, payload)
    try:
        if raw[:1] != b"\n":
            raise ValueError
        meta = json.loads(raw[1:])
        saved_key, saved_size = meta["key"], int(meta["payload_bytes"])
        digest = str(meta["payload_crc32_blocks"])
    except (ValueError, KeyError, TypeError):
        return "its trailer is damaged"
    if not isinstance(saved_key, dict) or saved_key != key:
        saved = saved_key if isinstance(saved_key, dict) else {}
        changed = sorted(k for k in set(key) | set(saved) if saved.get(k) != key.get(k))
        return f"made for other embeddings or parameters ({', '.join(changed)} differ)"
    if saved_size != payload:
        return f"truncated or padded ({payload} bytes of index, the trailer says {saved_size})"
    if file_digest(fd, payload) != digest:
        return "its content does not match its checksum"
    # The file just checked, by its descriptor: not whatever the path names by now.
    source = f"/proc/self/fd/{fd}" if os.path.isdir("/proc/self/fd") else str(path)
    try:
        return faiss.read_index(source)
    except RuntimeError as exc:
        return f"faiss cannot read it ({str(exc).strip().splitlines()[0] if str(exc).strip() else 'error'})"


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
    # Searched wide: a graph built sparse on purpose (M 2, efSearch 1: an index's defects
    # planted to be found) misses some nodes at its own efSearch, and is no damaged file.
    index.hnsw.efSearch = max(ef_search, SPOT_EF_SEARCH)
    try:
        scores, found = index.search(queries, min(10, n))
    finally:
        index.hnsw.efSearch = ef_search
    own = np.einsum("ij,ij->i", queries, queries)
    # A stored vector finds itself, or a duplicate of itself scoring as high.
    lost = [int(row) for j, row in enumerate(rows)
            if row not in found[j] and not scores[j, 0] >= own[j] - 1e-5]
    if len(lost) * 2 > len(rows):
        return f"searching stored vector {lost[0]} does not find it"
    return None


def _damaged(path: Path, problem: str) -> None:
    warn(f"HNSW index cache {path}: {problem}; rebuilding it")
    return None
