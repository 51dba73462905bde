"""Credentials out of the URLs that messages, reprs and data files show.

A URL may carry a ``user:password@`` and secret-looking query values (``api_key=...``);
a store URL and an HTTP retriever's endpoint are both echoed in errors and recorded in
fingerprints, so both are shown through :func:`redact_url`. It sits on the floor of
the house because store readers and retrievers (layers that must not import each
other's way up) both need it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Names a query parameter carrying a credential goes by: keys and tokens, and the ones
# without either word (Azure Functions' ``code``, a ``sessionid`` or ``sid``, a
# ``credential``, an ``apikey``, a ``jwt``, a presigned URL's ``signature`` or ``X-Amz-...``).
SECRET_PARAM = re.compile(r"key|token|secret|pass|auth|sig|^code$|session|^sid$|credential|jwt|"
                          r"cookie|bearer|^x-amz-", re.IGNORECASE)


def redact_url(url: str) -> str:
    """The URL without credentials: no user:password, secret-looking query values hidden."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    query = urlencode([(k, "***" if SECRET_PARAM.search(k) else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
