"""``ragcov diff`` and ``ragcov gap`` for people: a terminal table or a pull-request comment.

The markdown fits a GitHub comment (at most 65,536 characters): totals, the ten
largest changes, and the full lists folded in a ``<details>`` block, cut with a
count of what was left out when they would not fit.
"""

from __future__ import annotations

from ragcov.compare.diff import CoverageDiff, DocumentChange
from ragcov.compare.gap import TrafficGap
from ragcov.compare.textdiff import passage_lines, text_diff_lines
from ragcov.reporters.names import chunk_ranges
from ragcov.summary import display_percent

TOP = 10
COMMENT_LIMIT = 60_000  # below GitHub's 65,536, leaving room for a bot's own header


def _pc(x: float | None, precision: int, none: str = "-") -> str:
    return none if x is None else f"{display_percent(x, precision)}%"


def points(delta: float, precision: int) -> str:
    """A signed change in percentage points, never rounded to a false 0."""
    shown = display_percent(abs(delta), precision)
    sign = "+" if delta > 0 else "-" if delta < 0 else "±"
    return f"{sign}{shown}"


def _jaccard(d: CoverageDiff) -> str:
    """The mean Jaccard, or why there is none: no query was in both files."""
    if d.mean_jaccard is not None:
        return f"{d.mean_jaccard:.3f}"
    hint = "; --match text pairs queries by their text" if d.match == "id" else ""
    return f"n/a: no query {'id' if d.match == 'id' else 'text'} in both{hint}"


def _patch(docs: list[DocumentChange], head: bool) -> tuple[int, int]:
    if head:
        return sum(d.head_chunks for d in docs), sum(d.head_covered for d in docs)
    return sum(d.base_chunks for d in docs), sum(d.base_covered for d in docs)


def diff_totals(d: CoverageDiff, precision: int = 1) -> list[str]:
    lines = [
        f"Chunk coverage: {_pc(d.base_coverage, precision)} -> {_pc(d.head_coverage, precision)}"
        f" ({points(d.delta, precision)} points)",
        f"BASE {d.base.path} (k={d.base_meta.k}, {d.base.n_queries} queries, "
        f"{d.base.n_chunks} chunks); HEAD {d.head.path} (k={d.head_meta.k}, "
        f"{d.head.n_queries} queries, {d.head.n_chunks} chunks)",
        f"Covered chunks: {d.base_covered} -> {d.head_covered} ({len(d.gained)} gained, "
        f"{len(d.lost)} lost)",
        f"Queries: {d.queries_compared} in both, {d.queries_changed} retrieve a different set "
        f"(mean Jaccard of old and new top-k {_jaccard(d)})"
        + (f"; {d.queries_only_base} only in BASE" if d.queries_only_base else "")
        + (f"; {d.queries_only_head} only in HEAD" if d.queries_only_head else ""),
    ]
    if not d.same_corpus:
        lines.append(f"Corpus changed: {d.matched_chunks} chunks matched by content")
    if d.text is not None and d.text.rechunked_documents:
        lines += text_diff_lines(d.text, lambda x: _pc(x, precision))
    lines.append(f"Exposure Gini (retrievals over every chunk): {d.base_gini:.3f} -> "
                 f"{d.head_gini:.3f} ({d.gini_rise:+.3f})"
                 + ("" if d.query_overlap is None else
                    f"; query overlap {_pc(d.query_overlap, precision)} (tests whose top-k is "
                    "the same set)"))
    if d.became_unreachable is not None and d.rescued is not None:
        lines.append(f"Reachability (both probed): {len(d.became_unreachable)} chunks became "
                     f"unreachable, {len(d.rescued)} rescued")
    if d.became_index_hidden is not None and d.index_rescued is not None:
        lines.append(_index_line(d, precision))
    if d.drift is not None:
        lines.append("Drift violation rates (ragcov drift): " + "; ".join(
            f"{x.relation} {_pc(x.base, precision)} -> {_pc(x.head, precision)}"
            for x in d.drift))
        lines += [f"Note: {note}" for note in d.drift_notes]
    if d.new_documents:
        n, c = _patch(d.new_documents, head=True)
        lines.append(f"New documents: {len(d.new_documents)} ({n} chunks, {c} covered, "
                     f"{_pc(c / n if n else 0.0, precision)})")
    if d.removed_documents:
        n, c = _patch(d.removed_documents, head=False)
        lines.append(f"Removed documents: {len(d.removed_documents)} ({n} chunks, {c} were "
                     "covered)")
    return lines


def _index_line(d: CoverageDiff, precision: int) -> str:
    """An index change's blast radius, with each side's recall against exact search."""
    recall = d.index_recall or {}

    def side(name: str) -> str:
        r = recall.get(name) or {}
        return f"tests {_pc(r.get('tests'), precision)}, probes {_pc(r.get('probes'), precision)}"

    return (f"Index (both checked against exact search): {len(d.became_index_hidden or [])} "
            f"chunks newly hidden by the index, {len(d.index_rescued or [])} no longer hidden; "
            f"recall {side('base')} -> {side('head')}")


def _table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """Aligned columns; ``align`` is one letter per column, l or r (default: l then r...)."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(r, widths, align)).rstrip()

    return [fmt(header), "-" * len(fmt(header)), *(fmt(r) for r in rows)]


def _doc_row(x: DocumentChange, precision: int) -> list[str]:
    return [x.doc_id, _pc(x.base, precision), _pc(x.head, precision),
            points(x.change, precision)]


def _topic_rows(d: CoverageDiff, precision: int, top: int | None) -> list[list[str]]:
    """Each topic's CC in BASE and HEAD, most changed first (``ragcov topics`` made them)."""
    changes = d.topics.changes if top is None else d.topics.changes[:top]
    return [[f"{c.topic} {c.label}", _pc(c.base, precision), _pc(c.head, precision),
             points(c.change, precision)] for c in changes]


def _topic_notes(d: CoverageDiff, shown: int) -> list[str]:
    notes = []
    if shown < len(d.topics.changes):
        notes.append(f"({len(d.topics.changes) - shown} more topics)")
    if d.topics.unmatched:
        other = "BASE" if d.topics.side == "head" else "HEAD"
        notes.append(f"{d.topics.unmatched} chunk(s) of {other} have no topic (not in the corpus "
                     "the topics were made from)")
    return notes


def diff_text(d: CoverageDiff, precision: int = 1, top: int | None = 20) -> str:
    lines = diff_totals(d, precision)
    changed = [x for x in d.documents if x.change != 0]
    if changed:
        shown = changed if top is None else changed[:top]
        lines += ["", *_table(["Document", "Base", "Head", "Change"],
                              [_doc_row(x, precision) for x in shown])]
        if len(shown) < len(changed):
            lines.append(f"({len(changed) - len(shown)} more changed documents)")
    if d.text is not None and d.text.by_span:
        lines += passage_lines(d.text, top)
    if d.topics is not None:
        rows = _topic_rows(d, precision, top)
        lines += ["", f"By topic (the topics of {d.topics.side.upper()}):",
                  *_table(["Topic", "Base", "Head", "Change"], rows), *_topic_notes(d, len(rows))]
    queries = d.changed_queries(TOP if top is not None else None)
    if queries:
        lines += ["", *_table(["Query", "Jaccard", "Lost", "Gained"], [
            [d.base.query_ids[b], f"{j:.2f}", *(str(len(s)) for s in d.retrieved_change(b, h))]
            for b, h, j in queries])]
    for title, side, rows in (("Became unreachable (no probe retrieves them now)", d.head,
                               d.became_unreachable_rows),
                              ("Rescued (reachable now)", d.base, d.rescued_rows)):
        if len(rows):
            lines += ["", f"{title}: {', '.join(chunk_ranges(side.chunk_names(rows.tolist())))}"]
    for title, ids in (("Newly hidden by the index (exact search reaches them)",
                        d.became_index_hidden), ("No longer hidden by the index", d.index_rescued)):
        if ids:
            lines += ["", f"{title}: {', '.join(ids)}"]
    for title, docs, head in (("New documents", d.new_documents, True),
                              ("Removed documents", d.removed_documents, False)):
        if docs:
            lines += ["", f"{title}:", *_table(["Document", "Chunks", "Covered"], [
                [x.doc_id, str(x.head_chunks if head else x.base_chunks),
                 str(x.head_covered if head else x.base_covered)] for x in docs])]
    return "\n".join(lines)


def _md_rows(header: list[str], rows: list[list[str]]) -> list[str]:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(esc(c) for c in r) + " |" for r in rows)]


def _fit(lines: list[str], budget: int) -> list[str]:
    out, used = [], 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget:
            out.append(f"\n… and {len(lines) - i} more lines")
            break
        out.append(line)
        used += len(line) + 1
    return out


def _chunk_list(d: CoverageDiff, gained: bool, show_ids: bool) -> str:
    """Gained or lost chunks as ``DOC:3-5`` runs (their ids with ``show_ids``)."""
    if show_ids:
        return ", ".join(f"`{c}`" for c in (d.gained if gained else d.lost))
    side, rows = (d.head, d.gained_rows) if gained else (d.base, d.lost_rows)
    return ", ".join(f"`{r}`" for r in chunk_ranges(side.chunk_names(rows.tolist())))


def diff_markdown(d: CoverageDiff, precision: int = 1, show_ids: bool = False) -> str:
    totals = diff_totals(d, precision)
    lines = [f"### Chunk coverage {points(d.delta, precision)} points", "",
             *(f"- {t}" for t in totals[:1] + totals[2:])]
    changed = [x for x in d.documents if x.change != 0]
    if changed:
        lines += ["", f"**Largest document changes** ({min(TOP, len(changed))} of "
                  f"{len(changed)})", "",
                  *_md_rows(["Document", "Base", "Head", "Change"],
                            [_doc_row(x, precision) for x in changed[:TOP]])]
    if d.topics is not None:
        rows = _topic_rows(d, precision, TOP)
        lines += ["", f"**Topics whose coverage changed most** (the topics of "
                  f"{d.topics.side.upper()})", "",
                  *_md_rows(["Topic", "Base", "Head", "Change"], rows), *_topic_notes(d, len(rows))]
    queries = d.changed_queries(TOP)
    if queries:
        lines += ["", "**Queries whose retrieved set changed most**", "",
                  *_md_rows(["Query", "Jaccard"],
                            [[d.base.query_ids[b], f"{j:.2f}"] for b, _h, j in queries])]
    if d.new_documents:
        lines += ["", "**New documents**", "", *_md_rows(["Document", "Chunks", "Covered"], [
            [x.doc_id, str(x.head_chunks), str(x.head_covered)] for x in d.new_documents[:TOP]])]
    if d.removed_documents:
        lines += ["", f"**Removed documents**: {len(d.removed_documents)}"]
    full = [*_md_rows(["Document", "Base", "Head", "Change"],
                      [_doc_row(x, precision) for x in changed]), "",
            f"Gained chunks ({len(d.gained)}): " + _chunk_list(d, True, show_ids), "",
            f"Lost chunks ({len(d.lost)}): " + _chunk_list(d, False, show_ids)]
    if d.text is not None and d.text.by_span:
        full += passage_lines(d.text, TOP, markdown=True)
    head = "\n".join(lines)
    lines += ["", "<details><summary>Full list</summary>", "",
              *_fit(full, COMMENT_LIMIT - len(head) - 100), "", "</details>"]
    return "\n".join(lines) + "\n"


def gap_totals(g: TrafficGap, precision: int = 1) -> list[str]:
    return [
        f"Traffic-weighted coverage: {_pc(g.traffic_weighted_coverage, precision, 'n/a')} "
        f"({g.tested_hits} of {g.total_hits} production hits land on chunks the tests retrieve)",
        f"Traffic chunk coverage: {_pc(g.traffic_chunk_coverage, precision, 'n/a')} "
        f"({g.tested_traffic_chunks} of {g.traffic_chunks} chunks production retrieves)",
        f"Tests: {g.tests.n_queries} queries, chunk coverage {_pc(g.test_coverage, precision)};"
        f" traffic: {g.traffic.n_queries} queries; untested hot chunks: {g.untested_total}",
    ]


def _gap_rows(g: TrafficGap, limit: int | None, show_ids: bool = False) -> list[list[str]]:
    shown = g.untested if limit is None else g.untested[:limit]
    # One chunk a row: named by its id (a position names another chunk once one is deleted).
    return [[u.chunk_id, u.doc_id, str(u.traffic_hits),
             u.example_queries[0].text[:70] if u.example_queries else ""] for u in shown]


def gap_text(g: TrafficGap, precision: int = 1, top: int = 20, show_ids: bool = False) -> str:
    lines = gap_totals(g, precision)
    if g.untested:
        lines += ["", *_table(["Untested chunk", "Document", "Hits", "Example production query"],
                              _gap_rows(g, top, show_ids), "llrl")]
    if g.documents:
        lines += ["", *_table(["Document", "Untested chunks", "Hits on them", "All hits"], [
            [d.doc_id, str(d.untested_chunks), str(d.traffic_hits), str(d.total_traffic_hits)]
            for d in g.documents[:top]])]
    return "\n".join(lines)


def gap_markdown(g: TrafficGap, precision: int = 1, show_ids: bool = False) -> str:
    lines = [f"### Traffic-weighted coverage {_pc(g.traffic_weighted_coverage, precision, 'n/a')}",
             "",
             *(f"- {t}" for t in gap_totals(g, precision))]
    if g.untested:
        lines += ["", f"**Most-retrieved untested chunks** ({min(TOP, len(g.untested))} of "
                  f"{g.untested_total})", "",
                  *_md_rows(["Chunk", "Document", "Hits", "Example production query"],
                            _gap_rows(g, TOP, show_ids))]
    full = _md_rows(["Document", "Untested chunks", "Hits on them"], [
        [d.doc_id, str(d.untested_chunks), str(d.traffic_hits)] for d in g.documents])
    head = "\n".join(lines)
    lines += ["", "<details><summary>All documents with untested traffic</summary>", "",
              *_fit(full, COMMENT_LIMIT - len(head) - 100), "", "</details>"]
    return "\n".join(lines) + "\n"


def render_comparison(result: CoverageDiff | TrafficGap, format: str, precision: int = 1,
                      show_ids: bool = False, top: int = 20) -> str:
    """A diff or a gap in ``format`` (text, markdown or json): the one dispatch both commands use."""
    from ragcov.compare.jsondoc import diff_document, gap_document
    from ragcov.files import json_text

    if isinstance(result, CoverageDiff):
        if format == "json":
            return json_text(diff_document(result))
        if format == "markdown":
            return diff_markdown(result, precision, show_ids)
        return diff_text(result, precision)
    if format == "json":
        return json_text(gap_document(result))
    if format == "markdown":
        return gap_markdown(result, precision, show_ids)
    return gap_text(result, precision, top, show_ids)


def delta_failure(delta: float, fail_under_delta: float | None, precision: int = 1) -> str | None:
    """``ragcov diff --fail-under-delta``: None when the change passes, else the message.

    The drop is judged as printed at ``precision`` (as every fail-under gate is): a
    change shown as -19.0 points passes a gate of 19, whatever digits lie beyond.
    """
    if fail_under_delta is None or delta >= 0:
        return None
    if float(display_percent(-delta, precision)) <= fail_under_delta:
        return None
    return (f"Coverage failure: chunk coverage changed by {points(delta, precision)} points, a "
            f"drop of more than fail-under-delta={fail_under_delta:g}")
