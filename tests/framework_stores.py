"""Frameworks' own ingestion into real local stores, for the conformance tests.

LlamaIndex's own integrations build every LlamaIndex cell: ``QdrantVectorStore`` over a
local ``QdrantClient(path=...)``, ``ChromaVectorStore`` over a persistent Chroma
collection, ``LanceDBVectorStore`` and ``PGVectorStore`` (its ``data_<name>`` table on a real
Postgres server), each with
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
    if engine == "pgvector":
        from llama_index.vector_stores.postgres import PGVectorStore

        # ``path`` is the app's SQLAlchemy URL (postgresql+psycopg://...), for both engines.
        return PGVectorStore.from_params(connection_string=path, async_connection_string=path,
                                         table_name=collection, embed_dim=384)
    raise ValueError(engine)


def close_store(store: Any) -> None:
    """Release what the store's client holds (a local Qdrant folder's lock, a Milvus Lite
    file, a Postgres pool), as the app's process does when it exits."""
    client = getattr(store, "client", None)
    if client is not None and hasattr(client, "close"):
        client.close()
    elif client is not None and hasattr(client, "dispose"):
        client.dispose()
    uri = str((getattr(store, "_connection_args", None) or {}).get("uri", ""))
    if uri.endswith(".db"):
        # pymilvus keeps a Milvus Lite file's server (and its lock) until the process exits,
        # whatever client.close() did: another process could not open the file.
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(uri)


def langchain_store(engine: str, path: str, embeddings: Any, collection: str = "app") -> Any:
    """LangChain's own integration for ``engine``, opened over a store an app built earlier:
    what an app's retriever searches (``path``: a folder, a Milvus Lite file, or for
    ``pgvector`` the app's SQLAlchemy URL)."""
    if engine == "chroma":
        import chromadb
        from langchain_community.vectorstores import Chroma

        return Chroma(collection_name=collection, client=chromadb.PersistentClient(path=path),
                      embedding_function=embeddings)
    if engine == "qdrant":
        from langchain_qdrant import QdrantVectorStore

        return QdrantVectorStore.from_existing_collection(embedding=embeddings, path=path,
                                                          collection_name=collection)
    if engine == "milvus":
        from langchain_milvus import Milvus

        return Milvus(embeddings, connection_args={"uri": path}, collection_name=collection)
    if engine == "pgvector":
        from langchain_postgres import PGVector

        return PGVector(embeddings=embeddings, connection=path, collection_name=collection)
    raise ValueError(engine)
