"""Keeping secrets out of what the HTTP retriever says and records.

An API key is sent as a header and never put in messages, the repr or the
fingerprint (which is written to the data file). Messages and the ids a reply
returns are also scrubbed of the URL's user and password and secret-looking query
values (:mod:`ragcov.redaction`) and of secret-looking header values, raw, percent-encoded or
base64-encoded as HTTP Basic sends them, in case a server echoes them back.
"""

from __future__ import annotations

import base64
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

from ragcov.redaction import SECRET_PARAM


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """The URL without ``user:password@``, and the user and password, percent-decoded.

    The retriever sends them itself as HTTP Basic (as httpx would), so it decides
    which credential wins when an API key is set too.
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    netloc = parts.netloc.rpartition("@")[2]
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return urlunsplit(parts._replace(netloc=netloc)), user, password


def basic_credentials(user: str | None, password: str | None) -> str:
    """``user:password`` as an ``Authorization: Basic`` value carries it."""
    return base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode("ascii")


def _encoded(value: str) -> set[str]:
    """The forms a server may echo a secret in: raw, percent-encoded, base64."""
    raw = value.encode("utf-8", "surrogatepass")
    return {value, quote(value, safe=""), quote_plus(value),
            base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}


class Scrubber:
    """Replaces every secret of a URL, its headers and an API key with ``***``.

    Besides each secret on its own, the pairs HTTP Basic encodes are known: the
    URL's ``user:password`` and an API key used as either half of one.
    """

    def __init__(self, url: str, headers: dict[str, str], key: str | None) -> None:
        parts = urlsplit(url)
        found = {key, parts.username, parts.password}
        found.update(unquote(v) for v in (parts.username, parts.password) if v)
        found.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                     if SECRET_PARAM.search(k))
        found.update(v for k, v in headers.items() if SECRET_PARAM.search(k))
        # HTTP Basic pairs: the URL's user:password (as written and decoded), a key as
        # either half of one (services that take the key as the user name).
        user, password = parts.username or "", parts.password or ""
        if user or password:
            found |= {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}
        if key:
            found |= {f"{key}:", f":{key}"}
        variants = {form for value in found if value for form in _encoded(value)}
        # Longest first, so a secret containing another is replaced whole.
        self.secrets = sorted(variants, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text
