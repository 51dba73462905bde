"""The HTTP retriever: a retrieval service measured without importing its code.

:mod:`~ragcov.retrievers.http.retriever` asks the endpoint; the reply is read by
:mod:`~ragcov.retrievers.http.reply`, the keywords and ``#`` options by
:mod:`~ragcov.retrievers.http.options`, each attempt bounded by
:mod:`~ragcov.retrievers.http.deadline`, and secrets kept out of what it says by
:mod:`~ragcov.retrievers.http.secrets`.
"""

from ragcov.retrievers.http.retriever import HTTPRetriever

__all__ = ["HTTPRetriever"]
