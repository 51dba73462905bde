"""The Retriever protocol and the factory the CLI uses to build one by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.corpus import Corpus


@runtime_checkable
class Retriever(Protocol):
    """Batch in, ranked lists out.

    ``retrieve`` takes query texts and k and returns, for each text, up to k
    ``(chunk id, score)`` pairs best first (score may be None when the system has
    none). ``fingerprint`` identifies the configuration (kind, model, index,
    chunking) so runs of different systems are never merged.
    """

    def retrieve(self, texts: Sequence[str], k: int) -> list[list[tuple[str, float | None]]]: ...

    def fingerprint(self) -> dict[str, Any]: ...


BUILTIN = ("dense", "bm25")


def make_retriever(kind: str, corpus: Corpus, model: str | None = None,
                   index: str = "flat", progress: bool = True, **options: Any) -> Retriever:
    """Build a retriever from its CLI name: ``dense``, ``bm25``, ``module:attr`` or a URL."""
    if kind == "dense":
        from ragcov.retrievers.dense import DenseRetriever

        return DenseRetriever(corpus, model=model, index=index, progress=progress, **options)
    if kind == "bm25":
        from ragcov.retrievers.bm25 import BM25Retriever

        return BM25Retriever(corpus, progress=progress)
    if kind.startswith(("http://", "https://")):
        try:
            from ragcov.retrievers.http import HTTPRetriever
        except ImportError as exc:  # pragma: no cover - depends on installed extras
            raise RagcovError(f"the HTTP retriever is not available: {exc}") from exc
        return HTTPRetriever(kind, **options)
    if ":" in kind:
        try:
            from ragcov.retrievers.adapters import load_retriever
        except ImportError as exc:  # pragma: no cover
            raise RagcovError(f"custom retrievers are not available: {exc}") from exc
        return load_retriever(kind, corpus)
    raise RagcovError(
        f"unknown retriever {kind!r}: expected 'dense', 'bm25', 'module:attr' or an http(s) URL"
    )
