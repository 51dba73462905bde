"""The per-document table (text, markdown, total), as ``coverage report`` prints lines."""

from __future__ import annotations

from typing import Any

from ragcov.controls import escape_controls
from ragcov.data.schema import known_by_name_only
from ragcov.errors import RagcovError
from ragcov.reporters.names import number_ranges
from ragcov.summary import CoverageSummary, Depth, DocumentNumbers, ceiling_text, display_percent

SORT_KEYS = ("name", "chunks", "covered", "missing", "cover")
#: Documents a Markdown table lists by default: a pull-request comment over a corpus of
#: hundreds of documents is read for its worst ones, not scrolled through.
MARKDOWN_ROWS = 25


def worst_first(docs: list[DocumentNumbers]) -> list[DocumentNumbers]:
    """Lowest coverage first, then the most missing chunks, then by name (as the HTML index)."""
    return sorted(docs, key=lambda d: (d.coverage, -d.missing, d.doc_id))


def _rows(summary: CoverageSummary, skip_covered: bool, sort: str | None,
          top: int | None = None) -> tuple[list[DocumentNumbers], list[DocumentNumbers]]:
    """The rows shown and the rows left out by ``top`` (the worst ``top`` are shown)."""
    docs = list(summary.documents)
    if skip_covered:
        docs = [d for d in docs if d.missing]
    rest: list[DocumentNumbers] = []
    if top:
        ranked = worst_first(docs)
        docs, rest = ranked[:top], ranked[top:]
    if sort:
        key = sort.lower().lstrip("-")
        reverse = sort.startswith("-")
        if key not in SORT_KEYS:
            raise RagcovError(f"cannot sort by {sort!r}: expected one of {', '.join(SORT_KEYS)}")
        keyfun = {
            "name": lambda d: d.doc_id,
            "chunks": lambda d: d.chunks,
            "covered": lambda d: d.covered,
            "missing": lambda d: d.missing,
            "cover": lambda d: d.coverage,
        }[key]
        docs.sort(key=keyfun, reverse=reverse)
    return docs, rest


def _rest(rest: list[DocumentNumbers]) -> DocumentNumbers:
    """The documents ``--top`` leaves out, summed into one row: the rows still add up to TOTAL."""
    n = len(rest)
    return DocumentNumbers(f"... and {n} more document{'s' if n != 1 else ''}",
                           sum(d.chunks for d in rest), sum(d.covered for d in rest),
                           excluded=sum(d.excluded for d in rest))


def missing_ranges(positions: list[int]) -> str:
    """Numbers as coverage.py prints missing lines: ``0-2, 5, 7-8``."""
    return number_ranges(positions)


def missing_cell(d: DocumentNumbers, show_ids: bool = False) -> str:
    """A document's missing chunks as coverage.py lists missing lines: ``3, 5-7``.

    Each is its position in the document counted from 1, the line Cobertura and lcov
    give it, whatever its id; ``show_ids`` lists the ids instead, for finding a chunk
    in the store.
    """
    if show_ids:
        return ", ".join(d.missing_chunks)
    return number_ranges(p + 1 for p in d.missing_positions)


def render_table(summary: CoverageSummary, fmt: str = "text", show_missing: bool = False,
                 skip_covered: bool = False, sort: str | None = None, precision: int = 0,
                 show_ids: bool = False, top: int | None = None) -> str:
    """The table; ``top`` (0 or None: every document) lists the documents with the lowest
    coverage and sums the others into one row, so a comment on a large corpus stays short
    while its TOTAL is the same."""
    if fmt == "total":
        return display_percent(summary.coverage, precision)
    if fmt not in ("text", "markdown"):
        raise RagcovError(f"unknown format {fmt!r}: expected text, markdown or total")
    if top is not None and top < 0:
        raise RagcovError(f"--top must be 0 (every document) or more, got {top}")
    # An Excluded column only when something was excluded, as coverage.py adds columns
    # (Branch, BrPart) only when they mean something.
    with_excluded = summary.excluded > 0
    header = ["Document", "Chunks", "Covered", "Missing"] + (["Excluded"] if with_excluded
                                                            else []) + ["Cover"]
    if show_missing:
        header.append("Missing chunks")
    body: list[list[str]] = []
    shown, rest = _rows(summary, skip_covered, sort, top)
    for d, listed in [*((d, True) for d in shown), *([(_rest(rest), False)] if rest else [])]:
        # Escaped before the columns are measured: a U+202E or U+2028 in an id is printed
        # as \u202e, and padding by the raw id's length misaligned the row.
        row = [escape_controls(d.doc_id), str(d.chunks), str(d.covered), str(d.missing)]
        row += [str(d.excluded)] if with_excluded else []
        row.append(display_percent(d.coverage, precision) + "%")
        if show_missing:
            row.append(escape_controls(missing_cell(d, show_ids)) if listed else "")
        body.append(row)
    total = ["TOTAL", str(summary.chunks), str(summary.covered), str(summary.missing)]
    total += [str(summary.excluded)] if with_excluded else []
    total.append(display_percent(summary.coverage, precision) + "%")
    if show_missing:
        total.append("")
    numeric = len(header) - 1 - int(show_missing)
    table = (_markdown(header, body, total, numeric) if fmt == "markdown"
             else _text(header, body, total, numeric))
    if rest:
        table += (f"\n\n{len(shown)} of {len(shown) + len(rest)} documents listed, those with the "
                  f"lowest coverage; the other {len(rest)} ({_rest(rest).chunks:,} chunks) are summed "
                  "in one row. `--top 0`, `ragcov html` and `ragcov json` list every document.")
    skipped = len(summary.documents) - len(shown) - len(rest)
    if skipped:  # as coverage.py says how many files --skip-covered left out
        table += (f"\n\n{skipped} document{'s' if skipped != 1 else ''} skipped due to "
                  "complete coverage.")
    return table


def rows_table(header: list[str], body: list[list[str]], total: list[str], numeric: int,
               fmt: str = "text") -> str:
    """Any table laid out as the document table is: a name column, ``numeric`` right-aligned
    columns, an optional free-text last column, and a TOTAL row (text or markdown)."""
    return (_markdown if fmt == "markdown" else _text)(header, body, total, numeric)


def _text(header: list[str], body: list[list[str]], total: list[str], numeric: int) -> str:
    """Columns measured in terminal cells (a CJK character or an emoji takes two)."""
    from rich.cells import cell_len

    widths = [max(cell_len(r[i]) for r in [header, total, *body]) for i in range(len(header))]
    last = 1 + numeric

    def pad(cell: str, width: int, left: bool) -> str:
        fill = " " * (width - cell_len(cell))
        return cell + fill if left else fill + cell

    def line(r: list[str]) -> str:
        cells = [pad(r[0], widths[0], True)] + [pad(c, w, False) for c, w in zip(r[1:last],
                                                                                 widths[1:last])]
        if len(r) > last:
            cells.append(r[last])
        return "   ".join(cells).rstrip()

    rule = "-" * len(line(header))
    return "\n".join([line(header), rule, *[line(r) for r in body], rule, line(total)])


def _markdown(header: list[str], body: list[list[str]], total: list[str], numeric: int) -> str:
    def esc(cell: str) -> str:
        # A pipe ends a cell; markup in an id is text, not HTML, where the table is rendered.
        return cell.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")

    align = ["---"] + ["---:"] * numeric + (["---"] if len(header) > numeric + 1 else [])
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in body]
    lines.append("| " + " | ".join(f"**{esc(c)}**" if c else "" for c in total) + " |")
    return "\n".join(lines)


def render_headline(summary: CoverageSummary, precision: int = 1) -> str:
    """The numbers a reader wants first: CC and the diversity of retrieval."""
    return "\n".join([
        f"Chunk coverage: {display_percent(summary.coverage, precision)}% "
        f"({summary.covered} of {summary.chunks} chunks, {summary.queries} queries)"
        + (f"; {ceiling}" if (ceiling := ceiling_text(summary, precision)) else ""),
        f"Normalised entropy (over {summary.entropy_support} chunks): "
        f"{summary.normalized_entropy:.3f}",
        f"Gini (over {summary.gini_over} chunks): {summary.gini:.3f}",
        f"Mean pairwise Jaccard: {summary.mean_pairwise_jaccard:.3f}" + (
            f" (estimated from {summary.jaccard_sampled_pairs:,} random pairs)"
            if summary.jaccard_sampled_pairs else ""),
    ])


def approximate_index_note(retriever: dict, recall: dict | None = None) -> str | None:
    """The caveat a report prints when hits come from an approximate (HNSW) index.

    ``retriever`` is the fingerprint recorded in the data file; ``recall`` the
    measurement of :meth:`DenseRetriever.measure_recall` (``recall_at_k``, ``k``,
    ``sample``) when one was recorded. Exact indexes get no note.
    """
    if not retriever.get("approximate"):
        return None
    if not recall:
        return "results from an approximate index (recall not measured)"
    return (f"results from an approximate index (recall@{int(recall['k'])} = "
            f"{float(recall['recall_at_k']):.3f} on {int(recall['sample'])} sampled queries)")


def approximate_note(scoped: Any) -> str | None:
    """:func:`approximate_index_note` of what :func:`ragcov.api.report` read (the file's
    meta and annotations): no second read of the data file."""
    from ragcov.data.datafile import INDEX_RECALL

    meta = scoped.matrix.meta or {}
    return approximate_index_note(meta.get("retriever") or {}, meta.get(INDEX_RECALL))


def retriever_line(k: int, retriever: dict, depth: Depth | None = None) -> str:
    """``retriever: dense (all-MiniLM-L6-v2), k=5``: what produced the number below it.

    From the fingerprint the data file recorded, so a report read months later (or in
    another repository's CI) still says which retriever, model and k it measures.
    """
    kind = str(retriever.get("kind", "unknown"))
    detail = next((str(retriever[key]) for key in ("model", "name", "url")
                   if retriever.get(key)), "")
    if retriever.get("kind") in ("dense", "store") and "/" in detail:
        detail = detail.rstrip("/").rsplit("/", 1)[-1]  # a local path: its folder names it
    extras = [detail] if detail else []
    if known_by_name_only(retriever):
        extras.append("model known by name only")
    if retriever.get("index") not in (None, "flat", "sparse"):
        extras.append(f"{retriever['index']} index")
    shown = f"{kind} ({', '.join(extras)})" if extras else kind
    note = depth.note() if depth is not None else None
    return f"retriever: {shown}, k={k}" + (f"; {note}" if note else "")

