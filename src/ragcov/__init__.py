"""ragcov: Chunk Coverage for RAG retrievers.

Measures how much of a corpus a retrieval test suite exercises, from retrieval
traces alone, and uses that to select, generate and prioritise tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragcov.corpus import Chunk, Corpus, load_corpus
    from ragcov.errors import RagcovError
    from ragcov.matrix import CoverageMatrix
    from ragcov.retrieval import Run
    from ragcov.suite import Query, Suite, load_suite

# Imported on first use: the pytest plugin and the CLI import this package on every
# start, and numpy/scipy are too slow to load for a run that never uses them.
_LAZY = {
    "Chunk": "ragcov.corpus", "Corpus": "ragcov.corpus", "load_corpus": "ragcov.corpus",
    "RagcovError": "ragcov.errors", "CoverageMatrix": "ragcov.matrix", "Run": "ragcov.retrieval",
    "Query": "ragcov.suite", "Suite": "ragcov.suite", "load_suite": "ragcov.suite",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragcov' has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "Corpus",
    "CoverageMatrix",
    "Query",
    "RagcovError",
    "Run",
    "Suite",
    "__version__",
    "load_corpus",
    "load_suite",
]
