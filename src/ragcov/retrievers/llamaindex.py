"""A LlamaIndex retriever or index as a ragcov Retriever (duck-typed: no import of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.fields import parse_score
from ragcov.retrievers.resolver import Entry, IdResolver, check_lists, qualname, ranked_top_k

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked


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

    batches_queries = False  # one query per call: progress moves per query

    def __init__(self, obj: Any, corpus: Corpus | None = None, name: str | None = None) -> None:
        self.obj = obj
        self.is_index = not hasattr(obj, "retrieve") and hasattr(obj, "as_retriever")
        self.name = name or qualname(type(obj))
        self.resolver = IdResolver(corpus, "LlamaIndex")
        self._retrievers: dict[int, Any] = {}

    def _retriever(self, k: int) -> Any:
        if self.is_index:
            if k not in self._retrievers:
                self._retrievers[k] = self.obj.as_retriever(similarity_top_k=k)
            return self._retrievers[k]
        if hasattr(self.obj, "similarity_top_k") and self.obj.similarity_top_k != k:
            self.obj.similarity_top_k = k
        return self.obj

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        retriever = self._retriever(k)
        results: list[Ranked] = []
        for text in texts:
            results.append(self.ranked(text, retriever.retrieve(text), k))
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
