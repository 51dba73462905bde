"""Frameworks' own ingestion into real local stores, for the conformance tests.

LlamaIndex's own integrations build every LlamaIndex cell: ``QdrantVectorStore`` over a
local ``QdrantClient(path=...)``, ``ChromaVectorStore`` over a persistent Chroma
collection, ``FaissVectorStore`` and ``LanceDBVectorStore``, each with
``HuggingFaceEmbedding`` over the local all-MiniLM-L6-v2, as a LlamaIndex app builds them.
``VectorStoreIndex`` does everything else: splitting, the embedding of
``MetadataMode.EMBED`` (its metadata template and the text), the retriever.
"""

from __future__ import annotations

from typing import Any

K = 3


def minilm_llamaindex(path: str) -> Any:
    """The real MiniLM as LlamaIndex's own HuggingFace embedding."""
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=path, device="cpu")


def llamaindex_store(engine: str, path: str, collection: str) -> Any:
    """LlamaIndex's own vector store integration for ``engine``, over a local store at ``path``.

    A Qdrant client holds its folder's lock while it is open: close it with
    :func:`close_store` before another client (ragcov's, another test's) opens the folder.
    """
    if engine == "qdrant":
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient

        return QdrantVectorStore(client=QdrantClient(path=path), collection_name=collection)
    if engine == "chroma":
        import chromadb
        from llama_index.vector_stores.chroma import ChromaVectorStore

        return ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=path)
                                 .get_or_create_collection(collection))
    if engine == "lancedb":
        from llama_index.vector_stores.lancedb import LanceDBVectorStore

        return LanceDBVectorStore(uri=path, table_name=collection)
    raise ValueError(engine)


def close_store(store: Any) -> None:
    """Release what the store's client holds (a local Qdrant folder's lock)."""
    client = getattr(store, "client", None)
    if client is not None and hasattr(client, "close"):
        client.close()
