"""Frameworks' own ingestion into real local stores, for the store-convention and conformance tests.

LlamaIndex's Qdrant and Chroma integrations (``llama-index-vector-stores-qdrant``,
``-chroma``) are not installed here, so :class:`LlamaIndexStandIn` plays them: a
LlamaIndex vector store over the real client that writes each node exactly as those
integrations do (``node_to_metadata_dict``, LlamaIndex's own function, with the same
``remove_text`` and the node id as the row id) and reads the top-k back through the
client's own search. ``VectorStoreIndex`` does everything else: splitting, the
embedding of ``MetadataMode.EMBED`` (its metadata template and the text), the
retriever. This is a labelled stand-in for the integration package, not a fake store.
"""

from __future__ import annotations

from typing import Any

K = 3


def minilm_llamaindex(path: str) -> Any:
    """The real MiniLM as a LlamaIndex embedding (no HuggingFace integration is installed)."""
    from llama_index.core.embeddings import BaseEmbedding
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu")

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return model.encode(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return model.encode(text).tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return model.encode(texts, batch_size=64).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return MiniLM(model_name="all-MiniLM-L6-v2")


def llamaindex_store(engine: str, path: str, collection: str) -> Any:
    """A LlamaIndex vector store writing as ``QdrantVectorStore`` / ``ChromaVectorStore`` do."""
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQueryResult
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

    class LlamaIndexStandIn(BasePydanticVectorStore):
        stores_text: bool = True
        engine: str
        path: str
        collection: str

        @property
        def client(self) -> Any:
            return None

        def _qdrant(self) -> Any:
            from qdrant_client import QdrantClient

            return QdrantClient(path=self.path)

        def _chroma(self) -> Any:
            import chromadb

            return chromadb.PersistentClient(path=self.path).get_or_create_collection(
                self.collection, configuration={"hnsw": {"space": "cosine"}})

        def add(self, nodes: list[Any], **kwargs: Any) -> list[str]:
            if self.engine == "qdrant":
                from qdrant_client import models

                client = self._qdrant()
                if not client.collection_exists(self.collection):
                    client.create_collection(self.collection, vectors_config=models.VectorParams(
                        size=len(nodes[0].get_embedding()), distance=models.Distance.COSINE))
                # QdrantVectorStore._build_points: the whole node, text included, in the payload.
                client.upsert(self.collection, points=[models.PointStruct(
                    id=n.node_id, vector=n.get_embedding(),
                    payload=node_to_metadata_dict(n, remove_text=False, flat_metadata=False))
                    for n in nodes])
                client.close()
            else:
                # ChromaVectorStore.add: the text as the document, the node without it in metadata.
                self._chroma().add(
                    ids=[n.node_id for n in nodes], embeddings=[n.get_embedding() for n in nodes],
                    documents=[n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes],
                    metadatas=[node_to_metadata_dict(n, remove_text=True, flat_metadata=True)
                               for n in nodes])
            return [n.node_id for n in nodes]

        def delete(self, ref_doc_id: str, **kwargs: Any) -> None:
            raise NotImplementedError

        def query(self, query: Any, **kwargs: Any) -> VectorStoreQueryResult:
            k = query.similarity_top_k
            if self.engine == "qdrant":
                client = self._qdrant()
                points = client.query_points(self.collection, query=list(query.query_embedding),
                                             limit=k, with_payload=True).points
                client.close()
                rows = [(str(p.id), p.score, p.payload, None) for p in points]
            else:
                reply = self._chroma().query(query_embeddings=[list(query.query_embedding)],
                                             n_results=k, include=["documents", "metadatas",
                                                                   "distances"])
                rows = [(i, 1 - d, m, t) for i, d, m, t in zip(
                    reply["ids"][0], reply["distances"][0], reply["metadatas"][0],
                    reply["documents"][0])]
            nodes = []
            for _, _, payload, text in rows:
                node = metadata_dict_to_node(payload)
                if text is not None:
                    node.set_content(text)
                nodes.append(node)
            return VectorStoreQueryResult(nodes=nodes, similarities=[s for _, s, _, _ in rows],
                                          ids=[i for i, _, _, _ in rows])

    return LlamaIndexStandIn(engine=engine, path=path, collection=collection)
