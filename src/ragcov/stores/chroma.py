"""Chroma: a persistent folder (``chroma:///PATH``) or a server (``chroma+http://HOST:PORT``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ragcov.fields import Ranked
from ragcov.stores.base import StoreChunk, missing_collection, require
from ragcov.stores.urls import StoreURL, local_folder

# Chroma pages by offset, and each page re-walks the rows before it: with pages of
# 1,000 a million rows took 226 s, against 35 s in pages of 10,000 (benchmarks/bench_stores.py).
CHROMA_PAGE = 10_000


class ChromaStore:
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

    def iter_chunks(self, page_size: int = CHROMA_PAGE) -> Iterator[StoreChunk]:
        offset = 0
        while True:
            page = self.collection.get(limit=page_size, offset=offset,
                                       include=["documents", "metadatas"])
            ids = page["ids"]
            for cid, text, meta in zip(ids, page["documents"] or [None] * len(ids),
                                       page["metadatas"] or [None] * len(ids)):
                yield StoreChunk(str(cid), text or "", dict(meta or {}))
            if len(ids) < page_size:
                return
            offset += len(ids)

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
