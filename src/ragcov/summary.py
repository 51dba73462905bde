"""The summary every reporter shares, so numbers are computed and rounded once.

Like coverage.py's ``Numbers``: text, markdown, JSON and HTML reports all read a
:class:`CoverageSummary`, and percentages are formatted by :func:`display_percent`
so that 99.99% is never shown as 100% nor 0.01% as 0%.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

# numpy and the metrics load where a summary is computed: a gate read from the data file's
# kept totals formats and compares its number with what is below, and nothing else.
if TYPE_CHECKING:
    import numpy as np

    from ragcov.matrix import CoverageMatrix
    from ragcov.metrics import Support


@dataclass(frozen=True)
class DocumentNumbers:
    doc_id: str
    chunks: int
    covered: int
    missing_chunks: list[str] = field(default_factory=list)
    excluded: int = 0  # chunks of this document left out of the denominator
    missing_positions: list[int] = field(default_factory=list)  # of missing_chunks

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
    excluded: int = 0  # chunks left out of the denominator (exclude, exclude_docs, ...)
    omitted_documents: int = 0  # documents left out by include/omit
    #: Random pairs the mean Jaccard was estimated from; 0 when it is exact.
    jaccard_sampled_pairs: int = 0
    #: How deep the recorded lists are against k (None: not measured)
    depth: Depth | None = None

    @property
    def coverage(self) -> float:
        return self.covered / self.chunks if self.chunks else 0.0

    @property
    def missing(self) -> int:
        return self.chunks - self.covered

    @property
    def ceiling(self) -> float | None:
        """The most this workload can cover (:func:`workload_ceiling`); None when k is unknown."""
        if self.depth is None or not self.depth.k:
            return None
        return workload_ceiling(self.queries, self.depth.k, self.chunks)


def workload_ceiling(queries: int, k: int, chunks: int) -> float:
    """``queries x k / chunks``, at most 1: the coverage a suite reaches if no two of its
    top-k lists share a chunk. 80 questions at k=5 over 3,190 chunks retrieve at most 400
    chunks, 12.5%; a gate above that can never pass, whatever the retriever does."""
    return min(1.0, queries * k / chunks) if chunks else 0.0


def ceiling_text(summary: CoverageSummary, precision: int = 1) -> str | None:
    """``workload ceiling 12.5% (80 queries x k=5 of 3,190 chunks)``, said beside a total."""
    if summary.ceiling is None or summary.depth is None:
        return None
    return workload_text(summary.queries, summary.depth.k, summary.chunks, precision)


def workload_text(queries: int, k: int, chunks: int, precision: int = 1) -> str:
    """:func:`ceiling_text` from the three numbers it is made of."""
    return (f"workload ceiling {display_percent(workload_ceiling(queries, k, chunks), precision)}% "
            f"({queries:,} {'query' if queries == 1 else 'queries'} x k={k} of {chunks:,} chunks)")


def ceiling_warning(summary: CoverageSummary, fail_under: float | None) -> str | None:
    """One line when ``--fail-under`` asks for more than the workload can cover."""
    if summary.ceiling is None or summary.depth is None:
        return None
    return workload_warning(summary.queries, summary.depth.k, summary.chunks, fail_under)


def workload_warning(queries: int, k: int, chunks: int, fail_under: float | None) -> str | None:
    """:func:`ceiling_warning` from the numbers a data file keeps (``report --format total``
    read from its totals warns as the report read from its rows does)."""
    if fail_under is None or not k or fail_under <= workload_ceiling(queries, k, chunks) * 100:
        return None
    return (f"--fail-under {fail_under:g} is above the {workload_text(queries, k, chunks, 2)}: no "
            "retriever can pass it with this suite; add queries, raise k, or gate at or below "
            "the ceiling")


@dataclass(frozen=True)
class Depth:
    """How deep the recorded lists are, against k: a retriever that returns 3 of k = 5 is
    measured at depth 3, and its coverage is a k = 3 number whatever the file's k says."""

    k: int
    queries: int
    short: int        # queries that retrieved fewer than k chunks
    deepest: int      # the longest list (the retriever's effective depth)
    mean: float

    def as_dict(self) -> dict[str, Any]:
        return {"k": self.k, "effective_depth": self.deepest, "mean_depth": self.mean,
                "short_queries": self.short}

    def note(self) -> str | None:
        """The caveat a reader needs beside k, or None when every list is k long."""
        if not self.short:
            return None
        depth = (f"effective depth {self.deepest}" if self.short == self.queries
                 else f"mean depth {self.mean:.1f}")
        return (f"{self.short} of {self.queries} queries retrieved fewer than {self.k} chunks "
                f"({depth})")


def query_depth(m: CoverageMatrix) -> Depth:
    """The depth of every recorded list (of the whole file: a report's scope leaves the
    lists as they were retrieved)."""
    import numpy as np

    depths = m.depths()
    k = int(m.k or 0)
    return Depth(k=k, queries=int(depths.size), short=int(np.count_nonzero(depths < k)),
                 deepest=int(depths.max()) if depths.size else 0,
                 mean=float(depths.mean()) if depths.size else 0.0)


class _Excluded(Protocol):
    doc_id: str


def summarize(m: CoverageMatrix, entropy_support: Support = "retrieved",
              gini_over: Support = "retrieved", jaccard: bool = True,
              excluded: Sequence[_Excluded] = (), positions: Mapping[str, int] | None = None,
              omitted_documents: int = 0, depth: Depth | None = None) -> CoverageSummary:
    """The numbers of ``m``; ``excluded`` (chunks already dropped from ``m``) are counted aside."""
    import numpy as np

    from ragcov.metrics import chunk_coverage, gini, normalized_entropy, pairwise_jaccard

    freq = m.chunk_frequencies()
    chunk_coverage(m)  # raises on an empty corpus
    covered = freq > 0
    pos = document_positions(m, positions)
    names, doc = m.documents()
    # Each document's missing chunks, in corpus order: the uncovered columns grouped by
    # document with one stable sort, then cut at the documents' bounds.
    missing = np.flatnonzero(~covered)
    missing = missing[np.argsort(doc[missing], kind="stable")]
    bounds = np.searchsorted(doc[missing], np.arange(len(names) + 1)).tolist()
    missing_ids = np.asarray(m.chunk_ids, dtype=object)[missing].tolist()
    missing_pos = pos[missing].tolist()
    excluded_by_doc: dict[str, int] = {}
    for e in excluded:
        excluded_by_doc[e.doc_id] = excluded_by_doc.get(e.doc_id, 0) + 1
    n_chunks = np.bincount(doc, minlength=len(names)).tolist()
    n_covered = np.bincount(doc, weights=covered, minlength=len(names)).astype(np.int64).tolist()
    docs = [DocumentNumbers(d, n_chunks[i], n_covered[i], missing_ids[bounds[i]:bounds[i + 1]],
                            excluded_by_doc.get(d, 0), missing_pos[bounds[i]:bounds[i + 1]])
            for i, d in enumerate(names)]
    jac, sampled = pairwise_jaccard(m) if jaccard else (float("nan"), 0)
    return CoverageSummary(
        chunks=m.n_chunks, covered=int(covered.sum()), queries=m.n_queries,
        normalized_entropy=normalized_entropy(freq, entropy_support),
        gini=gini(freq, gini_over),
        mean_pairwise_jaccard=jac, jaccard_sampled_pairs=sampled,
        entropy_support=entropy_support, gini_over=gini_over, documents=docs,
        excluded=len(excluded), omitted_documents=omitted_documents,
        depth=depth if depth is not None else query_depth(m),
    )


def document_positions(m: CoverageMatrix, positions: Mapping[str, int] | None = None
                       ) -> np.ndarray:
    """Per chunk, its position within its document (what ``--show-missing`` ranges count).

    The recorded position where a document's positions are distinct; otherwise (none
    recorded, or repeated) the chunk's order within the document in the corpus, so
    two chunks never share a position, nor a line in Cobertura or lcov output.
    """
    return _positions(m.documents()[1], m.chunk_ids, positions)


def positions_in_documents(doc_ids: Sequence[object], chunk_ids: Sequence[str],
                           positions: Mapping[str, int] | None = None) -> np.ndarray:
    """:func:`document_positions` for any parallel lists of documents and chunk ids."""
    from ragcov.matrix import document_codes

    return _positions(document_codes(doc_ids)[1], chunk_ids, positions)


def _positions(doc: np.ndarray, chunk_ids: Sequence[str], positions: Mapping[str, int] | None
               ) -> np.ndarray:
    import numpy as np

    n = len(doc)
    # Each chunk's order within its document, in corpus order.
    by_doc = np.argsort(doc, kind="stable")
    starts = np.zeros(n, dtype=np.int64)
    if n:
        edge = np.flatnonzero(np.diff(doc[by_doc])) + 1
        first = np.zeros(n, dtype=np.int64)
        first[edge] = edge
        starts = np.maximum.accumulate(first)
    order = np.empty(n, dtype=np.int64)
    order[by_doc] = np.arange(n, dtype=np.int64) - starts
    if not positions or not n:
        return order
    from ragcov.data.columns import ChunkPositions

    whole = positions.aligned(chunk_ids) if isinstance(positions, ChunkPositions) else None
    if whole is not None:  # the file's own chunks in order: every position is recorded
        recorded, absent = whole, np.zeros(n, dtype=bool)
    else:
        given = [positions.get(c) for c in chunk_ids]
        absent = np.fromiter((g is None for g in given), dtype=bool, count=n)
        recorded = np.fromiter((0 if g is None else g for g in given), dtype=np.int64, count=n)
    # A document keeps its recorded positions only when every chunk has one, all distinct.
    unusable = np.zeros(int(doc.max()) + 1, dtype=bool)
    unusable[doc[absent]] = True
    pairs = np.lexsort((recorded, doc))
    same = (doc[pairs][1:] == doc[pairs][:-1]) & (recorded[pairs][1:] == recorded[pairs][:-1])
    unusable[doc[pairs][1:][same]] = True
    return np.where(unusable[doc], order, recorded)


#: The precision ``ragcov report --format total`` prints, and so the one ``--fail-under``
#: compares at unless ``--precision`` says otherwise: a ratchet
#: (``--fail-under "$(ragcov report --format total)"``) must pass on the same data.
GATE_PRECISION = 2


def fails_under(coverage: float, fail_under: float, precision: int = GATE_PRECISION) -> bool:
    """True when the total, rounded as it is printed at ``precision``, is below ``fail_under``.

    As coverage.py's ``should_fail_under``: the gate never disagrees with the number a
    reader sees, and :func:`display_percent` keeps 99.999% from passing a gate of 100.
    """
    return float(display_percent(coverage, precision)) < fail_under


def fail_under_failure(coverage: float, fail_under: float | None,
                       precision: int | None = None, what: str = "total",
                       shown_precision: int | None = None, flag: str = "fail-under") -> str | None:
    """The one fail-under gate every command runs: None when it passes, else its message.

    ``precision`` None means :data:`GATE_PRECISION`; the message shows the total at the
    precision it was compared at, so "53.00% is less than 53.01" is never printed as "53%".
    ``shown_precision`` is the precision the report above printed the total at: when that
    rounding reaches the threshold ("59%" above a failure at 58.77), the message says why.
    ``flag`` names the gate as the user set it (``fail-under-text`` for text coverage).
    """
    if fail_under is None:
        return None
    p = GATE_PRECISION if precision is None else precision
    if not fails_under(coverage, fail_under, p):
        return None
    message = (f"Coverage failure: {what} of {display_percent(coverage, p)}% is less than "
               f"{flag}={fail_under:g}")
    if shown_precision is not None and shown_precision < p and \
            float(display_percent(coverage, shown_precision)) >= fail_under:
        message += (f" (the table above rounds it to {display_percent(coverage, shown_precision)}%; "
                    f"the gate compares the total at {p} decimals, as `ragcov report --format "
                    "total` prints it: a ratchet sets --fail-under to that number)")
    return message


def display_percent(fraction: float, precision: int = 0) -> str:
    """Format a 0..1 fraction as a percentage that never rounds to a false 0 or 100."""
    pc = fraction * 100.0
    step = 10.0 ** -precision
    if 0 < pc < step:
        pc = step
    elif 100 - step < pc < 100:
        pc = 100 - step
    return f"{pc:.{precision}f}"
