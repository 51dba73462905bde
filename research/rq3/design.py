"""RQ3's design: how a failure is defined, the taus and budgets tried, the paper's claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragcov.errors import RagcovError

PAPER_IMPROVEMENT = (0.10, 0.25)          # coverage over random, docs/method.md §6
DEFAULT_TAUS = (0.6, 0.7, 0.8, 0.9)
DEFAULT_METRICS = ("hit", "context_relevance<0.4")
DEFAULT_BUDGETS = (0.1, 0.25, 0.5)
SEGMENTS = 5                              # the failure rate is reported per fifth of an order


@dataclass(frozen=True)
class FailureDef:
    metric: str                  # hit | context_relevance
    fail_below: float | None     # None: fails at the minimum (<= 0)

    @property
    def name(self) -> str:
        return self.metric if self.fail_below is None else f"{self.metric}<{self.fail_below:g}"


def parse_failure_defs(text: str) -> list[FailureDef]:
    """``hit,context_relevance<0.4``: a metric name, optionally ``<X`` for --fail-below."""
    defs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, below = part.partition("<")
        name = name.strip()
        if name not in ("hit", "context_relevance"):
            raise RagcovError(f"unknown failure metric {name!r}: expected hit or context_relevance")
        try:
            fb = float(below) if below.strip() else None
        except ValueError as exc:
            raise RagcovError(f"bad threshold in {part!r}: expected NAME<NUMBER") from exc
        defs.append(FailureDef(name, fb))
    if not defs:
        raise RagcovError("give at least one failure metric (hit, context_relevance<0.4)")
    return defs


def parse_floats(text: str, what: str, low: float, high: float) -> list[float]:
    try:
        values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise RagcovError(f"{what} must be comma-separated numbers, got {text!r}") from exc
    if not values or any(not (low <= v <= high) for v in values):
        raise RagcovError(f"{what} must be numbers between {low:g} and {high:g}, got {text!r}")
    return values


def main_tau(taus: Sequence[float]) -> float:
    """The tau the headline tables and the detection curves use: 0.8 when tried."""
    return 0.8 if 0.8 in taus else taus[len(taus) // 2]


def budget_sizes(budgets: Sequence[float], n: int) -> list[int]:
    """Budget fractions of a pool of ``n`` as distinct test counts (whole-pool budgets dropped)."""
    return sorted({max(1, int(round(b * n))) for b in budgets if b * n >= 1 and b < 1})
