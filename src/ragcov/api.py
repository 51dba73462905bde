"""The Python API behind the CLI: each function is one thing a user asks for."""

from __future__ import annotations

import os
from typing import Any

from ragcov.corpus import Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.results import CoverageSummary, display_percent, summarize
from ragcov.run import Run, run_retriever, validate_k
from ragcov.suite import Suite

# Annotation key of the measured recall of an approximate index.
INDEX_RECALL = "index_recall"


def measure(corpus: Corpus, suite: Suite, retriever: Any, k: int = 5,
            data_file: str | os.PathLike[str] | None = None, append: bool = False,
            progress: bool = True, batch_size: int = 64) -> CoverageMatrix:
    """Run ``suite`` through ``retriever`` and return the hit matrix.

    With ``data_file`` the run is recorded there; with ``append`` only queries not
    already in the file are retrieved, and the matrix covers the whole file.
    """
    validate_k(k)
    if len(suite) == 0:
        raise RagcovError("the suite is empty (no queries)")
    todo = [(q.id, q.text) for q in suite]
    data = CoverageData(data_file) if data_file is not None else None
    # Refuse a file that cannot take this run before any retrieval work, not after it.
    if data is not None and append:
        todo = data.pending(todo, k, corpus.hash, retriever.fingerprint())
    elif data is not None:
        data.check_destination()
    run = Run(k=k, retriever=retriever.fingerprint())
    if todo:
        run_retriever(retriever, todo, k, batch_size=batch_size, progress=progress, run=run)
    if data is None:
        return CoverageMatrix.from_run(run, corpus)
    data.write(corpus, run, append=append)
    if retriever.fingerprint().get("approximate") and hasattr(retriever, "measure_recall"):
        data.annotate(INDEX_RECALL, retriever.measure_recall(suite.texts, k=k))
    return data.matrix()


def coverage_summary(data_file: str | os.PathLike[str], **options: Any) -> CoverageSummary:
    return summarize(CoverageData(data_file).matrix(), **options)


def fails_under(coverage: float, fail_under: float, precision: int = 0) -> bool:
    """True when the displayed total is below ``fail_under`` percent."""
    shown = float(display_percent(coverage, precision))
    return shown < fail_under
