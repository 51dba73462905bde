"""RQ3's aim across configurations: which order reveals faults early *and* keeps exploring.

Reads the ``rq3.json`` of several ``python -m research rq3`` runs and, for each order,
puts side by side its APFD against random (one failure definition, one tau) and the
tests it needs to reach 50% and 80% of the pool's coverage as a multiple of coverage
greedy's. The aim (issue 24): at least +10% APFD over random in every configuration
with at most 1.15x coverage's tests to 50%.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError
from research.common import markdown_table

AIM_APFD = 0.10
AIM_EXPLORATION = 1.15


def load(folders: Sequence[Path]) -> dict[str, dict[str, Any]]:
    docs = {}
    for folder in folders:
        path = Path(folder) / "rq3.json"
        if not path.is_file():
            raise RagcovError(f"{path}: no such file (run `python -m research rq3 --out {folder}`)")
        doc = json.loads(path.read_text())
        s = doc["setup"]
        docs[f"{s['dataset']} {'dense' if s['retriever'] == 'dense' else s['retriever']} "
             f"k{s['k']}"] = doc
    return docs


def rows(docs: dict[str, dict[str, Any]], failure: str, tau: float) -> list[dict[str, Any]]:
    """One row per order: per configuration "APFD vs random / tests-to-50% ratio", then the
    worst of each, and whether the order meets the aim everywhere."""
    table: dict[str, dict[str, Any]] = {}
    for label, doc in docs.items():
        n = doc["pool"]["queries"]
        explore = {r["order"]: r for r in doc["exploration"]}
        base50, base80 = explore["coverage"]["tests_to_50"], explore["coverage"]["tests_to_80"]
        for r in doc["apfd"]:
            if r["failure"] != failure or r["tau"] != tau or r["tests"] != n:
                continue
            ex = explore[r["order"]]
            row = table.setdefault(r["order"], {"order": r["order"], "_gain": [], "_x50": [],
                                                "_x80": [], "_a12": [], "_p": []})
            x50, x80 = ex["tests_to_50"] / base50, ex["tests_to_80"] / base80
            row["_gain"].append(r["vs_random"])
            row["_x50"].append(x50)
            row["_x80"].append(x80)
            if r["order"] != "random":
                row["_a12"].append(r["a12_vs_random"])
                row["_p"].append(r["p_vs_random"])
            row[label] = f"{r['vs_random'] * 100:+.1f}% / {x50:.2f}x"
    out = []
    for row in table.values():
        gains, x50s, x80s = row.pop("_gain"), row.pop("_x50"), row.pop("_x80")
        a12s, ps = row.pop("_a12"), [p for p in row.pop("_p") if p is not None and p == p]
        complete = len(gains) == len(docs)
        row["worst APFD vs random"] = f"{min(gains) * 100:+.1f}%"
        row["worst tests to 50%"] = f"{max(x50s):.2f}x"
        row["worst tests to 80%"] = f"{max(x80s):.2f}x"
        row["lowest A12"] = f"{min(a12s):.2f}" if a12s else "–"
        row["largest p"] = f"{max(ps):.2g}" if ps else "–"
        row["aim"] = ("yes" if complete and min(gains) >= AIM_APFD
                      and max(x50s) <= AIM_EXPLORATION else "no")
        out.append(row)
    return out


def render(docs: dict[str, dict[str, Any]], taus: Sequence[float] = (0.8,)) -> str:
    failures = list(next(iter(docs.values()))["failure_definitions"]) if docs else []
    lines = ["# RQ3 across configurations: fault detection against exploration", "",
             "Each cell: mean APFD against random's / mean tests to reach 50% of the pool's "
             "coverage as a multiple of coverage greedy's (30 seeded runs). A12 and p (Mann-Whitney) "
             "against random, the least favourable configuration. Aim: at least "
             f"{AIM_APFD:+.0%} everywhere with at most {AIM_EXPLORATION:.2f}x.", ""]
    for failure in failures:
        for tau in taus:
            lines += [f"## {failure}, tau = {tau:g}", "", markdown_table(rows(docs, failure, tau)),
                      ""]
    return "\n".join(lines)


def write_verdict(folders: Sequence[Path], out: Path, taus: Sequence[float] = (0.8,)) -> str:
    from ragcov.files import write_text_atomic

    text = render(load(folders), taus)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, text.rstrip() + "\n")
    return text
