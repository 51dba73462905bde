"""The HTML site's topic page: the topic table and the corpus map coloured by topic.

The map draws each chunk at its stored place (topics laid out by how alike they
are, each chunk around its topic's place: ``ragcov.topics.fit.map_positions``),
filled when a test retrieves it and hollow when none does, in its
topic's colour; hovering a point names its topic and chunk (``topics.js``; the SVG
``<title>`` says the same without script). At most :data:`MAP_POINTS` chunks are
drawn, a seeded sample, so a 100,000-chunk corpus still opens at once. Text goes
through Jinja's autoescaping; nothing here is marked safe.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragcov.reporters.html_context import document_filename
from ragcov.reporters.topics import how_made
from ragcov.scope import Scoped
from ragcov.summary import display_percent

MAP_POINTS = 3_000
MAP_SIZE = 640
MARGIN = 12
RADIUS = 3.5


def topic_colour(topic: int) -> str:
    """A colour per topic number, hues a golden angle apart: neighbours never look alike."""
    return f"hsl({(topic * 137.508) % 360:.1f}, 68%, 46%)"


def add_topics(ctx: dict[str, Any], scoped: Scoped, report: Any = None,
               precision: int = 0) -> None:
    """The ``topics`` entry of the site's context (None when the data file has no topics)."""
    ctx["topics"] = None
    if report is None or report.stored is None:
        return
    m = scoped.matrix
    paged = {p["doc"]["id"] for p in ctx["pages"]}

    def href(j: int) -> str:
        doc = str(m.doc_ids[j])
        return f"{document_filename(doc)}#c{j}" if doc in paged else ""

    column = {cid: j for j, cid in enumerate(m.chunk_ids)}
    pct = lambda f: display_percent(f, precision)  # noqa: E731
    share = lambda h: "" if report.share(h) is None else display_percent(report.share(h), 1)  # noqa: E731
    rows = [{
        "topic": r.topic, "label": r.label, "terms": ", ".join(r.terms), "colour": topic_colour(r.topic),
        "chunks": r.chunks, "covered": r.covered, "untested": r.untested,
        "unreachable": r.unreachable, "coverage": r.coverage, "percent": pct(r.coverage),
        "bar": round(100 * r.coverage, 2), "tests": r.tests,
        "traffic": share(r.traffic_hits), "untested_traffic": share(r.untested_traffic_hits),
        "central": r.central,
        "central_href": href(column[r.central]) if r.central in column else "",
    } for r in report.topics]
    ctx["topics"] = {
        "rows": rows, "made": how_made(report.settings), "sorted_by": report.sorted_by,
        "probed": report.probed, "traffic": report.traffic_hits is not None,
        "unassigned": report.unassigned,
        "map": _map(report, m, href),
    }


def _map(report: Any, m: Any, href: Any) -> dict[str, Any]:
    stored = report.stored
    labels = {t.topic: t.label for t in stored.labels}
    place = {cid: i for i, cid in enumerate(stored.chunk_ids)}
    rows = np.fromiter((place.get(c, -1) for c in m.chunk_ids), dtype=np.int64, count=m.n_chunks)
    cols = np.flatnonzero(rows >= 0)
    if cols.size > MAP_POINTS:
        cols = np.sort(np.random.default_rng(0).choice(cols, MAP_POINTS, replace=False))
    covered = m.covered()
    span = MAP_SIZE - 2 * MARGIN
    points = []
    for j in cols.tolist():
        i = int(rows[j])
        t = int(stored.assignment[i])
        x, y = stored.xy[i]
        points.append({"x": round(MARGIN + float(x) * span, 1),
                       "y": round(MARGIN + (1.0 - float(y)) * span, 1),
                       "topic": t, "label": labels.get(t, ""), "colour": topic_colour(t),
                       "covered": bool(covered[j]), "name": m.chunk_ids[j],
                       "href": href(j)})
    return {"points": points, "size": MAP_SIZE, "radius": RADIUS, "drawn": len(points),
            "chunks": int((rows >= 0).sum())}
