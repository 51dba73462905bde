"""The Retriever protocol and the shape of what it returns (``Ranked``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ragcov.fields import Ranked  # noqa: F401 - the protocol's return type, re-exported


@runtime_checkable
class Retriever(Protocol):
    """Batch in, ranked lists out.

    ``retrieve`` takes query texts and k and returns, for each text, up to k
    ``(chunk id, score)`` pairs best first (score may be None when the system has
    none). ``fingerprint`` identifies the configuration (kind, model, index,
    chunking) so runs of different systems are never merged.
    """

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]: ...

    def fingerprint(self) -> dict[str, Any]: ...
