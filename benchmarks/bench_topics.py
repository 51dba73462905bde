"""Coverage by topic: `ragcov topics` over a large corpus, clustered and labelled.

Synthetic data, said so: N chunks of sample-like prose (words of the bundled FinQA
pages) in 40 hidden subjects, each subject with five words of its own mixed into
its chunks, and per chunk a 384-d unit vector near its subject's centre (the size
of all-MiniLM-L6-v2's). The chunks are recorded with BM25 (not timed); the vectors
are put in the embedding cache where a dense run would have left them.

1. `ragcov topics --vectors dense` as a user runs it (a fresh process): read the
   cached vectors, choose N, k-means, c-TF-IDF labels, the map, store 100,000 rows
   (aim: under 60 s at 100,000 chunks on 2 cores).
2. `ragcov topics --vectors tfidf` (a BM25 run's own topics: TF-IDF + LSA).
3. Above 20,000 chunks, the k-means step as ragcov runs it (fitted on a 20,000-chunk
   sample, every chunk then assigned) against k-means fitted on every chunk (same N,
   same restarts, one thread), with the adjusted Rand index between the two.
4. At full size, HDBSCAN on 10,000 of the vectors, for docs/topics.md's comparison.

The labels are scored too: the share of topics whose first term is one of a
hidden subject's own words.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import row

from ragcov.topics.fit import FIT_SAMPLE

SIZES = {"tiny": 1_000, "quick": 20_000, "full": 100_000}
MODES = tuple(SIZES)  # no model is loaded: --tiny runs it too
SUBJECTS = 40
DIM = 384


def _data(folder: Path, n: int, seed: int = 0) -> tuple[Path, np.ndarray, list[set[str]]]:
    """The corpus file, each chunk's vector and the subjects' own words."""
    import ragcov
    from ragcov.corpus import load_corpus

    sample = load_corpus(Path(ragcov.__file__).parent / "data_sample" / "finqa_pages.jsonl",
                         split=True)
    rng = np.random.default_rng(seed)
    vocab = sorted({w.lower() for c in sample for w in c.text.split() if w.isalpha() and len(w) > 3})
    picked = rng.choice(len(vocab), SUBJECTS * 5, replace=False)
    own = [[vocab[j] for j in picked[s * 5:(s + 1) * 5]] for s in range(SUBJECTS)]
    owned = {w for words in own for w in words}
    background = [w for w in vocab if w not in owned]
    subject = rng.integers(0, SUBJECTS, n)
    corpus = folder / "chunks.jsonl"
    with corpus.open("w") as f:
        for i in range(n):
            words = [background[j] for j in rng.integers(0, len(background), 50)]
            words += [own[subject[i]][j] for j in rng.integers(0, 5, 8)]
            rng.shuffle(words)
            f.write(json.dumps({"id": f"c{i}", "doc_id": f"d{i // 10}", "text": " ".join(words)})
                    + "\n")
    centres = rng.normal(size=(SUBJECTS, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    v = centres[subject] + rng.normal(scale=0.06, size=(n, DIM))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return corpus, v, [set(words) for words in own]


def _ragcov(*args: str, cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from ragcov.cli import main; main()", *args],
                   check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def _same_topics(a: Path, b: Path) -> bool:
    from ragcov.data import CoverageData
    from ragcov.data.topics import read_topics

    x, y = (read_topics(CoverageData(str(p))) for p in (a, b))
    return bool(x.labels == y.labels and np.array_equal(x.assignment, y.assignment)
                and np.array_equal(x.xy, y.xy))


def _label_hits(data: Path, own: list[set[str]]) -> tuple[int, int]:
    words = set().union(*own)
    rows = sqlite3.connect(data).execute("SELECT terms FROM topic_labels").fetchall()
    return sum(json.loads(t)[0] in words for (t,) in rows if json.loads(t)), len(rows)


def _fit_step(v: np.ndarray, data: Path) -> tuple[float, float, float]:
    """The k-means step as ragcov runs it (a 20,000-chunk sample, every chunk assigned) and
    on every chunk (the baseline), same N and restarts, one thread; and their agreement."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from ragcov.data import CoverageData
    from ragcov.data.topics import read_topics
    from ragcov.topics.fit import RESTARTS, _kmeans, one_thread

    n_topics = read_topics(CoverageData(data)).n_topics
    with one_thread():
        t = time.perf_counter()
        ours = _kmeans(v, n_topics, 0, np.random.default_rng(0))
        seconds = time.perf_counter() - t
        t = time.perf_counter()
        every = KMeans(n_topics, n_init=RESTARTS, random_state=0).fit_predict(v)
        baseline = time.perf_counter() - t
    return seconds, baseline, float(adjusted_rand_score(every, ours))


HDBSCAN_CHUNKS = 10_000


def _hdbscan(v: np.ndarray) -> dict:
    """HDBSCAN, the other clusterer docs/topics.md weighs, on the first 10,000 vectors."""
    import warnings

    from sklearn.cluster import HDBSCAN

    from ragcov.topics.fit import one_thread

    t = time.perf_counter()
    with one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = HDBSCAN(min_cluster_size=10, copy=True).fit_predict(v)
    seconds = time.perf_counter() - t
    return row(f"topics: HDBSCAN (min_cluster_size 10), {len(v):,} of the vectors", seconds,
               note=f"{int(labels.max()) + 1} clusters, {float((labels < 0).mean()):.1%} of the "
               "chunks left as noise (no topic); for comparison, not a ragcov path")


def main(mode: str = "full") -> list[dict]:
    n = SIZES[mode]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = dict(os.environ, HF_HUB_OFFLINE="1", RAGCOV_CACHE_DIR=str(folder / "cache"))
        os.environ["RAGCOV_CACHE_DIR"] = env["RAGCOV_CACHE_DIR"]
        corpus, v, own = _data(folder, n)
        queries = folder / "q.jsonl"
        queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in
                                   enumerate(["net revenue growth", "impairment of goodwill",
                                              "operating lease obligations"] * 100)))
        data = folder / ".ragcov"
        _ragcov("run", "--corpus", str(corpus), "--queries", str(queries), "--retriever", "bm25",
                "--data-file", str(data), "-q", cwd=folder, env=env)
        from ragcov.corpus import load_corpus
        from ragcov.retrievers.dense import resolve_model
        from ragcov.retrievers.embedding_cache import (
            embedding_cache_key,
            embedding_cache_path,
            save_embeddings,
        )
        from ragcov.retrievers.model_identity import identify_model

        # Under the key a dense run with the default model would have written them.
        key = embedding_cache_key(load_corpus(corpus), identify_model(*resolve_model(None)).cache_key)
        save_embeddings(embedding_cache_path(key), v, key)
        dense = _ragcov("topics", "--vectors", "dense", "--data-file", str(data), "-q",
                        "--format", "json", "-o",
                        str(folder / "dense.json"), cwd=folder, env=env)
        chosen = json.loads((folder / "dense.json").read_text())["made"]["topics"]
        good, topics = _label_hits(data, own)
        step = _fit_step(v, data) if n > FIT_SAMPLE else None
        tfidf = _ragcov("topics", "--vectors", "tfidf", "--refit", "--data-file", str(data),
                        "-q", "-o", str(folder / "tfidf.txt"), cwd=folder, env=env)
        good_t, topics_t = _label_hits(data, own)
        # The same command on a 2-worker LocalCluster (start-up included), on a copy.
        remote = folder / "dask.ragcov"
        remote.write_bytes(data.read_bytes())
        on_dask = _ragcov("topics", "--vectors", "tfidf", "--refit", "--data-file", str(remote),
                          "-q", "-o", str(folder / "dask.txt"), "--engine", "dask", "--workers", "2",
                          cwd=folder, env=env)
        same = _same_topics(data, remote)
    aim = "< 60 s at 100,000 chunks"
    rows = [
        row(f"topics: `ragcov topics` dense, {n:,} chunks -> {chosen} topics (N chosen)", dense,
            aim=aim, met=(dense < 60) if n >= 100_000 else None,
            note=f"synthetic vectors and texts ({SUBJECTS} hidden subjects) in the embedding cache; "
            f"read, choose N, k-means, c-TF-IDF labels, map, store; label's first term a "
            f"subject's own word in {good}/{topics} topics"),
        row(f"topics: `ragcov topics` tfidf, {n:,} chunks -> {topics_t} topics", tfidf,
            aim=aim, met=(tfidf < 60) if n >= 100_000 else None,
            note=f"a BM25 run's topics: TF-IDF + LSA of the stored texts; label's first term a "
            f"subject's own word in {good_t}/{topics_t} topics"),
        row(f"topics: `ragcov topics` tfidf --engine dask --workers 2, {n:,} chunks", on_dask, tfidf,
            aim=">= 1.7x one process, or the reason measured", note="words counted in shards of "
            "10,000 chunks on a 2-worker LocalCluster (its start-up included); "
            f"baseline: the row above, one process; the same topics, chunk for chunk: {same}"),
    ]
    if mode == "full":
        rows.append(_hdbscan(v[:HDBSCAN_CHUNKS]))
    if step is not None:
        rows.append(row(f"topics: k-means step, {n:,} chunks, {chosen} topics", step[0], step[1],
                        note=f"fitted on a {FIT_SAMPLE:,}-chunk sample, every chunk assigned; "
                        f"baseline: fitted on every chunk; adjusted Rand index between the two "
                        f"{step[2]:.3f}", ari=step[2]))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1] if len(sys.argv) > 1 else "full"):
        print(r)
