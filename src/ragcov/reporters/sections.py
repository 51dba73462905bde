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
        return (f"Correctness (labels): hit rate {c.hit_rate * 100:.1f}% of {c.labelled} labelled "
                f"queries retrieve a relevant chunk; mean recall@{k} {c.recall_at_k:.3f}")
    failed = f"; failing: {', '.join(c.failed[:3])}{' ...' if len(c.failed) > 3 else ''}" \
        if c.failed else ""
    return (f"Correctness (test outcomes): {c.labelled - len(c.failed)} of {c.labelled} recorded "
            f"tests passed (pass rate {c.hit_rate * 100:.1f}%){failed}")
