"""A retriever behind an HTTP endpoint: POST ``{"query": ..., "k": ...}``, read ids back.

Many teams expose retrieval as a service, so coverage must be measurable without
importing their code. Replies differ from service to service; a *path* says where
the ids (and optionally the scores) are. A path is dotted keys with ``[]`` to
take every element of a list and ``[N]`` to take one:

    ids                      {"ids": ["a", "b"]}
    results[].id             {"results": [{"id": "a", "score": 0.9}, ...]}
    data.hits[].document.id  {"data": {"hits": [{"document": {"id": "a"}}]}}
    [].chunk_id              [{"chunk_id": "a"}, ...]

Without a path, the common shapes are recognised: a list of ids or of objects,
``{"ids": [...], "scores": [...]}``, or ``{"results"|"documents"|"hits"|"matches":
[{"id"|"chunk_id": ..., "score": ...}]}``.

Options can be passed as keywords from Python or, on the command line, after a
``#`` in the URL (``http://host/search#ids=results[].id&timeout=5``): a URL's
fragment is never sent to the server.

Each attempt has one deadline, ``timeout`` seconds, for the whole request:
connecting, sending and reading the complete reply. httpx's own timeouts bound
each read, so a server that trickles a byte at a time would never trip them; a
timer thread therefore shuts the request's socket down at the deadline, which
ends whatever read or write is blocked, and the attempt is reported as timed out.

Only a 2xx reply is a result. Redirects are not followed (a key header would go
along to wherever they point); a 3xx is an error naming its ``Location``.

Failures that may pass (connection errors, timeouts, 429 and 5xx) are retried
with exponential backoff, honouring ``Retry-After``. An API key is read from the
environment variable named by ``api_key_env`` and sent as a header; it is never
put in messages, the repr or the fingerprint (which is written to the data file).
Messages are also scrubbed of the URL's password and secret-looking query values
and of secret-looking header values, in case a server echoes them back.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urljoin, urlsplit, urlunsplit

from ragcov.errors import RagcovError
from ragcov.fields import ITEM_ID_KEYS, ITEM_SCORE_KEYS, FieldError, parse_id, parse_score

Ranked = list[tuple[str, float | None]]

DEFAULT_API_KEY_ENV = "RAGCOV_HTTP_API_KEY"
LIST_KEYS = ("results", "documents", "hits", "matches", "data", "items")
SECRET_PARAM = re.compile(r"key|token|secret|pass|auth|sig", re.IGNORECASE)
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0
MAX_SECONDS = 86400.0  # timeout and backoff: a day; far beyond any real request

_TOKEN = re.compile(r"\[(\d*)\]|([^.\[\]]+)")


# ------------------------------------------------------------------- paths
def parse_path(path: str) -> list[str | int | None]:
    """Split ``a.b[].c[0]`` into ``["a", "b", None, "c", 0]`` (None = every element)."""
    steps: list[str | int | None] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise RagcovError(f"bad reply path {path!r} at {text[pos:]!r}")
        if m.group(2) is not None:
            steps.append(m.group(2))
        else:
            steps.append(int(m.group(1)) if m.group(1) else None)
        pos = m.end()
    if not steps:
        raise RagcovError(f"empty reply path {path!r}")
    return steps


def extract(obj: Any, path: str | list[str | int | None]) -> Any:
    """Follow a path into a decoded JSON reply; ``[]`` maps the rest over a list."""
    steps = parse_path(path) if isinstance(path, str) else path
    shown = path if isinstance(path, str) else ""
    for i, step in enumerate(steps):
        if step is None:
            if not isinstance(obj, list):
                raise RagcovError(f"reply path {shown!r}: expected a list, got "
                                  f"{type(obj).__name__}")
            rest = steps[i + 1:]
            return [extract(item, rest) if rest else item for item in obj]
        if isinstance(step, int):
            if not isinstance(obj, list) or step >= len(obj):
                raise RagcovError(f"reply path {shown!r}: no element [{step}]")
            obj = obj[step]
        else:
            if not isinstance(obj, dict) or step not in obj:
                raise RagcovError(f"reply path {shown!r}: no key {step!r}")
            obj = obj[step]
    return obj


def _default_mapping(reply: Any) -> tuple[list[Any], list[Any] | None]:
    """Recognise the common reply shapes when no path is configured."""
    items: Any = None
    if isinstance(reply, list):
        items = reply
    elif isinstance(reply, dict):
        if isinstance(reply.get("ids"), list):
            scores = reply.get("scores")
            return reply["ids"], scores if isinstance(scores, list) else None
        items = next((reply[key] for key in LIST_KEYS if isinstance(reply.get(key), list)), None)
    if items is None:
        raise RagcovError(
            "cannot find the ids in the reply: expected a list, {\"ids\": [...]}, or one of "
            f"{', '.join(LIST_KEYS)} holding a list; set ids=PATH"
        )
    ids: list[Any] = []
    scores: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ids.append(next((item[key] for key in ITEM_ID_KEYS if item.get(key) is not None),
                            None))
            scores.append(next((item[key] for key in ITEM_SCORE_KEYS
                                if item.get(key) is not None), None))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            ids.append(item[0])
            scores.append(item[1])
        else:
            ids.append(item)
            scores.append(None)
    return ids, scores


# ------------------------------------------------------------------ options
def _split_options(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.fragment, keep_blank_values=True)) if parts.fragment else {}
    return urlunsplit(parts._replace(fragment="")), options


def redact_url(url: str) -> str:
    """The URL without credentials: no user:password, secret-looking query values hidden."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    query = urlencode([(k, "***" if SECRET_PARAM.search(k) else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class HTTPRetriever:
    """POST each query to ``url`` and read the ranked ids from the reply.

    Parameters:
        ids: path to the ids in the reply (see the module docstring); None
            recognises the common shapes.
        scores: path to the scores, parallel to the ids; optional.
        timeout: seconds each attempt may take in all (connect, send, read the
            whole reply); a deadline, not a per-read timeout.
        retries: further attempts after a failure that may pass (a whole number).
        backoff: first wait in seconds; doubled after each failed attempt.
        headers: extra request headers (not secrets: use api_key_env).
        api_key_env: environment variable holding an API key (default
            RAGCOV_HTTP_API_KEY, used when set).
        api_key_header / api_key_prefix: where the key goes, by default
            ``Authorization: Bearer <key>``; ``api_key_prefix=""`` sends it bare.
        query_field / k_field: names of the request's fields.
        body: extra fields sent with every request (e.g. a collection name).
    """

    def __init__(self, url: str, *, ids: str | None = None, scores: str | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 headers: dict[str, str] | None = None,
                 api_key_env: str = DEFAULT_API_KEY_ENV,
                 api_key_header: str = "Authorization", api_key_prefix: str = "Bearer ",
                 query_field: str = "query", k_field: str = "k",
                 body: dict[str, Any] | None = None, **unknown: Any) -> None:
        url, fragment = _split_options(url)
        if not url.startswith(("http://", "https://")):
            raise RagcovError(f"not an http(s) URL: {redact_url(url)!r}")
        # Fragment options fill in what keywords did not set.
        given = {"ids": ids, "scores": scores}
        for key, value in fragment.items():
            if key in ("ids", "scores"):
                given[key] = given[key] or value
            elif key == "timeout":
                timeout = _seconds(value, key)
            elif key == "retries":
                retries = _whole(value, key)
            elif key == "backoff":
                backoff = _seconds(value, key, allow_zero=True)
            elif key == "api_key_env":
                api_key_env = value
            elif key == "api_key_header":
                api_key_header = value
            elif key == "api_key_prefix":
                api_key_prefix = value
            elif key == "query_field":
                query_field = value
            elif key == "k_field":
                k_field = value
            else:
                unknown[key] = value
        if unknown:
            raise RagcovError(f"unknown HTTP retriever option(s): {', '.join(sorted(unknown))}")
        self.url = url
        self.ids_path = given["ids"]
        self.scores_path = given["scores"]
        for path in (self.ids_path, self.scores_path):
            if path:
                parse_path(path)
        self.timeout = _seconds(timeout, "timeout")
        self.retries = _whole(retries, "retries")
        self.backoff = _seconds(backoff, "backoff", allow_zero=True)
        self.query_field = query_field
        self.k_field = k_field
        self.body = dict(body or {})
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         **(headers or {})}
        self._secret: str | None = os.environ.get(api_key_env) if api_key_env else None
        if self._secret:
            self._headers[api_key_header] = f"{api_key_prefix}{self._secret}"
        self._secrets = _secrets_of(url, self._headers, self._secret)
        self.requests_sent = 0
        self._client: Any = None
        # The deadline watchdog: every socket the client opened (weakly, so closed ones
        # go), and the current attempt's "deadline passed" flag. One attempt at a time.
        self._send_lock = threading.Lock()
        self._sockets_lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._expired: threading.Event | None = None
        self._tcp: socket.socket | None = None  # the attempt's new plain socket
        self._handshake: socket.socket | None = None  # a duplicate of it during TLS set-up

    def __repr__(self) -> str:
        return f"HTTPRetriever({redact_url(self.url)!r})"

    # ----------------------------------------------------------- protocol
    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        return [self._one(text, k) for text in texts]

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "http", "url": redact_url(self.url)}
        if self.ids_path:
            fp["ids"] = self.ids_path
        if self.scores_path:
            fp["scores"] = self.scores_path
        if self.body:
            fp["body"] = self.body
        return fp

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        with self._sockets_lock:
            self._sockets.clear()

    # ----------------------------------------------------------- internals
    def _http(self) -> Any:
        if self._client is None:
            try:
                import httpx
            except ImportError as exc:  # pragma: no cover - depends on installed extras
                raise RagcovError(
                    "the HTTP retriever needs httpx: pip install 'ragcov[integrations]'") from exc
            # No redirects: a custom key header would follow them to another host.
            self._client = httpx.Client(timeout=self.timeout, headers=self._headers,
                                        follow_redirects=False)
        return self._client

    def _clean(self, text: str) -> str:
        """Never let a secret reach a message, even if a server echoes it back."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _one(self, query: str, k: int) -> Ranked:
        try:
            return self._request(query, k)
        except RagcovError as exc:
            message = str(exc)
            cleaned = self._clean(message)
            if cleaned == message:
                raise
            raise RagcovError(cleaned) from None

    def _request(self, query: str, k: int) -> Ranked:
        payload = {**self.body, self.query_field: query, self.k_field: k}
        where = redact_url(self.url)
        last = ""
        timed_out = False  # did the last attempt end at its deadline
        for attempt in range(self.retries + 1):
            wait = self.backoff * (2 ** attempt)
            self.requests_sent += 1
            response, last, timed_out = self._send(payload)
            if response is not None:
                status = response.status_code
                if 200 <= status < 300:
                    return self._parse(response, k, where)
                if 300 <= status < 400:
                    raise RagcovError(f"{where}: {self._redirect(response)}")
                snippet = self._clean(response.text[:200])
                last = f"HTTP {status}: {snippet}"
                if status not in RETRY_STATUS:
                    raise RagcovError(f"{where}: {last}")
                retry_after = _retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    wait = min(retry_after, MAX_RETRY_AFTER)
            if attempt < self.retries:
                time.sleep(wait)
        tries = self.retries + 1
        why = (f"; {self.timeout:g} s is each attempt's deadline for the whole request "
               "(connect, send and the complete reply)") if timed_out else ""
        raise RagcovError(f"{where}: {last} (gave up after {tries} attempt"
                          f"{'s' if tries != 1 else ''}){why}")

    def _send(self, payload: dict[str, Any]) -> tuple[Any, str, bool]:
        """One attempt under the deadline: the reply (read in full), or None, why not and
        whether it was the deadline."""
        import httpx

        client = self._http()
        with self._send_lock:
            expired = threading.Event()
            timer = threading.Timer(self.timeout, self._abort, args=(expired,))
            timer.daemon = True
            with self._sockets_lock:
                self._expired = expired
            timer.start()
            try:
                # post() reads the whole body before it returns, all inside the deadline.
                response = client.post(self.url, json=payload, extensions={"trace": self._trace})
            except httpx.TransportError as exc:
                # A shut-down socket surfaces as a read, write or protocol error.
                if expired.is_set() or isinstance(exc, httpx.TimeoutException):
                    return None, f"timed out after {self.timeout:g} s", True
                return (None, f"connection failed ({type(exc).__name__}: "
                              f"{self._clean(str(exc))})", False)
            finally:
                timer.cancel()
                timer.join()  # an abort under way ends before the next attempt starts
                with self._sockets_lock:
                    self._expired = None
                self._end_handshake()
                self._tcp = None
        return response, "", False

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep a handle on each socket the client opens.

        Called in the attempt's thread. Wrapping a socket in TLS detaches the plain
        socket object, so for the handshake the watchdog holds a duplicate descriptor
        (shutdown acts on the connection, whichever descriptor names it), closed once
        the TLS socket itself is known.
        """
        if event.endswith(".connect_tcp.complete"):
            self._tcp = _socket_of(info.get("return_value"))
            self._watch(self._tcp)
        elif event.endswith(".start_tls.started") and self._tcp is not None:
            with contextlib.suppress(OSError):  # already wrapped: TLS inside a TLS proxy
                self._handshake = self._tcp.dup()
                self._watch(self._handshake)
        elif event.endswith((".start_tls.complete", ".start_tls.failed")):
            self._end_handshake()
            if event.endswith(".complete"):
                self._watch(_socket_of(info.get("return_value")))

    def _watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._sockets_lock:
            self._sockets.add(sock)
            if self._expired is not None and self._expired.is_set():
                _shutdown(sock)  # connected after the deadline passed

    def _end_handshake(self) -> None:
        if self._handshake is not None:
            with self._sockets_lock:
                self._sockets.discard(self._handshake)
            self._handshake.close()
            self._handshake = None

    def _abort(self, expired: threading.Event) -> None:
        """At the deadline (timer thread): end the attempt by shutting its socket down.

        Attempts are one at a time, so the client's open sockets are this attempt's and
        idle keep-alive ones; those are shut too, and the pool replaces them. shutdown()
        (not close()) wakes a blocked recv or send without freeing the descriptor.
        """
        with self._sockets_lock:
            expired.set()
            for sock in list(self._sockets):
                _shutdown(sock)

    def _redirect(self, response: Any) -> str:
        status = response.status_code
        location = response.headers.get("Location")
        if not location:
            return (f"answered {status} redirect without a Location header (redirects are "
                    "not followed so keys stay on their host; use the final URL)")
        target = redact_url(urljoin(self.url, location.strip()))
        return (f"answered {status} redirect to {self._clean(target)} (redirects are not "
                "followed so keys stay on their host; use the final URL)")

    def _parse(self, response: Any, k: int, where: str) -> Ranked:
        try:
            return self._read(response, k, where)
        except RecursionError:
            raise RagcovError(f"{where}: the reply is nested too deeply to read "
                              "(JSON deeper than Python's recursion limit)") from None

    def _read(self, response: Any, k: int, where: str) -> Ranked:
        try:
            reply = response.json()
        except (json.JSONDecodeError, ValueError) as exc:
            raise RagcovError(f"{where}: the reply is not JSON: "
                              f"{self._clean(response.text[:200])!r}") from exc
        try:
            if self.ids_path:
                ids = extract(reply, self.ids_path)
                scores = extract(reply, self.scores_path) if self.scores_path else None
            else:
                ids, scores = _default_mapping(reply)
                if self.scores_path:
                    scores = extract(reply, self.scores_path)
        except RagcovError as exc:
            raise RagcovError(f"{where}: {exc}") from exc
        if not isinstance(ids, list):
            raise RagcovError(f"{where}: the ids are not a list (got {type(ids).__name__})")
        if scores is not None and (not isinstance(scores, list) or len(scores) != len(ids)):
            raise RagcovError(f"{where}: the scores do not line up with the ids "
                              f"({len(ids)} ids)")
        ranked: Ranked = []
        for i, raw_id in enumerate(ids):
            try:
                cid = parse_id(raw_id)
            except FieldError as exc:
                raise RagcovError(f"{where}: result {i + 1} has no usable id: {exc}") from None
            try:
                score = parse_score(scores[i]) if scores is not None else None
            except FieldError as exc:
                raise RagcovError(f"{where}: result {i + 1} has an unusable score: "
                                  f"{exc}") from None
            ranked.append((cid, score))
        return ranked[:k]


def _socket_of(stream: Any) -> socket.socket | None:
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None


def _shutdown(sock: socket.socket) -> None:
    # OSError: already closed, or detached when TLS wrapped it (the wrapper is watched too).
    with contextlib.suppress(OSError):
        # The plain socket's shutdown, also for an SSLSocket: its own would drop the TLS
        # state under the thread that is reading.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _secrets_of(url: str, headers: dict[str, str], key: str | None) -> list[str]:
    """Values to scrub from messages, raw and percent-encoded, longest first."""
    parts = urlsplit(url)
    found = {key, parts.username, parts.password}
    found.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                 if SECRET_PARAM.search(k))
    found.update(v for k, v in headers.items() if SECRET_PARAM.search(k))
    variants = {form for value in found if value for form in (value, quote(value, safe=""),
                                                               quote_plus(value))}
    return sorted(variants, key=len, reverse=True)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise RagcovError(f"HTTP retriever option {name}: not a number: {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RagcovError(f"HTTP retriever option {name}: not a number: {value!r}") from exc


def _seconds(value: Any, name: str, allow_zero: bool = False) -> float:
    """A finite number of seconds above 0 (or at least 0), at most MAX_SECONDS."""
    number = _number(value, name)
    if not (math.isfinite(number) and (number > 0 or (allow_zero and number == 0))
            and number <= MAX_SECONDS):
        raise RagcovError(f"HTTP retriever option {name}: must be a finite number of seconds "
                          f"{'at least 0' if allow_zero else 'above 0'} and at most "
                          f"{MAX_SECONDS:g}, got {value!r}")
    return number


def _whole(value: Any, name: str) -> int:
    """A whole number at least 0 (``3`` or ``"3"``; not 1.5, nan, inf or a boolean)."""
    try:
        number = _number(value, name)
    except RagcovError:
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and number >= 0):
        raise RagcovError(f"HTTP retriever option {name}: must be a whole number at least 0, "
                          f"got {value!r}")
    return int(number)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
    return max(0.0, seconds) if math.isfinite(seconds) else None
