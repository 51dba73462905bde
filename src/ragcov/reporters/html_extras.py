"""The parts of the HTML site that depend on the report's scope and on the suite as a whole.

Excluded chunks (on their document's page, shaded apart, with the reason, and in a
list on the index), redundant tests with their witness (on the queries page), and a
document's text shown once where its chunks overlap (see
:mod:`ragcov.reporters.overlap`). Text is passed on as it is: templates autoescape it.
"""

from __future__ import annotations

from typing import Any

from ragcov.metrics import redundant_tests
from ragcov.reporters.html_context import document_filename
from ragcov.reporters.overlap import cut, segments
from ragcov.reporters.sections import copied_facts
from ragcov.scope import Scoped
from ragcov.summary import display_percent


def add_extras(ctx: dict[str, Any], scoped: Scoped) -> None:
    """Add excluded chunks, redundant tests and overlap views to a site context."""
    m = scoped.matrix
    full = scoped.full or m
    freq = m.chunk_frequencies()
    state: dict[str, str] = {cid: "covered" if freq[j] else "missing"
                             for j, cid in enumerate(m.chunk_ids)}
    reason = {e.chunk_id: e.reason for e in scoped.excluded}
    state.update({cid: "excluded" for cid in reason})
    anchor = {cid: f"c{j}" for j, cid in enumerate(m.chunk_ids)}
    by_doc: dict[str, list[str]] = {}
    for cid, doc in zip(full.chunk_ids, full.doc_ids):
        if cid in state:
            by_doc.setdefault(str(doc), []).append(cid)
    for page in ctx["pages"]:
        ids = by_doc.get(page["doc"]["id"], [])
        page["excluded"] = [{"id": cid, "text": scoped.texts.get(cid, ""), "reason": reason[cid],
                             "anchor": f"x{n}"} for n, cid in enumerate(ids) if cid in reason]
        texts = [scoped.texts.get(cid, "") for cid in ids]
        recorded = _recorded_text(scoped, page, ids, [state[cid] for cid in ids],
                                  ctx.get("precision", 0))
        if recorded is not None:
            segs = recorded
        else:
            segs = segments(texts, [state[cid] for cid in ids]) if all(texts) else None
        page["segments"] = None if segs is None else [
            {"text": s.text, "state": s.state,
             "chunks": ", ".join(ids[i] for i in s.chunks),
             "href": next((f"#{anchor[ids[i]]}" for i in s.chunks if ids[i] in anchor), "")}
            for s in segs]
        page["legend"] = None if segs is None else text_legend(
            {s.state for s in segs}, page["doc"].get("text"), bool(page["doc"]["covered"]))
    text = scoped.text
    ctx["totals"]["text"] = None if text is None else {
        "percent": display_percent(text.coverage, ctx.get("precision", 0)),
        "characters": f"{text.characters:,}", "covered": f"{text.covered:,}",
        "caveats": "; ".join(text.caveats())}
    paged = {p["doc"]["id"] for p in ctx["pages"]}
    ctx["excluded"] = [{"id": e.chunk_id, "doc": e.doc_id, "reason": e.reason,
                        "file": document_filename(e.doc_id) if e.doc_id in paged else None}
                       for e in scoped.excluded]
    rows = m.row_of()
    ctx["redundant"] = [{"id": t.query_id, "why": t.why, "row": rows[t.query_id],
                         "reasons": ", ".join(t.reasons), "droppable": t.droppable}
                        for t in redundant_tests(m)]
    ctx["retriever_name"] = retriever_name(m.meta.get("retriever") or {})
    copied = copied_facts(scoped)
    ctx["copied"] = None if copied is None else {
        "tests": copied["tests"], "words": copied["min_words"],
        "percent": display_percent(copied["coverage_without"], 1),
        "covered": copied["covered_without"], "chunks": copied["chunks"]}


#: What each highlight of a document's text means, in the order the legend lists them.
LEGEND_KEYS = (("covered", "retrieved", "in a chunk at least one test retrieved"),
               ("missing", "not retrieved", "in chunks no test retrieved"),
               ("excluded", "excluded", "in chunks left out of the count"),
               ("gap", "in no chunk", "between the chunks, not counted"))


def text_legend(states: set[str], text: dict[str, Any] | None, retrieved: bool = True
                ) -> dict[str, Any]:
    """The legend of a document's text, from the highlights the page shows: a document no
    test retrieved says so, and names no highlight the text does not carry (a page of a
    document at 0% is all "not retrieved", never "highlighted text was retrieved")."""
    keys = [{"state": state, "name": name, "text": what}
            for state, name, what in LEGEND_KEYS if state in states]
    figures = (f" ({text['covered']:,} of {text['characters']:,} characters, whitespace aside: "
               "the text coverage above)") if text else ""
    if not retrieved:
        summary = ("No test retrieved any chunk of this document: none of its text is marked "
                   "retrieved" + figures + ".")
    elif "covered" not in states:
        summary = ("None of this document's text is marked retrieved" + figures + ": the chunks "
                   "tests retrieved were not found in it.")
    elif "missing" not in states:
        summary = "Every chunk of this document that counts was retrieved by a test" + figures + "."
    else:
        summary = ("Text marked retrieved lies in a chunk at least one test retrieved"
                   + figures + "; text marked not retrieved lies only in chunks no test retrieved.")
    return {"summary": summary, "keys": keys}


def _recorded_text(scoped: Scoped, page: dict[str, Any], ids: list[str], states: list[str],
                   ctx_precision: int) -> Any:
    """The document's own text, cut at its chunks' recorded spans and highlighted where text
    coverage counts it covered; the page's figure is that document's text coverage. None
    when the data file does not know the document's text."""
    text, spans = scoped.text, scoped.text_spans
    doc_id = page["doc"]["id"]
    numbers = text.of(doc_id) if text is not None else None
    if numbers is None or spans is None or doc_id not in spans.documents:
        page["doc"]["text"] = None
        return None
    precision = ctx_precision
    page["doc"]["text"] = {"percent": display_percent(numbers.coverage, precision),
                           "characters": numbers.characters, "covered": numbers.covered,
                           "unlocated": numbers.unlocated}
    return cut(spans.documents[doc_id], [spans.spans.get(cid) for cid in ids], states,
               numbers.passages)


def retriever_name(fp: dict[str, Any]) -> str:
    """The retriever as a reader names it: its own name, URL or model, then its kind."""
    kind = str(fp.get("kind") or "unknown")
    name = fp.get("name") or fp.get("url") or fp.get("model")
    return f"{name} ({kind})" if name else kind
