"""The chunk vectors topics are clustered from: the ones ragcov already has.

``dense``: the embeddings a dense run (or ``ragcov index``) cached, found from what the
data file records (corpus hash, the run's chunking, the model's content digest), so no
model is loaded and nothing is embedded again. ``store``: the vectors a vector store holds for its
chunks (``--corpus URL``). ``tfidf``: the chunks' TF-IDF reduced by LSA, from the
texts the data file stores; what a BM25 run (or imported traces) gets. ``auto``
takes the run's own: dense vectors for a dense run when they are cached, the store's
when its URL is given, else TF-IDF, and says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.data.schema import Meta
    from ragcov.topics.terms import TermCounts

SOURCES = ("auto", "dense", "tfidf", "store")
STORE_PAGE = 1000


@dataclass(frozen=True)
class ChunkVectors:
    """One row per chunk in the data file's order, and what they are (``dense MODEL``,
    ``store``, ``tfidf``); ``note`` says why ``auto`` chose them when it passed one by."""

    matrix: np.ndarray
    source: str
    note: str | None = None


def check_source(vectors: str) -> None:
    if vectors not in SOURCES:
        raise RagcovError(f"--vectors must be one of {', '.join(SOURCES)}, got {vectors!r}")


def chunk_vectors(where: str, meta: Meta, texts: Sequence[str], vectors: str = "auto",
                  model: str | None = None, corpus: Corpus | None = None,
                  seed: int = 0, terms: Callable[[], TermCounts] | None = None) -> ChunkVectors:
    """The vectors of the data file ``where`` (its ``meta`` and chunk ``texts``).

    ``corpus`` (when given, already checked to be the recorded one) lets the dense
    view embed what the cache lacks and the store view read the store's vectors.
    ``terms`` gives the chunks' word counts (counted once, for the labels too) when
    TF-IDF is what is clustered.
    """
    check_source(vectors)
    fp = meta.retriever
    if vectors == "tfidf":
        return _tfidf(texts, seed, terms)
    if vectors == "store" or (vectors == "auto" and corpus is not None and corpus.store is not None):
        return _store(where, corpus, len(texts))
    if vectors == "dense":
        return _dense(where, meta, model, corpus, len(texts), required=True)  # type: ignore[return-value]
    if fp.get("kind") == "dense" or model is not None:
        found = _dense(where, meta, model, corpus, len(texts), required=False)
        if found is not None:
            return found
        name = _model_name(model or fp.get("model"))
        return _tfidf(texts, seed, terms, note=f"no cached {name} vectors for this corpus; clustered its "
                      "TF-IDF (run `ragcov index` with the corpus, or give --corpus, for dense "
                      "topics)")
    return _tfidf(texts, seed, terms)


def _tfidf(texts: Sequence[str], seed: int, terms: Callable[[], TermCounts] | None,
           note: str | None = None) -> ChunkVectors:
    from ragcov.topics.fit import tfidf_vectors

    return ChunkVectors(tfidf_vectors(texts, seed, terms() if terms else None), "tfidf", note)


def _model_name(model: str | None) -> str:
    from ragcov.retrievers.dense import resolve_model

    return resolve_model(model)[0]


def _dense(where: str, meta: Meta, model: str | None, corpus: Corpus | None, n: int,
           required: bool) -> ChunkVectors | None:
    from ragcov.retrievers.embedding_cache import (
        embedding_cache_path,
        load_cached_embeddings,
        recorded_cache_key,
    )

    fp = meta.retriever
    # The run's own model as the data file records it (its content digest keys the cache),
    # else the model asked for, known by its content as the dense retriever knows it.
    own = fp.get("kind") == "dense" and (model is None or _model_name(model) == fp.get("model"))
    if own:
        name = str(fp.get("model"))
        model_key = fp.get("model_digest") or f"name:{name}"
    else:
        from ragcov.retrievers.dense import resolve_model
        from ragcov.retrievers.model_identity import identify_model

        name, source = resolve_model(model)
        model_key = identify_model(name, source).cache_key
    variant = "onnx-int8" if own and fp.get("backend") == "onnx-int8" else ""
    chunking = fp.get("chunking") if corpus is None else corpus.chunking
    if chunking is not None:
        key = recorded_cache_key(meta.corpus_hash, chunking, model_key, variant)
        found = load_cached_embeddings(embedding_cache_path(key), n, key=key)
        if found is not None:
            return ChunkVectors(found, f"dense {name}")
    if corpus is not None:
        return ChunkVectors(_embed(corpus, name), f"dense {name}")
    if not required:
        return None
    raise RagcovError(f"{where}: no dense vectors for its corpus ({name}) in the embedding cache; "
                      "give --corpus (the recorded one) to embed it, run `ragcov index`, or use "
                      "--vectors tfidf")


def _embed(corpus: Corpus, model: str) -> np.ndarray:
    """The corpus embedded as the dense retriever embeds it (and cached as it caches it)."""
    from ragcov.retrievers import make_retriever

    return make_retriever("dense", corpus, model=model).embeddings


def _store(where: str, corpus: Corpus | None, n: int) -> ChunkVectors:
    if corpus is None or corpus.store is None:
        raise RagcovError("--vectors store reads the vectors a store holds: give --corpus, the "
                          "store's URL")
    store: Any = corpus.store
    ids = corpus.ids
    rows: list[Any] = []
    for start in range(0, len(ids), STORE_PAGE):
        part = ids[start:start + STORE_PAGE]
        got = store.stored_vectors(part)
        for cid, vec in zip(part, got):
            if vec is None:
                raise RagcovError(f"{where}: the store holds no vector for chunk {cid!r}; use "
                                  "--vectors dense or tfidf")
        rows.extend(got)
    try:
        matrix = np.asarray(rows, dtype=np.float32).reshape(n, -1)
    except ValueError:
        raise RagcovError(f"{where}: the store's vectors are not all of one length") from None
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return ChunkVectors(matrix / np.where(norms > 0, norms, 1.0), "store")
