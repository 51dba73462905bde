"""``--retriever store``: the store's own similarity search, with the store's model, checked.

A store holds vectors; searching it is retrieval, and choosing the model that embeds the
queries (:func:`settle_model`, also applied by the dense retriever over a store) needs the
dense retriever's encoders. So this module lives with the retrievers and imports the
store readers (:mod:`ragcov.stores`), never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.retrievers.dense import encode, load_encoder, resolve_model
from ragcov.retrievers.hardware import resolve_placement
from ragcov.retrievers.model_identity import ModelIdentity, identify_model
from ragcov.stores.model_check import (
    MIN_MEAN_COSINE,
    ModelCheck,
    StoreModelWarning,
    compare_vectors,
    sample_positions,
)
from ragcov.user_warnings import warn

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.fields import Ranked


class QueryEncoder:
    """Query embeddings made with the model the store was built with.

    The store's vectors came from one model; queries embedded with another would be
    searched in the wrong space and coverage would measure nothing real. The model is
    ``--model`` when given, else the one the store records (Chroma's collection
    configuration, a LanceDB table's embedding metadata), else all-MiniLM-L6-v2, and in
    every case it is checked against the stored vectors first (:func:`settle_model`).
    """

    def __init__(self, model: str | None, normalize: bool = False, backend: str | None = None,
                 device: str | None = "auto") -> None:
        self.model_name, self._source = resolve_model(model)
        self.normalize = normalize
        self.placement = resolve_placement(device, "fp32", backend, self._source)
        self.backend = self.placement.backend
        self._encoder: Any = None

    def identity(self) -> ModelIdentity:
        """The query model known by its content, as the fingerprint records it."""
        return identify_model(self.model_name, self._source)

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self._encoder is None:
            self._encoder = load_encoder(self._source, placement=self.placement)
        vectors = self._encoder.encode(list(texts), batch_size=64, convert_to_numpy=True,
                                       normalize_embeddings=self.normalize,
                                       show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]


@dataclass(frozen=True, slots=True)
class SettledModel:
    """The model a store run embeds with, where it came from, and what the check found."""

    model: str | None  # what to load (None: the default model)
    name: str  # its canonical name, as fingerprints record it
    origin: str  # "given" (--model), "recorded" (by the store) or "default"
    check: ModelCheck

    def fingerprint(self) -> dict[str, Any]:
        return {"model_origin": self.origin, "model_check": self.check.verdict}

    def describe(self) -> str:
        told = {"given": "from --model", "recorded": "recorded by the store",
                "default": "the default"}[self.origin]
        if self.check.checked and self.check.agrees:
            state = (f"checked: mean cosine {self.check.mean_cosine:.4f} over "
                     f"{self.check.compared} stored vectors"
                     + ("" if self.check.form == "text" else f", texts embedded as {self.check.form}"))
        elif self.check.checked:
            state = "DISAGREES with the stored vectors"
        else:
            state = "unchecked: the store gave no vectors"
        return f"model {self.name} ({told}; {state})"


ORIGIN_WORDS = {"given": "given with --model", "recorded": "recorded by the store",
                "default": "the default; the store records no model"}


def settle_model(corpus: Corpus, given: str | None) -> SettledModel:
    """The model to embed with over a store, checked against the vectors the store holds.

    ``--model`` wins over the store's record and the default: a disagreement then is a
    warning (the user said which model; the warning says the stored vectors disagree).
    Without ``--model``, a disagreement is refused, and so is a store that can give no
    vectors and names no model, since nothing would say the default is right.
    """
    store = corpus.store
    recorded = store.recorded_model()
    model = given or recorded
    origin = "given" if given else "recorded" if recorded else "default"
    name, source = resolve_model(model)
    positions = sample_positions(corpus.texts)
    ids = [corpus.ids[i] for i in positions]
    texts = [corpus.texts[i] for i in positions]
    reader = getattr(store, "stored_vectors", None)
    stored = reader(ids) if callable(reader) and ids else []

    def embed(batch: list[str]) -> Any:
        return encode(load_encoder(source), batch, progress=False)

    check = compare_vectors(texts, stored, embed, name)
    reading = getattr(corpus, "reading", None)
    framed = getattr(reading, "embed_texts", None) or {}
    if any(cid in framed for cid in ids):
        # The framework embedded more than the text (LlamaIndex: its metadata template and
        # the text): the vectors are checked against that too, and the form that agrees is said.
        form = f"{reading.framework or 'the framework'} embeds them (metadata template + text)"
        as_embedded = compare_vectors([framed.get(cid, text) for cid, text in zip(ids, texts)],
                                      stored, embed, name)
        if as_embedded.mean_cosine is not None and (
                check.mean_cosine is None or as_embedded.mean_cosine > check.mean_cosine):
            check = replace(as_embedded, form=form)
    where = f"{corpus.source or store.url}"
    if not check.checked:
        if origin == "default":
            raise RagcovError(f"{where}: the store records no embedding model and gives no stored "
                              f"vectors to check one against: pass --model with the model that "
                              f"made its vectors")
    elif not check.agrees:
        message = (f"{where}: the stored vectors were not made by {name} ({ORIGIN_WORDS[origin]}): "
                   f"{check.describe()}, below {MIN_MEAN_COSINE}")
        if origin != "given":
            raise RagcovError(f"{message}; pass --model with the model that made the store's vectors")
        warn(f"{message}; measuring with --model {name} as asked", StoreModelWarning)
    return SettledModel(model, name, origin, check)


class StoreRetriever:
    """Embeds the queries once per batch and hands the vectors to the store's search.

    The model is settled (:func:`settle_model`) before any
    query is embedded: a store whose vectors another model made is refused, not searched.
    """

    def __init__(self, corpus: Corpus, model: str | None = None, backend: str | None = None,
                 device: str | None = "auto") -> None:
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
                                    backend=backend, device=device)

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        return self.store.search(self.encoder.encode(texts), k)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """The query vectors the store is searched with, as an array."""
        import numpy as np

        return np.asarray(self.encoder.encode(texts), dtype=np.float32).reshape(len(texts), -1)

    def search_vectors(self, vectors: Any, k: int) -> list[Ranked]:
        """The store's own search of query vectors already embedded (``ragcov probe``
        holds the same vectors against exact search over the stored ones)."""
        return self.store.search([list(map(float, v)) for v in vectors], k)

    def fingerprint(self) -> dict[str, Any]:
        fp = {"kind": "store", **self.store.describe(), **self.encoder.identity().fingerprint(),
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
    reading = getattr(corpus, "reading", None)
    ids = f"; {reading.describe()}" if reading is not None else ""
    return f"ragcov: {where}: {how}{model}{ids}, k={k}"
