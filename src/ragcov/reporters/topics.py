"""Coverage by topic as a person and a machine read it: text, markdown and JSON.

The report is :class:`ragcov.topics.coverage.TopicReport` (read here by its fields):
one row per topic in the order to act on it, the columns the data allows
(Unreachable once the file was probed, Traffic once traffic was given), and a
TOTAL row, laid out as the document table is.
"""

from __future__ import annotations

from typing import Any

from ragcov.errors import RagcovError
from ragcov.reporters.table import rows_table
from ragcov.summary import display_percent

FORMATS = ("text", "markdown", "json")
JSON_FORMAT = 1


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise RagcovError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def how_made(settings: dict[str, Any]) -> str:
    """``12 topics from dense all-MiniLM-L6-v2 vectors, N chosen (silhouette 0.085), seed 0``."""
    vectors = str(settings.get("vectors", "?"))
    if vectors.startswith("dense ") and "/" in vectors:
        vectors = "dense " + vectors.rsplit("/", 1)[-1]
    n = settings.get("topics", "?")
    chosen = ""
    if settings.get("requested") == "auto":
        scores = settings.get("candidates") or {}
        best = scores.get(str(n))
        chosen = ", N chosen" + (f" (silhouette {best:.3f})" if isinstance(best, (int, float)) else "")
    return (f"{n} topic{'s' if n != 1 else ''} from {vectors} vectors{chosen}, "
            f"seed {settings.get('seed', 0)}")


def _pct(fraction: float | None, precision: int) -> str:
    return "-" if fraction is None else display_percent(fraction, precision) + "%"


def render_topics(report: Any, fmt: str = "text", precision: int = 0) -> str:
    """The topic table (text or markdown) with the lines a reader needs under it."""
    if fmt == "json":
        from ragcov.files import json_text

        return json_text(topics_json(report))
    traffic = report.traffic_hits is not None
    unknown = report.probed and any(r.not_probed for r in report.topics)
    header = ["Topic", "Chunks", "Covered", "Untested"] + (["Not probed"] if unknown else [])
    header += ["Unreachable"] if report.probed else []
    header += ["Cover", "Tests"] + (["Traffic", "Untested traffic"] if traffic else [])
    header.append("Central chunk")
    body = []
    for r in report.topics:
        row = [f"{r.topic} {r.label}", str(r.chunks), str(r.covered), str(r.untested)]
        row += [str(r.not_probed)] if unknown else []
        row += [str(r.unreachable)] if report.probed else []
        row += [_pct(r.coverage, precision), str(r.tests)]
        if traffic:
            row += [_pct(report.share(r.traffic_hits), precision),
                    _pct(report.share(r.untested_traffic_hits), precision)]
        row.append(r.central)
        body.append(row)
    total = ["TOTAL", str(report.chunks), str(report.covered),
             str(sum(r.untested for r in report.topics))]
    total += [str(sum(r.not_probed or 0 for r in report.topics))] if unknown else []
    total += [str(sum(r.unreachable or 0 for r in report.topics))] if report.probed else []
    # Tests that retrieve something: one that retrieves nothing reaches no topic.
    total += [_pct(report.coverage, precision), str(report.tests)]
    if traffic:
        total += [_pct(1.0 if report.traffic_hits else None, precision),
                  _pct(report.share(sum(r.untested_traffic_hits or 0 for r in report.topics)),
                       precision)]
    total.append("")
    table = rows_table(header, body, total, len(header) - 2, fmt)
    lines = [table, "", f"{how_made(report.settings)}; sorted by {report.sorted_by} "
             "(what to do first)."]
    requested, made = report.settings.get("requested"), report.settings.get("topics")
    if isinstance(requested, int) and isinstance(made, int) and made < requested:
        lines.append(f"{requested} topics were asked for (--topics {requested}); the chunks "
                     f"make {made}: only {made} distinct groups of vectors (identical chunks "
                     "share one), so the rest would be empty.")
    if report.queries > report.tests:
        lines.append(f"{report.queries - report.tests} of the {report.queries} tests retrieve "
                     "no chunk in scope and reach no topic.")
    if report.unassigned:
        lines.append(f"{report.unassigned} chunk(s) in scope have no topic; run `ragcov topics "
                     "--refit`.")
    return "\n".join(lines)


def topics_json(report: Any) -> dict[str, Any]:
    """The versioned JSON document: every number of the table, and the untested chunk ids."""
    return {
        "format": JSON_FORMAT,
        "data_file": report.data_file,
        "made": {k: report.settings[k] for k in sorted(report.settings)},
        "sorted_by": report.sorted_by,
        "total": {"chunks": report.chunks, "covered": report.covered,
                  "coverage": report.coverage, "queries": report.queries,
                  "tests": report.tests,
                  "not_probed": (sum(r.not_probed or 0 for r in report.topics)
                                 if report.probed else None),
                  "traffic_hits": report.traffic_hits, "unassigned": report.unassigned},
        "topics": [{
            "topic": r.topic, "label": r.label, "terms": r.terms,
            "central": r.central,
            "chunks": r.chunks, "covered": r.covered, "untested": r.untested,
            "unreachable": r.unreachable, "not_probed": r.not_probed,
            "coverage": r.coverage, "tests": r.tests,
            "test_ids": r.test_ids, "traffic_hits": r.traffic_hits,
            "traffic_share": report.share(r.traffic_hits),
            "untested_traffic_hits": r.untested_traffic_hits,
            "untested_traffic_share": report.share(r.untested_traffic_hits),
            "untested_chunks": r.untested_chunks,
        } for r in report.topics],
    }
