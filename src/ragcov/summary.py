"""The summary every reporter shares, so numbers are computed and rounded once.

Like coverage.py's ``Numbers``: text, markdown, JSON and HTML reports all read a
:class:`CoverageSummary`, and percentages are formatted by :func:`display_percent`
so that 99.99% is never shown as 100% nor 0.01% as 0%.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragcov.matrix import CoverageMatrix
from ragcov.metrics import (
    Support,
    chunk_coverage,
    gini,
    mean_pairwise_jaccard,
    normalized_entropy,
    per_document,
)


@dataclass(frozen=True)
class DocumentNumbers:
    doc_id: str
    chunks: int
    covered: int
    missing_chunks: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return self.chunks - self.covered

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0


@dataclass(frozen=True)
class CoverageSummary:
    chunks: int
    covered: int
    queries: int
    normalized_entropy: float
    gini: float
    mean_pairwise_jaccard: float
    entropy_support: Support
    gini_over: Support
    documents: list[DocumentNumbers]

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0

    @property
    def missing(self) -> int:
        return self.chunks - self.covered


def summarize(m: CoverageMatrix, entropy_support: Support = "retrieved",
              gini_over: Support = "retrieved", jaccard: bool = True) -> CoverageSummary:
    freq = m.chunk_frequencies()
    chunk_coverage(m)  # raises on an empty corpus
    covered = freq > 0
    missing_by_doc: dict[str, list[str]] = {}
    for j in (~covered).nonzero()[0]:
        missing_by_doc.setdefault(m.doc_ids[j], []).append(m.chunk_ids[j])
    docs = [DocumentNumbers(d, n, c, missing_by_doc.get(d, []))
            for d, (n, c) in per_document(m).items()]
    return CoverageSummary(
        chunks=m.n_chunks, covered=int(covered.sum()), queries=m.n_queries,
        normalized_entropy=normalized_entropy(freq, entropy_support),
        gini=gini(freq, gini_over),
        mean_pairwise_jaccard=mean_pairwise_jaccard(m) if jaccard else float("nan"),
        entropy_support=entropy_support, gini_over=gini_over, documents=docs,
    )


def display_percent(fraction: float, precision: int = 0) -> str:
    """Format a 0..1 fraction as a percentage that never rounds to a false 0 or 100."""
    pc = fraction * 100.0
    step = 10.0 ** -precision
    if 0 < pc < step:
        pc = step
    elif 100 - step < pc < 100:
        pc = 100 - step
    return f"{pc:.{precision}f}"
