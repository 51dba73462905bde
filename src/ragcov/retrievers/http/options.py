"""The HTTP retriever's options: read from a URL's ``#`` fragment and checked.

On the command line options come after a ``#`` in the URL
(``http://host/search#ids=results[].id&timeout=5``): a URL's fragment is never
sent to the server. From Python they are keywords; the fragment fills in the
paths the keywords did not set and overrides the rest.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ragcov.errors import RagcovError

DEFAULT_API_KEY_ENV = "RAGCOV_HTTP_API_KEY"
MAX_SECONDS = 86400.0  # timeout and backoff: a day; far beyond any real request
TEXT_OPTIONS = ("api_key_env", "api_key_header", "api_key_prefix", "query_field", "k_field")


def split_options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its fragment, and the fragment's ``key=value`` options."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.fragment, keep_blank_values=True)) if parts.fragment else {}
    return urlunsplit(parts._replace(fragment="")), options


def merge_fragment(options: dict[str, Any], fragment: dict[str, str]) -> dict[str, str]:
    """Merge the fragment's options into ``options`` (in place); return the unknown ones.

    ``ids`` and ``scores`` fill in only what is not set; the numbers are checked
    as they are read.
    """
    unknown: dict[str, str] = {}
    for key, value in fragment.items():
        if key in ("ids", "scores"):
            options[key] = options[key] or value
        elif key == "timeout":
            options[key] = seconds(value, key)
        elif key == "retries":
            options[key] = whole(value, key)
        elif key == "backoff":
            options[key] = seconds(value, key, allow_zero=True)
        elif key in TEXT_OPTIONS:
            options[key] = value
        else:
            unknown[key] = value
    return unknown


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise RagcovError(f"HTTP retriever option {name}: not a number: {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RagcovError(f"HTTP retriever option {name}: not a number: {value!r}") from exc


def seconds(value: Any, name: str, allow_zero: bool = False) -> float:
    """A finite number of seconds above 0 (or at least 0), at most MAX_SECONDS."""
    number = _number(value, name)
    if not (math.isfinite(number) and (number > 0 or (allow_zero and number == 0))
            and number <= MAX_SECONDS):
        raise RagcovError(f"HTTP retriever option {name}: must be a finite number of seconds "
                          f"{'at least 0' if allow_zero else 'above 0'} and at most "
                          f"{MAX_SECONDS:g}, got {value!r}")
    return number


def whole(value: Any, name: str) -> int:
    """A whole number at least 0 (``3`` or ``"3"``; not 1.5, nan, inf or a boolean)."""
    try:
        number = _number(value, name)
    except RagcovError:
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and number >= 0):
        raise RagcovError(f"HTTP retriever option {name}: must be a whole number at least 0, "
                          f"got {value!r}")
    return int(number)
