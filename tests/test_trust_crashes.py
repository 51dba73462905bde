"""Crashes, hangs and escapes found by trying to break ragcov: each is now one line or a warning.

The command line runs in a child ``python -m ragcov`` where what reaches the terminal
(warnings, the error line, the exit status) is what is tested; pytest's own warning
capture would hide those lines in process.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.retrievers.bm25 import BM25Retriever
from ragcov.retrievers.http_secrets import Scrubber
from ragcov.user_warnings import RetrievalWarning

SRC = str(Path(__file__).resolve().parents[1] / "src")


def ragcov(*args: str, cwd: Path, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m ragcov ARGS`` in a child, this checkout's source first on the path.

    ``env`` adds to the environment; no RAGCOV_HTTP_API_KEY is inherited.
    """
    environ = {k: v for k, v in os.environ.items() if k != "RAGCOV_HTTP_API_KEY"}
    environ.update({"PYTHONPATH": SRC, "COLUMNS": "120", **(env or {})})
    return subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def assert_one_line_error(proc: subprocess.CompletedProcess[str], words: str) -> None:
    """Exit 1 and one error line (besides any warning lines), holding ``words``."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines()
             if not line.startswith("ragcov: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), proc.stderr
    assert words in lines[0], lines[0]


# ------------------------------------------------ BM25: nothing to match on
WORDLESS = ["Is it?", "the", "!!!"]


def test_bm25_queries_with_no_word_to_match_are_recorded_with_a_warning(tmp_path,
                                                                          city_corpus_file):
    queries = [{"id": f"w{i}", "question": q} for i, q in enumerate(WORDLESS)]
    queries.append({"id": "fr", "question": "What is the capital of France?"})
    write_jsonl(tmp_path / "queries.jsonl", queries)
    proc = ragcov("run", "--corpus", str(city_corpus_file), "--queries", "queries.jsonl",
                  "--retriever", "bm25", "--k", "2", "--data-file", "cov.ragcov", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "no word to match" in line]
    assert len(warning) == 1 and warning[0].startswith("ragcov: warning: bm25: 3 queries")
    assert all(repr(q) in warning[0] for q in WORDLESS), warning
    matrix = CoverageData(tmp_path / "cov.ragcov").matrix()
    assert sorted(matrix.query_ids) == ["fr", "w0", "w1", "w2"]
    hits = {q: {matrix.chunk_ids[j] for j in matrix.retrieved(row)}
            for q, row in matrix.row_of().items()}
    assert hits["w0"] == hits["w1"] == hits["w2"] == set() and "paris" in hits["fr"]


def test_bm25_wordless_query_in_process_retrieves_nothing_and_warns():
    corpus = Corpus([Chunk(id="a", text="alpha beta", doc_id="d"),
                     Chunk(id="b", text="gamma", doc_id="d")])
    with pytest.warns(RetrievalWarning, match=r"1 query has no word to match .*'!!!'"):
        ranked = BM25Retriever(corpus).retrieve(["alpha", "!!!"], 2)
    assert ranked == [[("a", pytest.approx(ranked[0][0][1]))], []]


def test_bm25_corpus_with_no_word_to_index_is_a_one_line_error(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "doc_id": "d", "text": "the"},
                                             {"id": "b", "doc_id": "d", "text": "!!!"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"id": "q", "question": "anything"}])
    proc = ragcov("run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                  "--retriever", "bm25", "--data-file", "cov.ragcov", cwd=tmp_path)
    assert_one_line_error(proc, "the bm25 retriever found no word to index in the corpus (2 chunks)")
    assert not (tmp_path / "cov.ragcov").exists()
    with pytest.raises(RagcovError, match="no word to index"):
        BM25Retriever(Corpus([Chunk(id="a", text="", doc_id="d")]))


# ------------------------------------------------ HTTP: secrets echoed back
KEY = "k3y-from-the-environment"
USER, PASSWORD = "rag user", "pa:ss/w0rd"  # percent-encoded in the URL
BASIC_USER = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
BASIC_KEY = base64.b64encode(f"{KEY}:".encode()).decode()


class EchoServer:
    """A real endpoint on 127.0.0.1 that echoes the credentials it receives.

    ``/id`` returns the Authorization and X-Key headers as the one chunk id, ``/error``
    answers 400 with them in the body, ``/ok`` returns a corpus id; every request's
    headers are kept.
    """

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.headers.append(dict(self.headers))
                echoed = f"{self.headers.get('Authorization')} {self.headers.get('X-Key')}"
                status, reply = {"/id": (200, {"ids": [echoed]}),
                                 "/error": (400, {"error": f"refused {echoed}"}),
                                 }.get(self.path, (200, {"ids": ["paris"]}))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{port}"
        self.with_user = f"http://{quote(USER, safe='')}:{quote(PASSWORD, safe='')}@127.0.0.1:{port}"


@pytest.fixture
def echo_server() -> Iterator[EchoServer]:
    srv = EchoServer()
    thread = threading.Thread(target=srv.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join(5)


def assert_no_credential(text: str) -> None:
    for secret in (KEY, USER, PASSWORD, quote(PASSWORD, safe=""), BASIC_USER, BASIC_KEY,
                   base64.b64encode(KEY.encode()).decode()):
        assert secret not in text, (secret, text)


@pytest.fixture
def http_workdir(tmp_path, city_corpus_file) -> Path:
    write_jsonl(tmp_path / "queries.jsonl", [{"id": "q", "question": "capital of France"}])
    (tmp_path / "corpus.jsonl").write_bytes(city_corpus_file.read_bytes())
    return tmp_path


def run_http(workdir: Path, url: str, key: str | None) -> subprocess.CompletedProcess[str]:
    return ragcov("run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                  "--retriever", url, "--k", "1", "--data-file", "cov.ragcov", cwd=workdir,
                  env={"RAGCOV_HTTP_API_KEY": key} if key else None)


@pytest.mark.parametrize("credentials", ["key", "user", "both"])
def test_an_echoed_credential_never_reaches_the_unknown_id_error(echo_server, http_workdir,
                                                                 credentials):
    base = echo_server.base if credentials == "key" else echo_server.with_user
    proc = run_http(http_workdir, f"{base}/id#retries=0", None if credentials == "user" else KEY)
    assert_one_line_error(proc, "chunk ids that are not in the corpus")
    assert "('***" in proc.stderr
    assert_no_credential(proc.stderr + proc.stdout)
    sent = echo_server.headers[-1]["Authorization"]
    assert sent == (f"Basic {BASIC_USER}" if credentials == "user" else f"Bearer {KEY}")


def test_an_echoed_credential_is_scrubbed_from_http_errors(echo_server, http_workdir):
    proc = run_http(http_workdir, f"{echo_server.with_user}/error#retries=0", None)
    assert_one_line_error(proc, "HTTP 400: {\"error\": \"refused *** None\"}")
    assert_no_credential(proc.stderr)


def test_every_encoding_of_every_credential_is_scrubbed():
    clean = Scrubber(f"http://{quote(USER)}:{quote(PASSWORD, safe='')}@h/s?token=t0k3n-value",
                     {"X-Api-Key": "header-s3cret"}, KEY)
    echoed = [KEY, f"Bearer {KEY}", BASIC_USER, BASIC_KEY, base64.b64encode(KEY.encode()).decode(),
              base64.b64encode(f":{KEY}".encode()).decode(), quote(PASSWORD, safe=""),
              quote_plus(PASSWORD), PASSWORD, USER, "t0k3n-value", "header-s3cret",
              base64.urlsafe_b64encode(f"{USER}:{PASSWORD}".encode()).decode()]
    for text in echoed:
        assert clean(f"got <{text}>") in ("got <***>", "got <Bearer ***>"), text
    assert clean("an ordinary message: nothing secret") == "an ordinary message: nothing secret"


def test_the_api_key_wins_over_the_urls_user_and_says_so(echo_server, http_workdir):
    proc = run_http(http_workdir, f"{echo_server.with_user}/ok#retries=0", KEY)
    assert proc.returncode == 0, proc.stderr
    assert echo_server.headers[-1]["Authorization"] == f"Bearer {KEY}"
    warning = [line for line in proc.stderr.splitlines() if line.startswith("ragcov: warning:")]
    assert warning == [f"ragcov: warning: {echo_server.base}/ok: the URL's user:password is not "
                       "sent: the API key from $RAGCOV_HTTP_API_KEY takes the Authorization header"]
    assert_no_credential(proc.stderr + proc.stdout)
    stored = (http_workdir / "cov.ragcov").read_bytes()
    for secret in (KEY, USER, PASSWORD, BASIC_USER):
        assert secret.encode() not in stored
    # A key in its own header leaves Authorization to the URL's pair: both are sent.
    proc = run_http(http_workdir, f"{echo_server.with_user}/ok#retries=0&api_key_header=X-Key",
                    KEY)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert echo_server.headers[-1]["Authorization"] == f"Basic {BASIC_USER}"
    assert echo_server.headers[-1]["X-Key"] == f"Bearer {KEY}"
