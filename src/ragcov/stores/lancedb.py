"""LanceDB: ``lancedb:///PATH?table=NAME`` (the folder ``lancedb.connect`` opens).

Rows stream out of a scan as Arrow record batches, so a large table is read a page at
a time. The embedding model is read from the table's embedding-function metadata
(LanceDB's registry writes it) when the table was built that way.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

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
from ragcov.stores.urls import StoreURL


class LanceDBStore:
    """The id column is ``id`` (``?id=COLUMN`` names another); vectors are never read."""

    def __init__(self, url: StoreURL) -> None:
        lancedb = require("lancedb", "LanceDB")
        self.url = url.url
        self.db = lancedb.connect(url.path)
        name = url.param("table", "collection")
        listed = self.db.list_tables() if hasattr(self.db, "list_tables") else self.db.table_names()
        known = list(getattr(listed, "tables", listed))
        if not name or name not in known:
            raise missing_collection(url.url, "table", name, known)
        self.table = self.db.open_table(name)
        # Every read of the run (chunks, vectors, search) sees this one version of the
        # table, whatever the app writes meanwhile: a consistent snapshot by construction.
        with contextlib.suppress(AttributeError, NotImplementedError):
            self.table.checkout(self.table.version)
        self.name = name
        self.id_column = url.param("id") or "id"
        self.vector_column = url.param("vector")
        names = self.table.schema.names
        self.columns = [c for c in names if c != (self.vector_column or "vector")
                        and not c.startswith("_")]

    def recorded_model(self) -> str | None:
        raw = (self.table.schema.metadata or {}).get(b"embedding_functions")
        if not raw:
            return None
        try:
            for fn in json.loads(raw):
                model = (fn.get("model") or {}).get("name")
                if model:
                    return str(model)
        except (ValueError, AttributeError, TypeError):
            return None
        return None

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]:
        reader = self.table.search().select(self.columns).limit(None).to_batches(page_size)
        for batch in reader:
            for row in batch.to_pylist():
                cid = row.pop(self.id_column)
                text, meta = split_payload(row)
                yield StoreChunk(str(cid), text, meta)

    def _vector_name(self) -> str | None:
        import pyarrow as pa

        return self.vector_column or next(
            (f.name for f in self.table.schema if pa.types.is_fixed_size_list(f.type)), None)

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        import pyarrow as pa

        schema = self.table.schema
        column = self._vector_name()
        if column is None or self.id_column not in schema.names:
            return [None] * len(ids)
        if pa.types.is_integer(schema.field(self.id_column).type):
            values = ", ".join(str(int(i)) for i in ids if i.lstrip("-").isdigit())
        else:
            values = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
        if not values:
            return [None] * len(ids)
        rows = (self.table.search().where(f"`{self.id_column}` IN ({values})")
                .select([self.id_column, column]).limit(len(ids)).to_arrow().to_pylist())
        held = {str(r[self.id_column]): r[column] for r in rows}
        return [None if held.get(i) is None else [float(x) for x in held[i]] for i in ids]

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        out: list[Ranked] = []
        for v in vectors:
            query = self.table.search(list(v), vector_column_name=self.vector_column)
            # ``_distance`` named in the projection: without it lance logs a deprecation
            # line per query on stderr (from Rust, so no Python filter reaches it).
            rows = query.select([self.id_column, "_distance"]).limit(k).to_arrow().to_pylist()
            out.append([(str(r[self.id_column]), -float(r["_distance"])) for r in rows])
        return out

    def describe(self) -> dict[str, Any]:
        return {"store": "lancedb", "table": self.name}

    def vector_metric(self) -> str:
        return "l2"  # a table's search ranks by L2 unless the query names another metric

    def index_settings(self) -> dict[str, Any]:
        column = self._vector_name()
        for index in self.table.list_indices():
            if column in list(getattr(index, "columns", []) or []):
                kind = str(getattr(index, "index_type", "vector index"))
                remedy = ("search with more partitions and a refine step: "
                          "table.search(v).nprobes(50).refine_factor(10) (LanceDB's nprobes "
                          "default is 20), or rebuild the index with more num_partitions")
                return index_settings(kind.lower(), {"index_type": kind,
                                                     "name": getattr(index, "name", None)}, remedy)
        return index_settings("flat", {"index": "none (every row compared)"}, exact=True)

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        column = self._vector_name()
        if column is None or self.id_column not in self.table.schema.names:
            raise VectorsUnavailable(f"table {self.name} has no vector column to read (name it "
                                     "with ?vector=COLUMN) or no id column")
        reader = self.table.search().select([self.id_column, column]).limit(None).to_batches(page_size)
        for batch in reader:
            rows = batch.to_pydict()
            vectors = rows[column]
            if any(v is None for v in vectors):
                raise VectorsUnavailable(f"table {self.name} has rows without a vector")
            yield [str(i) for i in rows[self.id_column]], vectors
