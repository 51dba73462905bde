"""``--retriever store``: the store's own similarity search, with the store's model, checked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.stores.embedding import QueryEncoder
from ragcov.stores.model_check import settle_model

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.fields import Ranked


class StoreRetriever:
    """Embeds the queries once per batch and hands the vectors to the store's search.

    The model is settled (:func:`~ragcov.stores.model_check.settle_model`) before any
    query is embedded: a store whose vectors another model made is refused, not searched.
    """

    def __init__(self, corpus: Corpus, model: str | None = None, backend: str | None = None) -> None:
        store = getattr(corpus, "store", None)
        if store is None:
            raise RagcovError("--retriever store needs --corpus to be a store URL "
                              "(e.g. chroma:///PATH?collection=NAME)")
        self.store = store
        self.corpus = corpus
        self.store_model = settle_model(corpus, model)
        normalizes = getattr(store, "normalizes", None)
        self.encoder = QueryEncoder(self.store_model.model,
                                    normalize=bool(normalizes()) if callable(normalizes) else False,
                                    backend=backend)

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        return self.store.search(self.encoder.encode(texts), k)

    def fingerprint(self) -> dict[str, Any]:
        fp = {"kind": "store", **self.store.describe(), "model": self.encoder.model_name,
              **self.store_model.fingerprint(), "chunking": self.corpus.chunking}
        if self.encoder.backend == "onnx-int8":  # other query vectors, other top-k
            fp["backend"] = self.encoder.backend
        return fp


def store_run_line(corpus: Corpus, kind: str, retriever: Any, k: int) -> str | None:
    """The one stderr line of a run over a store: which store, which retriever, which model, k.

    A run over a store has three things nobody should have to guess (is it the store's
    search? which model embedded the queries? was it checked?): said once, up front,
    and recorded in the data file's retriever fingerprint as well.
    """
    store = getattr(corpus, "store", None)
    if store is None:
        return None
    described = dict(store.describe())
    where = " ".join([str(described.pop("store", "store")),
                      *(f"{key} {value}" for key, value in described.items())])
    settled = getattr(retriever, "store_model", None)
    model = f", {settled.describe()}" if settled is not None else ""
    if kind == "store":
        how = "searched by the store itself (--retriever store)"
    elif kind == "dense":
        how = ("read as the corpus and re-embedded for the built-in dense retriever, not searched "
               "by the store (its own search is --retriever store)")
    else:
        how = (f"read as the corpus for retriever {kind}, not searched by the store "
               "(its own search is --retriever store)")
    return f"ragcov: {where}: {how}{model}, k={k}"
