"""Benchmark: corpus embedding throughput, built-in dense retriever vs bare sentence-transformers.

Texts: the first 256 chunks (32 with --quick) of the bundled FinQA sample
(218 report pages, the default chunker), the default model (all-MiniLM-L6-v2,
local copy). ragcov side: building a torch ``DenseRetriever`` with the cache off
(embedding in slices under its progress machinery, normalising, building the
flat index). Baseline: one bare
``SentenceTransformer.encode(texts, batch_size=64, normalize_embeddings=True)``
call on the same model object. Both are warmed up first and alternate, best of
two each, so neither profits from running second. Aim: ratio >= 0.9x.

ONNX rows: the same texts through ragcov's ONNX Runtime encoder (fp32, and int8 with
dynamically quantised weights; exported into the cache beforehand, export not timed)
against the same bare ``SentenceTransformer.encode``, in the same process under the
same intra-op thread count (torch's, pinned on both sides). Aims: fp32 >= 2x,
int8 >= 3x. Int8's recall@5 against fp32: the bundled questions (200) searched
exactly over these chunks with each backend's embeddings.

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


MODES = ("tiny", "quick", "full")  # tiny is quick: the smallest slice that loads the model


def main(mode: str = "full") -> list[dict]:
    quick = mode != "full"
    from ragcov.corpus import Corpus, load_corpus
    from ragcov.demo import sample_path
    from ragcov.retrievers.dense import DenseRetriever, load_encoder, resolve_model

    corpus = load_corpus(sample_path("finqa_pages.jsonl"), split=True)
    # A slice of the chunks: enough batches for a stable rate on a small machine.
    corpus = Corpus(list(corpus)[:32 if quick else 256], chunking=corpus.chunking)
    texts = corpus.texts
    model = load_encoder(resolve_model(None)[1], backend="torch")  # the bare baseline: torch
    model.encode(texts[:64], batch_size=64, normalize_embeddings=True)  # warm-up
    ours, bare = [], []
    emb_ours = emb_bare = None
    for _ in range(1 if quick else 2):
        t = time.perf_counter()
        # The CPU path (benchmarks/gpu.py measures a GPU), as the bare baseline runs.
        r = DenseRetriever(corpus, use_cache=False, progress=False, backend="torch", device="cpu")
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
                     f"max |difference| of embeddings {diff:.1e}"),
            *onnx_rows(model, texts, quick)]


def onnx_rows(model, texts: list[str], quick: bool) -> list[dict]:
    """ONNX fp32 and int8 against bare torch encode: same texts, process and thread count."""
    from ragcov.demo import sample_path
    from ragcov.files import iter_jsonl
    from ragcov.retrievers.dense import exact_search, resolve_model, torch_threads
    from ragcov.retrievers.onnx_encoder import OnnxEncoder, onnxruntime_available

    if not onnxruntime_available():
        return [row("corpus embedding: ONNX Runtime", None, note="onnxruntime not installed")]
    import torch

    threads = torch.get_num_threads()
    source = resolve_model(None)[1]
    encoders = {"onnx": OnnxEncoder(source), "onnx-int8": OnnxEncoder(source, int8=True)}

    def bare() -> np.ndarray:
        with torch_threads(threads):
            return model.encode(texts, batch_size=64, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)

    def ours(name: str) -> np.ndarray:
        enc = encoders[name]
        with enc.pinned_threads(threads):
            return enc.encode(texts, batch_size=64, normalize_embeddings=True)

    for enc in encoders.values():  # warm-up: first-run allocations are not throughput
        with enc.pinned_threads(threads):
            enc.encode(texts[:64], batch_size=64)
    times: dict[str, list[float]] = {"torch": [], "onnx": [], "onnx-int8": []}
    emb: dict[str, np.ndarray] = {}
    for _ in range(1 if quick else 2):  # alternate, best of each
        for name in times:
            t = time.perf_counter()
            emb[name] = bare() if name == "torch" else ours(name)
            times[name].append(time.perf_counter() - t)
    questions = [r["question"] for _, r in iter_jsonl(sample_path("finqa_questions.jsonl"))]
    questions = questions[:32 if quick else 200]
    with encoders["onnx"].pinned_threads(threads):
        q32 = encoders["onnx"].encode(questions, batch_size=64, normalize_embeddings=True)
    with encoders["onnx-int8"].pinned_threads(threads):
        q8 = encoders["onnx-int8"].encode(questions, batch_size=64, normalize_embeddings=True)
    _, top32 = exact_search(emb["onnx"], q32, 5)
    _, top8 = exact_search(emb["onnx-int8"], q8, 5)
    recall = float(np.mean([len(set(a) & set(b)) / 5 for a, b in zip(top32, top8)]))
    t_bare = min(times["torch"])
    rows = []
    for name, aim in (("onnx", 2.0), ("onnx-int8", 3.0)):
        t = min(times[name])
        ratio = t_bare / t
        diff = float(np.abs(emb[name] - emb["torch"]).max())
        extra = f"; int8 recall@5 vs fp32 {recall:.3f} ({len(questions)} questions)" \
            if name == "onnx-int8" else ""
        rows.append(row(f"corpus embedding: ONNX {'int8' if name == 'onnx-int8' else 'fp32'} vs "
                        f"bare torch encode, {len(texts):,} chunks, {threads} threads",
                        t, t_bare, ratio=ratio, aim=f">= {aim:g}x" if not quick else "",
                        met=(ratio >= aim) if not quick else None,
                        note=f"{len(texts) / t:,.1f} vs {len(texts) / t_bare:,.1f} chunks/s; "
                             f"max |difference| from torch {diff:.1e}{extra}"))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
