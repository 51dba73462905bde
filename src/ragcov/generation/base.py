"""What every question writer shares: the call, its result, its error and the prompt modes.

All generators answer the same call, ``generate(passages, attempt, seed)``, with
the raw text and the tokens it cost; cleaning and rejection happen in the loop so
every backend is judged by the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragcov.errors import RagcovError
from ragcov.generation.templates import PromptTemplate

MODES = ("completion", "chat")
# A completion-mode answer ends at the first blank line or the next few-shot block.
COMPLETION_STOP = ["\n\n", "Passage:", "\nQuestion:"]


class GenerationError(RagcovError):
    """The generator could not produce any output (after its retries)."""


@dataclass
class Generation:
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1              # requests made, retries included


class Generator(Protocol):
    name: str
    model: str
    template: PromptTemplate | None

    def generate(self, passages: Sequence[str], attempt: int, seed: int) -> Generation: ...


def check_mode(mode: str) -> None:
    """Refuse a prompt mode other than completion or chat."""
    if mode not in MODES:
        raise RagcovError(f"unknown mode {mode!r}: expected completion or chat")


def short(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters (for an error message)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
