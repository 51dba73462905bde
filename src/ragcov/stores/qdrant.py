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
from ragcov.stores.base import (
    PAGE_SIZE,
    PagedRows,
    StorePage,
    VectorsUnavailable,
    index_settings,
    missing_collection,
    require,
)
from ragcov.stores.payload import split_payload
from ragcov.stores.urls import StoreURL, local_folder, private_copy, require_trust


class QdrantStore(PagedRows):
    """Point ids are the chunk ids (a UUID or a number, as Qdrant requires)."""

    def __init__(self, url: StoreURL) -> None:
        client_mod = require("qdrant_client", "Qdrant")
        self.url = url.url
        if not url.server:
            local_folder(url, "meta.json", "a local Qdrant folder")
            require_trust(url, "reading a local Qdrant folder unpickles the points stored in it")
        # Local mode locks its folder while a client is open: ragcov reads a copy, so the
        # app (and its tests) can open its store while a run searches it.
        self.client = (client_mod.QdrantClient(url=url.server, check_compatibility=False) if url.server
                       else client_mod.QdrantClient(path=private_copy(url, self, skip=(".lock",))))
        name = url.param("collection")
        known = [c.name for c in self.client.get_collections().collections]
        if not name or name not in known:
            raise missing_collection(url.url, "collection", name, known)
        self.name = name
        self.local = not url.server
        self.vector = url.param("vector")  # a named vector, when the collection has several

    def recorded_model(self) -> str | None:
        return None

    def _page_size(self, page_size: int) -> int:
        """Local mode holds every point in memory and sorts them all again at each
        ``scroll`` call (100,000 points in pages of 1,000 took 6.4 s, against 1.5 s in one
        call): it is read in one call. A server is read in pages of ``page_size``."""
        if self.local:
            return max(page_size, self.client.count(self.name, exact=True).count)
        return page_size

    def iter_pages(self, page_size: int = PAGE_SIZE) -> Iterator[StorePage]:
        offset: Any = None
        limit = self._page_size(page_size)
        while True:
            points, offset = self.client.scroll(self.name, limit=limit, offset=offset,
                                                with_payload=True, with_vectors=False)
            page = StorePage([], [], [])
            for p in points:
                text, meta = split_payload(p.payload)
                page.ids.append(str(p.id))
                page.texts.append(text)
                page.metadata.append(meta)
            yield page
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

    def _params(self) -> tuple[Any, Any]:
        """The searched vector's parameters and the collection's HNSW settings."""
        config = self.client.get_collection(self.name).config
        vectors = config.params.vectors
        if isinstance(vectors, dict):
            vectors = vectors.get(self.vector) if self.vector else (
                next(iter(vectors.values())) if len(vectors) == 1 else None)
        return vectors, getattr(vectors, "hnsw_config", None) or config.hnsw_config

    def vector_metric(self) -> str:
        vectors, _ = self._params()
        distance = str(getattr(getattr(vectors, "distance", None), "value", "")).lower()
        metric = {"cosine": "cosine", "dot": "ip", "euclid": "l2"}.get(distance)
        if metric is None:
            raise VectorsUnavailable(f"collection {self.name} ranks by {distance or 'an unknown'} "
                                     "distance; the exact check knows cosine, dot and euclid")
        return metric

    def index_settings(self) -> dict[str, Any]:
        _, hnsw = self._params()
        if type(getattr(self.client, "_client", None)).__name__ != "QdrantRemote":
            # Local mode (qdrant_client's own engine) compares every point: no graph.
            return index_settings("flat", {"mode": "local (every point compared)"}, exact=True)
        m, ef = getattr(hnsw, "m", None), getattr(hnsw, "ef_construct", None)
        settings = {"m": m, "ef_construct": ef,
                    "full_scan_threshold": getattr(hnsw, "full_scan_threshold", None)}
        remedy = (f"search with a larger hnsw_ef (Qdrant's default is ef_construct, now {ef}): "
                  "query_points(..., search_params=SearchParams(hnsw_ef=256)); or raise m (now "
                  f"{m}) and ef_construct: update_collection(hnsw_config=HnswConfigDiff(m=32, "
                  "ef_construct=256)) rebuilds the graph")
        return index_settings("hnsw", settings, remedy)

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        offset: Any = None
        while True:
            points, offset = self.client.scroll(self.name, limit=page_size, offset=offset,
                                                with_payload=False, with_vectors=True)
            ids, vectors = [], []
            for p in points:
                vector = p.vector
                if isinstance(vector, dict):
                    vector = (vector.get(self.vector) if self.vector
                              else next(iter(vector.values())) if len(vector) == 1 else None)
                if not isinstance(vector, list):
                    raise VectorsUnavailable(f"point {p.id} has no dense vector to read"
                                             + ("" if self.vector else " (name one with ?vector=)"))
                ids.append(str(p.id))
                vectors.append(vector)
            if ids:
                yield ids, vectors
            if offset is None:
                return
