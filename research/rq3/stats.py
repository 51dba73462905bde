"""The statistics RQ3 reports: effect size, significance, run summaries, detection curves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def a12(x: Sequence[float], y: Sequence[float]) -> float:
    """Vargha–Delaney A12: probability that a run of x beats a run of y (ties half)."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xa.size == 0 or ya.size == 0:
        return math.nan
    gt = (xa[:, None] > ya[None, :]).sum()
    eq = (xa[:, None] == ya[None, :]).sum()
    return float((gt + 0.5 * eq) / (xa.size * ya.size))


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import mannwhitneyu

    if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0 and x[0] == y[0]):
        return math.nan
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def summary(values: list[float | None]) -> dict[str, Any]:
    """Mean, sd, median, min, max and count of the runs that have a value."""
    v = np.array([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return {"mean": None, "sd": None, "median": None, "min": None, "max": None, "runs": 0}
    spread = v.size > 1 and np.ptp(v) > 0          # identical runs: sd exactly 0, not 1e-17
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if spread else 0.0,
            "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
            "runs": int(v.size)}


def finite_mean(x: np.ndarray) -> float | None:
    """The mean of the finite values; None when there are none."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else None


def pct(x: float | None) -> str:
    """A relative difference as a signed percentage; "–" when undefined."""
    return "–" if x is None or x != x else f"{x * 100:+.1f}%"


def detection_curve(tf: np.ndarray, n: int) -> np.ndarray:
    """Mean fraction of faults revealed after each test (runs x faults -> n values)."""
    m = tf.shape[1]
    curve = np.zeros(n)
    for row in tf:
        counts = np.bincount(row[row > 0] - 1, minlength=n)[:n]
        curve += np.cumsum(counts) / m
    return curve / tf.shape[0]
