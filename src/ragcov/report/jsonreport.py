"""The versioned JSON report.

FORMAT_VERSION history:
  1: meta, totals, documents, chunks, queries (the first published shape).
Keys may be added within a version; none is renamed or removed.
"""

from __future__ import annotations

import math
from typing import Any

from ragcov.matrix import CoverageMatrix
from ragcov.metrics import Support
from ragcov.summary import summarize

FORMAT_VERSION = 1


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def json_report(m: CoverageMatrix, entropy_support: Support = "retrieved",
                gini_over: Support = "retrieved") -> dict[str, Any]:
    s = summarize(m, entropy_support, gini_over)
    meta = dict(m.meta)
    meta_out = {"format": FORMAT_VERSION, "ragcov_version": meta.get("ragcov_version"),
                "k": m.k, "retriever": meta.get("retriever", {}),
                "corpus_hash": meta.get("corpus_hash"), "created": meta.get("created")}
    if meta.get("index_recall") is not None:
        meta_out["index_recall"] = meta["index_recall"]
    if meta_out["ragcov_version"] is None:
        from ragcov import __version__

        meta_out["ragcov_version"] = __version__
    by_chunk = m.queries_for_chunk()
    return {
        "meta": meta_out,
        "totals": {
            "chunks": s.chunks, "covered_chunks": s.covered, "chunk_coverage": s.coverage,
            "queries": s.queries, "normalized_entropy": s.normalized_entropy, "gini": s.gini,
            "mean_pairwise_jaccard": _num(s.mean_pairwise_jaccard),
            "entropy_support": s.entropy_support, "gini_over": s.gini_over,
        },
        "documents": {
            d.doc_id: {"chunks": d.chunks, "covered_chunks": d.covered,
                       "chunk_coverage": d.coverage, "missing_chunks": d.missing_chunks}
            for d in s.documents
        },
        "chunks": {
            cid: {"doc_id": m.doc_ids[j], "hit_count": len(by_chunk[j]),
                  "queries": [m.query_ids[r] for r in by_chunk[j]]}
            for j, cid in enumerate(m.chunk_ids)
        },
        "queries": {
            qid: {"text": m.query_texts[i],
                  "retrieved": [m.chunk_ids[j] for j in m.retrieved(i)],
                  "scores": m.retrieved_scores(i)}
            for i, qid in enumerate(m.query_ids)
        },
    }
