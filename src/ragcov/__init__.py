"""ragcov: Chunk Coverage for RAG retrievers.

Measures how much of a corpus a retrieval test suite exercises, from retrieval
traces alone, and uses that to select, generate and prioritise tests.

    import ragcov

    corpus = ragcov.load_corpus("chunks.jsonl")
    suite = ragcov.load_suite("questions.jsonl")
    ragcov.measure(corpus, suite, ragcov.make_retriever("bm25", corpus), k=5,
                   data_file=".ragcov")
    print(ragcov.report(".ragcov").summary().coverage)

The verbs are :mod:`ragcov.api`'s, the one door the CLI and the pytest plugin use too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragcov.api import (
        audit_reachability,
        check_qrels,
        combine,
        corpus_drift,
        coverage_diff,
        drift_summary,
        erase,
        find_faults,
        fit_topics,
        generate,
        index,
        load_corpus,
        load_suite,
        make_generator,
        make_retriever,
        measure,
        probe,
        record_traces,
        report,
        run,
        select_tests,
        topic_coverage,
        traffic_gap,
        write_html,
    )
    from ragcov.corpus import Chunk, Corpus
    from ragcov.errors import RagcovError
    from ragcov.matrix import CoverageMatrix
    from ragcov.retrieval import Run
    from ragcov.scope import ReportScope
    from ragcov.suite import Query, Suite

# A verb never shares a name with a subpackage: importing ``ragcov.reachability`` binds the
# package's attribute to the module, and ``__getattr__`` would never be asked again.
_VERBS = ("audit_reachability", "combine", "coverage_diff", "erase", "find_faults", "generate",
          "index", "load_corpus", "load_suite", "make_generator", "make_retriever", "measure",
          "probe", "record_traces", "report", "run", "select_tests", "traffic_gap", "write_html",
          "corpus_drift", "drift_summary", "fit_topics", "topic_coverage", "check_qrels")
# Imported on first use: the pytest plugin and the CLI import this package on every
# start, and numpy/scipy are too slow to load for a run that never uses them.
_LAZY = {
    **dict.fromkeys(_VERBS, "ragcov.api"),
    "Chunk": "ragcov.corpus", "Corpus": "ragcov.corpus", "RagcovError": "ragcov.errors",
    "CoverageMatrix": "ragcov.matrix", "Run": "ragcov.retrieval", "ReportScope": "ragcov.scope",
    "Query": "ragcov.suite", "Suite": "ragcov.suite",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragcov' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


from ragcov.version import __version__  # noqa: E402 - one source, read by pyproject too

__all__ = ["Chunk", "Corpus", "CoverageMatrix", "Query", "RagcovError", "ReportScope", "Run",
    "Suite", "__version__", "audit_reachability", "combine", "coverage_diff", "erase",
    "find_faults", "generate", "index", "load_corpus", "load_suite", "make_generator",
    "make_retriever", "measure", "probe", "record_traces", "report", "run", "select_tests",
    "traffic_gap", "write_html", "corpus_drift", "drift_summary", "fit_topics", "topic_coverage",
    "check_qrels"]
