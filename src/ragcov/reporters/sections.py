"""The lines ``ragcov report`` prints under its table: exclusions, duplicate texts, redundant tests.

The analyses are :func:`ragcov.metrics.duplicate_groups` and
:func:`ragcov.metrics.redundant_tests`; these only say them in a line a person reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragcov.metrics import DuplicateGroup, RedundantTest
from ragcov.scope import ExcludedChunk


def duplicates_line(groups: list[DuplicateGroup]) -> str | None:
    """One line for ``ragcov report``; None when there are no duplicates. Each chunk is
    named by its id: the copies of one text are single chunks, not a range."""
    if not groups:
        return None
    chunks = sum(len(g.chunk_ids) for g in groups)
    docs = len({d for g in groups for d in g.doc_ids})
    shown = groups[0].chunk_ids[:3]
    first = ", ".join(shown) + (" ..." if len(groups[0].chunk_ids) > 3 else "")
    return (f"Duplicate chunk texts: {len(groups)} group{'s' if len(groups) != 1 else ''} "
            f"({chunks} chunks in {docs} document{'s' if docs != 1 else ''}; first: {first}); "
            "identical chunks tie, so only some of them can be covered")


def redundant_lines(items: list[RedundantTest], n_queries: int) -> list[str]:
    """``ragcov report --redundant``: a heading and one line per redundant test."""
    head = (f"Redundant tests: {len(items)} of {n_queries} "
            "(no chunk of their own, or Jaccard >= 0.8 with another)")
    if not items:
        return [head]
    drop = [t for t in items if t.droppable]
    width = max(len(t.query_id) for t in items)
    lines = [head, *(f"  {'drop' if t.droppable else 'keep'}  {t.query_id.ljust(width)}  {t.why}"
                     for t in items)]
    # Each line alone is pairwise: both tests of an identical pair are listed. The "drop"
    # ones are one set that can go together without losing a chunk.
    lines.append(f"Droppable together: {len(drop)} of these (marked drop) can all be removed "
                 "at once and every covered chunk stays covered; those marked keep must stay once "
                 "they are gone")
    return lines


def excluded_line(excluded: Sequence[ExcludedChunk]) -> str | None:
    """``Excluded: 5 chunks (3 exclude, 2 min_chunk_chars), not counted``; None if none."""
    if not excluded:
        return None
    kinds: dict[str, int] = {}
    for e in excluded:
        kind = e.reason.split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    parts = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    n = len(excluded)
    return (f"Excluded: {n} chunk{'s' if n != 1 else ''} ({parts}), not counted in the "
            "total; ragcov json lists them with the reason")


def generated_line(left_out: Mapping[str, Any]) -> str | None:
    """What ``ragcov generate`` recorded that the totals leave out, and how to count it."""
    if not left_out:
        return None
    hits = sum(1 for mark in left_out.values() if isinstance(mark, dict) and mark.get("hit_target"))
    n = len(left_out)
    return (f"Generated: {n} question{'s' if n != 1 else ''} from ragcov generate ({hits} reached "
            "their target) are not counted until accepted: review them, add them to your suite "
            "and run it (--include-generated counts them now)")


def correctness_line(c: Any, k: int) -> str:
    """Correctness beside coverage: hit rate and recall@k (labels) or the pass rate (outcomes)."""
    if c.source == "labels":
        if c.level == "doc":
            return (f"Correctness (document-level labels): hit rate {c.hit_rate * 100:.1f}% of "
                    f"{c.labelled} labelled queries retrieve a chunk of a relevant document; mean "
                    f"recall@{k} {c.recall_at_k:.3f} (of relevant documents)")
        return (f"Correctness (chunk-level labels): hit rate {c.hit_rate * 100:.1f}% of {c.labelled} "
                f"labelled queries retrieve a relevant chunk; mean recall@{k} {c.recall_at_k:.3f}")
    failed = f"; failing: {', '.join(c.failed[:3])}{' ...' if len(c.failed) > 3 else ''}" \
        if c.failed else ""
    return (f"Correctness (test outcomes): {c.labelled - len(c.failed)} of {c.labelled} recorded "
            f"tests passed (pass rate {c.hit_rate * 100:.1f}%){failed}")


def text_coverage_line(text: Any, precision: int = 0) -> str | None:
    """Text coverage under the total: the share of the documents' characters in retrieved
    chunks, with what it could not count (chunks not placed, overlaps counted once)."""
    if text is None:
        return None
    from ragcov.summary import display_percent

    how = "spans from the splitter" if text.method == "split" else "chunks located in --documents"
    line = (f"Text coverage: {display_percent(text.coverage, precision)}% of {text.characters:,} "
            f"characters in {len(text.documents)} document{'s' if len(text.documents) != 1 else ''} "
            f"lie in a retrieved chunk ({how})")
    caveats = text.caveats()
    return line + (f"; {'; '.join(caveats)}" if caveats else "")


def unresolved_labels_line(c: Any) -> str | None:
    """Labels the corpus cannot resolve, said beside the hit rate: a label naming an id the
    corpus no longer has (a re-chunk renamed its chunks) can never be hit, and the hit rate
    would otherwise drop with no reason given."""
    u = getattr(c, "unresolved", None) if c is not None else None
    if u is None:
        return None
    what = "chunk ids" if u.level == "chunk" else "document ids"
    first = ", ".join(u.ids[:3]) + (" ..." if len(u.ids) > 3 else "")
    dead = (f"; {u.dead_queries} labelled quer{'ies' if u.dead_queries != 1 else 'y'} can never "
            "hit" if u.dead_queries else "")
    hint = ("; was the corpus re-chunked? `ragcov qrels check` sorts the labels and --fix "
            "repairs the sound ones" if u.level == "chunk" else "")
    return (f"Labels not resolved: {u.labels} of {u.total} relevant labels name {what} not in "
            f"this corpus (unknown {what}: {first}){dead}; the hit rate counts them as misses{hint}")


def copied_facts(scoped: Any) -> dict[str, Any] | None:
    """Coverage with and without the tests that copy their chunk; None when none does."""
    from ragcov.copies import MIN_RUN, coverage_without

    copied = scoped.copied
    if not copied:
        return None
    m = scoped.matrix
    covered, without = coverage_without(m, copied)
    return {"min_words": MIN_RUN, "tests": len(copied), "of": m.n_queries,
            "coverage": int(m.covered().sum()) / m.n_chunks if m.n_chunks else 0.0,
            "coverage_without": without, "covered_without": covered, "chunks": m.n_chunks,
            "copies": [c.as_dict() for c in copied]}


def copied_line(scoped: Any, precision: int = 1) -> str | None:
    """Tests flagged copied, and the coverage the suite has without them."""
    from ragcov.summary import display_percent

    f = copied_facts(scoped)
    if f is None:
        return None
    first = f["copies"][0]
    return (f"Copied: {f['tests']} of {f['of']} tests copy {f['min_words']} or more words in a row "
            f"from a chunk they retrieve (first: {first['query_id']}, {first['words']} words of "
            f"{first['chunk_id']}): the chunk's own words, not a user's, may be what reaches it; chunk "
            f"coverage {display_percent(f['coverage'], precision)}% with them, "
            f"{display_percent(f['coverage_without'], precision)}% ({f['covered_without']} of "
            f"{f['chunks']}) without them")


def copied_gate_note(scoped: Any, fail_under: float | None) -> str | None:
    """Said when ``--fail-under`` passes only because of the copied tests: the gate holds the
    number with them, and a reader should know it would fail without them."""
    if fail_under is None:
        return None
    from ragcov.summary import display_percent

    f = copied_facts(scoped)
    if f is None or not f["coverage_without"] * 100 < fail_under <= f["coverage"] * 100:
        return None
    return (f"Note: --fail-under {fail_under:g} passes with the {f['tests']} copied tests; without "
            f"them chunk coverage is {display_percent(f['coverage_without'], 1)}%")

