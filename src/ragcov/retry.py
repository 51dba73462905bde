"""The one retry loop: exponential backoff, a server's Retry-After, a limit on attempts.

Used by the HTTP retriever and the OpenAI-compatible generator. The caller decides
what may pass: its attempt raises :class:`Retryable` for a failure worth another
try (a timeout, a 429, a 5xx, a reply it could not read), carrying the server's
Retry-After when there was one; anything else it raises ends the loop at once.
When the last attempt has failed the loop raises :class:`GaveUp` with the last
failure and the number of attempts, for the caller to word.

The wait after failed attempt n (counting from 0) is ``first * 2**n``, at most
``max_backoff``. A Retry-After, capped at ``max_retry_after``, either replaces that
wait (``retry_after_shortens``: the server's word goes, even "0") or only
lengthens it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class Retryable(Exception):
    """Raised by an attempt: this failure may pass, so wait and try again."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class GaveUp(Exception):
    """Every attempt failed with :class:`Retryable`; ``last`` is the final failure."""

    def __init__(self, last: Retryable, attempts: int) -> None:
        super().__init__(f"gave up after {attempts} attempts: {last.reason}")
        self.last = last
        self.attempts = attempts


@dataclass(frozen=True)
class Backoff:
    """How often to try and how long to wait between tries."""

    retries: int                    # further attempts after the first
    first: float                    # the first wait, in seconds; doubled after each failure
    max_backoff: float = math.inf   # the longest wait the doubling reaches
    max_retry_after: float = math.inf  # the longest wait a server may ask for
    retry_after_shortens: bool = True  # Retry-After replaces the backoff (else: at least it)

    def wait(self, n: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``n`` (0-based)."""
        backoff = min(self.max_backoff, self.first * 2 ** n)
        if self.retry_after_shortens:
            return backoff if retry_after is None else min(self.max_retry_after, retry_after)
        return max(backoff, min(self.max_retry_after, retry_after or 0.0))


def retrying(attempt: Callable[[int], T], policy: Backoff,
             sleep: Callable[[float], Any] | None = None) -> T:
    """Call ``attempt(n)`` for n = 0, 1, ... until it returns, raises something other
    than :class:`Retryable`, or ``policy.retries`` retries have failed (:class:`GaveUp`)."""
    last = Retryable("no attempt was made")
    for n in range(policy.retries + 1):
        try:
            return attempt(n)
        except Retryable as failure:
            last = failure
        if n < policy.retries:
            (sleep or time.sleep)(policy.wait(n, last.retry_after))
    raise GaveUp(last, max(0, policy.retries + 1))


def parse_retry_after(value: Any) -> float | None:
    """A Retry-After header's seconds (at least 0); None when absent, an HTTP date or not
    a finite number (the caller's own backoff applies)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
