"""Milvus: Milvus Lite (``milvus:///PATH.db``) or a server (``milvus+http://HOST:PORT``)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.stores.base import (
    PAGE_SIZE,
    StoreChunk,
    VectorsUnavailable,
    index_settings,
    missing_collection,
    require,
)
from ragcov.stores.payload import split_payload
from ragcov.stores.urls import StoreURL, private_copy


def _release_lite(client: Any, uri: str) -> None:
    """Stop the Milvus Lite server pymilvus started for ``uri`` (ragcov's private copy).

    pymilvus keeps a file's server, a thread holding the file open, until the process
    exits, whatever ``client.close()`` did: a long process kept one per store it opened,
    and the copy's folder, removed under a running server, was written again by it and
    left in the temporary folder."""
    with contextlib.suppress(Exception):
        client.close()
    with contextlib.suppress(Exception):
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(uri)


SERVER_TIMEOUT_S = 10.0  # a server that is down is reported after this, not waited on
SIMILARITIES = ("IP", "COSINE")  # metrics where a larger distance is nearer


def lite_store(url: StoreURL) -> None:
    """Refuse a path Milvus Lite would not read but write: it makes a store at any new path.

    pymilvus takes a path not ending in ``.db`` for a server address; Milvus Lite 3 keeps
    a store as a ``.db`` folder (``collections/`` inside), earlier versions as a ``.db`` file.
    """
    path = Path(str(url.path))
    if not path.name.endswith(".db"):
        raise RagcovError(f"{url.url}: Milvus Lite opens a store whose name ends in .db "
                          "(a server is milvus+http://HOST:PORT)")
    if path.is_dir() and not (path / "collections").is_dir():
        raise RagcovError(f"{url.url}: {path} is not a Milvus Lite store (no collections/ in it); "
                          "ragcov reads stores and never makes one")


class MilvusStore:
    """Pages through ``query_iterator``; the primary key is the chunk id.

    Scores keep Milvus's order: the distance for IP and COSINE, its negation for L2.
    """

    def __init__(self, url: StoreURL) -> None:
        pymilvus = require("pymilvus", "Milvus")
        self.url = url.url
        if not url.server:
            lite_store(url)
        # Milvus Lite locks its store while a client is open: ragcov reads a copy, so the app
        # (and its tests) can open its store while a run searches it.
        uri = url.server or private_copy(url, self, skip=("*.lock",))
        self.client = pymilvus.MilvusClient(uri=uri, timeout=SERVER_TIMEOUT_S)
        if not url.server:
            # Registered after the copy's removal, so run before it (finalizers of one object
            # run last first): the copy's server is stopped, then its folder removed.
            self.copy = uri
            weakref.finalize(self, _release_lite, self.client, uri)
        name = url.param("collection")
        known = list(self.client.list_collections())
        if not name or name not in known:
            raise missing_collection(url.url, "collection", name, known)
        self.name = name
        info = self.client.describe_collection(name)
        fields = info.get("fields", [])
        self.pk = next((f["name"] for f in fields if f.get("is_primary")), "id")
        self.pk_is_int = any(f.get("is_primary") and "INT" in str(f.get("type", "")).upper()
                             for f in fields)
        vectors = [f for f in fields if "VECTOR" in str(f.get("type", "")).upper()]
        self.vector = url.param("vector") or (vectors[0]["name"] if vectors else "vector")
        self.outputs = [f["name"] for f in fields
                        if f["name"] != self.pk and "VECTOR" not in str(f.get("type", "")).upper()]
        if info.get("enable_dynamic_field"):
            self.outputs.append("*")
        self.client.load_collection(name)
        self.metric = self._metric()

    def _metric(self) -> str:
        for index in self.client.list_indexes(self.name):
            detail = self.client.describe_index(self.name, index)
            if detail.get("field_name") == self.vector:
                return str(detail.get("metric_type", "L2")).upper()
        return "L2"

    def recorded_model(self) -> str | None:
        return None

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]:
        it = self.client.query_iterator(self.name, batch_size=page_size,
                                        output_fields=[self.pk, *self.outputs])
        try:
            while page := it.next():
                for row in page:
                    row = {key: v for key, v in dict(row).items() if key != self.vector}
                    cid = row.pop(self.pk)
                    text, meta = split_payload(row)
                    yield StoreChunk(str(cid), text, meta)
        finally:
            it.close()

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        keys = [int(i) for i in ids if i.lstrip("-").isdigit()] if self.pk_is_int else list(ids)
        if not keys:
            return [None] * len(ids)
        rows = self.client.get(self.name, ids=keys, output_fields=[self.pk, self.vector])
        held = {str(r[self.pk]): r.get(self.vector) for r in rows}
        return [None if held.get(i) is None else [float(x) for x in held[i]] for i in ids]

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        reply = self.client.search(self.name, data=[list(v) for v in vectors], limit=k,
                                   anns_field=self.vector, output_fields=[self.pk])
        sign = 1.0 if self.metric in SIMILARITIES else -1.0
        # A hit is keyed by the primary key's own name (``pk`` where langchain-milvus made the
        # collection), not always ``id``.
        return [[(str(hit[self.pk]), sign * float(hit["distance"])) for hit in hits] for hits in reply]

    def describe(self) -> dict[str, Any]:
        return {"store": "milvus", "collection": self.name, "metric": self.metric}

    def vector_metric(self) -> str:
        return {"IP": "ip", "COSINE": "cosine", "L2": "l2"}.get(self.metric) or _no_metric(self.metric)

    def index_settings(self) -> dict[str, Any]:
        for index in self.client.list_indexes(self.name):
            detail = self.client.describe_index(self.name, index)
            if detail.get("field_name") != self.vector:
                continue
            kind = str(detail.get("index_type", "")).upper()
            settings = {k: v for k, v in detail.items()
                        if k not in ("field_name", "index_name", "metric_type")}
            if kind == "HNSW":
                remedy = (f"search with a larger ef: search(..., search_params={{'params': "
                          f"{{'ef': 256}}}}) (ef must be at least the limit); M (now "
                          f"{detail.get('M')}) and efConstruction (now {detail.get('efConstruction')})"
                          " are fixed when the index is built: drop_index and create_index again")
                return index_settings("hnsw", settings, remedy)
            if kind.startswith("IVF"):
                remedy = (f"search more lists: search_params={{'params': {{'nprobe': 64}}}} "
                          f"(nlist is {detail.get('nlist')})")
                return index_settings("ivf", settings, remedy)
            return index_settings(kind.lower() or "unknown", settings, None, exact=kind == "FLAT")
        return index_settings("unknown", {}, None)

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        it = self.client.query_iterator(self.name, batch_size=page_size,
                                        output_fields=[self.pk, self.vector])
        try:
            while page := it.next():
                ids, vectors = [], []
                for row in page:
                    vector = row.get(self.vector)
                    if vector is None:
                        raise VectorsUnavailable(f"row {row.get(self.pk)} has no {self.vector}")
                    ids.append(str(row[self.pk]))
                    vectors.append(vector)
                yield ids, vectors
        finally:
            it.close()


def _no_metric(metric: str) -> str:
    raise VectorsUnavailable(f"the collection ranks by {metric}; the exact check knows L2, IP "
                             "and COSINE")
