"""Coverage by topic (docs/topics.md): what a suite misses, said in subjects.

On one dataset and retriever:

1. The whole question pool is recorded into a data file and its corpus clustered by
   ``ragcov topics`` (``api.fit_topics``: the run's own vectors, N chosen, ``--seed``).
2. Per topic, the chunk coverage (CC) of three suites of the pool: the *shipped*
   suite (``budget`` questions drawn at random, as a team samples real questions),
   the suite *selected by coverage* (``ragcov select``'s greedy order, its first
   ``budget``) and the whole pool.
3. Stability: the adjusted Rand index (ARI) between the topics of two seeds at the
   same N and with N chosen again, and how many topics keep their label (the same
   first term in the other seed's topic that shares most chunks with it).
4. The clustering choice: k-means with restarts (ragcov's), MiniBatchKMeans and
   HDBSCAN on the same vectors: seconds, agreement between two seeds, noise.
5. Acting on it: ``generate --topic`` (extractive questions) aimed at the shipped
   suite's darkest topic, and that topic's CC before and after.

Everything goes through ragcov's own verbs, so the numbers are what ``ragcov topics``
prints for the same data file.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov import api
from ragcov.data import CoverageData
from ragcov.data.topics import read_topics
from ragcov.errors import RagcovError
from research.common import ExperimentSetup, environment, markdown_table, write_tables

SUITES = ("shipped", "selected", "pool")
DARK = 0.25  # a topic below this CC counts as dark-ish in the summary


@dataclass
class TopicsResult:
    topics: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    stability: list[dict[str, Any]]
    methods: list[dict[str, Any]]
    generation: dict[str, Any]
    markdown: str
    document: dict[str, Any]
    paths: list[Path] = field(default_factory=list)


def _record(setup: ExperimentSetup, folder: Path) -> tuple[Any, Any, Any, Path]:
    """The dataset's corpus, pool and retriever; the pool recorded into a data file."""
    from ragcov.retrievers import make_retriever
    from research.datasets import load_dataset

    ds = load_dataset(setup.dataset, setup.data)
    corpus = ds.corpus(setup.chunk_size, setup.chunk_overlap)
    suite = ds.suite()
    if len(suite) == 0:
        raise RagcovError(f"{setup.dataset}: the dataset has no questions to make suites of")
    r = make_retriever(setup.retriever, corpus, model=setup.model, progress=setup.progress)
    data = folder / "pool.ragcov"
    api.measure(corpus, suite, r, k=setup.k, data_file=data, progress=setup.progress)
    return corpus, suite, r, data


def per_topic_cc(m: Any, rows: np.ndarray, topic: np.ndarray, n_topics: int) -> np.ndarray:
    """CC of each topic (index 0 unused) for the sub-suite of the pool's ``rows``."""
    covered = m.select_rows(rows).covered()
    size = np.bincount(topic, minlength=n_topics + 1)
    hit = np.bincount(topic, weights=covered, minlength=n_topics + 1)
    return np.divide(hit, size, out=np.zeros(n_topics + 1), where=size > 0)


def _suites(data: Path, m: Any, budget: int, seed: int) -> dict[str, np.ndarray]:
    n = m.n_queries
    if not 0 < budget <= n:
        raise RagcovError(f"--budget must be 1 to {n} (the pool's questions), got {budget}")
    shipped = np.sort(np.random.default_rng(seed).choice(n, budget, replace=False))
    order = api.select_tests(data, "coverage", budget=budget, seed=seed)
    position = m.row_of()
    selected = np.array([position[q["id"]] for q in order["suite"]], dtype=np.int64)
    return {"shipped": shipped, "selected": selected, "pool": np.arange(n)}


def label_agreement(a_assign: np.ndarray, a_terms: list[list[str]], b_assign: np.ndarray,
                    b_terms: list[list[str]]) -> int:
    """Topics of A whose label's first term leads the label of B's topic sharing most chunks."""
    same = 0
    for t, terms in enumerate(a_terms, start=1):
        mine = b_assign[a_assign == t]
        if mine.size == 0 or not terms:
            continue
        partner = int(np.bincount(mine).argmax())
        same += bool(b_terms[partner - 1]) and b_terms[partner - 1][0] == terms[0]
    return same


def _stability(vectors: np.ndarray, texts: list[str], stored: Any, seed: int) -> list[dict]:
    from sklearn.metrics import adjusted_rand_score

    from ragcov.topics.fit import fit

    n = stored.n_topics
    base_terms = [list(t.terms) for t in stored.labels]
    rows = []
    for other, chosen in ((seed + 1, n), (seed + 1, None), (seed + 2, n)):
        f = fit(vectors, texts, chosen, seed=other)
        rows.append({"seeds": f"{seed} vs {other}", "n_topics": f"{n} vs {f.n_topics}",
                     "n_chosen": chosen is None,
                     "ari": float(adjusted_rand_score(stored.assignment, f.assignment)),
                     "labels_kept": label_agreement(stored.assignment, base_terms, f.assignment,
                                                    f.terms),
                     "topics": n})
    # Coarser topics for comparison: a third of N, two seeds.
    coarse = max(2, n // 3)
    a, b = (fit(vectors, texts, coarse, seed=s) for s in (seed, seed + 1))
    rows.append({"seeds": f"{seed} vs {seed + 1}", "n_topics": f"{coarse} vs {coarse}",
                 "n_chosen": False, "ari": float(adjusted_rand_score(a.assignment, b.assignment)),
                 "labels_kept": label_agreement(a.assignment, a.terms, b.assignment, b.terms),
                 "topics": coarse})
    return rows


def clustering_methods(vectors: np.ndarray, n_topics: int, seed: int) -> list[dict[str, Any]]:
    """k-means with restarts (ragcov's), MiniBatchKMeans and HDBSCAN on the same vectors."""
    import warnings

    from sklearn.cluster import HDBSCAN, KMeans, MiniBatchKMeans
    from sklearn.metrics import adjusted_rand_score

    from ragcov.topics.fit import RESTARTS, one_thread

    def timed(make: Any) -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        with one_thread(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = make().fit_predict(vectors)
        return labels, time.perf_counter() - t

    rows = []
    for name, make in (
            ("KMeans, 10 restarts (ragcov)",
             lambda s: KMeans(n_topics, n_init=RESTARTS, random_state=s)),
            ("MiniBatchKMeans, 3 inits", lambda s: MiniBatchKMeans(n_topics, n_init=3,
                                                                   random_state=s)),
            ("HDBSCAN, min_cluster_size 10", lambda s: HDBSCAN(min_cluster_size=10, copy=True)),
            ("HDBSCAN, min_cluster_size 5", lambda s: HDBSCAN(min_cluster_size=5, copy=True))):
        a, seconds = timed(lambda make=make: make(seed))
        b, _ = timed(lambda make=make: make(seed + 1))
        rows.append({"method": name, "seconds": seconds, "clusters": int(a.max()) + 1,
                     "noise_share": float((a < 0).mean()),
                     "seed_ari": float(adjusted_rand_score(a, b))})
    return rows


def _generate(setup: ExperimentSetup, corpus: Any, r: Any, pool: Path, m: Any, rows: np.ndarray,
              folder: Path, topic: int, seed: int, budget: int) -> dict[str, Any]:
    """``generate --topic`` from the shipped suite: the topic's CC before and after."""
    from ragcov.generation import LoopConfig, make_generator
    from ragcov.scope import ReportScope
    from ragcov.suite import Query, Suite

    data = folder / "shipped.ragcov"
    shipped = Suite([Query(m.query_ids[i], m.query_texts[i]) for i in rows.tolist()])
    api.measure(corpus, shipped, r, k=setup.k, data_file=data, progress=False)
    api.fit_topics(data, seed=seed)  # the same corpus, vectors and seed: the pool's topics
    if read_topics(CoverageData(data)).assignment.tolist() != \
            read_topics(CoverageData(pool)).assignment.tolist():
        raise RagcovError("the shipped suite's topics differ from the pool's")
    number, label, ids = api.topic_targets(data, str(topic), corpus)
    # Generated questions are left out of reports until reviewed: counted here as a user
    # counts them with --include-generated, to see what they would add.
    scope = ReportScope(include_generated=True)
    before = api.topic_coverage(data, scope)
    config = LoopConfig(budget=budget, policy="order", seed=seed, priority=ids)
    summary = api.generate(corpus, r, make_generator("extractive", corpus.texts), setup.k,
                           folder / "generated.jsonl", data, config)
    after = api.topic_coverage(data, scope)
    pick = lambda rep: next(t for t in rep.topics if t.topic == number)  # noqa: E731
    return {"topic": number, "label": label, "untested_before": len(ids),
            "questions": summary.accepted, "reached_target": summary.hits,
            "topic_cc_before": pick(before).coverage, "topic_cc_after": pick(after).coverage,
            "cc_before": before.coverage, "cc_after": after.coverage}


def run_topics(setup: ExperimentSetup, budget: int = 100, seed: int = 0,
               generate_budget: int = 10, out_dir: Path | None = None,
               console: Any = None) -> TopicsResult:
    from ragcov.data.topics import chunk_texts_in_order
    from ragcov.topics.coverage import topic_positions
    from ragcov.topics.vectors import chunk_vectors

    say = (lambda s: console.print(s, markup=False)) if console is not None else (lambda s: None)
    with tempfile.TemporaryDirectory(prefix="ragcov-topics-") as tmp:
        folder = Path(tmp)
        corpus, _suite, r, data = _record(setup, folder)
        t = time.perf_counter()
        built = api.fit_topics(data, seed=seed)
        fit_seconds = time.perf_counter() - t
        stored = built.topics
        say(f"{len(corpus)} chunks -> {stored.n_topics} topics ({stored.settings['vectors']}, "
            f"{fit_seconds:.1f} s)")
        m = CoverageData(data).matrix()
        topic = topic_positions(stored, m.chunk_ids)
        suites = _suites(data, m, budget, seed)
        cc = {name: per_topic_cc(m, rows, topic, stored.n_topics) for name, rows in suites.items()}
        topics = [{"topic": t.topic, "label": t.label, "chunks": t.size,
                   **{f"cc_{s}": float(cc[s][t.topic]) for s in SUITES}} for t in stored.labels]
        topics.sort(key=lambda row: (row["cc_shipped"], row["topic"]))
        summary = []
        for s in SUITES:
            covered = m.select_rows(suites[s]).covered()
            per = np.array([row[f"cc_{s}"] for row in topics])
            summary.append({"suite": s, "questions": int(len(suites[s])),
                            "cc": float(covered.mean()), "min_topic_cc": float(per.min()),
                            "dark_topics": int((per == 0).sum()),
                            f"topics_below_{int(DARK * 100)}": int((per < DARK).sum()),
                            "topic_cc_spread": float(per.max() - per.min())})
        meta = CoverageData(data).meta()
        texts = chunk_texts_in_order(CoverageData(data))
        vectors = chunk_vectors(str(data), meta, texts, stored.settings["asked_vectors"],
                                seed=seed).matrix
        stability = _stability(vectors, texts, stored, seed)
        methods = clustering_methods(vectors, stored.n_topics, seed)
        darkest = topics[0]["topic"]
        generation = _generate(setup, corpus, r, data, m, suites["shipped"], folder, darkest,
                               seed, generate_budget)
    markdown = _markdown(setup, stored, topics, summary, stability, methods, generation, budget,
                         fit_seconds)
    document = {"setup": setup.describe(), "environment": environment(), "seed": seed,
                "budget": budget, "made": stored.settings, "fit_seconds": fit_seconds,
                "topics": topics, "summary": summary, "stability": stability,
                "methods": methods, "generation": generation}
    result = TopicsResult(topics, summary, stability, methods, generation, markdown, document)
    out = out_dir or setup.default_out("topics")
    result.paths = write_tables(out, "topics", topics, markdown, document)
    return result


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _markdown(setup: ExperimentSetup, stored: Any, topics: list[dict], summary: list[dict],
              stability: list[dict], methods: list[dict], generation: dict, budget: int,
              fit_seconds: float) -> str:
    s = stored.settings
    lines = [f"## Coverage by topic: {setup.dataset_name}, {setup.retriever}, k={setup.k}", "",
             f"{len(stored.chunk_ids)} chunks in {stored.n_topics} topics from {s['vectors']} "
             f"vectors (N chosen by silhouette), seed {s['seed']}, made in {fit_seconds:.1f} s. "
             f"Shipped suite: {budget} questions drawn at random from the pool; selected: the "
             f"first {budget} of `ragcov select --strategy coverage`; pool: every question.", "",
             markdown_table(summary, digits=3), "",
             markdown_table([{**row, **{f"cc_{x}": _pct(row[f"cc_{x}"]) for x in SUITES}}
                             for row in topics],
                            ["topic", "label", "chunks", "cc_shipped", "cc_selected", "cc_pool"],
                            ["topic", "label", "chunks", "CC shipped", "CC selected", "CC pool"]),
             "", "Stability across seeds:", "", markdown_table(stability, digits=3), "",
             "Clustering methods on the same vectors (one thread):", "",
             markdown_table(methods, digits=3), "",
             f"`generate --topic {generation['topic']}` ({generation['label']}), "
             f"{generation['questions']} extractive questions: topic CC "
             f"{_pct(generation['topic_cc_before'])} -> {_pct(generation['topic_cc_after'])}, "
             f"corpus CC {_pct(generation['cc_before'])} -> {_pct(generation['cc_after'])}."]
    return "\n".join(lines) + "\n"
