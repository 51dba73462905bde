"""``--retriever store``: the store's own similarity search, with the store's model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.stores.embedding import QueryEncoder, choose_model

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.fields import Ranked


class StoreRetriever:
    """Embeds the queries once per batch and hands the vectors to the store's search."""

    def __init__(self, corpus: Corpus, model: str | None = None) -> None:
        store = getattr(corpus, "store", None)
        if store is None:
            raise RagcovError("--retriever store needs --corpus to be a store URL "
                              "(e.g. chroma:///PATH?collection=NAME)")
        self.store = store
        self.corpus = corpus
        normalizes = getattr(store, "normalizes", None)
        self.encoder = QueryEncoder(choose_model(store.recorded_model(), model),
                                    normalize=bool(normalizes()) if callable(normalizes) else False)

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        return self.store.search(self.encoder.encode(texts), k)

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "store", **self.store.describe(), "model": self.encoder.model_name,
                "chunking": self.corpus.chunking}
