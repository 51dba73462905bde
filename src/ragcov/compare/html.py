"""The diff page of the HTML report: ``diff.html`` beside a site's ``index.html``.

It is written into an existing ``ragcov html`` folder (or a new one) without
touching the other pages, so a CI job can publish one site with the coverage of
HEAD and what changed since BASE. Text goes through Jinja's autoescaping.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from ragcov.compare.diff import CoverageDiff, DocumentChange
from ragcov.compare.render import diff_totals, points
from ragcov.errors import RagcovError
from ragcov.files import check_destination, write_text_atomic
from ragcov.summary import display_percent

PAGE = "diff.html"
PASSAGE_DOCUMENTS = 50  # documents whose passages the page shows, most changed first


def _pc(x: float | None, precision: int) -> str:
    return "-" if x is None else f"{display_percent(x, precision)}%"


def _doc(x: DocumentChange, precision: int) -> dict[str, Any]:
    return {"doc_id": x.doc_id, "base": _pc(x.base, precision), "head": _pc(x.head, precision),
            "change": points(x.change, precision), "sign": (x.change > 0) - (x.change < 0),
            "base_chunks": x.base_chunks, "base_covered": x.base_covered,
            "head_chunks": x.head_chunks, "head_covered": x.head_covered}


def _passages(t: Any) -> list[dict[str, Any]]:
    """Per document, its passages newly covered and no longer covered in document order,
    each with its whole text as the document has it (the page escapes it; the terminal's
    100-character cut is not needed where the text can wrap)."""
    out = []
    for p in t.changed()[:PASSAGE_DOCUMENTS]:
        items = sorted([(s, e, "gain") for s, e in p.gained] + [(s, e, "loss") for s, e in p.lost])
        out.append({"doc_id": p.doc_id, "gained": f"{p.gained_chars:,}", "lost": f"{p.lost_chars:,}",
                    "spans": [{"start": s, "end": e, "kind": kind, "sign": "+" if kind == "gain" else "-",
                               "text": p.text[s:e]} for s, e, kind in items]})
    return out


def diff_context(d: CoverageDiff, precision: int = 1, queries: int = 200) -> dict[str, Any]:
    """What the page shows; the 200 most changed queries (the JSON has them all)."""
    by_span = d.text is not None and d.text.by_span
    changed = len(d.text.changed()) if by_span else 0
    return {
        "passages": _passages(d.text) if by_span else [],
        "passages_more": max(changed - PASSAGE_DOCUMENTS, 0),
        "title": f"Chunk coverage diff: {points(d.delta, precision)} points",
        "totals": diff_totals(d, precision),
        "base": _pc(d.base_coverage, precision), "head": _pc(d.head_coverage, precision),
        "delta": points(d.delta, precision), "sign": (d.delta > 0) - (d.delta < 0),
        "documents": [_doc(x, precision) for x in d.documents if x.change != 0],
        "new_documents": [_doc(x, precision) for x in d.new_documents],
        "removed_documents": [_doc(x, precision) for x in d.removed_documents],
        "queries": [{"id": d.base.query_ids[b], "jaccard": f"{j:.2f}"}
                    for b, _h, j in d.changed_queries(queries)],
        "queries_changed": d.queries_changed,
        "gained": d.gained, "lost": d.lost,
    }


def write_diff_page(d: CoverageDiff, directory: str | os.PathLike[str], precision: int = 1) -> Path:
    """Write ``diff.html`` (and the stylesheet when missing) into ``directory``."""

    from ragcov.reporters.html import MARKER, environment

    target = Path(directory)
    check_destination(target)
    if target.exists() and not target.is_dir():
        raise RagcovError(f"{target}: exists and is not a directory")
    fresh = not target.exists() or not any(target.iterdir())
    if not fresh and not (target / MARKER).exists():
        raise RagcovError(f"{target}: not empty and not a ragcov HTML report; "
                          "choose another directory")
    html = environment().get_template("diff.html").render(**diff_context(d, precision))
    target.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target / PAGE, html)
    style = target / "style.css"
    if not style.exists():
        templates = resources.files("ragcov") / "reporters" / "templates"
        write_text_atomic(style, (templates / "style.css").read_text(encoding="utf-8"))
    if fresh:
        write_text_atomic(target / MARKER, "This directory is a ragcov HTML report; "
                                           "ragcov html replaces it whole.\n")
    return target / PAGE
