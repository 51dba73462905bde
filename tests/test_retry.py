"""The one retry loop (ragcov.retry) shared by the HTTP retriever and the OpenAI generator."""

from __future__ import annotations

import math

import pytest

from ragcov.retry import Backoff, GaveUp, Retryable, parse_retry_after, retrying


def _flaky(failures: list[Retryable | Exception], calls: list[int]):
    def attempt(n: int) -> str:
        calls.append(n)
        if failures:
            raise failures.pop(0)
        return f"ok after {n + 1}"
    return attempt


def test_retries_until_success_with_exponential_backoff() -> None:
    sleeps: list[float] = []
    calls: list[int] = []
    attempt = _flaky([Retryable("a"), Retryable("b")], calls)
    assert retrying(attempt, Backoff(retries=3, first=0.5), sleeps.append) == "ok after 3"
    assert calls == [0, 1, 2] and sleeps == [0.5, 1.0]


def test_gives_up_with_the_last_failure_and_the_attempt_count() -> None:
    sleeps: list[float] = []
    attempt = _flaky([Retryable("first"), Retryable("second"), Retryable("third")], [])
    with pytest.raises(GaveUp) as info:
        retrying(attempt, Backoff(retries=2, first=1.0), sleeps.append)
    assert info.value.attempts == 3 and info.value.last.reason == "third"
    assert sleeps == [1.0, 2.0]  # no wait after the last attempt


def test_other_errors_end_the_loop_at_once() -> None:
    calls: list[int] = []
    attempt = _flaky([Retryable("may pass"), KeyError("will not")], calls)
    with pytest.raises(KeyError):
        retrying(attempt, Backoff(retries=5, first=0.0), lambda s: None)
    assert calls == [0, 1]


def test_retry_after_replaces_the_backoff_within_its_cap() -> None:
    policy = Backoff(retries=3, first=0.5, max_retry_after=60.0, retry_after_shortens=True)
    assert policy.wait(2, None) == 2.0
    assert policy.wait(2, 0.0) == 0.0          # the server says now: now
    assert policy.wait(0, 600.0) == 60.0
    assert Backoff(retries=40, first=0.5).wait(30, None) == 0.5 * 2 ** 30  # uncapped


def test_retry_after_only_lengthens_when_it_may_not_shorten() -> None:
    policy = Backoff(retries=6, first=1.0, max_backoff=4.0, max_retry_after=4.0,
                     retry_after_shortens=False)
    assert [policy.wait(n, None) for n in range(5)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert policy.wait(0, 0.05) == 1.0
    assert policy.wait(0, 3.0) == 3.0
    assert policy.wait(0, 100.0) == 4.0


@pytest.mark.parametrize(("value", "seconds"), [
    (None, None), ("", None), ("2", 2.0), ("0.05", 0.05), ("-3", 0.0),
    ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("nan", None), ("inf", None), (7, 7.0),
])
def test_parse_retry_after(value: object, seconds: float | None) -> None:
    got = parse_retry_after(value)
    assert got == seconds or (got is not None and seconds is not None and math.isclose(got, seconds))
