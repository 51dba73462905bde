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

Failures that may pass (connection errors, timeouts, 429 and 5xx) are retried
with exponential backoff, honouring ``Retry-After``. An API key is read from the
environment variable named by ``api_key_env`` and sent as a header; it is never
put in messages, the repr or the fingerprint (which is written to the data file).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ragcov.errors import RagcovError

Ranked = list[tuple[str, float | None]]

DEFAULT_API_KEY_ENV = "RAGCOV_HTTP_API_KEY"
LIST_KEYS = ("results", "documents", "hits", "matches", "data", "items")
ITEM_ID_KEYS = ("id", "chunk_id", "doc_id", "_id")
ITEM_SCORE_KEYS = ("score", "similarity", "relevance_score", "_score")
SECRET_PARAM = re.compile(r"key|token|secret|pass|auth|sig", re.IGNORECASE)
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0

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
        timeout: seconds for connecting and for reading each reply.
        retries: further attempts after a failure that may pass.
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
                timeout = _positive(value, key)
            elif key == "retries":
                retries = int(_positive(value, key, allow_zero=True))
            elif key == "backoff":
                backoff = _positive(value, key, allow_zero=True)
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
        self.timeout = _positive(timeout, "timeout")
        self.retries = int(_positive(retries, "retries", allow_zero=True))
        self.backoff = _positive(backoff, "backoff", allow_zero=True)
        self.query_field = query_field
        self.k_field = k_field
        self.body = dict(body or {})
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         **(headers or {})}
        self._secret: str | None = os.environ.get(api_key_env) if api_key_env else None
        if self._secret:
            self._headers[api_key_header] = f"{api_key_prefix}{self._secret}"
        self.requests_sent = 0
        self._client: Any = None

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
        """Never let the key reach a message, even if a server echoes it back."""
        return text.replace(self._secret, "***") if self._secret else text

    def _one(self, query: str, k: int) -> Ranked:
        import httpx

        payload = {**self.body, self.query_field: query, self.k_field: k}
        where = redact_url(self.url)
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff * (2 ** attempt)
            try:
                self.requests_sent += 1
                response = self._http().post(self.url, json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g} s"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__}: {self._clean(str(exc))})"
            else:
                if response.status_code < 400:
                    return self._parse(response, k, where)
                snippet = self._clean(response.text[:200])
                last = f"HTTP {response.status_code}: {snippet}"
                if response.status_code not in RETRY_STATUS:
                    raise RagcovError(f"{where}: {last}")
                retry_after = _retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    wait = min(retry_after, MAX_RETRY_AFTER)
            if attempt < self.retries:
                time.sleep(wait)
        tries = self.retries + 1
        raise RagcovError(f"{where}: {last} (gave up after {tries} attempt"
                          f"{'s' if tries != 1 else ''})")

    def _parse(self, response: Any, k: int, where: str) -> Ranked:
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
        for i, cid in enumerate(ids):
            if cid is None or isinstance(cid, (dict, list, bool)) or cid == "":
                raise RagcovError(f"{where}: result {i + 1} has no usable id ({cid!r})")
            score = scores[i] if scores is not None else None
            if score is not None and (isinstance(score, bool)
                                      or not isinstance(score, (int, float))):
                raise RagcovError(f"{where}: result {i + 1} has a score that is not a number "
                                  f"({score!r})")
            ranked.append((str(cid), None if score is None else float(score)))
        return ranked[:k]


def _positive(value: Any, name: str, allow_zero: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise RagcovError(f"HTTP retriever option {name}: not a number: {value!r}") from exc
    if number < 0 or (number == 0 and not allow_zero):
        raise RagcovError(f"HTTP retriever option {name}: must be "
                          f"{'at least 0' if allow_zero else 'above 0'}, got {value!r}")
    return number


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
