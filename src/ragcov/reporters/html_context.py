"""What each page of the HTML site shows: the template context built from one matrix.

Numbers come from :func:`ragcov.summary.summarize` and
:func:`ragcov.summary.display_percent`, so the site agrees with ``ragcov report`` at
the same precision. Text is passed on as it is: the templates autoescape it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragcov.failures import query_outcome
from ragcov.matrix import CoverageMatrix
from ragcov.reporters.curves import Curve, chart
from ragcov.summary import CoverageSummary, DocumentNumbers, display_percent


@dataclass(frozen=True)
class _Hit:
    query_row: int
    query_id: str
    rank: int
    score: float | None


def document_filename(doc_id: str) -> str:
    """A file name that is safe on every filesystem and unique per document id.

    The readable part keeps only [A-Za-z0-9._-]; the hash of the full id keeps two ids
    that differ only in dropped characters or letter case apart.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", doc_id)
    slug = re.sub(r"\.{2,}", ".", slug).strip("._-")[:48] or "doc"
    digest = hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:10]
    return f"d_{slug}_{digest}.html"


def site_context(m: CoverageMatrix, summary: CoverageSummary, chunk_texts: Mapping[str, str],
                 curves: Sequence[Curve], precision: int, title: str) -> dict[str, Any]:
    """Everything the templates of the index, queries and document pages read."""
    doc_file = {d.doc_id: document_filename(d.doc_id) for d in summary.documents}
    context = [c or "" for c in m.query_context] or [""] * m.n_queries
    documents = [_document(d, doc_file[d.doc_id], precision) for d in summary.documents]
    return {
        "title": title,
        "totals": _totals(summary, precision),
        "meta": _meta(m),
        "documents": documents,
        "queries": _queries(m, doc_file, context),
        "pages": _pages(m, summary, documents, doc_file, chunk_texts, context),
        "chart": chart(curves, m.n_chunks, precision),
        "precision": precision,
    }


def _fmt_score(score: float | None) -> str:
    return "" if score is None else f"{score:.3f}"


def _document(d: DocumentNumbers, file: str, precision: int) -> dict[str, Any]:
    return {
        "id": d.doc_id, "file": file, "chunks": d.chunks,
        "covered": d.covered, "missing": d.missing, "coverage": d.coverage,
        "percent": display_percent(d.coverage, precision), "bar": round(100 * d.coverage, 2),
    }


def _totals(summary: CoverageSummary, precision: int) -> dict[str, Any]:
    return {
        "chunks": summary.chunks, "covered": summary.covered, "missing": summary.missing,
        "queries": summary.queries, "percent": display_percent(summary.coverage, precision),
        "bar": round(100 * summary.coverage, 2),
        "entropy": f"{summary.normalized_entropy:.3f}", "gini": f"{summary.gini:.3f}",
        "jaccard": ("n/a" if np.isnan(summary.mean_pairwise_jaccard)
                    else f"{summary.mean_pairwise_jaccard:.3f}"),
        "entropy_support": summary.entropy_support, "gini_over": summary.gini_over,
        "documents": len(summary.documents),
        "depth_note": (summary.depth.note() or "") if summary.depth is not None else "",
    }


def _meta(m: CoverageMatrix) -> dict[str, Any]:
    meta = m.meta or {}
    retriever = meta.get("retriever") or {}
    retriever_label = ", ".join(f"{k}={v}" for k, v in retriever.items()
                                if k in ("kind", "model", "index")) or "unknown"
    return {"k": m.k, "retriever": retriever_label, "created": meta.get("created", ""),
            "corpus_hash": meta.get("corpus_hash", ""),
            "version": meta.get("ragcov_version", "")}


def _queries(m: CoverageMatrix, doc_file: Mapping[str, str],
             context: Sequence[str]) -> list[dict[str, Any]]:
    """Each query with what it retrieved, linked to the chunk on its document's page."""
    anchor = [f"{doc_file[str(doc)]}#c{j}" for j, doc in enumerate(m.doc_ids)]
    outcomes = (m.meta or {}).get("outcomes") or {}  # pytest --ragcov: each test's outcome
    askers = (m.meta or {}).get("query_tests") or {}
    queries = []
    for i, qid in enumerate(m.query_ids):
        retrieved = [{"id": m.chunk_ids[j], "href": anchor[j], "rank": r,
                      "score": _fmt_score(s), "doc": str(m.doc_ids[j])}
                     for r, (j, s) in enumerate(zip(m.retrieved(i), m.retrieved_scores(i)),
                                                start=1)]
        queries.append({"row": i, "id": qid, "text": m.query_texts[i], "context": context[i],
                        "retrieved": retrieved,
                        "outcome": query_outcome(qid, context[i], outcomes, askers) or ""})
    return queries


def _hits_by_chunk(m: CoverageMatrix) -> list[list[_Hit]]:
    by_chunk: list[list[_Hit]] = [[] for _ in range(m.n_chunks)]
    for i in range(m.n_queries):
        for rank, (j, score) in enumerate(zip(m.retrieved(i), m.retrieved_scores(i)), start=1):
            by_chunk[j].append(_Hit(i, m.query_ids[i], rank, score))
    return by_chunk


def _pages(m: CoverageMatrix, summary: CoverageSummary, documents: Sequence[dict[str, Any]],
           doc_file: Mapping[str, str], chunk_texts: Mapping[str, str],
           context: Sequence[str]) -> list[dict[str, Any]]:
    """One page per document: its chunks, the tests that reached each, and its neighbours."""
    by_chunk = _hits_by_chunk(m)
    chunks_by_doc: dict[str, list[int]] = {}
    for j, doc in enumerate(m.doc_ids):
        chunks_by_doc.setdefault(str(doc), []).append(j)
    docs = summary.documents

    def link(n: int) -> dict[str, str] | None:
        if not 0 <= n < len(docs):
            return None
        return {"id": docs[n].doc_id, "file": doc_file[docs[n].doc_id]}

    return [{"doc": documents[n],
             "chunks": [_chunk(m, j, by_chunk[j], chunk_texts, context)
                        for j in chunks_by_doc.get(d.doc_id, [])],
             "prev": link(n - 1), "next": link(n + 1)}
            for n, d in enumerate(docs)]


def _chunk(m: CoverageMatrix, j: int, hits: Sequence[_Hit], chunk_texts: Mapping[str, str],
           context: Sequence[str]) -> dict[str, Any]:
    return {
        "anchor": f"c{j}", "id": m.chunk_ids[j], "text": chunk_texts.get(m.chunk_ids[j], ""),
        "count": len(hits), "covered": bool(hits),
        "hits": [{"query": h.query_id, "text": m.query_texts[h.query_row],
                  "context": context[h.query_row], "rank": h.rank,
                  "score": _fmt_score(h.score), "row": h.query_row} for h in hits],
    }
