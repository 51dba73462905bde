"""What every store module provides, and the reading of a document id from metadata."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragcov.errors import RagcovError
from ragcov.fields import STORE_DOC_KEYS, Ranked, store_doc_id

PAGE_SIZE = 1000  # rows asked of a store at a time while enumerating
INSTALL_HINT = "pip install 'ragcov[stores]'"
# The extra that brings one store's client alone (ragcov[stores] brings them all).
STORE_EXTRAS = {"Chroma": "chroma", "Qdrant": "qdrant", "LanceDB": "lancedb", "Milvus": "milvus",
                "pgvector": "pgvector"}


@dataclass(slots=True)
class StoreChunk:
    """One row as the store holds it: its own id, text and metadata."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


class VectorStore(Protocol):
    """A store opened from a URL: enumerate its chunks, search it as production does.

    ``iter_chunks`` reads in pages of ``page_size`` rows so a large collection never
    sits in memory as one reply; ``search`` embeds the queries with ``encode`` (the
    model the store was built with) and runs the store's own nearest-neighbour
    search; ``recorded_model`` is the embedding model the store names, if it does;
    ``stored_vectors`` gives back the vectors held for some ids (None where it has
    none), so the model can be checked against them (:mod:`ragcov.stores.model_check`).
    """

    url: str

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]: ...

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]: ...

    def recorded_model(self) -> str | None: ...

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]: ...

    def describe(self) -> dict[str, Any]: ...


def doc_id_of(chunk: StoreChunk, doc_key: str | None = None) -> str:
    """The chunk's document: ``doc_key`` when named, else the first known key, else its id."""
    keys = (doc_key,) if doc_key else STORE_DOC_KEYS
    for key in keys:
        value = chunk.metadata.get(key)
        if value is not None and value != "":
            return store_doc_id(value, key, chunk.id)
    return chunk.id


def chunk_fields(store: VectorStore, doc_key: str | None = None) -> Iterator[dict[str, Any]]:
    """Each row as ``Chunk`` fields: its document, its position in it (store order), title."""
    positions: dict[str, int] = {}
    for row in store.iter_chunks():
        doc_id = doc_id_of(row, doc_key)
        pos = positions.get(doc_id, 0)
        positions[doc_id] = pos + 1
        title = row.metadata.get("title")
        yield {"id": row.id, "text": row.text, "doc_id": doc_id, "position": pos,
               "title": str(title) if title else None, "metadata": row.metadata}


def require(module: str, store: str) -> Any:
    """Import a store's client, or fail with the one line that says how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        extra = STORE_EXTRAS.get(store)
        hint = f"pip install 'ragcov[{extra}]' (or {INSTALL_HINT[12:]}, every store)" if extra \
            else INSTALL_HINT
        raise RagcovError(f"the {store} store needs the {module} package: {hint}") from None


def missing_collection(url: str, what: str, name: str | None, known: Sequence[str]) -> RagcovError:
    shown = ", ".join(sorted(known)[:10]) or "none"
    if not name:
        return RagcovError(f"{url}: no {what} named (add ?{what}=NAME); {what}s here: {shown}")
    return RagcovError(f"{url}: no {what} {name!r} in this store; {what}s here: {shown}")
