"""The HTML report: an htmlcov-style static site over one data file.

An index with the totals and a sortable, filterable table of documents; one page per
document showing every chunk shaded covered or uncovered with the tests that reached
it; a page of queries with what each retrieved; and, when an ordering of the suite is
known, the coverage curve drawn as inline SVG. The site is plain files (no network, no
libraries) so it opens from ``file://`` and can be attached to a CI run.

All corpus and query text goes through Jinja's autoescaping and is never marked safe:
a corpus is user data and may hold markup. Numbers come from
:func:`ragcov.results.summarize` and :func:`ragcov.results.display_percent` so the site
agrees with ``ragcov report`` at the same precision.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.io import remove_stale_temps, temp_prefix
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import coverage_curve
from ragcov.results import CoverageSummary, display_percent, summarize

# A file in every report directory: a directory holding it may be replaced wholesale;
# any other non-empty directory is left alone.
MARKER = ".ragcov-html"
STATIC_FILES = ("style.css", "ragcov.js")


@dataclass(frozen=True)
class Curve:
    """CC after each of the first n tests of one ordering of the suite."""

    label: str
    values: list[float]  # fractions, one per test in order
    baseline: bool = False  # drawn dashed: the order others are compared with


@dataclass(frozen=True)
class _Hit:
    query_row: int
    query_id: str
    rank: int
    score: float | None


# ------------------------------------------------------------------------ curves
def curve_from_order(m: CoverageMatrix, order: Sequence[str], label: str) -> Curve:
    """The curve of an ordering given by query ids, recomputed from the data shown.

    The data file, not the order file's own numbers, is what the page reports, so the
    curve is always consistent with the totals beside it.
    """
    rows = m.row_of()
    unknown = [q for q in order if q not in rows]
    if unknown:
        shown = ", ".join(map(str, unknown[:10])) + (" ..." if len(unknown) > 10 else "")
        raise RagcovError(f"the order names {len(unknown)} query id(s) not in the data file: "
                          f"{shown}")
    if not order:
        raise RagcovError("the order is empty")
    return Curve(label, coverage_curve(m, [rows[q] for q in order]).tolist())


def curve_from_order_file(m: CoverageMatrix, doc: Any, source: str) -> Curve:
    """Read the ``{"strategy", "order": [query ids], ...}`` shape ``ragcov select`` writes."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("order"), list):
        raise RagcovError(f"{source}: expected an object with an 'order' list of query ids")
    order = doc["order"]
    if not all(isinstance(q, str) for q in order):
        raise RagcovError(f"{source}: 'order' must list query ids (strings)")
    label = str(doc.get("strategy") or Path(source).stem)
    return curve_from_order(m, order, label)


def greedy_curve(m: CoverageMatrix) -> Curve | None:
    """The coverage-greedy ordering's curve (None for an empty suite)."""
    from ragcov.selection import select

    if m.n_queries == 0:
        return None
    return Curve("coverage-greedy", [float(v) for v in select(m, "coverage").curve])


def recorded_curve(m: CoverageMatrix) -> Curve:
    return Curve("as recorded", coverage_curve(m, np.arange(m.n_queries)).tolist(), baseline=True)


# ------------------------------------------------------------------------ file names
def document_filename(doc_id: str) -> str:
    """A file name that is safe on every filesystem and unique per document id.

    The readable part keeps only [A-Za-z0-9._-]; the hash of the full id keeps two ids
    that differ only in dropped characters or letter case apart.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", doc_id)
    slug = re.sub(r"\.{2,}", ".", slug).strip("._-")[:48] or "doc"
    digest = hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:10]
    return f"d_{slug}_{digest}.html"


# ------------------------------------------------------------------------ building
def _hits_by_chunk(m: CoverageMatrix) -> list[list[_Hit]]:
    by_chunk: list[list[_Hit]] = [[] for _ in range(m.n_chunks)]
    for i in range(m.n_queries):
        for rank, (j, score) in enumerate(zip(m.retrieved(i), m.retrieved_scores(i)), start=1):
            by_chunk[j].append(_Hit(i, m.query_ids[i], rank, score))
    return by_chunk


def _fmt_score(score: float | None) -> str:
    return "" if score is None else f"{score:.3f}"


def _chart(curves: Sequence[Curve], n_chunks: int, precision: int) -> dict[str, Any] | None:
    """Coordinates for the SVG chart; the template draws it so every label is escaped."""
    curves = [c for c in curves if c.values]
    if not curves:
        return None
    width, height = 720, 300
    left, right, top, bottom = 56, 16, 16, 44
    pw, ph = width - left - right, height - top - bottom
    n_max = max(len(c.values) for c in curves)

    def x(n: float) -> float:
        return round(left + pw * n / n_max, 2)

    def y(frac: float) -> float:
        return round(top + ph * (1 - frac), 2)

    lines = []
    for idx, c in enumerate(curves):
        pts = [(x(0), y(0.0))]
        prev = 0.0
        for n, v in enumerate(c.values, start=1):
            pts.append((x(n), y(prev)))  # steps: coverage changes only when a test runs
            pts.append((x(n), y(v)))
            prev = v
        final = c.values[-1]
        target = 0.9 * final
        to90 = next((n for n, v in enumerate(c.values, start=1) if v >= target), len(c.values))
        lines.append({
            "label": c.label, "series": 5 if c.baseline else idx % 5, "baseline": c.baseline,
            "points": " ".join(f"{a},{b}" for a, b in pts),
            "tests": len(c.values), "final": display_percent(final, precision),
            "to90": to90 if final > 0 else None,
        })
    step = _nice_step(n_max)
    xticks = [{"x": x(n), "label": str(n)} for n in range(0, n_max + 1, step)]
    yticks = [{"y": y(f / 100), "label": f"{f}%"} for f in range(0, 101, 20)]
    return {"width": width, "height": height, "left": left, "top": top, "pw": pw, "ph": ph,
            "bottom_y": top + ph, "lines": lines, "xticks": xticks, "yticks": yticks,
            "n_chunks": n_chunks}


def _nice_step(n: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if n / step <= 10:
            return step
    return max(1, n // 10)


def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ragcov", "report/templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def _context(m: CoverageMatrix, summary: CoverageSummary, chunk_texts: Mapping[str, str],
             curves: Sequence[Curve], precision: int, title: str) -> dict[str, Any]:
    def pc(frac: float) -> str:
        return display_percent(frac, precision)

    by_chunk = _hits_by_chunk(m)
    doc_file = {d.doc_id: document_filename(d.doc_id) for d in summary.documents}
    chunk_anchor = {}
    chunks_by_doc: dict[str, list[int]] = {}
    for j, doc in enumerate(m.doc_ids):
        chunks_by_doc.setdefault(str(doc), []).append(j)
        chunk_anchor[j] = f"{doc_file[str(doc)]}#c{j}"
    context = [c or "" for c in m.query_context] or [""] * m.n_queries

    documents = []
    for d in summary.documents:
        documents.append({
            "id": d.doc_id, "file": doc_file[d.doc_id], "chunks": d.chunks,
            "covered": d.covered, "missing": d.missing, "coverage": d.coverage,
            "percent": pc(d.coverage), "bar": round(100 * d.coverage, 2),
        })
    queries = []
    for i, qid in enumerate(m.query_ids):
        retrieved = [{"id": m.chunk_ids[j], "href": chunk_anchor[j], "rank": r,
                      "score": _fmt_score(s), "doc": str(m.doc_ids[j])}
                     for r, (j, s) in enumerate(zip(m.retrieved(i), m.retrieved_scores(i)),
                                                start=1)]
        queries.append({"row": i, "id": qid, "text": m.query_texts[i], "context": context[i],
                        "retrieved": retrieved})
    pages = []
    for n, d in enumerate(summary.documents):
        chunks = []
        for j in chunks_by_doc.get(d.doc_id, []):
            hits = by_chunk[j]
            chunks.append({
                "anchor": f"c{j}", "id": m.chunk_ids[j], "text": chunk_texts.get(m.chunk_ids[j], ""),
                "count": len(hits), "covered": bool(hits),
                "hits": [{"query": h.query_id, "text": m.query_texts[h.query_row],
                          "context": context[h.query_row], "rank": h.rank,
                          "score": _fmt_score(h.score), "row": h.query_row} for h in hits],
            })
        prev_doc = summary.documents[n - 1] if n > 0 else None
        next_doc = summary.documents[n + 1] if n + 1 < len(summary.documents) else None
        pages.append({
            "doc": documents[n], "chunks": chunks,
            "prev": {"id": prev_doc.doc_id, "file": doc_file[prev_doc.doc_id]} if prev_doc else None,
            "next": {"id": next_doc.doc_id, "file": doc_file[next_doc.doc_id]} if next_doc else None,
        })
    meta = m.meta or {}
    retriever = meta.get("retriever") or {}
    retriever_label = ", ".join(f"{k}={v}" for k, v in retriever.items()
                                if k in ("kind", "model", "index")) or "unknown"
    return {
        "title": title,
        "totals": {
            "chunks": summary.chunks, "covered": summary.covered, "missing": summary.missing,
            "queries": summary.queries, "percent": pc(summary.coverage),
            "bar": round(100 * summary.coverage, 2),
            "entropy": f"{summary.normalized_entropy:.3f}", "gini": f"{summary.gini:.3f}",
            "jaccard": ("n/a" if np.isnan(summary.mean_pairwise_jaccard)
                        else f"{summary.mean_pairwise_jaccard:.3f}"),
            "entropy_support": summary.entropy_support, "gini_over": summary.gini_over,
            "documents": len(summary.documents),
        },
        "meta": {"k": m.k, "retriever": retriever_label, "created": meta.get("created", ""),
                 "corpus_hash": meta.get("corpus_hash", ""),
                 "version": meta.get("ragcov_version", "")},
        "documents": documents, "queries": queries, "pages": pages,
        "chart": _chart(curves, m.n_chunks, precision),
    }


def html_report(m: CoverageMatrix, chunk_texts: Mapping[str, str],
                directory: str | os.PathLike[str], curves: Sequence[Curve] = (),
                precision: int = 0, title: str = "Chunk coverage report") -> Path:
    """Write the site into ``directory`` and return the path of its index page.

    The site is built in a temporary directory beside the target and swapped in only
    when complete, so a failed build leaves the previous report untouched. A non-empty
    directory that is not a ragcov report is refused rather than replaced.
    """
    if precision < 0:
        raise RagcovError(f"precision must be 0 or more, got {precision}")
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise RagcovError(f"{target}: exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).exists():
        raise RagcovError(f"{target}: not empty and not a ragcov HTML report; "
                          "choose another directory")
    summary = summarize(m)
    ctx = _context(m, summary, chunk_texts, curves, precision, title)
    env = _environment()
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)  # a build killed earlier: its half site, or the old one set aside
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent))
    try:
        _write(tmp / "index.html", env.get_template("index.html").render(page="index", **ctx))
        _write(tmp / "queries.html", env.get_template("queries.html").render(page="queries", **ctx))
        doc_tpl = env.get_template("document.html")
        for p in ctx["pages"]:
            _write(tmp / p["doc"]["file"], doc_tpl.render(page="document", p=p, **ctx))
        templates = resources.files("ragcov") / "report" / "templates"
        for name in STATIC_FILES:
            (tmp / name).write_bytes((templates / name).read_bytes())
        (tmp / MARKER).write_text("This directory is a ragcov HTML report; "
                                  "ragcov html replaces it whole.\n", encoding="utf-8")
        os.chmod(tmp, 0o755)
        _swap(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target / "index.html"


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _swap(new: Path, target: Path) -> None:
    """Put ``new`` in place of ``target``: rename the old one aside first, then delete it."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=temp_prefix(target), suffix=".old", dir=target.parent))
        old.rmdir()
        os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
