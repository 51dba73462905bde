"""Coverage-guided generation vs random and overlap seeding (docs/method.md §5).

A slice of a dataset's documents is the corpus; its own questions are set aside
(the scenario has none) and only serve as a reference point. Each arm runs the
generation loop with the same generator, retriever, k and budget; the loop's
records give the coverage curve, tests-to-X%, target hit rate, rejections and
plateaus (the longest stretch of attempts without gain, and how many of the last
quarter's questions still added anything). Every run writes its own JSON-lines
file and data file under ``runs/``, so an interrupted experiment resumes.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from research.common import (
    ExperimentSetup,
    environment,
    markdown_table,
    pyplot,
    save_figure,
    write_tables,
)

if TYPE_CHECKING:
    from research.datasets import Dataset

ARMS = {
    "coverage": ("coverage", "order"),
    "coverage-isolated": ("coverage", "isolated"),
    "coverage-random": ("coverage", "random"),
    "random": ("random", "order"),
    "overlap": ("overlap", "order"),
}


@dataclass
class GenerationResult:
    rows: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    markdown: str
    paths: list[Path] = field(default_factory=list)


def slice_corpus(corpus: Corpus, docs: int | None) -> Corpus:
    """The chunks of the first ``docs`` documents, in corpus order."""
    if docs is None:
        return corpus
    if docs < 1:
        raise RagcovError("--docs must be at least 1")
    keep: list[str] = []
    for c in corpus:
        if c.doc_id not in keep:
            keep.append(c.doc_id)
        if len(keep) > docs:
            break
    wanted = set(keep[:docs])
    return Corpus([c for c in corpus if c.doc_id in wanted],
                  chunking=dict(corpus.chunking, documents=docs), source=corpus.source)


def questions_to(curve: list[float], level: float) -> int | None:
    """How many questions it took to reach ``level`` CC (None: never within the budget)."""
    from ragcov.selection import tests_to

    return tests_to(curve, 1.0, level * 100)


def run_stats(summary: Any, budget: int, thresholds: list[float]) -> dict[str, Any]:
    recs = summary.records
    curve = [r["cc_after"] for r in recs]
    tail = recs[-max(1, budget // 4):] if recs else []
    row = {
        "accepted": len(recs), "final_cc": curve[-1] if curve else summary.cc_start,
        "hit_rate": (sum(r["hit_target"] for r in recs) / len(recs)) if recs else 0.0,
        "calls": summary.calls, "tokens": summary.prompt_tokens + summary.completion_tokens,
        "rejected": sum(summary.rejected.values()),
        "rejected_by_reason": dict(summary.rejected),
        "longest_no_gain": summary.longest_no_gain,
        "tail_gainers": sum(1 for r in tail if r["gain"] > 0), "tail": len(tail),
        "never_reached": len(summary.never_reached), "stop_reason": summary.stop_reason,
        "curve": curve,
    }
    for t in thresholds:
        row[f"to_{t:g}"] = questions_to(curve, t / 100.0)
    return row


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def run_generation_experiment(setup: ExperimentSetup, generator: str, budget: int,
                              repeats: int = 1, arms: list[str] | None = None,
                              docs: int | None = 150, seed: int = 0,
                              thresholds: list[float] | None = None,
                              generator_options: dict[str, Any] | None = None,
                              out_dir: Path | None = None, console: Any = None
                              ) -> GenerationResult:
    from ragcov.generation import make_generator
    from ragcov.retrievers import make_retriever

    arms = _checked(setup, arms, budget, repeats)
    thresholds = thresholds or [10, 20, 30, 40, 50]
    ds, corpus = load_slice(setup, docs)
    out_dir = Path(out_dir) if out_dir else setup.default_out(f"generation-{generator}")
    retriever = make_retriever(setup.retriever, corpus, model=setup.model,
                               progress=setup.progress)
    gen = make_generator(generator, corpus.texts, **(generator_options or {}))
    reference = human_reference(ds, corpus, retriever, setup.k, budget)
    runs = run_arms(corpus, retriever, gen, setup.k, arms, repeats, budget, seed, thresholds,
                    out_dir / "runs", console)
    rows = _aggregate(runs, arms, thresholds, len(corpus))
    base = next((row for row in rows if row["arm"] == "random"), None)
    for row in rows:
        row["margin_vs_random"] = (None if base is None
                                   else row["final_cc_mean"] - base["final_cc_mean"])
    markdown = _markdown(setup, generator, gen, corpus, budget, repeats, docs, rows, thresholds,
                         reference)
    document = {"setup": setup.describe(), "generator": generator,
                "model": getattr(gen, "model", None), "budget": budget, "repeats": repeats,
                "docs": docs, "chunks": len(corpus), "seed": seed, "thresholds": thresholds,
                "human_reference": reference, "arms": rows, "runs": runs,
                "environment": environment()}
    columns = ["arm", "final_cc_mean", "final_cc_sd", "margin_vs_random", "hit_rate_mean",
               "calls_mean", "tokens_mean", "rejected_mean", "longest_no_gain_max",
               "tail_gainers_mean", *[f"to_{t:g}" for t in thresholds]]
    paths = write_tables(out_dir, "generation", rows, markdown, document, columns)
    paths.append(_write_curves(out_dir, runs))
    paths.append(_plot(out_dir, runs, arms, generator, budget, len(corpus)))
    return GenerationResult(rows, runs, markdown, paths)


def _checked(setup: ExperimentSetup, arms: list[str] | None, budget: int, repeats: int
             ) -> list[str]:
    """The arguments checked before anything is loaded; the arms, defaulted."""
    from ragcov.retrieval import validate_k

    validate_k(setup.k)
    arms = arms or ["coverage", "random", "overlap"]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise RagcovError(f"unknown arm(s) {', '.join(unknown)}: expected {', '.join(ARMS)}")
    if budget < 1 or repeats < 1:
        raise RagcovError("--budget and --repeats must be at least 1")
    return arms


def load_slice(setup: ExperimentSetup, docs: int | None) -> tuple[Dataset, Corpus]:
    """The dataset and the chunks of its first ``docs`` documents (all when None)."""
    from research.datasets import load_dataset

    ds = load_dataset(setup.dataset, setup.data)
    corpus = slice_corpus(ds.corpus(setup.chunk_size, setup.chunk_overlap), docs)
    if len(corpus) == 0:
        raise RagcovError(f"{setup.dataset}: the corpus slice is empty")
    return ds, corpus


def human_reference(ds: Dataset, corpus: Corpus, retriever: Any, k: int, budget: int
                    ) -> dict[str, Any]:
    """The held-back human questions about the same documents: a reference, not an arm."""
    from ragcov.matrix import CoverageMatrix
    from ragcov.metrics import chunk_coverage
    from ragcov.retrieval import run_retriever

    doc_set = set(corpus.documents())
    human = [(q.id, q.text) for q in ds.queries if q.metadata.get("doc_id") in doc_set]
    reference: dict[str, Any] = {"questions": len(human)}
    if human:
        run = run_retriever(retriever, human, k, progress=False)
        m = CoverageMatrix.from_run(run, corpus)
        reference["cc_all"] = chunk_coverage(m)
        first = m.select_rows(list(range(min(budget, m.n_queries))))
        reference["cc_first_budget"] = chunk_coverage(first)
    return reference


def run_arms(corpus: Corpus, retriever: Any, gen: Any, k: int, arms: list[str], repeats: int,
             budget: int, seed: int, thresholds: list[float], runs_dir: Path, console: Any
             ) -> list[dict[str, Any]]:
    """``repeats`` generation runs per arm (seeds ``seed``, ``seed + 1``, ...), each resumable."""
    from ragcov.generation import LoopConfig, run_generation
    from ragcov.generation.targets import chunk_vectors

    runs: list[dict[str, Any]] = []
    vectors = None
    for arm in arms:
        strategy, policy = ARMS[arm]
        if strategy == "coverage" and policy == "isolated" and vectors is None:
            vectors = chunk_vectors(retriever, corpus)
        for r in range(repeats):
            stem = f"{arm}-r{r}"
            config = LoopConfig(budget=budget, strategy=strategy, policy=policy, patience=0,
                                max_attempts=2, seed=seed + r)
            summary = run_generation(corpus, retriever, gen, k, runs_dir / f"{stem}.jsonl",
                                     runs_dir / f"{stem}.ragcov", config,
                                     vectors=vectors if policy == "isolated" else None)
            stats = run_stats(summary, budget, thresholds)
            runs.append({"arm": arm, "repeat": r, **stats})
            if console is not None:
                console.print(f"  {stem}: CC {stats['final_cc'] * 100:.1f}% after "
                              f"{stats['accepted']} questions, hit rate "
                              f"{stats['hit_rate'] * 100:.0f}%, {stats['calls']} calls, "
                              f"{stats['rejected']} rejected", markup=False)
    return runs


def _aggregate(runs: list[dict[str, Any]], arms: list[str], thresholds: list[float],
               chunks: int) -> list[dict[str, Any]]:
    rows = []
    for arm in arms:
        mine = [r for r in runs if r["arm"] == arm]
        finals = [r["final_cc"] for r in mine]
        row: dict[str, Any] = {
            "arm": arm, "repeats": len(mine), "final_cc_mean": _mean(finals),
            "final_cc_sd": _sd(finals), "hit_rate_mean": _mean([r["hit_rate"] for r in mine]),
            "calls_mean": _mean([r["calls"] for r in mine]),
            "tokens_mean": _mean([r["tokens"] for r in mine]),
            "rejected_mean": _mean([r["rejected"] for r in mine]),
            "longest_no_gain_max": max(r["longest_no_gain"] for r in mine),
            "tail_gainers_mean": _mean([r["tail_gainers"] for r in mine]),
            "stop_reasons": sorted({r["stop_reason"] for r in mine}),
        }
        for t in thresholds:
            reached = [r[f"to_{t:g}"] for r in mine if r[f"to_{t:g}"] is not None]
            # a mean only when every repeat got there; otherwise say how many did
            row[f"to_{t:g}"] = (_mean(reached) if len(reached) == len(mine)
                                else f"{len(reached)}/{len(mine)} reached")
        rows.append(row)
    return rows


def _markdown(setup: ExperimentSetup, generator: str, gen: Any, corpus: Corpus, budget: int,
              repeats: int, docs: int | None, rows: list[dict[str, Any]],
              thresholds: list[float], reference: dict[str, Any]) -> str:
    heads = ["arm", "CC after budget (mean)", "sd", "vs random", "target hit rate", "calls",
             "tokens", "rejected", "longest stretch w/o gain", "gainers in last quarter",
             *[f"tests to {t:g}%" for t in thresholds]]
    cols = ["arm", "final_cc_mean", "final_cc_sd", "margin_vs_random", "hit_rate_mean",
            "calls_mean", "tokens_mean", "rejected_mean", "longest_no_gain_max",
            "tail_gainers_mean", *[f"to_{t:g}" for t in thresholds]]
    lines = [
        f"# Coverage-guided generation: {setup.dataset_name}, {generator} "
        f"({getattr(gen, 'model', '?')})",
        "",
        f"Corpus: first {docs} documents, {len(corpus)} chunks; retriever {setup.retriever}, "
        f"k={setup.k}; budget {budget} questions per run, {repeats} repeat(s) per arm.",
        "",
        markdown_table(rows, cols, heads),
    ]
    if reference.get("questions"):
        lines += ["", f"Reference: the dataset's own {reference['questions']} questions about "
                  f"these documents reach CC {reference['cc_all'] * 100:.1f}% "
                  f"(the first {budget}: {reference['cc_first_budget'] * 100:.1f}%)."]
    return "\n".join(lines)


def _write_curves(out_dir: Path, runs: list[dict[str, Any]]) -> Path:
    from ragcov.files import write_text_atomic
    from research.common import csv_text

    rows = [{"arm": r["arm"], "repeat": r["repeat"], "questions": i, "cc": cc}
            for r in runs for i, cc in enumerate(r["curve"], start=1)]
    path = out_dir / "generation-curves.csv"
    write_text_atomic(path, csv_text(rows, ["arm", "repeat", "questions", "cc"]))
    return path


def _plot(out_dir: Path, runs: list[dict[str, Any]], arms: list[str], generator: str,
          budget: int, chunks: int) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for arm in arms:
        curves = [r["curve"] for r in runs if r["arm"] == arm and r["curve"]]
        if not curves:
            continue
        n = max(len(c) for c in curves)
        padded = np.array([c + [c[-1]] * (n - len(c)) for c in curves]) * 100
        x = np.arange(1, n + 1)
        ax.plot(x, padded.mean(axis=0), label=arm)
        if len(curves) > 1:
            ax.fill_between(x, padded.min(axis=0), padded.max(axis=0), alpha=0.15)
    ax.set_xlabel("generated questions")
    ax.set_ylabel("chunk coverage (%)")
    ax.set_title(f"Generation with {generator}: {chunks} chunks, budget {budget}")
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, out_dir / "generation-curves.png")
