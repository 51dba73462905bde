"""ragcov: Chunk Coverage for RAG retrievers.

Measures how much of a corpus a retrieval test suite exercises, from retrieval
traces alone, and uses that to select, generate and prioritise tests.
"""

from ragcov.corpus import Chunk, Corpus, load_corpus
from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.run import Run
from ragcov.suite import Query, Suite, load_suite

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
