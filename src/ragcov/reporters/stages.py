"""Where chunks are lost, as the reports say it: the probe report, ``ragcov report`` and JSON.

One wording for every report: the causes of the unreachable chunks, the index's
recall@d against exact search for tests and probes, its settings and the remedy in
the store's own terms, the chunks the index hides with the tests and probes that miss
them, and with a reranker the first stage's coverage beside the final one. A check
that was skipped is said in one line with its reason, never shown as a recall of 1.
"""

from __future__ import annotations

from typing import Any

from ragcov.data.stages import PROBE, TEST
from ragcov.reachability.stages import INDEX, LOST_AT, Stages
from ragcov.summary import display_percent

# The totals a JSON report copies from the reachability totals, when the file has them.
STAGE_TOTALS = ("exact_check", "index_recall", "lost_at", "index_hidden_chunks",
                "suite_exact_covered_chunks", "suite_index_missed_chunks", "rerank",
                "first_stage_covered_chunks", "first_stage_coverage", "reranker_dropped_chunks")
SHOW_HIDDEN = 20
SHOW_MISSERS = 3
WORST_TESTS = 5


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{display_percent(value, 1)}%"


def index_line(st: Stages) -> str:
    """The index, its settings, and what it was held against."""
    exact = st.exact
    settings = ", ".join(f"{k} {v}" for k, v in (exact.get("settings") or {}).items())
    index = exact.get("index", "unknown")
    return (f"Index: {index}" + (f" ({settings})" if settings else "")
            + f", held against exact search over {exact.get('source')} "
            f"({exact.get('vectors')} vectors, {exact.get('metric')})")


def recall_line(st: Stages) -> str:
    d = st.depth
    parts = []
    if st.tests_checked():
        parts.append(f"{_pct(st.recall(TEST))} over {st.tests_checked()} tests")
    if st.probes_checked:
        parts.append(f"{_pct(st.recall(PROBE))} over {st.probes_checked} probes")
    more = (f" ({st.probes_unchecked} probes not checked yet: run `ragcov probe` again)"
            if st.probes_unchecked else "")
    return f"Index recall@{d} against exact search: " + ("; ".join(parts) or "n/a") + more


def lost_line(st: Stages) -> str:
    counts = st.lost_at()
    unknown = int(((st.cause == None) & st.unreachable).sum())  # noqa: E711 - elementwise
    head = f"Where the {int(st.unreachable.sum())} unreachable chunks are lost: "
    if not st.checked:  # only the reranker can be told apart from what came before it
        return (head + f"reranker {counts['reranker']}, first stage {unknown} (no exact check: "
                "the embedding and the index are not told apart)")
    shown = ", ".join(f"{stage} {counts[stage]}" for stage in LOST_AT
                      if stage != "reranker" or st.reranked)
    return head + shown + (f", unknown {unknown}" if unknown else "")


def stage_lines(r: Any, show: int = SHOW_HIDDEN) -> list[str]:
    """The probe report's section on where chunks are lost (empty without stage data)."""
    st: Stages | None = r.stages
    if st is None:
        return []
    lines = [""]
    exact = st.exact
    if not st.checked:
        if exact.get("reason") and exact.get("checked") is False:
            lines.append(f"Exact check skipped: {exact['reason']}; unreachable chunks have no "
                         "cause (embedding or index) and no index recall is reported")
        if st.reranked and st.unreachable.any():
            lines.append(lost_line(st))
        lines += rerank_lines(st, r.n_chunks)
        return lines if len(lines) > 1 else []
    lines += [lost_line(st), index_line(st), recall_line(st)]
    hidden = st.index_hidden()
    if hidden and exact.get("remedy"):
        lines.append(f"  remedy: {exact['remedy']}")
    missed = st.index_missed()
    lines.append(f"Suite: exact search would cover {int(st.suite_exact.sum())} chunks; "
                 f"{len(missed)} of them no test's index list holds (coverage the index costs)")
    lines += rerank_lines(st, r.n_chunks)
    if hidden:
        lines += ["", f"Hidden by the index ({len(hidden)}): exact search reaches them, the index "
                  "does not; with the probes and tests that miss them:"]
        for j in hidden[:show]:
            lines.append(f"  {r.name(j)}  missed by {_missers(st, j)}")
        if len(hidden) > show:
            lines.append(f"  ... and {len(hidden) - show} more (--format json lists them all)")
    worst = worst_tests(st)
    if worst:
        lines += ["", f"Tests with the lowest index recall@{st.depth}:"]
        for row, recall, chunks in worst:
            names = ", ".join(st.chunk_ids[c] for c in chunks[:SHOW_MISSERS])
            more = f" +{len(chunks) - SHOW_MISSERS}" if len(chunks) > SHOW_MISSERS else ""
            lines.append(f"  {st.test_ids[row]}  {_pct(recall)}"
                         + (f"  misses {names}{more}" if names else ""))
    return lines


def _missers(st: Stages, j: int) -> str:
    probes = st.hidden_probes.get(j, [])
    tests = st.hidden_tests.get(j, [])
    parts = []
    for what, ids in (("probes", probes), ("tests", tests)):
        if ids:
            more = f" +{len(ids) - SHOW_MISSERS}" if len(ids) > SHOW_MISSERS else ""
            parts.append(f"{what} " + ", ".join(ids[:SHOW_MISSERS]) + more)
    return "; ".join(parts) or "-"


def worst_tests(st: Stages, n: int = WORST_TESTS) -> list[tuple[int, float, list[int]]]:
    """The tests whose index list recalls least of their exact top-d (below 1 only)."""
    rows = [(row, st.test_recall(row)) for row in range(len(st.test_ids))]
    low = sorted(((row, rec) for row, rec in rows if rec is not None and rec < 1.0),
                 key=lambda x: (x[1], x[0]))
    return [(row, rec, st.test_missed.get(row, [])) for row, rec in low[:n]]


def rerank_lines(st: Stages, n_chunks: int) -> list[str]:
    if not st.reranked:
        return []
    rerank = st.meta.get("rerank") or {}
    who = rerank.get("model") or rerank.get("name") or rerank.get("reranker", "reranker")
    out = []
    if st.suite_first is not None:
        first = int(st.suite_first.sum())
        final = int(st.final_covered.sum())
        out.append(f"Reranker {who} (depth {rerank.get('depth', '?')}): first-stage coverage "
                   f"{_pct(first / n_chunks if n_chunks else 0.0)} ({first} chunks) beside final "
                   f"coverage {_pct(final / n_chunks if n_chunks else 0.0)} ({final}); the "
                   f"reranker drops {len(st.reranker_dropped())} chunks the first stage found")
    return out


def report_lines(st: Stages | None, n_chunks: int) -> list[str]:
    """What ``ragcov report`` adds under the table: the causes, the recall, the reranker."""
    if st is None:
        return []
    lost = [lost_line(st)] if st.unreachable.any() else []
    if not st.checked:
        exact = st.exact
        skipped = ([f"Exact check skipped: {exact['reason']}"]
                   if exact.get("checked") is False and exact.get("reason") else [])
        return (lost if st.reranked else []) + skipped + rerank_lines(st, n_chunks)
    out = [*lost, recall_line(st)]
    if st.index_hidden() and st.exact.get("remedy"):
        out.append(f"{index_line(st)}; remedy: {st.exact['remedy']}")
    return out + rerank_lines(st, n_chunks)


def chunk_entry(st: Stages | None, j: int) -> dict[str, Any]:
    """A chunk's stage fields in JSON: where it is lost, and who misses it when hidden."""
    if st is None or st.cause[j] is None:
        return {}
    out: dict[str, Any] = {"lost_at": st.cause[j]}
    if st.cause[j] == INDEX:
        out["missed_by"] = {"probes": st.hidden_probes.get(j, []),
                            "tests": st.hidden_tests.get(j, [])}
    return out


def stages_json(st: Stages | None) -> dict[str, Any] | None:
    """The stage section of a JSON report: the tests' recall and what each one misses."""
    if st is None:
        return None
    tests = {}
    for row, qid in enumerate(st.test_ids):
        recall = st.test_recall(row)
        if recall is None and row not in st.test_missed:
            continue
        tests[qid] = {"index_recall": recall,
                      "index_missed": [st.chunk_ids[c] for c in st.test_missed.get(row, [])]}
    return {"exact_check": st.exact, "rerank": st.meta.get("rerank"),
            "index_hidden": [st.chunk_ids[j] for j in st.index_hidden()],
            "suite_index_missed": [st.chunk_ids[j] for j in st.index_missed()],
            "reranker_dropped": [st.chunk_ids[j] for j in st.reranker_dropped()],
            "tests": tests}
