"""The OpenAI-compatible generator against a FAKE server that injects faults.

The server below is a deliberate fake, used only for failures a real local LLM
server cannot be made to produce on demand: HTTP 429 with Retry-After, 5xx,
replies slower than the client's timeout, and malformed bodies. Generation
against the real llama.cpp server is tested in test_generation_llm.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.generation import GenerationError, LoopConfig, OpenAIGenerator, run_generation
from ragcov.generation.journal import read_records
from ragcov.retrievers.bm25 import BM25Retriever

GOOD = {"id": "x", "object": "text_completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "text": " Which city is the capital of France?",
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}


class FaultScript:
    """What the FAKE server answers, one entry per request; GOOD once the script runs out."""

    def __init__(self, steps: list[str]) -> None:
        self.steps = list(steps)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()

    def next(self) -> str:
        with self.lock:
            return self.steps.pop(0) if self.steps else "ok"


def _handler(script: FaultScript) -> type[BaseHTTPRequestHandler]:
    class FakeLLMServer(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            payload = json.loads(self.rfile.read(length) or b"{}")
            script.requests.append(payload)
            script.headers.append({k.lower(): v for k, v in self.headers.items()})
            step = script.next()
            if step == "429":
                self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0.05"})
            elif step == "500":
                self._send(500, b'{"error": {"message": "boom"}}')
            elif step == "503":
                self._send(503, b'{"error": {"message": "overloaded"}}')
            elif step == "400":
                self._send(400, b'{"error": {"message": "unknown model"}}')
            elif step == "slow":
                time.sleep(1.5)
                self._send(200, json.dumps(GOOD).encode())
            elif step == "garbage":
                self._send(200, b"<html>this is not json")
            elif step == "nochoices":
                self._send(200, json.dumps({"id": "x", "object": "text_completion"}).encode())
            else:
                body = dict(GOOD)
                if script.requests[-1].get("messages"):
                    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                "role": "assistant",
                                "content": "1. Which city is the capital of Japan?"}}],
                            "usage": GOOD["usage"]}
                self._send(200, json.dumps(body).encode())

    return FakeLLMServer


@pytest.fixture
def fake_server() -> Iterator[tuple[str, FaultScript]]:
    script = FaultScript([])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()


def _gen(url: str, sleeps: list[float], **kw: object) -> OpenAIGenerator:
    opts = {"mode": "completion", "timeout": 0.5, "retries": 4, "backoff": 0.01,
            "sleep": sleeps.append, **kw}
    return OpenAIGenerator("m", base_url=url, api_key_env="RAGCOV_TEST_NO_SUCH_KEY", **opts)


@pytest.mark.parametrize("fault", ["429", "500", "503", "slow", "garbage", "nochoices"])
def test_transient_fault_is_retried(fake_server: tuple[str, FaultScript], fault: str) -> None:
    url, script = fake_server
    script.steps = [fault, fault]
    sleeps: list[float] = []
    g = _gen(url, sleeps).generate(["Paris is the capital of France."], attempt=1, seed=1)
    assert g.raw == " Which city is the capital of France?"
    assert g.calls == 3 and len(script.requests) == 3
    assert (g.prompt_tokens, g.completion_tokens) == (40, 9)
    expected = [0.01, 0.02]                       # exponential backoff
    if fault == "429":
        expected = [0.05, 0.05]                   # the server's Retry-After wins when longer
    assert sleeps == pytest.approx(expected)


def test_backoff_is_capped(fake_server: tuple[str, FaultScript]) -> None:
    url, script = fake_server
    script.steps = ["500"] * 5
    sleeps: list[float] = []
    _gen(url, sleeps, retries=6, backoff=1.0, max_backoff=4.0).generate(["x y z"], 1, 1)
    assert sleeps == [1.0, 2.0, 4.0, 4.0, 4.0]


def test_gives_up_with_a_clear_error(fake_server: tuple[str, FaultScript]) -> None:
    url, script = fake_server
    script.steps = ["503"] * 10
    sleeps: list[float] = []
    with pytest.raises(GenerationError, match=r"gave up after 3 requests: server error \(HTTP 503"):
        _gen(url, sleeps, retries=2).generate(["x"], 1, 1)
    assert len(script.requests) == 3


def test_client_errors_are_not_retried(fake_server: tuple[str, FaultScript]) -> None:
    url, script = fake_server
    script.steps = ["400"]
    with pytest.raises(GenerationError, match="HTTP 400"):
        _gen(url, []).generate(["x"], 1, 1)
    assert len(script.requests) == 1


def test_completion_request_carries_prompt_and_stop(fake_server: tuple[str, FaultScript]) -> None:
    url, script = fake_server
    _gen(url, [], max_tokens=16).generate(["Tokyo is the capital of Japan."], 1, 7)
    req = script.requests[0]
    assert req["prompt"].endswith("Passage: Tokyo is the capital of Japan.\nQuestion:")
    assert req["max_tokens"] == 16 and req["seed"] == 7 and "\n\n" in req["stop"]


def test_missing_key_for_remote_endpoint_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGCOV_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(RagcovError, match="RAGCOV_TEST_NO_SUCH_KEY"):
        OpenAIGenerator("m", api_key_env="RAGCOV_TEST_NO_SUCH_KEY")


def test_api_key_is_sent_but_never_written(fake_server: tuple[str, FaultScript],
                                           city_corpus: Corpus, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    url, script = fake_server
    secret = "sk-test-7f3a9c2e-do-not-write"
    monkeypatch.setenv("RAGCOV_TEST_KEY", secret)
    script.steps = ["429"]
    gen = OpenAIGenerator("m", base_url=url, api_key_env="RAGCOV_TEST_KEY", mode="chat",
                          timeout=2, backoff=0.01)
    out = tmp_path / "g.jsonl"
    s = run_generation(city_corpus, BM25Retriever(city_corpus, progress=False), gen, 1, out,
                       tmp_path / "d.ragcov", LoopConfig(budget=1))
    assert script.headers[0]["authorization"] == f"Bearer {secret}"
    assert s.accepted == 1 and s.calls == 2
    assert read_records(out)[0]["text"] == "Which city is the capital of Japan?"
    assert read_records(out)[0]["tokens"] == {"prompt": 40, "completion": 9, "total": 49}
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
