"""Retrievers: the built-in dense and BM25 ones, and adapters for users' own.

Anything with ``retrieve(texts, k)`` and ``fingerprint()`` is a retriever; see
:class:`ragcov.retrievers.base.Retriever`.
"""

from ragcov.retrievers.base import Retriever, make_retriever

__all__ = ["Retriever", "make_retriever"]
