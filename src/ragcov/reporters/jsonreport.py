"""The versioned JSON report.

FORMAT_VERSION history:
  1: meta, totals, documents, chunks, queries (the first published shape); later,
     within 1: scope, excluded, redundant, duplicates, totals.excluded_chunks and
     documents.*.excluded_chunks; for a probed file, totals.probed_chunks,
     reachable_chunks, unreachable_chunks, coverage_of_reachable, workload_ceiling,
     coverage_of_ceiling, and chunks.*.status, displaced_by and unreachable_reason;
     meta.id_matching (how hits without ids were matched to chunks); later,
     totals.not_probed_chunks, untested_chunks, unknown_chunks, and every reachability
     total counted over the report's scope (reachable_chunks = chunks - unreachable,
     the denominator of coverage_of_reachable; before, it was covered + untested);
     meta.depth (k, effective_depth, mean_depth, short_queries) and queries.*.depth;
     redundant.*.droppable_together (one set of tests removable at once, no chunk lost);
     queries.*.test (the pytest node id that asked it, recorded by pytest --ragcov);
     chunks.*.draft for an untested chunk (the probe question that reached it);
     totals.exclusion_candidates, chunks.*.exclusion_candidate (junk: no words, boilerplate,
     too short) and exclusion_config (the ragcov.toml lines that exclude them);
     generated_left_out (questions ragcov generate wrote, not counted until accepted),
     scope.include_generated; queries.*.outcome and correctness (pytest --ragcov outcomes); drift (the drift
     run recorded by ``ragcov drift``, as its own ``--format json`` writes it); for a
     file probed with the exact check, totals.exact_check, index_recall, lost_at,
     index_hidden_chunks, suite_exact_covered_chunks, suite_index_missed_chunks (and with
     a reranker first_stage_coverage, reranker_dropped_chunks), chunks.*.lost_at and
     missed_by, and stages (per test index_recall and index_missed); where the data file
     knows each chunk's span in its document, totals.text_coverage, text_characters,
     covered_text_characters, the same per document, and text (how the spans were
     found, chunks not placed, overlaps, text outside every chunk);
     chunks.*.draft.question
     and .copied (a generator's question, or words copied from a chunk to rewrite); copied
     (present when a test's question copies 8 or more words in a row of a chunk it
     retrieves: the tests, and coverage with and without them); meta.retriever.device and
     .devices (where the queries were embedded, as resolved; "mixed" for appends made on
     several);
     totals.workload_ceiling
     for every file (min(1, queries x k / chunks)), and correctness.pass_rate for test
     outcomes (their hit_rate, the same number, is kept).
Keys may be added within a version; none is renamed or removed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from ragcov.failures import outcome_correctness, query_outcome
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import Support, redundant_tests
from ragcov.reporters.sections import copied_facts
from ragcov.reporters.stages import STAGE_TOTALS, chunk_entry, stages_json
from ragcov.scope import ReportScope, Scoped, apply_scope

FORMAT_VERSION = 1


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def json_report(m: CoverageMatrix, entropy_support: Support = "retrieved",
                gini_over: Support = "retrieved", *, texts: Mapping[str, str] | None = None,
                scoped: Scoped | None = None,
                scope: ReportScope | None = None) -> dict[str, Any]:
    """The report of ``scoped`` when given (its matrix is the one counted), else of ``m``."""
    if scoped is None:
        scoped = apply_scope(m, texts or {}, {}, scope or ReportScope())
    m = scoped.matrix
    s = scoped.summary(entropy_support=entropy_support, gini_over=gini_over)
    meta = dict(m.meta)
    meta_out = {"format": FORMAT_VERSION, "ragcov_version": meta.get("ragcov_version"),
                "k": m.k, "retriever": meta.get("retriever", {}),
                "corpus_hash": meta.get("corpus_hash"), "created": meta.get("created")}
    places = meta.get("hardware")
    if isinstance(places, list) and places:
        # Added within 1: where the queries were embedded (the x:hardware annotation), as
        # resolved: --device auto is recorded as the cpu, cuda:N or mps it took.
        devices = list(dict.fromkeys(str(p.get("device")) for p in places if isinstance(p, dict)))
        meta_out["retriever"] = {**meta_out["retriever"],
                                 "device": devices[0] if len(devices) == 1 else "mixed",
                                 "devices": devices}
    if meta.get("index_recall") is not None:
        meta_out["index_recall"] = meta["index_recall"]
    if meta.get("id_matching") is not None:
        # Added within 1: hits without ids matched by text, and how identical texts were told apart.
        meta_out["id_matching"] = meta["id_matching"]
    if meta.get("scripts") is not None:
        # Added within 1: the scripts the corpus is written in (share of its letters).
        meta_out["scripts"] = meta["scripts"]
    if s.depth is not None:
        # Added within 1: how deep the lists are against k (a retriever returning fewer).
        meta_out["depth"] = s.depth.as_dict()
    if meta_out["ragcov_version"] is None:
        from ragcov.version import __version__

        meta_out["ragcov_version"] = __version__
    # Each chunk's queries as slices of one list of ids: no Python list per chunk is made
    # twice, and none from an array (a million of those took seconds).
    hit_rows, cut = m.hits_by_chunk()
    asked = np.asarray(m.query_ids, dtype=object)[hit_rows].tolist()
    cut = cut.tolist()
    doc_of = m.doc_ids.tolist()
    outcomes = meta.get("outcomes") or {}  # pytest --ragcov: each test's outcome
    askers = meta.get("query_tests") or {}  # and every test that asked each question
    # each list's length as retrieved (the scope may hide some of its chunks)
    depth_of = (scoped.full if scoped.full is not None else m).depths()
    doc = {
        "meta": meta_out,
        "scope": {**{k: list(v) if isinstance(v, tuple) else v
                     for k, v in asdict(scoped.scope).items() if k != "reachable_if_probed"},
                  "omitted_documents": scoped.omitted_documents},
        "totals": {
            "chunks": s.chunks, "covered_chunks": s.covered, "chunk_coverage": s.coverage,
            "queries": s.queries, "normalized_entropy": s.normalized_entropy, "gini": s.gini,
            "mean_pairwise_jaccard": _num(s.mean_pairwise_jaccard),
            "mean_pairwise_jaccard_sampled_pairs": s.jaccard_sampled_pairs,
            "entropy_support": s.entropy_support, "gini_over": s.gini_over,
            "excluded_chunks": s.excluded,
            # queries x k / chunks, at most 1: what this workload can cover at best
            "workload_ceiling": s.ceiling,
        },
        "documents": {
            d.doc_id: {"chunks": d.chunks, "covered_chunks": d.covered,
                       "chunk_coverage": d.coverage, "missing_chunks": d.missing_chunks,
                       "excluded_chunks": d.excluded}
            for d in s.documents
        },
        "chunks": {
            cid: {"doc_id": doc_of[j], "hit_count": cut[j + 1] - cut[j],
                  "queries": asked[cut[j]:cut[j + 1]]}
            for j, cid in enumerate(m.chunk_ids)
        },
        "excluded": {e.chunk_id: {"doc_id": e.doc_id, "reason": e.reason}
                     for e in scoped.excluded},
        "queries": {
            qid: {"text": m.query_texts[i], "depth": int(depth_of[i]),
                  "retrieved": [m.chunk_ids[j] for j in m.retrieved(i)],
                  "scores": m.retrieved_scores(i),
                  **({"test": m.query_context[i]} if m.query_context[i] else {}),
                  **({"outcome": query_outcome(qid, m.query_context[i], outcomes, askers)}
                     if query_outcome(qid, m.query_context[i], outcomes, askers) else {})}
            for i, qid in enumerate(m.query_ids)
        },
        "redundant": {
            t.query_id: {"subsumed_by": t.subsumed_by, "most_similar": t.most_similar,
                         "jaccard": t.jaccard, "unique_chunks": t.unique_chunks,
                         "reasons": list(t.reasons), "droppable_together": t.droppable}
            for t in redundant_tests(m)
        },
        "duplicates": [asdict(g) for g in scoped.duplicates()],
    }
    right = outcome_correctness(outcomes)
    if right is not None:
        # Added within 1: the recorded tests' pass rate beside coverage.
        doc["correctness"] = right.as_dict()
    copied = copied_facts(scoped)
    if copied is not None:
        # Added within 1: tests whose question copies 8+ words of a chunk they retrieve.
        doc["copied"] = copied
    if scoped.generated_left_out:
        # Added within 1: generated questions not yet accepted, left out of every count.
        doc["generated_left_out"] = scoped.generated_left_out
    if scoped.text is not None:
        _add_text(doc, scoped.text)
    if scoped.reachability is not None:
        _add_reachability(doc, scoped.reachability)
    elif scoped.stages is not None:  # a traced reranker's first stage, no probes
        st = scoped.stages.totals(scoped.matrix.n_chunks)
        doc["totals"].update({key: st[key] for key in STAGE_TOTALS if key in st})
        doc["stages"] = stages_json(scoped.stages)
    return doc


def _add_text(doc: dict[str, Any], text: Any) -> None:
    """Text coverage (fields added within 1), when the data file knows where chunks lie:
    totals and each document's text_coverage, text_characters and covered_text_characters,
    and ``text`` (how the spans were found, what could not be counted)."""
    doc["totals"].update({"text_coverage": text.coverage, "text_characters": text.characters,
                          "covered_text_characters": text.covered})
    for d in text.documents:
        if d.doc_id in doc["documents"]:
            doc["documents"][d.doc_id].update({
                "text_coverage": d.coverage, "text_characters": d.characters,
                "covered_text_characters": d.covered})
    doc["text"] = text.totals()


def _add_reachability(doc: dict[str, Any], r: Any) -> None:
    """A probed file's report says, per chunk, why it is uncovered (fields added within 1).

    The totals are over the report's chunks, as its table counts them (its include, omit
    and exclusions; with ``--reachable`` the unreachable chunks it set aside count too);
    each chunk (counted or excluded) gets its ``status`` and, when unreachable, the chunk
    that displaced it and the reason.
    """
    totals = r.totals()
    doc["totals"].update({key: totals[key] for key in (
        "probed_chunks", "not_probed_chunks", "untested_chunks", "unknown_chunks",
        "reachable_chunks", "unreachable_chunks", "coverage_of_reachable",
        "workload_ceiling", "coverage_of_ceiling", "exclusion_candidates")})
    if r.junk_config:
        doc["exclusion_config"] = r.junk_config
        doc["exclusion_rules"] = r.junk_rules
    # Where chunks are lost (ragcov probe's exact check): totals and the per-test view.
    doc["totals"].update({key: totals[key] for key in STAGE_TOTALS if key in totals})
    if r.stages is not None:
        doc["stages"] = stages_json(r.stages)
    every = r.full or r  # excluded chunks keep their status, though no total counts them
    position = {cid: j for j, cid in enumerate(every.chunk_ids)}
    for section in ("chunks", "excluded"):
        for cid, entry in doc[section].items():
            j = position[cid]
            entry["status"] = every.status[j]
            entry["displaced_by"] = every.displacer(j)
            if every.reason[j] is not None:
                entry["unreachable_reason"] = every.reason[j]
            if every.draft(j) is not None:
                entry["draft"] = every.draft(j).as_dict()
            if j in every.junk:
                entry["exclusion_candidate"] = every.junk[j]
            entry.update(chunk_entry(every.stages, j))
