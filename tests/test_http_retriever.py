"""HTTPRetriever against a real HTTP server on 127.0.0.1 (http.server in a thread).

The server is a small keyword search over the city corpus; its behaviour per path
(reply shape, failures, slowness) is what each test needs. Failures such as 503,
429 and a slow reply are produced by this real server, not by patching the client.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragcov.api import measure
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.redaction import redact_url
from ragcov.retrievers import make_retriever
from ragcov.retrievers.http import HTTPRetriever
from ragcov.retrievers.http.reply import extract, parse_path
from ragcov.suite import Suite

pytest.importorskip("httpx")

SECRET = "s3cr3t-key-value"
URL_SECRET = "url-t0ken-value"  # an API key passed in the URL's query string


def keyword_search(chunks: list[dict], query: str, k: int) -> list[tuple[str, float]]:
    words = {w.strip("?.,").lower() for w in query.split()}
    scored = []
    for c in chunks:
        overlap = len(words & {w.strip("?.,'").lower() for w in c["text"].split()})
        if overlap:
            scored.append((c["id"], float(overlap)))
    scored.sort(key=lambda p: (-p[1], p[0]))
    return scored[:k]


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up early (a timeout, a deadline) is no error worth a traceback."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Server:
    """Records requests; ``plan`` holds scripted statuses to send before succeeding.

    ``raw`` maps a request path (with its query) to a canned reply: status, headers, body.
    """

    def __init__(self, chunks: list[dict]) -> None:
        self.chunks = chunks
        self.requests: list[dict] = []
        self.plan: list[tuple[int, dict[str, str]]] = []
        self.raw: dict[str, tuple[int, dict[str, str], bytes]] = {}
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
                    raw = outer.raw.get(self.path)
                if raw is not None:
                    status, headers, data = raw
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
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

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
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
    # credentials by other names (Azure Functions' code, a session id, presigned S3 URLs)
    assert redact_url("https://h/api?code=abc&sessionid=s1&sid=9&X-Amz-Credential=z&mode=code"
                      "&credential=c") == ("https://h/api?code=%2A%2A%2A&sessionid=%2A%2A%2A&"
                                           "sid=%2A%2A%2A&X-Amz-Credential=%2A%2A%2A&mode=code&"
                                           "credential=%2A%2A%2A")


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


# --------------------------------------------------------------- hardening
def one_line_error(info: pytest.ExceptionInfo) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


def assert_no_secret(message: str) -> None:
    assert SECRET not in message and URL_SECRET not in message


@contextlib.contextmanager
def raw_server(reply: Callable[[BaseHTTPRequestHandler, int, threading.Event], None],
               tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """A keep-alive HTTP/1.1 server whose replies ``reply`` writes byte by byte as it likes.

    ``reply(handler, n, stop)`` answers the n-th request (1-based); it must return once
    ``stop`` is set. Yields the base URL and the client address of every request, which
    tells whether requests shared a connection. With ``tls`` it serves https.
    """
    stop = threading.Event()
    seen: list[tuple[str, int]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # an idle keep-alive connection ends by itself

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.client_address)
            try:
                reply(self, len(seen), stop)
            except OSError:  # the client hung up: what a deadline does
                self.close_connection = True

    httpd = QuietServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def trickle(handler: BaseHTTPRequestHandler, data: bytes, stop: threading.Event) -> None:
    """One byte every 0.25 s: each read gets data well within a 1 s per-read timeout."""
    for i in range(len(data)):
        if stop.wait(0.25):
            return
        handler.wfile.write(data[i:i + 1])


SMALL_REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"
PADDED_BODY = b"[" + b" " * 38 + b"]"  # 40 bytes: 10 s at the trickle's pace


def trickle_head(handler, n, stop) -> None:
    trickle(handler, SMALL_REPLY, stop)


def trickle_body(handler, n, stop) -> None:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(PADDED_BODY))
    trickle(handler, PADDED_BODY, stop)


def trickle_second(handler, n, stop) -> None:
    """The first and third replies at once, the second trickled on the kept-alive connection."""
    if n == 2:
        trickle_body(handler, n, stop)
    else:
        handler.wfile.write(SMALL_REPLY)


@pytest.mark.parametrize("reply", [trickle_head, trickle_body], ids=["headers", "body"])
def test_timeout_is_a_deadline_for_the_whole_request(reply, monkeypatch):
    """Each byte comes well inside a per-read timeout and the whole reply in 10 to 20 s:
    without a deadline on the whole request it would arrive and the retrieval succeed. The
    error is the deadline's; no elapsed time is bounded (a loaded machine stretches it)."""
    monkeypatch.setenv("MY_RAG_KEY", SECRET)
    with raw_server(reply) as (base, seen):
        r = HTTPRetriever(f"{base}/search?api_key={URL_SECRET}"
                          "#timeout=1&retries=0&api_key_env=MY_RAG_KEY")
        try:
            with pytest.raises(RagcovError, match="deadline") as info:
                r.retrieve(["Berlin"], 1)
        finally:
            r.close()
    message = one_line_error(info)
    assert message.startswith(f"{base}/search?api_key=%2A%2A%2A: timed out after 1 s")
    assert_no_secret(message)
    assert r.requests_sent == 1 and len(seen) == 1


def test_deadline_holds_on_a_kept_alive_connection_and_the_client_recovers():
    with raw_server(trickle_second) as (base, seen):
        r = HTTPRetriever(f"{base}/search#timeout=1&retries=0")
        try:
            assert r.retrieve(["first"], 1) == [[]]
            with pytest.raises(RagcovError, match="deadline"):
                r.retrieve(["second"], 1)
            assert r.retrieve(["third"], 1) == [[]]  # a fresh connection after the abort
        finally:
            r.close()
    assert seen[0] == seen[1], "the second request did not reuse the first one's connection"
    assert seen[2] != seen[1]


def test_deadline_holds_over_tls_on_a_kept_alive_connection(tmp_path, monkeypatch):
    """The TLS socket is shut down at the deadline too (not only a plain one)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # httpx trusts the test certificate
    with raw_server(trickle_second, tls=context) as (base, seen):
        assert base.startswith("https://")
        r = HTTPRetriever(f"{base}/search#timeout=1&retries=0")
        try:
            assert r.retrieve(["first"], 1) == [[]]
            with pytest.raises(RagcovError, match="deadline"):
                r.retrieve(["second"], 1)
            assert r.retrieve(["third"], 1) == [[]]
        finally:
            r.close()
    assert seen[0] == seen[1] != seen[2]


def test_deadline_covers_a_tls_handshake_that_trickles():
    """A server that starts a TLS record and then sends one byte at a time."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):
            conn.sendall(b"\x16\x03\x03\x40\x00")  # a 16 KiB handshake record follows...
            for _ in range(40):  # ...at 4 bytes a second, for 10 s at most
                if stop.wait(0.25):
                    break
                conn.sendall(b"\x00")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    r = HTTPRetriever(f"https://127.0.0.1:{listener.getsockname()[1]}/search#timeout=1&retries=0")
    try:
        with pytest.raises(RagcovError, match="deadline") as info:
            r.retrieve(["x"], 1)
    finally:
        r.close()
        stop.set()
        thread.join(5)
        listener.close()
    one_line_error(info)


def test_deeply_nested_reply_is_a_one_line_error(server):
    server.raw["/deep"] = (200, {"Content-Type": "application/json"},
                           b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(RagcovError) as info:
        HTTPRetriever(server.base + "/deep").retrieve(["x"], 1)
    message = one_line_error(info)
    assert message.startswith(f"{server.base}/deep: ") and "nested too deeply" in message


@pytest.mark.parametrize("fragment, words", [
    ("retries=nan", "retries"), ("retries=inf", "retries"), ("retries=-inf", "retries"),
    ("retries=1.5", "retries"), ("retries=true", "retries"),
    ("timeout=nan", "timeout"), ("timeout=inf", "timeout"), ("timeout=-inf", "timeout"),
    ("backoff=nan", "backoff"), ("backoff=inf", "backoff"),
])
def test_non_finite_and_fractional_options_are_refused(fragment, words):
    with pytest.raises(RagcovError, match=f"option {words}: must be") as info:
        HTTPRetriever(f"http://127.0.0.1:9/x#{fragment}")
    one_line_error(info)


def test_non_finite_keyword_options_are_refused():
    with pytest.raises(RagcovError, match="retries: must be a whole number"):
        HTTPRetriever("http://127.0.0.1:9/x", retries=float("inf"))
    with pytest.raises(RagcovError, match="retries: must be a whole number"):
        HTTPRetriever("http://127.0.0.1:9/x", retries=True)
    with pytest.raises(RagcovError, match="timeout: must be"):
        HTTPRetriever("http://127.0.0.1:9/x", timeout=float("nan"))
    assert HTTPRetriever("http://127.0.0.1:9/x#retries=2&timeout=0.5").retries == 2


@pytest.mark.parametrize("status, location, body", [
    (302, "/search?index=v2", b"<html>moved</html>"),
    (307, "{base}/search", b'{"results": [{"id": "paris", "score": 1}]}'),
    (301, "https://elsewhere.example/v2/search", b""),
])
def test_redirects_are_refused_not_followed(server, status, location, body):
    location = location.format(base=server.base)
    server.raw["/moved"] = (status, {"Location": location}, body)
    r = HTTPRetriever(server.base + "/moved", retries=3, backoff=0.01)
    with pytest.raises(RagcovError) as info:
        r.retrieve(["Paris"], 1)
    final = location if location.startswith("http") else server.base + location
    assert one_line_error(info) == (
        f"{server.base}/moved: answered {status} redirect to {final} (redirects are not "
        "followed so keys stay on their host; use the final URL)")
    assert r.requests_sent == 1 and [q["path"] for q in server.requests] == ["/moved"]


def test_only_2xx_is_success(server):
    server.raw["/not-modified"] = (304, {}, b"")
    with pytest.raises(RagcovError, match="answered 304 redirect without a Location"):
        HTTPRetriever(server.base + "/not-modified").retrieve(["Paris"], 1)
    server.raw["/accepted"] = (202, {}, b'{"ids": ["paris"]}')
    assert HTTPRetriever(server.base + "/accepted").retrieve(["Paris"], 1) == [[("paris", None)]]


@pytest.mark.parametrize("score", [b"Infinity", b"-Infinity", b"NaN", b"1e999"])
def test_reply_scores_must_be_finite(server, score):
    server.raw["/scores"] = (200, {}, b'{"results": [{"id": "paris", "score": %s}]}' % score)
    with pytest.raises(RagcovError, match=r"/scores: result 1 has an unusable score: .*finite"):
        HTTPRetriever(server.base + "/scores").retrieve(["Paris"], 1)


@pytest.mark.parametrize("cid", [b'["paris"]', b'{"id": "paris"}', b"true", b'""', b'"  "',
                                 b"1.5"])
def test_reply_ids_must_be_strings_or_whole_numbers(server, cid):
    server.raw["/ids-bad"] = (200, {}, b'{"ids": ["berlin", %s]}' % cid)
    with pytest.raises(RagcovError, match=r"/ids-bad: result 2 has no usable id: "):
        HTTPRetriever(server.base + "/ids-bad").retrieve(["Paris"], 2)


def test_reply_item_keys_follow_the_shared_vocabulary(server):
    server.raw["/keys"] = (200, {}, json.dumps({"hits": [
        {"_id": "paris", "_score": 2}, {"chunk_id": "berlin", "similarity": 1.5},
        {"doc_id": 7, "relevance_score": 1}, {"id": "tokyo"}]}).encode())
    assert HTTPRetriever(server.base + "/keys").retrieve(["x"], 5) == [
        [("paris", 2.0), ("berlin", 1.5), ("7", 1.0), ("tokyo", None)]]


def test_secrets_stay_out_of_the_new_error_messages(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", SECRET)
    query = f"?api_key={URL_SECRET}"
    server.raw["/moved" + query] = (302, {"Location": f"https://elsewhere.example/{SECRET}/cb"
                                                      f"?token={URL_SECRET}&k={SECRET}"}, b"")
    server.raw["/refused" + query] = (400, {}, f"bad keys {SECRET} {URL_SECRET}".encode())
    server.raw["/bad-id" + query] = (200, {}, json.dumps(
        {"ids": [[SECRET], {"k": URL_SECRET}]}).encode())
    server.raw["/deep" + query] = (200, {}, b"[" * 100_000 + b"]" * 100_000)
    expected = {"/moved": "answered 302 redirect to https://elsewhere.example/***/cb?",
                "/refused": "HTTP 400: bad keys *** ***",
                "/bad-id": "result 1 has no usable id: ['***']",
                "/deep": "nested too deeply"}
    for path, words in expected.items():
        r = HTTPRetriever(server.base + path + query, api_key_env="MY_RAG_KEY", retries=0)
        with pytest.raises(RagcovError) as info:
            r.retrieve(["x"], 1)
        message = one_line_error(info)
        assert_no_secret(message)
        assert words in message, message
        assert message.startswith(f"{server.base}{path}?api_key=%2A%2A%2A: ")
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
