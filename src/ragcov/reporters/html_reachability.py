"""The HTML site's reachability views, for a data file that ``ragcov probe`` has probed.

Three shades on every chunk (covered, untested, unreachable), a corpus map on the index
page (one cell per chunk, grouped by document, each cell a link to its chunk; drawn on a
canvas from a JSON block so it stays readable and light at 100,000 chunks), the
unreachable chunks with the chunk that displaced each, and a hubs section with the
Lorenz curve of retrievals over chunks. Nothing here is marked safe: the JSON block goes
through Jinja's ``tojson`` (which escapes ``<``, ``>`` and ``&``) and text autoescapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragcov.controls import escape_controls
from ragcov.reachability.audit import COVERED, UNREACHABLE, UNTESTED, Hubs, Reachability
from ragcov.reachability.stages import INDEX
from ragcov.reporters.html_context import document_filename
from ragcov.scope import Scoped
from ragcov.summary import display_percent

# Map cell codes; the script and the legend read the same numbers.
CODES = {None: 0, COVERED: 1, UNTESTED: 2, UNREACHABLE: 3}
HIDDEN_BY_INDEX = 4  # an unreachable chunk exact search reaches: the index hides it
LORENZ_SIZE = 240
SHOW_UNREACHABLE = 500


def add_reachability(ctx: dict[str, Any], scoped: Scoped) -> None:
    """Shade each chunk by its status and add the index page's reachability sections."""
    r: Reachability | None = scoped.reachability
    ctx["reach"] = None
    if r is None:
        return
    m = scoped.matrix
    every = r.full or r  # the whole corpus: a page may show a chunk the totals leave out
    position = {cid: j for j, cid in enumerate(every.chunk_ids)}
    anchor = {cid: f"c{j}" for j, cid in enumerate(m.chunk_ids)}
    paged = {p["doc"]["id"] for p in ctx["pages"]}

    def link(cid: str | None) -> str:
        if cid is None:
            return ""
        doc = str(every.doc_ids[position[cid]])
        if doc not in paged:
            return ""
        return document_filename(doc) + (f"#{anchor[cid]}" if cid in anchor else "")

    for page in ctx["pages"]:
        for c in page["chunks"]:
            j = position[c["id"]]
            c["status"] = every.status[j] or ("covered" if c["covered"] else "missing")
            by = every.displacer(j)
            c["displaced_by"] = None if by is None else {"name": by, "href": link(by)}
            c["reason"] = every.reason[j]
            draft = every.draft(j)
            c["draft"] = draft.text if draft is not None else ""
            c["draft_copied"] = draft is not None and not draft.is_question
            c["junk"] = every.junk.get(j, "")
            c["lost_at"] = every.cause(j) or ""
    lost = r.unreachable()
    t = r.totals()
    pct = lambda f: display_percent(f, 1)  # noqa: E731
    ctx["reach"] = {
        "totals": {**t, "coverage_of_reachable": pct(t["coverage_of_reachable"]),
                   "workload_ceiling": pct(t["workload_ceiling"]),
                   "coverage_of_ceiling": pct(t["coverage_of_ceiling"])},
        "unreachable": [{"name": r.chunk_ids[j], "id": r.chunk_ids[j],
                         "href": link(r.chunk_ids[j]),
                         "by": r.displacer(j) or "", "by_href": link(r.displacer(j)),
                         "reason": r.reason[j] or ""} for j in lost[:SHOW_UNREACHABLE]],
        "more_unreachable": max(0, len(lost) - SHOW_UNREACHABLE),
        "hubs": [_hubs(name, h, r, link) for name, h in
                 (("tests", r.tests), ("probes", r.probes)) if h.retrievals],
        "map": _corpus_map(r, link),
        "size": LORENZ_SIZE,
        "stages": _stages(r, link),
    }


def _hubs(side: str, h: Hubs, r: Reachability, link: Any) -> dict[str, Any]:
    size = LORENZ_SIZE
    points = " ".join(f"{x * size:.1f},{(1 - y) * size:.1f}" for x, y in h.lorenz)
    return {"side": side, "retrievals": h.retrievals,
            "top5": display_percent(h.capture["top5"], 1),
            "top10": display_percent(h.capture["top10"], 1),
            "top1": display_percent(h.capture["top1%"], 1),
            "skewness": "n/a" if h.skewness is None else f"{h.skewness:.2f}",
            "gini": f"{h.gini:.3f}", "lorenz": points,
            "top": [{"name": r.chunk_ids[j], "href": link(r.chunk_ids[j]), "count": c}
                    for j, c in h.top(10)]}


def _corpus_map(r: Reachability, link: Any) -> dict[str, Any]:
    """Documents in corpus order, each with its chunks' status codes and links."""
    codes = np.fromiter((CODES[s] for s in r.status), dtype=np.int64, count=r.n_chunks)
    if r.stages is not None:
        codes[r.stages.cause == INDEX] = HIDDEN_BY_INDEX
    docs: list[dict[str, Any]] = []
    order: dict[str, list[int]] = {}
    for j, doc in enumerate(r.doc_ids):
        order.setdefault(str(doc), []).append(j)
    for doc, rows in order.items():
        links = [link(r.chunk_ids[j]) for j in rows]
        # shown in the map's tooltip by the script: controls written visibly, as the page does
        docs.append({"d": escape_controls(doc), "c": codes[rows].tolist(),
                     "h": [(link or "").partition("#")[2] for link in links],
                     "f": (links[0] or "").partition("#")[0]})
    return {"docs": docs}


def _stages(r: Reachability, link: Any) -> dict[str, Any] | None:
    """Where the unreachable chunks are lost, the index's recall and the chunks it hides."""
    from ragcov.reporters.stages import SHOW_MISSERS, lost_line, recall_line, rerank_lines

    st = r.stages
    if st is None:
        return None
    exact = st.exact
    hidden = st.index_hidden()
    return {
        "checked": st.checked, "reason": exact.get("reason") or "",
        "lost": lost_line(st), "recall": recall_line(st) if st.checked else "",
        "index": exact.get("index", ""), "settings": exact.get("settings") or {},
        "source": exact.get("source", ""), "remedy": exact.get("remedy") or "",
        "rerank": rerank_lines(st, r.n_chunks),
        "hidden": [{"name": r.chunk_ids[j], "href": link(r.chunk_ids[j]),
                    "probes": st.hidden_probes.get(j, [])[:SHOW_MISSERS],
                    "more_probes": max(0, len(st.hidden_probes.get(j, [])) - SHOW_MISSERS),
                    "tests": st.hidden_tests.get(j, [])[:SHOW_MISSERS],
                    "more_tests": max(0, len(st.hidden_tests.get(j, [])) - SHOW_MISSERS)}
                   for j in hidden[:SHOW_UNREACHABLE]],
        "more_hidden": max(0, len(hidden) - SHOW_UNREACHABLE),
    }
