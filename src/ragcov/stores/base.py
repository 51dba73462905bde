"""What every store module provides, and the reading of its rows as chunk fields."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ragcov.errors import RagcovError
from ragcov.fields import STORE_DOC_KEYS, Ranked, store_doc_id

T = TypeVar("T")

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

    For the exact check of ``ragcov probe`` (where a chunk is lost: the embedding or the
    index), a store also gives ``iter_vectors`` (every stored vector, in pages of
    ``(ids, vectors)``; :class:`VectorsUnavailable` when it cannot), ``vector_metric``
    (``cosine``, ``ip`` or ``l2``: what its own search ranks by) and ``index_settings``
    (its index kind and settings, read where the store exposes them, and the remedy).
    """

    url: str

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]: ...

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]: ...

    def recorded_model(self) -> str | None: ...

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]: ...

    def describe(self) -> dict[str, Any]: ...


class VectorsUnavailable(Exception):
    """The store cannot give back the vectors it searches (an index kind that keeps no
    copy, a row without a vector): the exact check is skipped, and this says why."""


def index_settings(index: str, settings: dict[str, Any] | None = None, remedy: str | None = None,
                   exact: bool = False) -> dict[str, Any]:
    """What a store's ``index_settings()`` reports: the index kind (``hnsw``, ``ivf``,
    ``flat`` ...), its settings as the store names them, whether its search is exact, and
    the remedy for chunks it hides, worded with the store's own settings."""
    return {"index": index, "settings": dict(settings or {}), "exact": exact, "remedy": remedy}


def vector_pages(rows: Iterator[tuple[str, Any]], page_size: int) -> Iterator[tuple[list[str], list[Any]]]:
    """``(id, vector)`` rows grouped in pages: what ``iter_vectors`` yields."""
    ids: list[str] = []
    vectors: list[Any] = []
    for cid, vector in rows:
        ids.append(cid)
        vectors.append(vector)
        if len(ids) >= page_size:
            yield ids, vectors
            ids, vectors = [], []
    if ids:
        yield ids, vectors


# ``id_key=store``: the store's own ids, whatever the metadata holds.
STORE_IDS = "store"
# Metadata keys an app keeps its own chunk id in, found without being named: LangChain
# and LlamaIndex apps whose store wants UUIDs keep theirs there.
DETECTED_ID_KEYS = ("chunk_id",)


@dataclass(slots=True)
class Reading:
    """How a store's rows were read, said in the run's header line.

    ``to_app`` maps the store's ids to the app's where the app's ids come from the
    metadata; ``embed_texts`` holds, by chunk id, the text a framework embedded where it is
    not the chunk's text (LlamaIndex's metadata template), for the model check.
    """

    framework: str | None = None
    id_key: str | None = None
    id_origin: str = "store"  # "store", "given" (id_key) or "detected"
    doc_key: str | None = None
    doc_keys_used: dict[str, int] = field(default_factory=dict)
    embed_texts: dict[str, str] = field(default_factory=dict)
    to_app: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        how = "named" if self.id_origin == "given" else "detected"
        ids = ("chunk ids the store's own" if self.id_origin == "store" else
               f"chunk ids from metadata {self.id_key!r} ({how})")
        if self.doc_keys_used:
            docs = "documents from " + ", ".join(
                f"{key!r}" if key != "" else "the chunk id" for key in self.doc_keys_used)
        else:
            docs = "no documents"
        framework = f"{self.framework} rows (_node_content): " if self.framework else ""
        return f"{framework}{ids}, {docs}"


def _app_id(own_id: str, metadata: dict[str, Any], key: str, given: bool, url: str) -> str:
    value = metadata.get(key)
    if value is None or value == "" or isinstance(value, (bool, list, dict)):
        keys = ", ".join(sorted(map(str, metadata))[:20]) or "none"
        how = ("name the key that holds the app's chunk ids with ?id_key=KEY, or use the store's "
               "own ids with ?id_key=store") if not given else (
               "name another key with ?id_key=KEY (id_key in the config), or ?id_key=store")
        raise RagcovError(f"{url}: row {own_id} has no metadata {key!r} "
                          f"({'named as the chunk id key' if given else 'which earlier rows have'}); "
                          f"its metadata keys: {keys}; {how}")
    return str(value)


@dataclass(slots=True)
class StorePage:
    """A page of rows as columns: the store's ids, texts and metadata, in store order.

    What a store reads from its client in one call, kept as lists (no object per row),
    so the corpus is built column by column.
    """

    ids: list[str]
    texts: list[str]
    metadata: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self) -> Iterator[StoreChunk]:
        return map(StoreChunk, self.ids, self.texts, self.metadata)


def pages_of(chunks: Iterator[StoreChunk], page_size: int = PAGE_SIZE) -> Iterator[StorePage]:
    """Rows in pages: the pages of a store that reads a row at a time."""
    page = StorePage([], [], [])
    for chunk in chunks:
        page.ids.append(chunk.id)
        page.texts.append(chunk.text)
        page.metadata.append(chunk.metadata)
        if len(page.ids) >= page_size:
            yield page
            page = StorePage([], [], [])
    if page.ids:
        yield page


def read_ahead(items: Iterator[T], cancel: Callable[[], object] | None = None) -> Iterator[T]:
    """``items``, with the next one already being read on a thread while the caller works
    on this one: a store's client waits on its server or its files without the interpreter
    lock, so that wait and the caller's turning rows into chunks overlap. One item ahead,
    no more: memory stays a page. An error reading an item is raised where it is taken.

    A caller that stops (Ctrl-C, an error, a break) waits for the read in flight, after
    ``cancel`` asked it to end: a database client cancels its query only from the thread
    that waits on it, and that is no longer the main one."""
    from concurrent.futures import ThreadPoolExecutor

    done = object()
    with ThreadPoolExecutor(1, thread_name_prefix="ragcov-read") as pool:
        coming = pool.submit(next, items, done)
        try:
            while (item := coming.result()) is not done:
                coming = pool.submit(next, items, done)
                yield item
        finally:
            if not coming.done() and cancel is not None:
                with contextlib.suppress(Exception):
                    cancel()


def store_pages(store: VectorStore) -> Iterator[StorePage]:
    """The store's rows as pages: its own ``iter_pages`` where it reads columns, else its rows."""
    reader = getattr(store, "iter_pages", None)
    return reader() if reader is not None else pages_of(store.iter_chunks())


@dataclass(slots=True)
class ChunkColumns:
    """A page of rows as ``Chunk`` fields, column by column (``ragcov.corpus`` zips them)."""

    ids: list[str]
    texts: list[str]
    doc_ids: list[str]
    positions: list[int]
    titles: list[str | None]
    metadata: list[dict[str, Any]]


def _framed(page: StorePage, reading: Reading) -> tuple[list[str], list[dict[str, Any]], dict[int, str]]:
    """The page's texts and metadata as the framework that wrote them meant them, and the
    embedded text of the rows where it differs (by row)."""
    from ragcov.stores.payload import NODE_CONTENT, llamaindex_row

    if not any(NODE_CONTENT in meta for meta in page.metadata):  # no row a framework serialised
        return page.texts, page.metadata, {}
    texts, metadata, embedded = list(page.texts), list(page.metadata), {}
    for i, (text, meta) in enumerate(zip(texts, metadata)):
        framed = llamaindex_row(text, meta)
        if framed.framework and reading.framework is None:
            reading.framework = framed.framework
        texts[i], metadata[i] = framed.text, framed.metadata
        if framed.embed_text is not None:
            embedded[i] = framed.embed_text
    return texts, metadata, embedded


def chunk_columns(store: VectorStore, doc_key: str | None = None, id_key: str | None = None,
                  reading: Reading | None = None) -> Iterator[ChunkColumns]:
    """Each page of rows as ``Chunk`` fields: id, document, position in it (store order), title.

    Rows a framework wrote are read as it meant them (:func:`ragcov.stores.payload.llamaindex_row`);
    the chunk id is the metadata's ``id_key`` when named, else the first row's
    ``chunk_id`` when it has one (every row must then), else the store's own id; the
    document is the metadata's ``doc_key`` when named, else the first of
    :data:`ragcov.fields.STORE_DOC_KEYS` a row has, else the chunk's id. ``reading``
    (when given) is filled with what was found, for the run header. One pass over each
    page's rows, so a refusal names the first row at fault, in store order.
    """
    reading = reading if reading is not None else Reading()
    reading.doc_key = doc_key
    given = bool(id_key) and id_key != STORE_IDS
    key: str | None = id_key if given else None
    doc_keys = (doc_key,) if doc_key else STORE_DOC_KEYS
    positions: dict[str, int] = {}
    used = reading.doc_keys_used
    first = True
    for page in store_pages(store):
        if not len(page):
            continue
        texts, metadata, embedded = _framed(page, reading)
        if first and not id_key:
            key = next((k for k in DETECTED_ID_KEYS if metadata[0].get(k) not in (None, "")), None)
        first = False
        ids = page.ids if key is None else []
        doc_ids: list[str] = []
        places: list[int] = []
        titles: list[str | None] = []
        for cid, meta in zip(page.ids, metadata):
            if key is not None:
                own, cid = cid, _app_id(cid, meta, key, given, store.url)
                reading.to_app[own] = cid
                ids.append(cid)
            for k in doc_keys:
                value = meta.get(k)
                if value is not None and value != "":
                    doc = store_doc_id(value, k, cid)
                    break
            else:
                k, doc = "", cid
            used[k] = used.get(k, 0) + 1
            pos = positions.get(doc, 0)
            positions[doc] = pos + 1
            doc_ids.append(doc)
            places.append(pos)
            title = meta.get("title")
            titles.append(str(title) if title else None)
        for i, text in embedded.items():
            reading.embed_texts[ids[i]] = text
        yield ChunkColumns(ids, texts, doc_ids, places, titles, metadata)
    if key is not None:
        reading.id_key = key
        reading.id_origin = "given" if given else "detected"


class PagedRows:
    """``iter_chunks`` for a store that reads pages of columns (``iter_pages``): each
    page's rows, at the page size the store reads best unless one is given."""

    iter_pages: Callable[..., Iterator[StorePage]]

    def iter_chunks(self, page_size: int | None = None) -> Iterator[StoreChunk]:
        pages = self.iter_pages() if page_size is None else self.iter_pages(page_size)
        for page in pages:
            yield from page.rows()


class AppIds:
    """A store whose chunks the app names by a metadata key: the store's search, vectors and
    pages speak the app's ids, so every command sees one set of ids."""

    def __init__(self, store: VectorStore, to_app: dict[str, str]) -> None:
        self.store = store
        self.to_app = to_app
        self.to_store = {app: own for own, app in to_app.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        return [[(self.to_app.get(cid, cid), score) for cid, score in ranked]
                for ranked in self.store.search(vectors, k)]

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        return self.store.stored_vectors([self.to_store.get(i, i) for i in ids])

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        reader = getattr(self.store, "iter_vectors", None)
        if reader is None:
            raise VectorsUnavailable("the store gives no vectors to read")
        for ids, vectors in reader(page_size):
            yield [self.to_app.get(i, i) for i in ids], vectors


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
