"""The versioned JSON documents of ``ragcov diff`` and ``ragcov gap`` (docs/diff-and-gap.md).

FORMAT_VERSION history:
  1: the first published shape. Keys may be added within a version; none is renamed
     or removed. Coverages are fractions in [0, 1].
"""

from __future__ import annotations

from typing import Any

from ragcov.compare.diff import CoverageDiff, DocumentChange
from ragcov.compare.gap import TrafficGap
from ragcov.data.schema import Meta

FORMAT_VERSION = 1


def _side(meta: Meta, path: str, chunks: int, covered: int, queries: int) -> dict[str, Any]:
    return {"data_file": path, "k": meta.k, "retriever": meta.retriever,
            "corpus_hash": meta.corpus_hash, "chunks": chunks, "covered_chunks": covered,
            "chunk_coverage": covered / chunks if chunks else 0.0, "queries": queries}


def _doc(d: DocumentChange) -> dict[str, Any]:
    return {"doc_id": d.doc_id, "base": d.base, "head": d.head, "base_chunks": d.base_chunks,
            "base_covered": d.base_covered, "head_chunks": d.head_chunks,
            "head_covered": d.head_covered}


def _topics(td: Any) -> dict[str, Any]:
    """Per-topic change (ragcov.topics.coverage.TopicDiff): the side whose topics they are."""
    return {"side": td.side, "unmatched": td.unmatched, "changes": [
        {"topic": c.topic, "label": c.label, "base": c.base, "head": c.head, "change": c.change,
         "base_chunks": c.base_chunks, "base_covered": c.base_covered,
         "head_chunks": c.head_chunks, "head_covered": c.head_covered} for c in td.changes]}


def diff_document(d: CoverageDiff) -> dict[str, Any]:
    from ragcov.version import __version__

    changed = d.changed_queries()
    doc = {
        "format": FORMAT_VERSION, "ragcov_version": __version__,
        "base": _side(d.base_meta, str(d.base.path), d.base.n_chunks, d.base_covered,
                      d.base.n_queries),
        "head": _side(d.head_meta, str(d.head.path), d.head.n_chunks, d.head_covered,
                      d.head.n_queries),
        "delta": d.delta, "same_corpus": d.same_corpus, "matched_chunks": d.matched_chunks,
        "gained": d.gained, "lost": d.lost,
        "documents": [_doc(x) for x in d.documents],
        "new_documents": [_doc(x) for x in d.new_documents],
        "removed_documents": [_doc(x) for x in d.removed_documents],
        "queries": {"compared": d.queries_compared, "changed": d.queries_changed,
                    "mean_jaccard": d.mean_jaccard, "only_in_base": d.queries_only_base,
                    "only_in_head": d.queries_only_head, "match": d.match},
        "changed_queries": [{"query_id": d.base.query_ids[b], "jaccard": j}
                            for b, _h, j in changed],
        # Both files probed: the change's blast radius on reachability (else null).
        "became_unreachable": d.became_unreachable, "rescued": d.rescued,
        # retrieval-fairness's diff figures: exposure Gini and query overlap.
        "exposure_gini": {"base": d.base_gini, "head": d.head_gini, "rise": d.gini_rise},
        "query_overlap": d.query_overlap,
        # Both files hold the exact check: an index change's blast radius (else null).
        "became_index_hidden": d.became_index_hidden, "index_rescued": d.index_rescued,
        "index_recall": d.index_recall,
        # Either file holds topics of its own corpus: each topic's change (else absent).
        **({"topics": _topics(d.topics)} if d.topics is not None else {}),
        # The same documents cut differently: the chunking change and, where both files
        # know their chunks' spans, passages newly and no longer covered (else absent).
        **({"text": d.text.as_dict()} if d.text is not None else {}),
    }
    if d.drift is not None:  # either file holds a drift run: each relation's violation rate
        doc["drift"] = [{"relation": x.relation, "base_rate": x.base, "head_rate": x.head,
                         "base_tests": x.base_tests, "head_tests": x.head_tests}
                        for x in d.drift]
        if d.drift_notes:  # a side's drift run judged an earlier suite (run --append since)
            doc["drift_notes"] = d.drift_notes
    return doc


def gap_document(g: TrafficGap) -> dict[str, Any]:
    from ragcov.version import __version__

    return {
        "format": FORMAT_VERSION, "ragcov_version": __version__,
        "tests": {"data_file": str(g.tests.path), "k": g.tests.meta.k,
                  "queries": g.tests.n_queries, "chunk_coverage": g.test_coverage},
        "traffic": {"data_file": str(g.traffic.path), "k": g.traffic.meta.k,
                    "queries": g.traffic.n_queries, "hits": g.total_hits,
                    "chunks": g.traffic_chunks},
        "corpus_hash": g.tests.meta.corpus_hash, "chunks": g.tests.n_chunks,
        "traffic_weighted_coverage": g.traffic_weighted_coverage,
        "traffic_chunk_coverage": g.traffic_chunk_coverage,
        "tested_hits": g.tested_hits, "tested_traffic_chunks": g.tested_traffic_chunks,
        "untested_chunks": g.untested_total,
        "untested": [{"chunk_id": u.chunk_id, "doc_id": u.doc_id, "name": u.name,
                      "traffic_hits": u.traffic_hits,
                      "example_queries": [{"query_id": e.query_id, "text": e.text,
                                           "rank": e.rank} for e in u.example_queries]}
                     for u in g.untested],
        "untested_documents": [
            {"doc_id": d.doc_id, "chunks": d.chunks, "untested_chunks": d.untested_chunks,
             "traffic_hits": d.traffic_hits, "total_traffic_hits": d.total_traffic_hits}
            for d in g.documents],
    }
