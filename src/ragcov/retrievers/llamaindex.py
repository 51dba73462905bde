"""A LlamaIndex retriever or index as a ragcov Retriever (duck-typed: no import of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.fields import parse_score
from ragcov.retrievers.resolver import Entry, IdResolver, check_lists, qualname, ranked_top_k

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked


def _vector_retriever(retriever: Any) -> bool:
    """Whether ``retriever`` is LlamaIndex's vector index retriever, which searches with the
    query vector a QueryBundle carries (others ignore it, or have no model)."""
    if not any((getattr(c, "__module__", "") or "").startswith("llama_index")
               for c in type(retriever).__mro__):
        return False  # a look-alike: LlamaIndex is not even imported for it
    try:
        from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
    except ImportError:
        return False
    return isinstance(retriever, VectorIndexRetriever)


def llamaindex_entry(node: Any) -> Entry:
    """What a LlamaIndex node says about its chunk: its node_id, metadata and content."""
    content = None
    get_content = getattr(node, "get_content", None)
    if callable(get_content):
        try:
            content = get_content()
        except TypeError:  # pragma: no cover - very old signatures
            content = getattr(node, "text", None)
    return Entry(getattr(node, "node_id", None), getattr(node, "metadata", None), content)


class LlamaIndexRetriever:
    """A LlamaIndex retriever (``retrieve(query) -> list[NodeWithScore]``) or index.

    LlamaIndex fixes top-k when the retriever is built, so an index is turned
    into ``index.as_retriever(similarity_top_k=k)``, and a retriever with a
    ``similarity_top_k`` attribute has it set to k before retrieving.
    """

    def __init__(self, obj: Any, corpus: Corpus | None = None, name: str | None = None) -> None:
        self.obj = obj
        self.is_index = not hasattr(obj, "retrieve") and hasattr(obj, "as_retriever")
        self.name = name or qualname(type(obj))
        self.resolver = IdResolver(corpus, "LlamaIndex")
        self._retrievers: dict[int, Any] = {}
        # Whether the retriever's model embeds a batch of queries as it embeds each one
        # (None: not checked yet); see _query_vectors.
        self.vector_retriever = _vector_retriever(self._retriever(None))
        self.batch_embedding: bool | None = None if self.vector_retriever else False

    @property
    def batches_queries(self) -> bool:
        """A vector index retriever gets its queries in batches (their vectors embedded
        together); any other, one per call, so progress moves per query."""
        return self.batch_embedding is not False

    def _query_vectors(self, retriever: Any, texts: Sequence[str]) -> list[Any] | None:
        """The queries' vectors embedded in one batch by the retriever's own model, or None
        (one at a time, as the retriever embeds them).

        Embedding dominates a vector retriever's time (94% of a query through LlamaIndex over
        local Qdrant), and LlamaIndex embeds each query alone. Its models embed batches of
        texts only, so the batch is used where it gives the query's own vector: checked once,
        on the first query, against ``get_query_embedding`` (a model with a query
        instruction or prompt embeds queries apart and is left to do so).
        """
        if self.batch_embedding is False or len(texts) < 2:
            return None
        embed = getattr(retriever, "_embed_model", None)
        batch = getattr(embed, "get_text_embedding_batch", None)
        if not callable(batch):
            self.batch_embedding = False
            return None
        vectors = batch(list(texts))
        if self.batch_embedding is None:
            import numpy as np

            one = np.asarray(embed.get_query_embedding(texts[0]), dtype=np.float64)
            first = np.asarray(vectors[0], dtype=np.float64)
            self.batch_embedding = bool(one.shape == first.shape and np.allclose(one, first, atol=1e-5))
            if not self.batch_embedding:
                return None
        return list(vectors)

    def _retriever(self, k: int | None) -> Any:
        """The retriever at top-``k`` (None: as it is, to look at it)."""
        if self.is_index:
            if k is None:
                k = 2
            if k not in self._retrievers:
                self._retrievers[k] = self.obj.as_retriever(similarity_top_k=k)
            return self._retrievers[k]
        if k is not None and hasattr(self.obj, "similarity_top_k") and self.obj.similarity_top_k != k:
            self.obj.similarity_top_k = k
        return self.obj

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        retriever = self._retriever(k)
        vectors = self._query_vectors(retriever, texts)
        queries: list[Any] = list(texts)
        if vectors is not None:
            from llama_index.core.schema import QueryBundle

            queries = [QueryBundle(query_str=t, embedding=list(v)) for t, v in zip(texts, vectors)]
        results: list[Ranked] = []
        for text, query in zip(texts, queries):
            results.append(self.ranked(text, retriever.retrieve(query), k))
        return check_lists(results, texts)

    def ranked(self, text: str, nodes: Sequence[Any], k: int) -> Ranked:
        """The top k of the NodeWithScore list a retriever returned for ``text`` (also
        for callers that retrieved themselves: ``record()`` in the pytest plugin)."""
        return ranked_top_k(
            nodes, k, lambda n: (llamaindex_entry(n.node), parse_score(n.score)),
            "LlamaIndex retriever", self.name, text, self.resolver)

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "llamaindex", "name": self.name}
        embed = getattr(self.obj, "_embed_model", None) or getattr(self.obj, "embed_model", None)
        if embed is not None:
            fp["embeddings"] = qualname(type(embed))
        return fp
