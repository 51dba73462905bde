"""A LangChain retriever or vector store as a ragcov Retriever (duck-typed: no import of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.fields import parse_score
from ragcov.retrievers.resolver import Entry, IdResolver, check_lists, qualname, ranked_top_k

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked


def langchain_entry(doc: Any) -> Entry:
    """What a LangChain Document says about its chunk: its id, metadata and content."""
    return Entry(getattr(doc, "id", None), getattr(doc, "metadata", None),
                 getattr(doc, "page_content", None))


class LangChainRetriever:
    """A LangChain retriever (``invoke(query) -> list[Document]``) or vector store.

    ``k`` is passed to ``invoke`` as a keyword; VectorStoreRetriever merges it into
    its search arguments and other retrievers drop it, so lists are also cut to k
    here. A vector store is searched with ``similarity_search_with_score`` so the
    scores are kept.
    """

    batches_queries = False  # one query per call: progress moves per query

    def __init__(self, obj: Any, corpus: Corpus | None = None, name: str | None = None) -> None:
        self.obj = obj
        self.is_store = not hasattr(obj, "invoke") and hasattr(obj, "similarity_search")
        self.name = name or qualname(type(obj))
        self.resolver = IdResolver(corpus, "LangChain")

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        results: list[Ranked] = []
        for text in texts:
            if self.is_store:
                if hasattr(self.obj, "similarity_search_with_score"):
                    pairs = self.obj.similarity_search_with_score(text, k=k)
                else:
                    pairs = [(d, None) for d in self.obj.similarity_search(text, k=k)]
            else:
                pairs = [(d, (getattr(d, "metadata", None) or {}).get("score"))
                         for d in self.obj.invoke(text, k=k)]
            results.append(ranked_top_k(
                pairs, k, lambda pair: (langchain_entry(pair[0]), parse_score(pair[1])),
                "LangChain retriever", self.name, text, self.resolver))
        return check_lists(results, texts)

    def ranked(self, text: str, docs: Sequence[Any], k: int) -> Ranked:
        """The top k of the Documents ``invoke(text)`` returned (scores from their
        metadata), read as :meth:`retrieve` reads them: for callers that invoked the
        retriever themselves (``record()`` in the pytest plugin)."""
        return ranked_top_k(
            docs, k,
            lambda d: (langchain_entry(d),
                       parse_score((getattr(d, "metadata", None) or {}).get("score"))),
            "LangChain retriever", self.name, text, self.resolver)

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "langchain", "name": self.name}
        store = self.obj if self.is_store else getattr(self.obj, "vectorstore", None)
        embeddings = getattr(store, "embeddings", None) if store is not None else None
        if store is not None and store is not self.obj:
            fp["vectorstore"] = qualname(type(store))
        if embeddings is not None:
            fp["embeddings"] = qualname(type(embeddings))
        search_type = getattr(self.obj, "search_type", None)
        if isinstance(search_type, str):
            fp["search_type"] = search_type
        return fp
