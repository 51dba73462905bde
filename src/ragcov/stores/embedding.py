"""Query embeddings made with the model the store was built with.

The store's vectors came from one model; queries embedded with another would be
searched in the wrong space and coverage would measure nothing real. The model is
``--model`` when given, else the one the store records (Chroma's collection
configuration, a LanceDB table's embedding metadata), else all-MiniLM-L6-v2, and in
every case it is checked against the stored vectors first (:mod:`ragcov.stores.model_check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class QueryEncoder:
    def __init__(self, model: str | None, normalize: bool = False, backend: str | None = None) -> None:
        from ragcov.retrievers.dense import resolve_model
        from ragcov.retrievers.onnx_encoder import resolve_backend

        self.model_name, self._source = resolve_model(model)
        self.normalize = normalize
        self.backend = resolve_backend(backend, self._source)
        self._encoder: Any = None

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self._encoder is None:
            from ragcov.retrievers.dense import load_encoder

            self._encoder = load_encoder(self._source, backend=self.backend)
        vectors = self._encoder.encode(list(texts), batch_size=64, convert_to_numpy=True,
                                       normalize_embeddings=self.normalize,
                                       show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]
