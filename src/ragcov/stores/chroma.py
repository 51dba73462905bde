"""Chroma: a persistent folder (``chroma:///PATH``) or a server (``chroma+http://HOST:PORT``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragcov.fields import Ranked
from ragcov.stores.base import (
    PagedRows,
    StorePage,
    VectorsUnavailable,
    index_settings,
    missing_collection,
    require,
)
from ragcov.stores.urls import StoreURL, changed_while_read, folder_state, local_folder

# Chroma pages by offset, and each page re-walks the rows before it: with pages of
# 1,000 a million rows took 226 s, against 35 s in pages of 10,000 (benchmarks/bench_stores.py).
CHROMA_PAGE = 10_000
# Chroma's own defaults for a collection made without settings (chromadb 1.x).
CHROMA_HNSW_DEFAULTS = {"space": "l2", "max_neighbors": 16, "ef_construction": 100,
                        "ef_search": 100}
# The settings as older collections keep them, in their metadata.
_LEGACY_HNSW = {"space": "hnsw:space", "max_neighbors": "hnsw:M",
                "ef_construction": "hnsw:construction_ef", "ef_search": "hnsw:search_ef"}


class ChromaStore(PagedRows):
    """Pages through ``collection.get(limit, offset)``; searches with ``collection.query``.

    Chroma records the collection's embedding function (name and model) in its
    configuration; a sentence-transformers one is read back so queries are embedded
    with the same model. Scores are ``-distance``: higher is nearer, in Chroma's order.
    """

    def __init__(self, url: StoreURL) -> None:
        chromadb = require("chromadb", "Chroma")
        self.url = url.url
        if url.server:
            from urllib.parse import urlsplit

            server = urlsplit(url.server)
            self.client = chromadb.HttpClient(host=server.hostname or "127.0.0.1",
                                              port=server.port or 8000,
                                              ssl=server.scheme == "https")
        else:
            local_folder(url, "chroma.sqlite3", "a Chroma folder")
            self.client = chromadb.PersistentClient(path=url.path)
        name = url.param("collection")
        known = [c.name if hasattr(c, "name") else str(c) for c in self.client.list_collections()]
        if not name or name not in known:
            raise missing_collection(url.url, "collection", name, known)
        self.collection = self.client.get_collection(name)
        self.name = name
        self.folder = None if url.server else Path(url.path or "")

    def _function(self) -> dict[str, Any]:
        config = getattr(self.collection, "configuration_json", None) or {}
        ef = config.get("embedding_function") or {}
        return ef if isinstance(ef, dict) else {}

    def recorded_model(self) -> str | None:
        ef = self._function()
        model = (ef.get("config") or {}).get("model_name")
        return str(model) if ef.get("name") == "sentence_transformer" and model else None

    def normalizes(self) -> bool:
        return bool((self._function().get("config") or {}).get("normalize_embeddings"))

    def _state(self) -> tuple[Any, ...]:
        """What changes when the collection is written: its row count and, for a folder,
        its SQLite files (a write between two pages moves rows across the pages)."""
        files = () if self.folder is None else folder_state(self.folder, "chroma.sqlite3*")
        return (self.collection.count(), files)

    def iter_pages(self, page_size: int = CHROMA_PAGE) -> Iterator[StorePage]:
        """Every row, in pages as Chroma returns them (columns); refused when the collection
        was written between the first page and the last (the rows would be no state the
        collection was ever in)."""
        offset = 0
        before = self._state()
        while True:
            page = self.collection.get(limit=page_size, offset=offset,
                                       include=["documents", "metadatas"])
            ids = page["ids"]
            texts = page["documents"] or [None] * len(ids)
            metas = page["metadatas"] or [None] * len(ids)
            yield StorePage([str(cid) for cid in ids], [text or "" for text in texts],
                            [dict(meta) if meta else {} for meta in metas])
            if len(ids) < page_size:
                break
            offset += len(ids)
        # One page is one query, one consistent state; across pages a write may land.
        if offset and self._state() != before:
            raise changed_while_read(self.url)

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        got = self.collection.get(ids=list(ids), include=["embeddings"])
        vectors = got.get("embeddings")
        held = dict(zip(map(str, got["ids"]), vectors if vectors is not None else []))
        return [None if held.get(i) is None else [float(x) for x in held[i]] for i in ids]

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        reply = self.collection.query(query_embeddings=[list(v) for v in vectors], n_results=k,
                                      include=["distances"])
        return [[(str(i), -float(d)) for i, d in zip(ids, dists)]
                for ids, dists in zip(reply["ids"], reply["distances"])]

    def describe(self) -> dict[str, Any]:
        return {"store": "chroma", "collection": self.name}

    def _hnsw(self) -> dict[str, Any]:
        """The collection's HNSW settings: its configuration, else its metadata (older
        collections), else Chroma's defaults."""
        config = getattr(self.collection, "configuration_json", None) or {}
        hnsw = config.get("hnsw") if isinstance(config.get("hnsw"), dict) else {}
        meta = self.collection.metadata or {}
        out = {}
        for key, default in CHROMA_HNSW_DEFAULTS.items():
            value = hnsw.get(key)
            out[key] = value if value is not None else meta.get(_LEGACY_HNSW[key], default)
        return out

    def vector_metric(self) -> str:
        return {"cosine": "cosine", "ip": "ip"}.get(str(self._hnsw()["space"]), "l2")

    def index_settings(self) -> dict[str, Any]:
        h = self._hnsw()
        settings = {"max_neighbors (M)": h["max_neighbors"], "ef_construction": h["ef_construction"],
                    "ef_search": h["ef_search"], "space": h["space"]}
        remedy = (f"raise ef_search (now {h['ef_search']}; Chroma's default is 100): "
                  f"collection.modify(configuration={{'hnsw': {{'ef_search': 100}}}}); "
                  f"max_neighbors (now {h['max_neighbors']}) and ef_construction (now "
                  f"{h['ef_construction']}) are fixed when a collection is made: copy it into one "
                  "made with larger ones (defaults 16 and 100)")
        return index_settings("hnsw", settings, remedy)

    def iter_vectors(self, page_size: int = CHROMA_PAGE) -> Iterator[tuple[list[str], Any]]:
        offset = 0
        while True:
            page = self.collection.get(limit=page_size, offset=offset, include=["embeddings"])
            ids = [str(i) for i in page["ids"]]
            vectors = page.get("embeddings")
            if ids and (vectors is None or len(vectors) != len(ids)):
                raise VectorsUnavailable(f"collection {self.name} gave no embeddings for its rows")
            if ids:
                yield ids, vectors
            if len(ids) < page_size:
                return
            offset += len(ids)
