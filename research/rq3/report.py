"""RQ3's Markdown: the headline comparison, then every table the runner collected."""

from __future__ import annotations

from typing import Any

from research.common import markdown_table
from research.rq3.design import PAPER_IMPROVEMENT, main_tau
from research.rq3.stats import pct


def render_markdown(doc: dict[str, Any]) -> str:
    """The whole report for an RQ3 document (as written to ``rq3.json``)."""
    lines = _header(doc)
    lines += _coverage_against_random(doc)
    lines += _every_order(doc)
    lines += _per_tau(doc)
    lines += _explanations(doc)
    return "\n".join(lines)


def _header(doc: dict[str, Any]) -> list[str]:
    s, pool = doc["setup"], doc["pool"]
    lines = [f"# RQ3 on {s['dataset']} ({s['retriever']}, k={s['k']})", "",
             f"Pool: {pool['queries']} queries ({pool['labelled']} labelled, "
             f"{pool['labels']}-level), {pool['chunks']} chunks; "
             f"{doc['repeats']} seeded runs per order; paper: coverage beats random by "
             f"{PAPER_IMPROVEMENT[0]:.0%} to {PAPER_IMPROVEMENT[1]:.0%} APFD.", ""]
    return lines + [f"Note: {note}" for note in doc["notes"]]


def _coverage_against_random(doc: dict[str, Any]) -> list[str]:
    n, rows = doc["pool"]["queries"], doc["apfd"]
    random_mean = {(r["failure"], r["tau"], r["tests"]): r["apfd_mean"] for r in rows
                   if r["order"] == "random"}
    cov = [{**r, "vs_random": pct(r["vs_random"]),
            "random": random_mean[(r["failure"], r["tau"], r["tests"])]} for r in rows
           if r["order"] == "coverage" and r["tests"] == n]
    return ["## Coverage-guided against random, next to the paper's +10% to +25%", "",
            markdown_table(cov, ["failure", "tau", "faults", "apfd_mean", "random", "vs_random",
                                 "a12_vs_random", "p_vs_random"],
                           ["failure", "tau", "faults", "coverage APFD", "random APFD",
                            "vs random", "A12", "p (Mann-Whitney)"]), ""]


def _every_order(doc: dict[str, Any]) -> list[str]:
    n, rows, budgets = doc["pool"]["queries"], doc["apfd"], doc["budgets"]
    tau0 = main_tau(doc["taus"])
    table = []
    for r in rows:
        if r["tau"] != tau0 or r["tests"] != n:
            continue
        row = {**r, "vs_random": pct(r["vs_random"])}
        for b in budgets:
            match = next(x for x in rows if x["failure"] == r["failure"] and x["tau"] == tau0
                         and x["tests"] == b and x["order"] == r["order"])
            row[f"b{b}"] = pct(match["vs_random"])
        table.append(row)
    return [f"## Every order at tau = {tau0:g} (first B: NAPFD of the first B tests, vs random)",
            "", markdown_table(table, ["failure", "order", "apfd_mean", "apfd_sd", "vs_random",
                                       "a12_vs_random", *[f"b{b}" for b in budgets]],
                               ["failure", "order", "APFD", "sd", "vs random", "A12",
                                *[f"first {b}" for b in budgets]]), ""]


def _per_tau(doc: dict[str, Any]) -> list[str]:
    n = doc["pool"]["queries"]
    pivot: dict[tuple[str, str], dict[str, Any]] = {}
    for r in doc["apfd"]:
        if r["tests"] == n:
            pivot.setdefault((r["failure"], r["order"]), {"failure": r["failure"],
                                                          "order": r["order"]})[
                f"tau {r['tau']:g}"] = pct(r["vs_random"])
    return ["## APFD against random for each tau", "", markdown_table(list(pivot.values())), ""]


def _explanations(doc: dict[str, Any]) -> list[str]:
    return [
        "## Exploration each order keeps (tests to 50% / 80% of the pool's coverage, "
        "coverage after the first 10% of the suite)", "",
        markdown_table(doc["exploration"], ["order", "tests_to_50", "tests_to_80", "cc_at_10pct"],
                       ["order", "tests to 50%", "tests to 80%", "CC at 10%"]), "",
        "## Fault multiplicity", "",
        markdown_table(doc["multiplicity"], ["failure", "tau", "failures", "faults",
                                             "singletons", "mean_size", "largest"]), "",
        "## Failure rate in each fifth of the order (mean over runs)", "",
        markdown_table(doc["failure_rate_by_fifth"]), "",
        "## Failing against passing queries", "",
        "popularity = mean number of pool queries that retrieved each of a query's chunks; "
        "top score = the query's best retrieval score; hub = hub exposure, the mean "
        "k-occurrence among the self-query probes of the query's chunks (no pool statistic); "
        "p = Mann-Whitney.", "",
        markdown_table(doc["explain"], ["failure", "labelled", "failing", "failure_rate",
                                        "popularity_failing", "popularity_passing",
                                        "popularity_p", "top_score_failing",
                                        "top_score_passing", "top_score_p", "hub_failing",
                                        "hub_passing", "hub_p"]), "",
    ]
