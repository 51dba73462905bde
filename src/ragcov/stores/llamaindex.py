"""A persisted LlamaIndex storage folder (``storage_context.persist``): ``llamaindex:///PATH``.

Chunks are the docstore's nodes in the vector store's order; the document is the
node's ``ref_doc_id`` unless its metadata names one. Search is the vector store's
own ``query``, as ``index.as_retriever()`` runs it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.stores.base import (
    PAGE_SIZE,
    StoreChunk,
    VectorsUnavailable,
    index_settings,
    require,
    vector_pages,
)
from ragcov.stores.urls import StoreURL


class LlamaIndexStore:
    def __init__(self, url: StoreURL) -> None:
        core = require("llama_index.core", "LlamaIndex")
        self.url = url.url
        try:
            self.storage = core.StorageContext.from_defaults(persist_dir=url.path)
        except (OSError, ValueError) as exc:
            raise RagcovError(f"{url.url}: not a LlamaIndex storage folder ({exc})") from None
        self.vector_store = self.storage.vector_store
        self.name = url.param("index") or "default"

    def recorded_model(self) -> str | None:
        return None

    def _node_ids(self) -> list[str]:
        data = getattr(self.vector_store, "data", None)
        embeddings = getattr(data, "embedding_dict", None)
        if embeddings:
            return list(embeddings)
        return list(self.storage.docstore.docs)

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]:
        """Each node as LlamaIndex's own vector stores write it (``node_to_metadata_dict``),
        so one reader (:func:`ragcov.stores.payload.llamaindex_row`) takes its text, its
        metadata, its document and the text LlamaIndex embedded, whatever the store."""
        from llama_index.core.schema import MetadataMode
        from llama_index.core.vector_stores.utils import node_to_metadata_dict

        docstore = self.storage.docstore
        for node_id in self._node_ids():
            node = docstore.get_node(node_id, raise_error=False)
            if node is None:
                continue
            payload = node_to_metadata_dict(node, remove_text=False, flat_metadata=False)
            yield StoreChunk(str(node_id), node.get_content(metadata_mode=MetadataMode.NONE), payload)

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        held = getattr(getattr(self.vector_store, "data", None), "embedding_dict", None) or {}
        return [None if held.get(i) is None else [float(x) for x in held[i]] for i in ids]

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        from llama_index.core.vector_stores.types import VectorStoreQuery

        out: list[Ranked] = []
        for v in vectors:
            reply = self.vector_store.query(VectorStoreQuery(query_embedding=list(v),
                                                             similarity_top_k=k))
            sims = reply.similarities or [None] * len(reply.ids or [])
            out.append([(str(i), None if s is None else float(s))
                        for i, s in zip(reply.ids or [], sims)])
        return out

    def describe(self) -> dict[str, Any]:
        return {"store": "llamaindex", "index": self.name}

    def vector_metric(self) -> str:
        return "cosine"  # SimpleVectorStore's default query mode ranks by cosine similarity

    def index_settings(self) -> dict[str, Any]:
        kind = type(self.vector_store).__name__
        return index_settings("flat" if kind == "SimpleVectorStore" else "unknown", {"vector_store": kind},
                              exact=kind == "SimpleVectorStore")

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        held = getattr(getattr(self.vector_store, "data", None), "embedding_dict", None)
        if not held:
            raise VectorsUnavailable(f"the {type(self.vector_store).__name__} keeps no embedding_dict "
                                     "to read vectors from")
        return vector_pages(((str(i), v) for i, v in held.items()), page_size)
