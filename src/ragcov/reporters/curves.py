"""Coverage curves of orderings of the suite, and their chart's coordinates for the HTML site.

A curve is CC after each of the first n tests of one ordering. It is always recomputed
from the data file shown, never taken from an order file's own numbers, so it agrees
with the totals beside it. The chart is plain coordinates: the template draws the SVG,
so every label goes through autoescaping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import coverage_curve
from ragcov.summary import display_percent


@dataclass(frozen=True)
class Curve:
    """CC after each of the first n tests of one ordering of the suite."""

    label: str
    values: list[float]  # fractions, one per test in order
    baseline: bool = False  # drawn dashed: the order others are compared with


def curve_from_order(m: CoverageMatrix, order: Sequence[str], label: str) -> Curve:
    """The curve of an ordering given by query ids, recomputed from the data shown.

    The data file, not the order file's own numbers, is what the page reports, so the
    curve is always consistent with the totals beside it.
    """
    rows = m.row_of()
    unknown = [q for q in order if q not in rows]
    if unknown:
        shown = ", ".join(map(str, unknown[:10])) + (" ..." if len(unknown) > 10 else "")
        raise RagcovError(f"the order names {len(unknown)} query id(s) not in the data file: "
                          f"{shown}")
    if not order:
        raise RagcovError("the order is empty")
    return Curve(label, coverage_curve(m, [rows[q] for q in order]).tolist())


def curve_from_order_file(m: CoverageMatrix, doc: Any, source: str) -> Curve:
    """Read the ``{"strategy", "order": [query ids], ...}`` shape ``ragcov select`` writes."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("order"), list):
        raise RagcovError(f"{source}: expected an object with an 'order' list of query ids")
    order = doc["order"]
    if not all(isinstance(q, str) for q in order):
        raise RagcovError(f"{source}: 'order' must list query ids (strings)")
    label = str(doc.get("strategy") or Path(source).stem)
    return curve_from_order(m, order, label)


def greedy_curve(m: CoverageMatrix) -> Curve | None:
    """The coverage-greedy ordering's curve (None for an empty suite)."""
    from ragcov.selection import select

    if m.n_queries == 0:
        return None
    return Curve("coverage-greedy", [float(v) for v in select(m, "coverage").curve])


def recorded_curve(m: CoverageMatrix) -> Curve:
    return Curve("as recorded", coverage_curve(m, np.arange(m.n_queries)).tolist(), baseline=True)


# ------------------------------------------------------------------------ the chart
WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44


def chart(curves: Sequence[Curve], n_chunks: int, precision: int) -> dict[str, Any] | None:
    """Coordinates for the SVG chart; the template draws it so every label is escaped."""
    curves = [c for c in curves if c.values]
    if not curves:
        return None
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n_max = max(len(c.values) for c in curves)

    def x(n: float) -> float:
        return round(LEFT + pw * n / n_max, 2)

    def y(frac: float) -> float:
        return round(TOP + ph * (1 - frac), 2)

    lines = [_line(c, idx, x, y, precision) for idx, c in enumerate(curves)]
    step = _nice_step(n_max)
    xticks = [{"x": x(n), "label": str(n)} for n in range(0, n_max + 1, step)]
    yticks = [{"y": y(f / 100), "label": f"{f}%"} for f in range(0, 101, 20)]
    return {"width": WIDTH, "height": HEIGHT, "left": LEFT, "top": TOP, "pw": pw, "ph": ph,
            "bottom_y": TOP + ph, "lines": lines, "xticks": xticks, "yticks": yticks,
            "n_chunks": n_chunks}


def _line(c: Curve, idx: int, x: Callable[[float], float], y: Callable[[float], float],
          precision: int) -> dict[str, Any]:
    """One curve as a step line, with its final CC and the tests it takes to reach 90% of it."""
    pts = [(x(0), y(0.0))]
    prev = 0.0
    for n, v in enumerate(c.values, start=1):
        pts.append((x(n), y(prev)))  # steps: coverage changes only when a test runs
        pts.append((x(n), y(v)))
        prev = v
    final = c.values[-1]
    target = 0.9 * final
    to90 = next((n for n, v in enumerate(c.values, start=1) if v >= target), len(c.values))
    return {
        "label": c.label, "series": 5 if c.baseline else idx % 5, "baseline": c.baseline,
        "points": " ".join(f"{a},{b}" for a, b in pts),
        "tests": len(c.values), "final": display_percent(final, precision),
        "to90": to90 if final > 0 else None,
    }


def _nice_step(n: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if n / step <= 10:
            return step
    return max(1, n // 10)
