"""Small inputs several research tests build on: a three-topic pool, a skewed hit matrix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ragcov.matrix import CoverageMatrix

TOPICS = {
    "capital": ["Paris is the capital of France.", "Berlin is the capital of Germany.",
                "Tokyo is the capital of Japan.", "Rome is the capital of Italy."],
    "biology": ["Plants make sugar by photosynthesis.", "Mitochondria power the cell.",
                "DNA carries genetic information.", "Enzymes speed up reactions."],
    "finance": ["Interest expense rose with new debt.", "The board declared a dividend.",
                "Revenue grew ten percent in 2009.", "Operating margin fell last year."],
}
QUERIES = [
    "capital of France", "capital of Germany", "capital of Japan", "capital of Italy",
    "capital city", "photosynthesis sugar", "mitochondria cell", "genetic DNA", "enzymes",
    "interest expense debt", "dividend board", "revenue growth 2009", "operating margin",
    "which capital", "cell energy", "debt and interest", "sugar plants", "margin and revenue",
]


def write_pool(folder: Path) -> Path:
    """TOPICS as a BEIR corpus.jsonl (one document per topic) and QUERIES as queries.jsonl."""
    folder.mkdir()
    rows = [{"_id": f"{t}{i}", "doc_id": t, "text": s}
            for t, texts in TOPICS.items() for i, s in enumerate(texts)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{n}", "text": t}) + "\n" for n, t in enumerate(QUERIES)),
        "utf-8")
    return folder


def random_matrix(n: int = 40, n_chunks: int = 60, k: int = 4, seed: int = 3) -> CoverageMatrix:
    rng = np.random.default_rng(seed)
    # Skewed popularity so suites differ in redundancy.
    sets = []
    for _ in range(n):
        p = np.arange(n_chunks, 0, -1, dtype=float) ** 2
        sets.append(rng.choice(n_chunks, size=k, replace=False, p=p / p.sum()).tolist())
    return CoverageMatrix.from_sets(sets, n_chunks)
