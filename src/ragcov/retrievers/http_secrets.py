"""Keeping secrets out of what the HTTP retriever says and records.

An API key is sent as a header and never put in messages, the repr or the
fingerprint (which is written to the data file). Messages are also scrubbed of
the URL's password and secret-looking query values and of secret-looking header
values, raw or percent-encoded, in case a server echoes them back.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

SECRET_PARAM = re.compile(r"key|token|secret|pass|auth|sig", re.IGNORECASE)


def redact_url(url: str) -> str:
    """The URL without credentials: no user:password, secret-looking query values hidden."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    query = urlencode([(k, "***" if SECRET_PARAM.search(k) else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class Scrubber:
    """Replaces every secret of a URL, its headers and an API key with ``***``."""

    def __init__(self, url: str, headers: dict[str, str], key: str | None) -> None:
        parts = urlsplit(url)
        found = {key, parts.username, parts.password}
        found.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                     if SECRET_PARAM.search(k))
        found.update(v for k, v in headers.items() if SECRET_PARAM.search(k))
        variants = {form for value in found if value
                    for form in (value, quote(value, safe=""), quote_plus(value))}
        # Longest first, so a secret containing another is replaced whole.
        self.secrets = sorted(variants, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text
