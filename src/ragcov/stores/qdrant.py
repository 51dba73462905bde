"""Qdrant: local mode (``qdrant:///PATH``) or a server (``qdrant+http://HOST:PORT``).

Both go through one ``QdrantClient``: local mode and a server answer the same calls
(``scroll`` for pages, ``query_points`` for search), so one code path serves both.
Local mode keeps its points as pickles in a SQLite file and unpickles them on open, so
a local folder opens only when its URL says ``trust=pickle``; a server sends JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ragcov.fields import Ranked
from ragcov.stores.base import PAGE_SIZE, StoreChunk, missing_collection, require
from ragcov.stores.payload import split_payload
from ragcov.stores.urls import StoreURL, local_folder, require_trust


class QdrantStore:
    """Point ids are the chunk ids (a UUID or a number, as Qdrant requires)."""

    def __init__(self, url: StoreURL) -> None:
        client_mod = require("qdrant_client", "Qdrant")
        self.url = url.url
        if not url.server:
            local_folder(url, "meta.json", "a local Qdrant folder")
            require_trust(url, "reading a local Qdrant folder unpickles the points stored in it")
        self.client = (client_mod.QdrantClient(url=url.server, check_compatibility=False) if url.server
                       else client_mod.QdrantClient(path=url.path))
        name = url.param("collection")
        known = [c.name for c in self.client.get_collections().collections]
        if not name or name not in known:
            raise missing_collection(url.url, "collection", name, known)
        self.name = name
        self.vector = url.param("vector")  # a named vector, when the collection has several

    def recorded_model(self) -> str | None:
        return None

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]:
        offset: Any = None
        while True:
            points, offset = self.client.scroll(self.name, limit=page_size, offset=offset,
                                                with_payload=True, with_vectors=False)
            for p in points:
                text, meta = split_payload(p.payload)
                yield StoreChunk(str(p.id), text, meta)
            if offset is None:
                return

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        keys = [int(i) if i.isdigit() else i for i in ids]
        held: dict[str, Any] = {}
        for p in self.client.retrieve(self.name, ids=keys, with_vectors=True, with_payload=False):
            vector = p.vector
            if isinstance(vector, dict):  # named vectors: the one searched, or the only one
                vector = (vector.get(self.vector) if self.vector
                          else next(iter(vector.values())) if len(vector) == 1 else None)
            held[str(p.id)] = vector if isinstance(vector, list) else None
        return [None if held.get(i) is None else [float(x) for x in held[i]] for i in ids]

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        out: list[Ranked] = []
        for v in vectors:
            reply = self.client.query_points(self.name, query=list(v), using=self.vector, limit=k,
                                             with_payload=False)
            out.append([(str(p.id), float(p.score)) for p in reply.points])
        return out

    def describe(self) -> dict[str, Any]:
        return {"store": "qdrant", "collection": self.name}
