"""The reachability report: text for people, JSON (``format`` 1) for machines.

Text leads with what a team acts on: how many uncovered chunks are missing tests and
how many no test could reach, then the unreachable chunks with what displaced each
and why, then the hubs. JSON is whole (every chunk's status), as machine outputs are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragcov.reachability.audit import UNTESTED, Reachability
from ragcov.reporters.stages import chunk_entry, stage_lines, stages_json
from ragcov.summary import display_percent

SHOW_UNREACHABLE = 20
DRAFTS_SHOWN = 5


def _junk_among(r: Reachability, status: str) -> str:
    n = sum(1 for j in r.junk if r.status[j] == status)
    return f" ({n} of them exclusion candidates: junk, see below)" if n else ""


def candidate_lines(r: Reachability, show: int = SHOW_UNREACHABLE) -> list[str]:
    """The uncovered chunks to exclude rather than test, and the config lines that do it."""
    if not r.junk:
        return []
    kinds: dict[str, int] = {}
    for reason in r.junk.values():
        kinds[reason.split(":")[0]] = kinds.get(reason.split(":")[0], 0) + 1
    ids = [r.chunk_ids[j] for j in sorted(r.junk)]
    more = f", ... and {len(ids) - show} more" if len(ids) > show else ""
    return ["", f"Exclusion candidates ({len(ids)}: "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            + "), junk rather than tests to write: " + ", ".join(ids[:show]) + more,
            "  to exclude them, add to ragcov.toml ([tool.ragcov] in pyproject.toml):",
            *(f"    {line}" for line in r.junk_config)]


def untested_lines(r: Reachability, show_ids: bool = False, show: int = SHOW_UNREACHABLE
                   ) -> list[str]:
    """Where tests are missing: the documents with the most untested chunks (each with its
    count), or with ``show_ids`` the untested chunks' ids."""
    untested = np.asarray([i for i in np.flatnonzero(r.status == UNTESTED) if int(i) not in r.junk],
                          dtype=np.int64)
    if not untested.size:
        return []
    if show_ids:
        ids = [r.chunk_ids[i] for i in untested]
        more = f", ... and {len(ids) - show} more (--format json lists them all)" \
            if len(ids) > show else ""
        lines = ["", f"Untested chunks ({len(ids)}), a test to write for each: "
                 + ", ".join(ids[:show]) + more]
    else:
        docs, counts = np.unique(np.asarray(r.doc_ids, dtype=object)[untested].astype(str),
                                 return_counts=True)
        order = np.lexsort((docs, -counts))[:10]
        lines = ["", "Documents with the most untested chunks (--show-ids lists the chunks):",
                 *(f"  {docs[i]}  {counts[i]}" for i in order)]
    drafted = [int(i) for i in untested if r.draft(int(i)) is not None]
    if drafted:
        questions = sum(1 for i in drafted if r.draft(i).is_question)  # type: ignore[union-attr]
        lines += ["", f"Draft tests ({len(drafted)} untested chunks): {questions} questions from "
                  f"the generator to review, {len(drafted) - questions} copied from a chunk, to "
                  "rewrite as questions (a copy is no question: it tests nothing new; probe "
                  "--generator drafts questions); --drafts-out FILE writes them all:"]
        for i in drafted[:DRAFTS_SHOWN]:
            d = r.draft(i)
            assert d is not None
            lines.append(f"  {r.chunk_ids[i]}  {d.text[:90]!r} ({d.label}; rank {d.rank})")
    return lines


def reachability_text(r: Reachability, precision: int = 1, show: int = SHOW_UNREACHABLE,
                      show_ids: bool = False) -> str:
    pct = lambda f: f"{display_percent(f, precision)}%"  # noqa: E731
    t = r.totals()
    lines = [
        f"Chunks: {t['chunks']}   queries: {t['queries']}   k: {t['k']}   "
        f"probes: {t['probes']} over {t['probed_chunks']} chunks",
        f"  covered      {t['covered_chunks']:>8}   a test retrieves it",
        f"  untested     {t['untested_chunks']:>8}   a probe retrieves it, no test does: "
        "write a test" + _junk_among(r, UNTESTED),
        f"  unreachable  {t['unreachable_chunks']:>8}   no probe retrieves it: a retrieval defect",
    ]
    if t["unknown_chunks"]:
        lines.append(f"  unknown      {t['unknown_chunks']:>8}   not probed, no probe reached it: "
                     "no status (probe them to know)")
    lines += [
        f"Chunk coverage: {pct(t['coverage'])}; of reachable chunks: "
        f"{pct(t['coverage_of_reachable'])} ({t['covered_chunks']} of {t['reachable_chunks']}: "
        f"the chunks less the unreachable)"
        + (f", a lower bound: {t['not_probed_chunks']} chunks were not probed"
           if t["not_probed_chunks"] else "")
        + f"; workload ceiling min(1, queries x k / chunks): "
        f"{pct(t['workload_ceiling'])} (coverage is {pct(t['coverage_of_ceiling'])} of it)",
    ]
    lines += untested_lines(r, show_ids, show)
    lines += candidate_lines(r, show)
    lost = r.unreachable()
    if lost:
        lines.append("")
        lines.append(f"Unreachable chunks ({len(lost)}), each with the chunk its own probe "
                     "ranked first:")
        for i in lost[:show]:
            shown_by = r.displacer(i) or "-"
            why = f"  [{r.reason[i]}]" if r.reason[i] else ""
            where = f"  [lost at the {r.cause(i)}]" if r.cause(i) else ""
            lines.append(f"  {r.name(i)}  displaced by {shown_by}{where}{why}")
        if len(lost) > show:
            lines.append(f"  ... and {len(lost) - show} more (--format json lists them all)")
    lines += stage_lines(r, show)
    lines.append("")
    lines.append("Hubs (share of all retrievals taken by the most retrieved chunks):")
    for name, h in (("tests", r.tests), ("probes", r.probes)):
        if not h.retrievals:
            continue
        cap = h.capture
        skew = "n/a" if h.skewness is None else f"{h.skewness:.2f}"
        lines.append(f"  {name:<6} top 5 {pct(cap['top5'])}, top 10 {pct(cap['top10'])}, "
                     f"top 1% {pct(cap['top1%'])}; k-occurrence skewness {skew}, "
                     f"hub Gini (k-occurrence over all {r.n_chunks} chunks) {h.gini:.3f}")
        top = ", ".join(f"{r.name(i)} ({c})" for i, c in h.top(5))
        lines.append(f"         most retrieved: {top}")
    return "\n".join(lines)


def reachability_json(r: Reachability, lost_gold: dict[str, Any] | None = None) -> dict[str, Any]:
    chunks = []
    for i, cid in enumerate(r.chunk_ids):
        chunks.append({"chunk_id": cid, "doc_id": str(r.doc_ids[i]), "status": r.status[i],
                       "probed": bool(r.probed[i]),
                       "displaced_by": r.displacer(i),
                       "reason": r.reason[i],
                       "k_occurrence": {"tests": int(r.tests.k_occurrence[i]),
                                        "probes": int(r.probes.k_occurrence[i])},
                       **({"draft": r.draft(i).as_dict()} if r.draft(i) is not None else {}),
                       **({"exclusion_candidate": r.junk[i]} if i in r.junk else {}),
                       **chunk_entry(r.stages, i)})
    doc: dict[str, Any] = {"format": 1, "totals": r.totals(), "exclusion_config": r.junk_config,
                           "exclusion_rules": r.junk_rules,
                           "hubs": {"tests": r.tests.as_dict(r.chunk_ids),
                                    "probes": r.probes.as_dict(r.chunk_ids)},
                           "chunks": chunks}
    if r.stages is not None:
        doc["stages"] = stages_json(r.stages)
    if lost_gold is not None:
        doc["lost_gold"] = lost_gold
    return doc


def lost_gold_text(gold: dict[str, Any]) -> str:
    """One line on lost gold, in the labels' own unit (chunks or documents)."""
    unit = "chunks" if gold["level"] == "chunk" else "documents"
    return (f"Lost gold: {len(gold['not_covered'])} of {gold['relevant']} relevant {unit} no test "
            f"retrieves; {len(gold['unreachable'])} of them no probe retrieves either")


def reachability_lines(scoped: Any, show_missing: bool = False, show_ids: bool = False,
                       fenced: bool = False) -> list[str]:
    """What ``ragcov report`` adds under the table of a probed file: the uncovered chunks
    split into untested and unreachable, the rules that exclude the junk among them (in a
    fenced TOML block with ``fenced``, for Markdown), and with ``--show-missing`` the
    unreachable ones."""
    from ragcov.reporters.names import chunk_ranges

    r: Reachability = scoped.reachability
    t = r.totals()
    unknown = f", {t['unknown_chunks']} not probed (no status)" if t["unknown_chunks"] else ""
    lines = [f"Reachability (ragcov probe): {t['untested_chunks']} untested (write a test), "
             f"{t['unreachable_chunks']} unreachable (a retrieval defect){unknown}; coverage of "
             f"reachable chunks {display_percent(t['coverage_of_reachable'], 1)}% "
             f"({t['covered_chunks']} of {t['reachable_chunks']})"
             + ("" if scoped.scope.reachable else "; --reachable counts only those")]
    if r.junk:
        n = len(r.junk_rules)
        lines.append(f"Exclusion candidates: {len(r.junk)} uncovered chunks are junk (no words, "
                     "boilerplate copies, too short), not tests to write; "
                     + (f"{'this rule' if n == 1 else f'these {n} rules'} in ragcov.toml "
                        f"([tool.ragcov] in pyproject.toml) exclude{'s' if n == 1 else ''} them:" if n else
                        "no rule excludes them without content:"))
        lines += (["```toml", *r.junk_config, "```"] if fenced
                  else [f"    {line}" for line in r.junk_config])
    lost = r.unreachable()
    if show_missing and lost:
        full = scoped.full if scoped.full is not None else scoped.matrix
        if show_ids:
            shown = ", ".join(r.chunk_ids[i] for i in lost)
        else:
            from ragcov.summary import document_positions

            pos = document_positions(full, scoped.positions)
            at = {cid: j for j, cid in enumerate(full.chunk_ids)}  # this view's rows -> the file's
            shown = ", ".join(chunk_ranges((full.doc_ids[at[r.chunk_ids[i]]],
                                            pos[at[r.chunk_ids[i]]]) for i in lost))
        lines.append(f"Unreachable (no probe retrieves them): {shown}")
    return lines


REWRITE_KEY = "rewrite"


def draft_suite(r: Reachability) -> list[dict[str, Any]]:
    """The draft tests as a suite file (``probe --drafts-out``): one line per untested
    chunk, with the chunk it should retrieve, to review and add to the suite.

    A generator's question is the line's ``question``. A sentence or terms copied from
    a chunk is no question: it goes in ``rewrite``, and the line has no ``question``
    until a person writes one, so the file cannot be run as a suite with copies in it
    (its loader names the line)."""
    out = []
    for i in np.flatnonzero(r.status == UNTESTED):
        d = r.draft(int(i))
        if d is None or not d.text.strip():
            continue
        text = {"question": d.text} if d.is_question else {REWRITE_KEY: d.text}
        out.append({"id": f"draft-{r.chunk_ids[i]}", **text,
                    "chunk_id": r.chunk_ids[i], "doc_id": str(r.doc_ids[i]),
                    "draft": d.label, "probe_kind": d.kind, "probe_rank": d.rank})
    return out
