"""A drift run for people and machines: a terminal table, a pull-request comment, JSON, HTML.

Every form leads with one row per relation: the tests judged, how many violate, the
rate with its bootstrap interval and the relation's own measure (mean Jaccard of the
top-k before and after, slots displaced, stale pairs). Text and Markdown follow with
what a team acts on: the worst tests, the chunks that break most and their documents.
JSON is whole (every test's value and verdict per relation), as machine outputs are.
Single chunks are named by id, as everywhere in ragcov; their text in HTML goes
through Jinja's autoescaping.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ragcov.drift.summary import DriftSummary, RelationResult
from ragcov.summary import display_percent

SHOW = 5
COMMENT_LIMIT = 60_000
DRIFT_PAGE = "drift.html"
JSON_FORMAT = 1


def _pc(x: float, precision: int = 1) -> str:
    return f"{display_percent(x, precision)}%"


def relation_label(r: RelationResult, settings: dict[str, Any]) -> str:
    if r.relation == "noise":
        return f"noise (rate {settings.get('noise_rate', 0.02):g})"
    if r.relation == "stale:versions":
        return "stale (own versions)"
    return r.relation


def measure_text(r: RelationResult) -> str:
    value = r.measure
    if value is None:
        return "-"
    f = facts(r)
    if r.kind == "stale":
        return (f"{f['broken_pairs']} of {f['pairs']} pairs old above new"
                + (f" ({f['ties']} ties)" if f["ties"] else ""))
    if r.kind == "versions":
        return f"{f['retrieving']} tests retrieve a superseded chunk"
    if r.kind == "displaced":
        return f"mean displaced {value:.2f}"
    return f"mean Jaccard {value:.3f}"


def facts(r: RelationResult) -> dict[str, Any]:
    """The relation's own counts beyond its rate, for every form."""
    out: dict[str, Any] = {}
    if r.kind == "stale":
        pairs = [p for t in r.tests for d in t.detail for p in d.get("pairs", [])]
        broken = [p for p in pairs if p[2] is None or (p[1] is not None and p[1] < p[2])]
        out.update(pairs=len(pairs), broken_pairs=len(broken),
                   ties=sum(1 for p in broken if len(p) > 3 and p[3]))
    elif r.kind == "versions":
        retrieving = sum(1 for t in r.tests if t.value > 0)
        out.update(retrieving=retrieving,
                   stale_retrieval_rate=retrieving / r.n if r.n else 0.0,
                   blast_radius=blast_radius(r))
    reordered = r.reordered
    if reordered is not None:
        out["reordered_by_statistics"] = {
            "tests": len(reordered), "rate": len(reordered) / r.n if r.n else 0.0,
            "chunks": sum(len(d.get("reordered", [])) for t in r.tests for d in t.detail)}
    if r.relation == "distractors":
        by: dict[str, int] = {}
        for t in r.tests:
            for d in t.detail:
                for cid in d.get("by", []):
                    by[cid] = by.get(cid, 0) + 1
        out["displacing"] = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
    return out


def blast_radius(r: RelationResult) -> list[dict[str, Any]]:
    """Per superseded chunk a test retrieves: the tests, at what rank, and where its current
    version ranks for them (None: not retrieved), most retrieved first."""
    found: dict[int, dict[str, Any]] = {}
    for t in r.tests:
        for d in t.detail:
            for chunk, rank, current, current_rank in d.get("superseded", []):
                entry = found.setdefault(chunk, {"chunk": chunk, "current": current, "tests": []})
                entry["tests"].append({"query_id": t.query_id, "rank": rank,
                                       "current_rank": current_rank})
    return sorted(found.values(), key=lambda e: (-len(e["tests"]), e["chunk"]))


def _interval(r: RelationResult) -> str:
    lo, hi = r.interval
    return f"[{display_percent(lo, 1)}, {display_percent(hi, 1)}]"


def headline(s: DriftSummary) -> str:
    st = s.settings
    n = max((r.n for r in s.relations), default=0)
    state = "" if s.finished else "; UNFINISHED (rerun ragcov drift to resume)"
    return (f"Drift of retriever {st.get('retriever')}, k={st.get('k')}, seed {st.get('seed')}: "
            f"{n} tests; {round(100 * s.confidence)}% bootstrap intervals over tests "
            f"({s.resamples} resamples){state}")


def _rows(s: DriftSummary) -> list[list[str]]:
    return [[relation_label(r, s.settings), str(r.copies), str(r.changed), str(r.added), str(r.n),
             str(r.violated), _pc(r.rate), _interval(r), measure_text(r)] for r in s.relations]


HEADER = ["relation", "copies", "changed", "added", "tests", "violated", "rate", "interval",
          "measure"]


def drift_table(s: DriftSummary) -> str:
    rows = _rows(s)
    widths = [max(len(x[i]) for x in [HEADER, *rows]) for i in range(len(HEADER))]
    left = {0, 8}

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(HEADER), *(line(r) for r in rows)])


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _value(r: RelationResult, value: float) -> str:
    if r.kind == "same":
        return f"Jaccard {value:.2f}"
    if r.kind == "displaced":
        return f"displaced {value:g}"
    if r.kind == "versions":
        return f"{value:g} superseded"
    return f"{value:g} old above new"


def relation_details(r: RelationResult, s: DriftSummary, show: int = SHOW) -> list[str]:
    """The worst tests, the chunks that break most and the documents they are in (and a
    corpus's own versions' blast radius, violated or not)."""
    if not r.violated and r.kind != "versions":
        return []
    lines = [f"{relation_label(r, s.settings)}: worst tests"] if r.violated else []
    for t in r.worst(show):
        broke = ", ".join(s.names[c] for c in t.broke[:3]) + (" ..." if len(t.broke) > 3 else "")
        lines.append(f"  {t.query_id}  {_value(r, t.value)}  {_short(t.text, 60)!r}"
                     + (f"  broke {broke}" if broke else ""))
    if r.violated > show:
        lines.append(f"  ... and {r.violated - show} more (--format json lists them all)")
    broken = [c for c in r.chunks if c.broke][:show]
    if broken:
        lines.append(f"{relation_label(r, s.settings)}: chunks that break most (broke / seen)")
        lines += [f"  {c.name}  {c.broke} of {c.seen}" for c in broken]
    docs = [d for d in r.documents if d.broke][:show]
    if docs:
        lines.append(f"{relation_label(r, s.settings)}: documents (chunks broke / seen)")
        lines += [f"  {d.doc_id}  {d.broke} of {d.seen} ({_pc(d.rate)})" for d in docs]
    f = facts(r)
    if f.get("blast_radius"):
        lines.append("stale (own versions): blast radius (superseded chunk: tests that retrieve "
                     "it at rank r, the current version's rank)")
        for e in f["blast_radius"][:show]:
            current = s.names.get(e["current"], "none") if e["current"] >= 0 else "none"
            ranks = ", ".join(f"{x['query_id']} r{x['rank']}/"
                              f"{'-' if x['current_rank'] is None else x['current_rank']}"
                              for x in e["tests"][:show])
            more = f" ... ({len(e['tests'])} tests)" if len(e["tests"]) > show else ""
            lines.append(f"  {s.names[e['chunk']]} (current: {current}): {ranks}{more}")
    if f.get("displacing"):
        top = ", ".join(f"{cid} ({n})" for cid, n in f["displacing"][:3])
        lines.append(f"distractors: most displacing: {top}")
    return lines


def statistics_line(r: RelationResult) -> str | None:
    """The figure beside a relation that adds chunks: own chunks reordered by the corpus's
    changed statistics, which its violation rate does not count."""
    reordered = r.reordered
    if reordered is None:
        return None
    return (f"reordered by corpus statistics: {_pc(len(reordered) / r.n if r.n else 0.0)} "
            f"({len(reordered)} of {r.n} tests) lost a chunk of their top-k to another chunk of "
            "the corpus, no added chunk taking its place (adding chunks changed the corpus's "
            "statistics: BM25's document frequencies, an approximate index's graph); not "
            "counted as violations")


def notes(s: DriftSummary) -> list[str]:
    return [f"Note: {relation_label(r, s.settings)}: {n}" for r in s.relations
            for n in [*r.notes, *filter(None, [statistics_line(r)])]]


def drift_text(s: DriftSummary, show: int = SHOW) -> str:
    lines = [headline(s), drift_table(s), *notes(s)]
    for r in s.relations:
        details = relation_details(r, s, show)
        if details:
            lines += ["", *details]
    return "\n".join(lines)


def drift_lines(s: DriftSummary) -> list[str]:
    """What ``ragcov report`` adds under its table: one line per relation."""
    lines = ["", f"Drift (ragcov drift, seed {s.settings.get('seed')}"
             + ("" if s.finished else ", unfinished") + "): violation rate per relation"
             + (f" (Note: {s.earlier_suite})" if s.earlier_suite else "")]
    width = max(len(relation_label(r, s.settings)) for r in s.relations) if s.relations else 0
    for r in s.relations:
        reordered = r.reordered
        lines.append(f"  {relation_label(r, s.settings).ljust(width)}  {_pc(r.rate).rjust(6)}  "
                     f"{_interval(r):<14}  {r.violated} of {r.n} tests"
                     + ("" if not reordered else f"; {len(reordered)} reordered by corpus "
                        "statistics (not counted)"))
    return lines


def drift_markdown(s: DriftSummary, show: int = SHOW) -> str:
    """A pull-request comment: the table, then each relation's details folded."""
    out = [f"### Retrieval under corpus change ({'ragcov drift'})", "", headline(s), "",
           "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _rows(s)]
    out += ["", *(f"- {n[6:]}" for n in notes(s))]
    for r in s.relations:
        details = relation_details(r, s, show)
        if not details:
            continue
        # A fence inside a question would end the code block early.
        block = ["", f"<details><summary>{relation_label(r, s.settings)}: {r.violated} of {r.n} "
                 "tests violate</summary>", "", "```", *(d.replace("```", "'" * 3) for d in details),
                 "```", "</details>"]
        if sum(len(x) + 1 for x in out + block) > COMMENT_LIMIT:
            out += ["", "(details cut to fit a comment; `ragcov drift --format json` has them all)"]
            break
        out += block
    return "\n".join(out)


def drift_json(s: DriftSummary) -> dict[str, Any]:
    relations = []
    for r in s.relations:
        f = facts(r)
        if "displacing" in f:
            f["displacing"] = [{"chunk_id": c, "tests": n} for c, n in f["displacing"]]
        for e in f.get("blast_radius", []):
            e["chunk"] = s.names[e["chunk"]]
            e["current"] = s.names.get(e["current"]) if e["current"] >= 0 else None
        relations.append({
            "relation": r.relation, "copies": r.copies, "changed_chunks": r.changed,
            "added_chunks": r.added, "tests": r.n, "violated": r.violated, "rate": r.rate,
            "interval": list(r.interval), "measure": {"name": r.measure_name, "value": r.measure},
            "facts": f, "notes": r.notes,
            "per_test": [{"query_id": t.query_id, "value": t.value, "violated": t.violated,
                          "broke": [s.names[c] for c in t.broke]} for t in r.tests],
            "chunks": [{"chunk_id": c.chunk_id, "doc_id": c.doc_id, "name": c.name,
                        "seen": c.seen, "broke": c.broke, "rate": c.rate} for c in r.chunks],
            "documents": [{"doc_id": d.doc_id, "seen": d.seen, "broke": d.broke, "rate": d.rate,
                           "violating_tests": d.tests} for d in r.documents],
        })
    return {"format": JSON_FORMAT, "finished": s.finished,
            "settings": {k: v for k, v in s.settings.items() if k != "notes"},
            "confidence": s.confidence, "resamples": s.resamples, "relations": relations}


# --- HTML -------------------------------------------------------------------------------------

def drift_context(s: DriftSummary, show: int = 20, tests: int = 300) -> dict[str, Any]:
    """What the page shows: the table, per-test stability (the least stable ``tests``
    first), and per relation the worst tests and the chunks that break, with their text."""
    rows = _rows(s)
    stability: dict[int, dict[str, Any]] = {}
    for r in s.relations:
        for t in r.tests:
            entry = stability.setdefault(t.query_idx, {"id": t.query_id, "text": t.text,
                                                       "cells": {}, "bad": 0})
            shown = f"{t.value:.2f}" if r.kind == "same" else f"{t.value:g}"
            entry["cells"][r.relation] = {"value": shown, "violated": t.violated}
            entry["bad"] += t.violated
    ordered = sorted(stability.values(), key=lambda e: (-e["bad"], e["id"]))
    relations = []
    for r in s.relations:
        relations.append({
            "name": relation_label(r, s.settings), "key": r.relation,
            "violated": r.violated, "n": r.n,
            "worst": [{"id": t.query_id, "text": t.text, "value": _value(r, t.value),
                       "broke": [s.names[c] for c in t.broke]} for t in r.worst(show)],
            "chunks": [{"name": c.name, "broke": c.broke, "seen": c.seen,
                        "text": _short(s.texts.get(c.chunk_idx, ""), 300)}
                       for c in r.chunks if c.broke][:show],
            "documents": [{"doc_id": d.doc_id, "broke": d.broke, "seen": d.seen,
                           "rate": _pc(d.rate)} for d in r.documents if d.broke][:show],
        })
    return {"title": "Retrieval under corpus change", "headline": headline(s), "header": HEADER,
            "rows": rows, "notes": [n[6:] for n in notes(s)],
            "columns": [(r.relation, relation_label(r, s.settings)) for r in s.relations],
            "tests": ordered[:tests], "more_tests": max(0, len(ordered) - tests),
            "relations": relations}


def write_drift_page(s: DriftSummary, directory: str | os.PathLike[str]) -> Path:
    """Write ``drift.html`` into ``directory`` (a ``ragcov html`` site, or a new folder),
    with the site's stylesheet when it has none; the site's other pages are left alone."""
    from importlib import resources

    from ragcov.files import write_text_atomic
    from ragcov.reporters.html import MARKER, _check_target, environment

    target = Path(directory)
    _check_target(target)
    html = environment().get_template("drift.html").render(site=(target / "index.html").exists(),
                                                 **drift_context(s))
    target.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target / DRIFT_PAGE, html)
    if not (target / "style.css").exists():
        templates = resources.files("ragcov") / "reporters" / "templates"
        write_text_atomic(target / "style.css", (templates / "style.css").read_text(encoding="utf-8"))
    if not (target / MARKER).exists():
        write_text_atomic(target / MARKER, "This directory is a ragcov HTML report; "
                                           "ragcov html replaces it whole.\n")
    return target / DRIFT_PAGE
