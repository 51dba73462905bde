"""RQ3's statistics."""

from __future__ import annotations

from research.rq3.stats import a12


def test_a12() -> None:
    assert a12([3, 4], [1, 2]) == 1.0
    assert a12([1, 2], [1, 2]) == 0.5
    assert a12([1], [2, 0]) == 0.5
