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

from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.stores.base import (
    PAGE_SIZE,
    PagedRows,
    StorePage,
    VectorsUnavailable,
    index_settings,
    missing_collection,
    read_ahead,
    require,
)
from ragcov.stores.payload import TEXT_KEYS, split_payload
from ragcov.stores.urls import StoreURL

# Rows per Arrow batch while enumerating. Read as columns, 100,000 rows take 0.06-0.13 s
# in batches of 1,000 to 100,000 alike (one process, load average 4.5): the batch only
# bounds what sits in memory at once.
LANCE_PAGE = 10_000


def _text_column(batch: Any, id_column: str) -> str | None:
    """The column every row of ``batch`` takes its text from, where one does: the first
    of :data:`TEXT_KEYS` present, a string column with no null, and no ``metadata``
    column to merge (else None: the rows are split one by one)."""
    import pyarrow as pa

    names = batch.schema.names
    if "metadata" in names or id_column not in names:
        return None
    name = next((k for k in TEXT_KEYS if k in names and k != id_column), None)
    if name is None:
        return None
    column = batch.column(name)
    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) or column.null_count:
        return None
    return name


class LanceDBStore(PagedRows):
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
        if self.id_column not in names:
            shown = ", ".join(n for n in names if not n.startswith("_")) or "none"
            raise RagcovError(f"{url.url}: table {name!r} has no column {self.id_column!r} to take "
                              f"chunk ids from; its columns: {shown}; name the id column with "
                              "?id=COLUMN")
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

    def iter_pages(self, page_size: int = LANCE_PAGE) -> Iterator[StorePage]:
        """The table's rows in Arrow batches, each turned into columns at once.

        Where the text is one string column with a value in every row (what a table
        built for search holds), each row's text is that column and its metadata is the
        other columns; else (no text column, a row without text, a ``metadata`` column to
        merge) every row goes through :func:`ragcov.stores.payload.split_payload`, whose
        rule the fast path follows.
        """
        reader = self.table.search().select(self.columns).limit(None).to_batches(page_size)
        batches = read_ahead(iter(reader))  # the next batch read while this one is turned
        try:
            for batch in batches:
                text = _text_column(batch, self.id_column)
                if text is None:
                    yield self._split_rows(batch)
                    continue
                ids = batch.column(self.id_column).to_pylist()
                names = [n for n in batch.schema.names if n not in (self.id_column, text)]
                columns = [batch.column(n).to_pylist() for n in names]
                metadata = ([dict(zip(names, values)) for values in zip(*columns)] if names
                            else [{} for _ in range(batch.num_rows)])
                yield StorePage([str(cid) for cid in ids], batch.column(text).to_pylist(),
                                metadata)
        finally:
            batches.close()

    def _split_rows(self, batch: Any) -> StorePage:
        page = StorePage([], [], [])
        for row in batch.to_pylist():
            cid = row.pop(self.id_column)
            text, meta = split_payload(row)
            page.ids.append(str(cid))
            page.texts.append(text)
            page.metadata.append(meta)
        return page

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
