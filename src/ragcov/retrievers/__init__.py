"""Retrievers: the built-in dense and BM25 ones, and adapters for users' own.

Anything with ``retrieve(texts, k)`` and ``fingerprint()`` is a retriever; see
:class:`ragcov.retrievers.base.Retriever`. :func:`make_retriever` builds one from
its command-line name; :func:`wrap` turns a team's own retriever object (a
function, a LangChain or LlamaIndex retriever) into one. The adapters each live in
a module of their own (:mod:`~ragcov.retrievers.resolver` for chunk ids and
warnings, :mod:`~ragcov.retrievers.functions`, :mod:`~ragcov.retrievers.langchain`,
:mod:`~ragcov.retrievers.llamaindex`, :mod:`~ragcov.retrievers.loader`); their
public names are these.
"""

from ragcov.retrievers.base import Ranked, Retriever
from ragcov.retrievers.factory import default_retriever, make_retriever
from ragcov.retrievers.functions import CallableRetriever
from ragcov.retrievers.langchain import LangChainRetriever
from ragcov.retrievers.llamaindex import LlamaIndexRetriever
from ragcov.retrievers.loader import is_ragcov_retriever, load_retriever, wrap
from ragcov.retrievers.resolver import AdapterWarning, IdResolver

__all__ = [
    "AdapterWarning", "CallableRetriever", "IdResolver", "LangChainRetriever",
    "LlamaIndexRetriever", "Ranked", "Retriever", "is_ragcov_retriever", "load_retriever",
    "default_retriever", "make_retriever", "wrap",
]
