"""The generation loop's input (:class:`LoopConfig`) and its report (:class:`GenerationSummary`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError


@dataclass
class LoopConfig:
    budget: int
    strategy: str = "coverage"
    policy: str = "isolated"
    target_cc: float | None = None          # a fraction in (0, 1]
    targets_per_call: int = 1
    patience: int = 0                       # 0: never stop for a plateau
    max_attempts: int = 2                   # per target chunk (coverage strategy)
    seed: int = 0
    max_calls: int | None = None            # generator calls; default 5 x budget
    priority: list[str] | None = None       # chunk ids to aim at, most wanted first (--targets)
    include_unreachable: bool = False       # aim at chunks `ragcov probe` found unreachable too

    def check(self) -> None:
        """Refuse impossible settings before any corpus is loaded or model started."""
        from ragcov.generation.targets import validate

        validate(self.strategy, self.policy, self.targets_per_call, self.max_attempts)
        if self.budget < 1:
            raise RagcovError("--budget must be at least 1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise RagcovError(f"--seed must be a whole number of at least 0, got {self.seed!r}")
        if self.target_cc is not None and not 0 < self.target_cc <= 1:
            raise RagcovError("--target must be a percentage in (0, 100]")
        if self.patience < 0:
            raise RagcovError("--patience must be 0 (off) or more")


@dataclass
class GenerationSummary:
    out: Path
    data_file: Path
    strategy: str
    generator: str
    model: str
    chunks: int
    accepted: int = 0
    resumed: int = 0                        # accepted records found on start
    new: int = 0                            # accepted in this invocation
    rejected: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    hits: int = 0
    cc_start: float = 0.0
    cc_end: float = 0.0
    stop_reason: str = ""  # budget, target, complete, plateau, exhausted or call limit
    longest_no_gain: int = 0
    never_reached: list[str] = field(default_factory=list)
    skipped_unreachable: list[str] = field(default_factory=list)  # not aimed at: no probe reaches them
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def plateau(self) -> bool:
        return self.stop_reason in ("plateau", "exhausted", "call limit")

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out), "data_file": str(self.data_file), "strategy": self.strategy,
            "generator": self.generator, "model": self.model, "chunks": self.chunks,
            "accepted": self.accepted, "resumed": self.resumed, "new": self.new,
            "rejected": dict(self.rejected), "calls": self.calls,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "hits": self.hits, "cc_start": self.cc_start, "cc_end": self.cc_end,
            "stop_reason": self.stop_reason, "longest_no_gain": self.longest_no_gain,
            "never_reached": self.never_reached,
            "skipped_unreachable": self.skipped_unreachable,
        }
