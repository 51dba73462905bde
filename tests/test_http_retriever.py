"""HTTPRetriever against a real HTTP server on 127.0.0.1 (http.server in a thread).

The server is a small keyword search over the city corpus; its behaviour per path
(reply shape, failures, slowness) is what each test needs. Failures such as 503,
429 and a slow reply are produced by this real server, not by patching the client.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragcov.api import measure
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.retrievers import make_retriever
from ragcov.retrievers.http import HTTPRetriever, extract, parse_path, redact_url
from ragcov.suite import Suite

pytest.importorskip("httpx")

SECRET = "s3cr3t-key-value"


def keyword_search(chunks: list[dict], query: str, k: int) -> list[tuple[str, float]]:
    words = {w.strip("?.,").lower() for w in query.split()}
    scored = []
    for c in chunks:
        overlap = len(words & {w.strip("?.,'").lower() for w in c["text"].split()})
        if overlap:
            scored.append((c["id"], float(overlap)))
    scored.sort(key=lambda p: (-p[1], p[0]))
    return scored[:k]


class Server:
    """Records requests; ``plan`` holds scripted statuses to send before succeeding."""

    def __init__(self, chunks: list[dict]) -> None:
        self.chunks = chunks
        self.requests: list[dict] = []
        self.plan: list[tuple[int, dict[str, str]]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body,
                                           "headers": dict(self.headers)})
                    step = outer.plan.pop(0) if outer.plan else None
                if step is not None:
                    status, headers = step
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(b'{"error": "try later"}')
                    return
                if self.path.startswith("/slow"):
                    time.sleep(1.0)
                if self.path.startswith("/auth") and \
                        self.headers.get("Authorization") != f"Bearer {SECRET}":
                    return self._send(401, {"error": "bad key"})
                if self.path.startswith("/echo-auth"):
                    return self._send(400, {"error": f"bad {self.headers.get('X-Key')}"})
                if self.path.startswith("/text"):
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(b"<html>not json</html>")
                    return
                hits = keyword_search(outer.chunks, body.get("query") or body.get("q", ""),
                                      int(body.get("k") or body.get("top_k")))
                if self.path.startswith("/nested"):
                    reply = {"data": {"hits": [{"document": {"id": c}, "rel": s}
                                               for c, s in hits]}}
                elif self.path.startswith("/ids"):
                    reply = {"ids": [c for c, _ in hits], "scores": [s for _, s in hits]}
                elif self.path.startswith("/bare"):
                    reply = [c for c, _ in hits]
                elif self.path.startswith("/too-many"):
                    reply = {"results": [{"id": c["id"]} for c in outer.chunks]}
                else:
                    reply = {"results": [{"id": c, "score": s} for c, s in hits]}
                self._send(200, reply)

            def _send(self, status: int, obj: object) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server(city_corpus) -> Iterator[Server]:
    chunks = [{"id": c.id, "text": c.text} for c in city_corpus]
    srv = Server(chunks)
    thread = threading.Thread(target=srv.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


QUERIES = ["What is the capital of France?", "plants and sunlight", "quarterly dividends"]


def test_default_reply_shape_posts_query_and_k(server):
    r = HTTPRetriever(server.base + "/search")
    results = r.retrieve(QUERIES, 2)
    assert [[cid for cid, _ in ranked] for ranked in results] == [
        [cid for cid, _ in keyword_search(server.chunks, q, 2)] for q in QUERIES]
    # "what is the capital of france" shares is/the/capital/of/france with the Paris chunk
    assert results[0][0] == ("paris", 5.0)
    assert server.requests[0]["body"] == {"query": QUERIES[0], "k": 2}


@pytest.mark.parametrize("path, options", [
    ("/ids", {}),                                                   # {"ids", "scores"}
    ("/bare", {}),                                                  # a plain list
    ("/nested", {"ids": "data.hits[].document.id", "scores": "data.hits[].rel"}),
])
def test_reply_mappings_give_the_same_ids(server, path, options):
    expected = [[cid for cid, _ in keyword_search(server.chunks, q, 3)] for q in QUERIES]
    got = HTTPRetriever(server.base + path, **options).retrieve(QUERIES, 3)
    assert [[cid for cid, _ in ranked] for ranked in got] == expected


def test_options_in_the_url_fragment_and_custom_fields(server, city_corpus):
    url = (server.base + "/nested#ids=data.hits[].document.id&scores=data.hits[].rel"
           "&query_field=q&k_field=top_k&timeout=5")
    r = make_retriever(url, city_corpus)
    assert isinstance(r, HTTPRetriever)
    ranked = r.retrieve(["Tokyo Japan"], 1)[0]
    assert ranked == [("tokyo", 2.0)]
    assert server.requests[-1]["body"] == {"q": "Tokyo Japan", "top_k": 1}
    assert "#" not in server.requests[-1]["path"]  # the fragment never leaves the client
    with pytest.raises(RagcovError, match="unknown HTTP retriever option"):
        HTTPRetriever(server.base + "/x#colour=blue")


def test_lists_longer_than_k_are_cut(server):
    assert len(HTTPRetriever(server.base + "/too-many").retrieve(["x"], 3)[0]) == 3


def test_retries_503_and_429_with_backoff_then_succeeds(server):
    server.plan = [(503, {}), (429, {"Retry-After": "0"})]
    r = HTTPRetriever(server.base + "/search", retries=2, backoff=0.01)
    assert r.retrieve(["Berlin"], 1) == [[("berlin", 1.0)]]
    assert r.requests_sent == 3


def test_gives_up_after_retries_and_says_why(server):
    server.plan = [(503, {})] * 3
    r = HTTPRetriever(server.base + "/search", retries=2, backoff=0.01)
    with pytest.raises(RagcovError, match=r"HTTP 503.*gave up after 3 attempts"):
        r.retrieve(["Berlin"], 1)


def test_client_errors_are_not_retried(server):
    server.plan = [(400, {})]
    r = HTTPRetriever(server.base + "/search", retries=3, backoff=0.01)
    with pytest.raises(RagcovError, match="HTTP 400"):
        r.retrieve(["Berlin"], 1)
    assert r.requests_sent == 1


def test_timeout_is_retried_then_reported(server):
    r = HTTPRetriever(server.base + "/slow", timeout=0.2, retries=1, backoff=0.01)
    with pytest.raises(RagcovError, match=r"timed out after 0.2 s \(gave up after 2 attempts\)"):
        r.retrieve(["Berlin"], 1)
    assert r.requests_sent == 2


def test_connection_refused_is_reported(server):
    port = server.httpd.server_address[1]
    server.httpd.shutdown()
    server.httpd.server_close()
    r = HTTPRetriever(f"http://127.0.0.1:{port}/search", retries=1, backoff=0.01)
    with pytest.raises(RagcovError, match="connection failed"):
        r.retrieve(["Berlin"], 1)


def test_bad_replies_are_clear_errors(server):
    with pytest.raises(RagcovError, match="not JSON"):
        HTTPRetriever(server.base + "/text").retrieve(["x"], 1)
    with pytest.raises(RagcovError, match="no key 'nope'"):
        HTTPRetriever(server.base + "/search", ids="nope[].id").retrieve(["Paris"], 1)
    with pytest.raises(RagcovError, match="scores do not line up"):
        HTTPRetriever(server.base + "/ids", ids="ids", scores="ids[0]").retrieve(["Paris"], 1)


def test_api_key_from_env_is_sent_and_never_leaks(server, city_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", SECRET)
    r = HTTPRetriever(server.base + "/auth", api_key_env="MY_RAG_KEY")
    suite = Suite.from_texts(["Madrid Spain"])
    data = tmp_path / "cov.ragcov"
    measure(city_corpus, suite, r, k=1, data_file=data, progress=False)
    assert CoverageData(data).matrix().query_ids == [suite[0].id]
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(r) and SECRET not in json.dumps(r.fingerprint())
    assert SECRET.encode() not in data.read_bytes()
    # Without the key the server refuses, and the message says so without any key.
    monkeypatch.delenv("MY_RAG_KEY")
    with pytest.raises(RagcovError, match="HTTP 401"):
        HTTPRetriever(server.base + "/auth", api_key_env="MY_RAG_KEY").retrieve(["x"], 1)
    # A server that echoes the key back in an error does not get it into our message.
    monkeypatch.setenv("MY_RAG_KEY", SECRET)
    echo = HTTPRetriever(server.base + "/echo-auth", api_key_env="MY_RAG_KEY",
                         api_key_header="X-Key", api_key_prefix="")
    with pytest.raises(RagcovError) as info:
        echo.retrieve(["x"], 1)
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_redact_url_hides_credentials():
    assert redact_url("https://user:pw@host:8443/s?api_key=abc&index=v2") == \
        "https://host:8443/s?api_key=%2A%2A%2A&index=v2"


def test_paths():
    reply = {"a": {"b": [{"c": 1}, {"c": 2}]}, "l": [[1, 2], [3]]}
    assert parse_path("a.b[].c") == ["a", "b", None, "c"]
    assert extract(reply, "a.b[].c") == [1, 2]
    assert extract(reply, "a.b[1].c") == 2
    assert extract(reply, "l[0]") == [1, 2]
    assert extract([{"id": "x"}], "[].id") == ["x"]
    with pytest.raises(RagcovError, match="no element"):
        extract(reply, "a.b[5]")
    with pytest.raises(RagcovError, match="expected a list"):
        extract(reply, "a[].c")
    with pytest.raises(RagcovError, match="empty reply path"):
        parse_path("")


def test_bad_options_are_rejected():
    with pytest.raises(RagcovError, match="not an http"):
        HTTPRetriever("ftp://example/x")
    with pytest.raises(RagcovError, match="timeout"):
        HTTPRetriever("http://127.0.0.1:9/x", timeout=0)
    with pytest.raises(RagcovError, match="retries"):
        HTTPRetriever("http://127.0.0.1:9/x#retries=-1")
