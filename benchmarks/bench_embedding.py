"""Benchmark: corpus embedding throughput, built-in dense retriever vs bare sentence-transformers.

Texts: the first 256 chunks (32 with --quick) of the bundled FinQA sample
(218 report pages, the default chunker), the default model (all-MiniLM-L6-v2,
local copy). ragcov side: building a ``DenseRetriever`` with the cache off
(embedding in slices under its progress machinery, normalising, building the
flat index). Baseline: one bare
``SentenceTransformer.encode(texts, batch_size=64, normalize_embeddings=True)``
call on the same model object. Both are warmed up first and alternate, best of
two each, so neither profits from running second. Aim (issue 7): ratio >= 0.9x.

Run alone: ``.venv/bin/python benchmarks/bench_embedding.py [--quick|--tiny]``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


MODES = ("quick", "full")


def main(mode: str = "full") -> list[dict]:
    quick = mode != "full"
    from ragcov.corpus import Corpus, load_corpus
    from ragcov.demo import sample_path
    from ragcov.retrievers.dense import DenseRetriever, load_encoder, resolve_model

    corpus = load_corpus(sample_path("finqa_pages.jsonl"), split=True)
    # A slice of the chunks: enough batches for a stable rate on a small machine.
    corpus = Corpus(list(corpus)[:32 if quick else 256], chunking=corpus.chunking)
    texts = corpus.texts
    model = load_encoder(resolve_model(None)[1])
    model.encode(texts[:64], batch_size=64, normalize_embeddings=True)  # warm-up
    ours, bare = [], []
    emb_ours = emb_bare = None
    for _ in range(1 if quick else 2):
        t = time.perf_counter()
        r = DenseRetriever(corpus, use_cache=False, progress=False)
        ours.append(time.perf_counter() - t)
        emb_ours = r.embeddings
        t = time.perf_counter()
        emb_bare = model.encode(texts, batch_size=64, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        bare.append(time.perf_counter() - t)
    diff = float(np.abs(emb_ours - emb_bare).max())
    t_ours, t_bare = min(ours), min(bare)
    ratio = t_bare / t_ours  # throughput of ours relative to bare
    return [row(f"corpus embedding: DenseRetriever vs bare encode, {len(texts):,} FinQA chunks",
                t_ours, t_bare, ratio=ratio, aim=">= 0.9x" if not quick else "",
                met=(ratio >= 0.9) if not quick else None,
                note=f"{len(texts) / t_ours:,.1f} vs {len(texts) / t_bare:,.1f} chunks/s; "
                     f"max |difference| of embeddings {diff:.1e}")]


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
