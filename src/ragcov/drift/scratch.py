"""A vector store rebuilt into a scratch copy, so a drift run searches it as the store would.

``--retriever store`` is the store's own search: its index kind, distance and
settings. A relation needs that search over a transformed corpus, and the store
itself must never change (it is production's, or a colleague's), so each copy of
the corpus becomes a new store of the same engine in a temporary folder (Chroma,
LanceDB) or in memory (a FAISS index cloned from the store's, so an IVF keeps its
trained centroids), built with the store's settings:

- Chroma: the collection's HNSW (or SPANN) configuration and metadata;
- LanceDB: the table's schema (an integer id column becomes text, so added chunks
  can have ids of their own) and its vector index, made again with its index type
  and distance;
- FAISS: ``faiss.clone_index`` of the saved index, emptied and filled again.

A chunk the copy leaves as it was keeps the vector the store holds (never embedded
again); a changed or added chunk is embedded with the model the store's queries use
(settled against its vectors, as ``ragcov run --retriever store`` settles it). Qdrant,
Milvus, pgvector and LlamaIndex stores are refused: ``--retriever dense`` re-embeds
their texts with the store's model instead.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.drift.base import QueryMemo, Rebuilder
from ragcov.drift.relations import COPY_SUFFIX, NEW_VERSION
from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.user_warnings import warn

REBUILT = ("chroma", "lancedb", "faiss")
VECTOR_PAGE = 1000


class ScratchRetriever:
    """The scratch store's own search, with the queries embedded once for every copy."""

    def __init__(self, store: Any, queries: QueryMemo, fingerprint: dict[str, Any]) -> None:
        self.store = store
        self.queries = queries
        self._fingerprint = fingerprint

    def retrieve(self, texts: list[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        return self.store.search(self.queries(texts).tolist(), k)

    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint


class StoreRebuilder(Rebuilder):
    def __init__(self, corpus: Corpus, model: str | None, backend: str | None) -> None:
        from ragcov.retrievers import make_retriever

        store = getattr(corpus, "store", None)
        kind = store.describe().get("store") if store is not None else None
        if store is not None and kind not in REBUILT:
            raise RagcovError(f"{corpus.source}: drift rebuilds Chroma, LanceDB and FAISS stores into "
                              f"a scratch copy, not a {kind} store: give --retriever dense (its "
                              "texts re-embedded with the store's model) instead")
        self.base = make_retriever("store", corpus, model=model, backend=backend)
        self.kind = kind
        self.corpus = corpus
        self.store = store
        self.queries = QueryMemo(self.base.encoder.encode)
        self.held: dict[str, np.ndarray] | None = None    # content hash -> the store's vector
        self.new: dict[str, np.ndarray] = {}               # content hash -> embedded now
        self.embedded = 0
        self.folder = Path(tempfile.mkdtemp(prefix="ragcov-drift-"))
        self.made = 0

    def _held(self) -> dict[str, np.ndarray]:
        """The vectors the store holds, by the content hash of their chunk's text: a copy's
        chunk with the same text (unchanged, or a duplicate) is searched with the same one."""
        if self.held is None:
            chunks = self.corpus.chunks
            held: dict[str, np.ndarray] = {}
            for start in range(0, len(chunks), VECTOR_PAGE):
                part = chunks[start:start + VECTOR_PAGE]
                for c, v in zip(part, self.store.stored_vectors([c.id for c in part])):
                    if v is not None:
                        held.setdefault(c.hash, np.asarray(v, dtype=np.float32))
            self.held = held
        return self.held

    def vectors(self, copy: Corpus) -> np.ndarray:
        """The store's vector where the store holds the chunk's text; else embedded once."""
        held = self._held()
        todo = {c.hash: c.text for c in copy if c.hash not in held and c.hash not in self.new}
        if todo:
            vectors = self.base.encoder.encode(list(todo.values()))
            self.new.update(zip(todo, np.asarray(vectors, dtype=np.float32)))
            self.embedded += len(todo)
        return np.stack([held[c.hash] if c.hash in held else self.new[c.hash] for c in copy])

    def on(self, copy: Corpus) -> Any:
        vectors = self.vectors(copy)
        self.made += 1
        folder = self.folder / f"copy-{self.made}"
        if self.kind == "chroma":
            store = chroma_copy(self.store, folder, copy, vectors)
        elif self.kind == "lancedb":
            store = lancedb_copy(self.store, folder, copy, vectors)
        else:
            store = faiss_copy(self.store, copy, vectors)
        return ScratchRetriever(store, self.queries, self.base.fingerprint())

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _template_id(cid: str) -> str:
    """The stored chunk an added one was made from (its row gives the other columns)."""
    for suffix in (NEW_VERSION, COPY_SUFFIX):
        if cid.endswith(suffix):
            return cid[:-len(suffix)]
    return cid


def chroma_copy(source: Any, folder: Path, copy: Corpus, vectors: np.ndarray) -> Any:
    import chromadb

    from ragcov.stores.chroma import ChromaStore
    from ragcov.stores.urls import parse_store_url

    config = getattr(source.collection, "configuration_json", None) or {}
    settings = {key: config[key] for key in ("hnsw", "spann") if config.get(key)}
    client = chromadb.PersistentClient(path=str(folder))
    col = client.create_collection(source.name, configuration=settings or None,  # type: ignore[arg-type]
                                   metadata=source.collection.metadata or None)
    step = client.get_max_batch_size()
    for start in range(0, len(copy), step):
        part = copy.chunks[start:start + step]
        col.add(ids=[c.id for c in part], documents=[c.text for c in part],
                embeddings=vectors[start:start + len(part)].tolist(),
                metadatas=[dict(c.metadata) or {"doc_id": c.doc_id} for c in part])
    return ChromaStore(parse_store_url(f"chroma://{folder.resolve()}?collection={source.name}"))


def lancedb_copy(source: Any, folder: Path, copy: Corpus, vectors: np.ndarray) -> Any:
    import lancedb
    import pyarrow as pa

    from ragcov.stores.lancedb import LanceDBStore
    from ragcov.stores.payload import TEXT_KEYS
    from ragcov.stores.urls import parse_store_url

    schema = source.table.schema
    id_col = source.id_column
    vector_col = source.vector_column or next(
        (f.name for f in schema if pa.types.is_fixed_size_list(f.type)), None)
    text_col = next((k for k in TEXT_KEYS if k in schema.names
                     and pa.types.is_string(schema.field(k).type)), None)
    if vector_col is None or text_col is None or id_col not in schema.names:
        raise RagcovError(f"{source.url}: drift copies a LanceDB table with an {id_col!r} column, "
                          f"a text column ({', '.join(TEXT_KEYS)}) and a vector column; this "
                          f"table has {', '.join(schema.names)}")
    rows = {str(r[id_col]): r for r in source.table.to_arrow().to_pylist()}
    out = []
    for c, v in zip(copy, vectors):
        row = dict(rows.get(c.id) or rows.get(_template_id(c.id)) or {})
        row.update({id_col: c.id, text_col: c.text, vector_col: v.tolist()})
        out.append(row)
    fields = [pa.field(f.name, pa.string()) if f.name == id_col else f for f in schema]
    new_schema = pa.schema(fields, metadata=schema.metadata)
    db = lancedb.connect(str(folder))
    table = db.create_table(source.name, data=pa.Table.from_pylist(out, schema=new_schema))
    _copy_vector_index(source.table, table, vector_col)
    url = f"lancedb://{folder.resolve()}?table={source.name}&id={id_col}"
    if source.vector_column:
        url += f"&vector={source.vector_column}"
    return LanceDBStore(parse_store_url(url))


def _copy_vector_index(old: Any, new: Any, column: str) -> None:
    """The source table's vector index, made again on the copy with its type and distance."""
    for config in old.list_indices():
        if column not in list(config.columns):
            continue
        stats = old.index_stats(config.name)
        try:
            new.create_index(metric=stats.distance_type, vector_column_name=column,
                             index_type=stats.index_type)
        except Exception as exc:  # noqa: BLE001 - lance's own errors, any kind
            warn(f"{column}: the copy's {stats.index_type} index could not be built ({exc}); "
                 "the copy is searched without it")


def faiss_copy(source: Any, copy: Corpus, vectors: np.ndarray) -> Any:
    import faiss

    from ragcov.stores.faiss import FAISSStore

    index = faiss.clone_index(source.index)
    index.reset()
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    store = FAISSStore.__new__(FAISSStore)  # in memory: nothing to unpickle
    store.url, store.name, store.index, store.docstore = source.url, source.name, index, None
    store.positions = dict(enumerate(copy.ids))
    return store
