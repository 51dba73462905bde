"""A retriever behind an HTTP endpoint: POST ``{"query": ..., "k": ...}``, read ids back.

Many teams expose retrieval as a service, so coverage must be measurable without
importing their code. Where the ids are in the reply is a path
(:mod:`~ragcov.retrievers.http.reply`); options are keywords or follow a ``#`` in
the URL (:mod:`~ragcov.retrievers.http.options`).

Each attempt has one deadline, ``timeout`` seconds, for the whole request:
connecting, sending and reading the complete reply
(:mod:`~ragcov.retrievers.http.deadline`).

Only a 2xx reply is a result. Redirects are not followed (a key header would go
along to wherever they point); a 3xx is an error naming its ``Location``.

Failures that may pass (connection errors, timeouts, 429 and 5xx) are retried
with exponential backoff, honouring ``Retry-After`` (:mod:`ragcov.retry`). An API
key is read from the environment variable named by ``api_key_env`` and sent as a
header; a ``user:password@`` in the URL is sent as HTTP Basic, except when the API
key goes in the ``Authorization`` header too: then the key is sent, and a warning
says the URL's pair is not. Neither, nor the URL's other secrets, reaches a
message, a returned id, the repr or the fingerprint, raw or encoded
(:mod:`~ragcov.retrievers.http.secrets`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from ragcov.errors import RagcovError
from ragcov.redaction import redact_url
from ragcov.retrievers.http.deadline import Watchdog
from ragcov.retrievers.http.options import (
    DEFAULT_API_KEY_ENV,
    merge_fragment,
    seconds,
    split_options,
    whole,
)
from ragcov.retrievers.http.reply import parse_path, read_ranked
from ragcov.retrievers.http.secrets import Scrubber, basic_credentials, split_credentials
from ragcov.retry import Backoff, GaveUp, Retryable, parse_retry_after, retrying
from ragcov.user_warnings import CredentialWarning, warn

if TYPE_CHECKING:
    from ragcov.retrievers.base import Ranked

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0


def _import_httpx() -> Any:
    """httpx, or the one-line error saying how to install it, before any query is sent."""
    try:
        import httpx
    except ImportError as exc:  # an extra not installed, or an install that is broken
        raise RagcovError("the HTTP retriever needs httpx: pip install 'ragcov[integrations]' "
                          f"({exc})") from exc
    return httpx


class _TimedOut(Retryable):
    """An attempt that ended at its deadline."""


class HTTPRetriever:
    """POST each query to ``url`` and read the ranked ids from the reply.

    Parameters:
        ids: path to the ids in the reply (see :mod:`~ragcov.retrievers.http.reply`);
            None recognises the common shapes.
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

    batches_queries = False  # one query per call: progress moves per query

    def __init__(self, url: str, *, ids: str | None = None, scores: str | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 headers: dict[str, str] | None = None,
                 api_key_env: str = DEFAULT_API_KEY_ENV,
                 api_key_header: str = "Authorization", api_key_prefix: str = "Bearer ",
                 query_field: str = "query", k_field: str = "k",
                 body: dict[str, Any] | None = None, **unknown: Any) -> None:
        url, fragment = split_options(url)
        if not url.startswith(("http://", "https://")):
            raise RagcovError(f"not an http(s) URL: {redact_url(url)!r}")
        opts: dict[str, Any] = {
            "ids": ids, "scores": scores, "timeout": timeout, "retries": retries,
            "backoff": backoff, "api_key_env": api_key_env, "api_key_header": api_key_header,
            "api_key_prefix": api_key_prefix, "query_field": query_field, "k_field": k_field}
        unknown.update(merge_fragment(opts, fragment))
        if unknown:
            raise RagcovError(f"unknown HTTP retriever option(s): {', '.join(sorted(unknown))}")
        # Credentials in the URL are sent as Basic by the retriever itself, not by httpx,
        # so an API key for the same header can take precedence (see _auth_headers).
        self.url, user, password = split_credentials(url)
        self.ids_path = opts["ids"]
        self.scores_path = opts["scores"]
        for path in (self.ids_path, self.scores_path):
            if path:
                parse_path(path)
        self.timeout = seconds(opts["timeout"], "timeout")
        self.retries = whole(opts["retries"], "retries")
        self.backoff = seconds(opts["backoff"], "backoff", allow_zero=True)
        self.query_field = opts["query_field"]
        self.k_field = opts["k_field"]
        self.body = dict(body or {})
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         **(headers or {})}
        key_env = opts["api_key_env"]
        self._secret: str | None = os.environ.get(key_env) if key_env else None
        self._headers.update(self._auth_headers(user, password, key_env, opts["api_key_header"],
                                                opts["api_key_prefix"]))
        self._clean = Scrubber(url, self._headers, self._secret)
        self.requests_sent = 0
        self._httpx = _import_httpx()
        self._client: Any = None
        self._watchdog = Watchdog()

    def _auth_headers(self, user: str | None, password: str | None, key_env: str,
                      key_header: str, key_prefix: str) -> dict[str, str]:
        """The credentials to send: the URL's ``user:password`` as Basic, the API key in
        its header; when both want ``Authorization``, the API key wins.

        The key is the retriever's own setting for a credential; the URL's pair is often
        just how the address was copied. Dropping one is said once, not done silently.
        """
        sent: dict[str, str] = {}
        if user is not None or password is not None:
            sent["Authorization"] = f"Basic {basic_credentials(user, password)}"
        if self._secret:
            if key_header.lower() == "authorization" and sent:
                del sent["Authorization"]
                warn(f"{redact_url(self.url)}: the URL's user:password is not sent: the API "
                     f"key from ${key_env} takes the Authorization header", CredentialWarning)
            sent[key_header] = f"{key_prefix}{self._secret}"
        return sent

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
            # Written to the data file: a known secret among the extra fields is not.
            fp["body"] = self._scrubbed(self.body)
        return fp

    def _scrubbed(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._clean(value)
        if isinstance(value, dict):
            return {self._scrubbed(key): self._scrubbed(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._scrubbed(item) for item in value]
        return value

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._watchdog.forget()

    # ----------------------------------------------------------- internals
    def _http(self) -> Any:
        if self._client is None:
            # No redirects: a custom key header would follow them to another host.
            self._client = self._httpx.Client(timeout=self.timeout, headers=self._headers,
                                              follow_redirects=False)
        return self._client

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

        def attempt(_: int) -> Ranked:
            self.requests_sent += 1
            response = self._send(payload)
            status = response.status_code
            if 200 <= status < 300:
                return self._parse(response, k, where)
            if 300 <= status < 400:
                raise RagcovError(f"{where}: {self._redirect(response)}")
            last = f"HTTP {status}: {self._clean(response.text[:200])}"
            if status not in RETRY_STATUS:
                raise RagcovError(f"{where}: {last}")
            raise Retryable(last, parse_retry_after(response.headers.get("Retry-After")))

        # A server's Retry-After is its word on when to come back, within reason.
        policy = Backoff(self.retries, self.backoff, max_retry_after=MAX_RETRY_AFTER,
                         retry_after_shortens=True)
        try:
            return retrying(attempt, policy)
        except GaveUp as exc:
            why = (f"; {self.timeout:g} s is each attempt's deadline for the whole request "
                   "(connect, send and the complete reply)") \
                if isinstance(exc.last, _TimedOut) else ""
            raise RagcovError(f"{where}: {exc.last.reason} (gave up after {exc.attempts} "
                              f"attempt{'s' if exc.attempts != 1 else ''}){why}") from None

    def _send(self, payload: dict[str, Any]) -> Any:
        """One attempt under the deadline: the reply, read in full; a failure that may pass
        (the connection, the deadline) raises :class:`~ragcov.retry.Retryable`."""
        httpx = self._httpx
        client = self._http()
        with self._watchdog.attempt(self.timeout) as expired:
            try:
                # post() reads the whole body before it returns, all inside the deadline.
                return client.post(self.url, json=payload,
                                   extensions={"trace": self._watchdog.trace})
            except httpx.TransportError as exc:
                # A shut-down socket surfaces as a read, write or protocol error.
                if expired.is_set() or isinstance(exc, httpx.TimeoutException):
                    raise _TimedOut(f"timed out after {self.timeout:g} s") from None
                raise Retryable(f"connection failed ({type(exc).__name__}: "
                                f"{self._clean(str(exc))})") from None

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
            try:
                reply = response.json()
            except (json.JSONDecodeError, ValueError) as exc:
                raise RagcovError(f"{where}: the reply is not JSON: "
                                  f"{self._clean(response.text[:200])!r}") from exc
            ranked = read_ranked(reply, self.ids_path, self.scores_path, k, where)
        except RecursionError:
            raise RagcovError(f"{where}: the reply is nested too deeply to read "
                              "(JSON deeper than Python's recursion limit)") from None
        # An id that echoes a credential back would reach the unknown-id error and,
        # were it ever a corpus id, the data file.
        if self._clean.secrets:
            ranked = [(self._clean(cid), score) for cid, score in ranked]
        return ranked
