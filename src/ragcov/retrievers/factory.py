"""Build a retriever from its command-line name: ``dense``, ``bm25``, ``store``, ``module:attr`` or a URL.

Each kind is imported only when asked for, so choosing BM25 never loads torch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Retriever

BUILTIN = ("dense", "bm25", "store")


def make_retriever(kind: str, corpus: Corpus, model: str | None = None,
                   index: str = "flat", progress: bool = True, **options: Any) -> Retriever:
    """Build a retriever from its CLI name: ``dense``, ``bm25``, ``store``, ``module:attr`` or a URL.

    ``store`` searches the vector store the corpus was read from (``--corpus URL``).
    """
    backend = options.pop("backend", None)  # the encoder of dense and store: torch, onnx, onnx-int8
    if kind == "dense":
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
    if kind == "bm25":
        from ragcov.retrievers.bm25 import BM25Retriever

        return BM25Retriever(corpus, progress=progress)
    if kind == "store":
        from ragcov.retrievers.store import StoreRetriever

        return StoreRetriever(corpus, model=model, backend=backend)
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
