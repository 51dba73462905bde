"""Adapters that turn a team's own retriever into a ragcov Retriever: the public names.

Teams already have a retriever object: a function, a LangChain retriever or
vector store, a LlamaIndex retriever or index. Measuring its coverage should not
mean rewriting it, so :func:`wrap` recognises each kind and returns something
with ``retrieve(texts, k)`` and ``fingerprint()``; :func:`load_retriever` does the
same for ``--retriever module:attr`` on the command line.

This module is where users (and the docs) import them from; each lives in a
module of its own: :mod:`~ragcov.retrievers.resolver` (chunk ids, warnings),
:mod:`~ragcov.retrievers.functions`, :mod:`~ragcov.retrievers.langchain`,
:mod:`~ragcov.retrievers.llamaindex` and :mod:`~ragcov.retrievers.loader`.
"""

from ragcov.retrievers.functions import CallableRetriever
from ragcov.retrievers.langchain import LangChainRetriever
from ragcov.retrievers.llamaindex import LlamaIndexRetriever
from ragcov.retrievers.loader import is_ragcov_retriever, load_retriever, wrap
from ragcov.retrievers.resolver import AdapterWarning, IdResolver

__all__ = [
    "AdapterWarning", "CallableRetriever", "IdResolver", "LangChainRetriever",
    "LlamaIndexRetriever", "is_ragcov_retriever", "load_retriever", "wrap",
]
