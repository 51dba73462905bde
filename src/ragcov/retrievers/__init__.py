"""Retrievers: the built-in dense and BM25 ones, and adapters for users' own.

Anything with ``retrieve(texts, k)`` and ``fingerprint()`` is a retriever; see
:class:`ragcov.retrievers.base.Retriever`. :func:`make_retriever` builds one from
its command-line name.
"""

from ragcov.retrievers.base import Ranked, Retriever
from ragcov.retrievers.factory import default_retriever, make_retriever

__all__ = ["Ranked", "Retriever", "default_retriever", "make_retriever"]
