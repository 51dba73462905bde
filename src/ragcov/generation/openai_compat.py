"""Questions from any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's server).

What is worth retrying (timeouts, 429, 5xx, a reply that cannot be read) is
retried with exponential backoff by :mod:`ragcov.retry`, and the generator gives
up with a clear error; the API key is read from the environment at start-up and
kept only in the client.

``timeout`` is each request's deadline, as for the HTTP retriever: the client's own
timeouts bound each read, so a server that sends a byte at a time would hold a
request forever; the retriever's :class:`~ragcov.retrievers.http.deadline.Watchdog`
shuts the request's connection down when its seconds are up.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragcov.errors import RagcovError
from ragcov.generation.base import (
    COMPLETION_STOP,
    Generation,
    GenerationError,
    check_mode,
    short,
)
from ragcov.generation.templates import PromptTemplate, load_template
from ragcov.retrievers.http.deadline import Watchdog
from ragcov.retry import Backoff, GaveUp, Retryable, parse_retry_after, retrying


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
        check_mode(mode)
        if isinstance(timeout, bool) or not (isinstance(timeout, (int, float))
                                             and math.isfinite(timeout) and timeout > 0):
            raise RagcovError(f"the openai generator's timeout must be a finite number of "
                              f"seconds above 0, got {timeout!r}")
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
        self.timeout = float(timeout)
        self._openai = openai
        self._watchdog = Watchdog()
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout,
                                     max_retries=0,
                                     http_client=_watched_client(openai, self._watchdog, timeout))

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

    def _attempt(self, prompt: str, seed: int) -> tuple[str, Any]:
        """One request; a failure that may pass raises :class:`~ragcov.retry.Retryable`."""
        oa = self._openai
        try:
            with self._watchdog.attempt(self.timeout) as expired:
                try:
                    return self._request(prompt, seed)
                except (oa.APIConnectionError, oa.APIResponseValidationError, ValueError,
                        TypeError, AttributeError, IndexError, KeyError) as exc:
                    if expired.is_set():  # the deadline shut the connection down
                        raise Retryable(f"request timed out after {self.timeout:g} s (the "
                                        "deadline for the whole request)") from exc
                    raise
        except oa.RateLimitError as exc:
            raise Retryable("rate limited (429)", _retry_after(exc)) from exc
        except oa.APITimeoutError as exc:
            raise Retryable("request timed out") from exc
        except oa.APIConnectionError as exc:
            raise Retryable(f"connection failed ({exc.__class__.__name__})") from exc
        except oa.APIStatusError as exc:
            if exc.status_code < 500:
                raise GenerationError(
                    f"the endpoint refused the request (HTTP {exc.status_code}): "
                    f"{short(exc.message)}") from exc
            raise Retryable(f"server error (HTTP {exc.status_code})") from exc
        except (oa.APIResponseValidationError, ValueError, TypeError, AttributeError,
                IndexError, KeyError) as exc:
            raise Retryable(f"malformed reply ({exc.__class__.__name__})") from exc

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation:
        assert self.template is not None
        prompt = self.template.render(list(passages))

        def request(n: int) -> Generation:
            text, usage = self._attempt(prompt, seed)
            return Generation(text, _usage(usage, "prompt_tokens"),
                              _usage(usage, "completion_tokens"), calls=n + 1)

        # A server's Retry-After may lengthen the wait, never beyond max_backoff.
        policy = Backoff(self.retries, self.backoff, max_backoff=self.max_backoff,
                         max_retry_after=self.max_backoff, retry_after_shortens=False)
        try:
            return retrying(request, policy, self.sleep)
        except GaveUp as exc:
            raise GenerationError(f"{self.base_url or 'OpenAI'}: gave up after "
                                  f"{exc.attempts} requests: {exc.last.reason}") from None


def _watched_client(openai: Any, watchdog: Watchdog, timeout: float) -> Any:
    """The SDK's own HTTP client (its defaults kept), with every request traced by the
    watchdog so the sockets it opens can be shut at the deadline."""

    class WatchedClient(openai.DefaultHttpxClient):  # type: ignore[misc,name-defined]
        def send(self, request: Any, **kwargs: Any) -> Any:
            request.extensions = {**request.extensions, "trace": watchdog.trace}
            return super().send(request, **kwargs)

    return WatchedClient(timeout=timeout)


def _usage(usage: Any, field: str) -> int:
    value = getattr(usage, field, None) if usage is not None else None
    return int(value) if isinstance(value, (int, float)) else 0


def _retry_after(exc: Any) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return parse_retry_after(headers.get("retry-after") if headers is not None else None)
