"""Build a retriever from its command-line name: ``dense``, ``bm25``, ``store``, ``module:attr`` or a URL.

One registry, :data:`RETRIEVERS`, maps each built-in name to its factory, the same
style as the store registry (:data:`ragcov.stores.urls.REGISTRY`). A factory imports
its retriever only when called, so choosing BM25 never loads torch. A name not in the
registry is a URL (the HTTP retriever) or a ``module:attr`` (the team's own).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Retriever

# Every factory takes the same arguments: corpus, model, index, progress, backend, options.
Factory = Callable[["Corpus", "str | None", str, bool, "str | None", dict[str, Any]], "Retriever"]


def _dense(corpus: Corpus, model: str | None, index: str, progress: bool, backend: str | None,
           options: dict[str, Any]) -> Retriever:
    from ragcov.retrievers.dense import DenseRetriever

    settled = None
    if getattr(corpus, "store", None) is not None:
        # Re-embedding a store's texts with a model that did not make its vectors
        # measures another retriever than production's: checked before the corpus is embedded.
        from ragcov.retrievers.store import settle_model

        settled = settle_model(corpus, model)
        model = settled.model
    dense = DenseRetriever(corpus, model=model, index=index, progress=progress, backend=backend,
                           **options)
    if settled is not None:
        dense.store_model = settled  # type: ignore[attr-defined]
        dense.store_fingerprint = settled.fingerprint()  # type: ignore[attr-defined]
    return dense


def _bm25(corpus: Corpus, model: str | None, index: str, progress: bool, backend: str | None,
          options: dict[str, Any]) -> Retriever:
    from ragcov.retrievers.bm25 import BM25Retriever, resolve_stemmer

    # auto (the corpus's language's Snowball stemmer; none for English), none, or a name.
    # One setting for every command, so a probe or a drift copy stems as the run did (the
    # stemmer is in the fingerprint: a different one is refused as another retriever).
    given = os.environ.get("RAGCOV_STEMMER")
    stemmer = resolve_stemmer((given or "auto").strip().lower(), corpus.texts,
                              named="RAGCOV_STEMMER" if given else None)
    return BM25Retriever(corpus, progress=progress, stemmer=stemmer or "none")


def _store(corpus: Corpus, model: str | None, index: str, progress: bool, backend: str | None,
           options: dict[str, Any]) -> Retriever:
    """The vector store the corpus was read from (``--corpus URL``), searched by itself."""
    from ragcov.retrievers.store import StoreRetriever

    return StoreRetriever(corpus, model=model, backend=backend, device=options.get("device", "auto"))


RETRIEVERS: dict[str, Factory] = {"dense": _dense, "bm25": _bm25, "store": _store}


def make_retriever(kind: str, corpus: Corpus, model: str | None = None,
                   index: str = "flat", progress: bool = True, **options: Any) -> Retriever:
    """Build a retriever from its CLI name: a key of :data:`RETRIEVERS`, ``module:attr`` or a URL."""
    backend = options.pop("backend", None)  # the encoder of dense and store: torch, onnx, onnx-int8
    # Where dense and store embed (ragcov.retrievers.hardware): no other retriever takes them.
    hardware = {key: options.pop(key) for key in ("device", "dtype") if key in options}
    if kind == "dense":
        options.update(hardware)
    elif kind == "store" and "device" in hardware:
        options["device"] = hardware["device"]  # the query encoder's; the store's vectors are made
    if kind in RETRIEVERS:
        return RETRIEVERS[kind](corpus, model, index, progress, backend, options)
    if kind.startswith(("http://", "https://")):
        try:
            from ragcov.retrievers.http import HTTPRetriever
        except ImportError as exc:  # pragma: no cover - depends on installed extras
            raise RagcovError(f"the HTTP retriever is not available: {exc}") from exc
        return HTTPRetriever(kind, **options)
    if ":" in kind:
        try:
            from ragcov.retrievers.loader import load_retriever
        except ImportError as exc:  # pragma: no cover
            raise RagcovError(f"custom retrievers are not available: {exc}") from exc
        return load_retriever(kind, corpus)
    raise RagcovError(
        f"unknown retriever {kind!r}: expected 'dense', 'bm25', 'store', 'module:attr' or an "
        "http(s) URL"
    )


def default_retriever(retriever: str | None, corpus: str | os.PathLike[str]) -> str:
    """A store URL is searched by the store unless another retriever is asked for by name.

    Defaulting to ``dense`` there re-embedded the whole store with a model nobody chose
    and measured a retriever production never runs.
    """
    if retriever is not None:
        return retriever
    from ragcov.stores import is_store_url

    return "store" if is_store_url(corpus) else "dense"
