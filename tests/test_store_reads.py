"""A store's rows read as columns make the same corpus as the rows read one at a time.

The corpus of a store is built page by page, column by column
(:func:`ragcov.stores.base.chunk_columns`, :func:`ragcov.corpus.store_chunks`). The
construction it replaced, one row at a time, is kept below as the reference
(``row_chunks``, the earlier ``chunk_fields`` as it was): hypothesis draws rows (document
keys present, empty, missing or refused; titles; app chunk ids; LlamaIndex nodes; pages
of any size) and the two must give the same chunks (id, text, document, position, title,
metadata, content hash, in order), the same reading and the same refusal. Each store's own
column reading (LanceDB's Arrow batches, pgvector's JSON metadata, Qdrant local mode in
one call) is held to the rows its client returns, on real stores.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcov.corpus import Chunk, load_corpus, store_chunks
from ragcov.errors import RagcovError
from ragcov.fields import STORE_DOC_KEYS, FieldError, store_doc_id
from ragcov.stores.base import (
    DETECTED_ID_KEYS,
    STORE_IDS,
    Reading,
    StoreChunk,
    pages_of,
)
from ragcov.stores.payload import llamaindex_row, split_payload


# The construction before rows were read as columns, verbatim: the reference. ------------
def _doc_id_of(chunk: StoreChunk, doc_key: str | None = None) -> str:
    keys = (doc_key,) if doc_key else STORE_DOC_KEYS
    for key in keys:
        value = chunk.metadata.get(key)
        if value is not None and value != "":
            return store_doc_id(value, key, chunk.id)
    return chunk.id


def _app_id(row: StoreChunk, key: str, given: bool, url: str) -> str:
    value = row.metadata.get(key)
    if value is None or value == "" or isinstance(value, (bool, list, dict)):
        keys = ", ".join(sorted(map(str, row.metadata))[:20]) or "none"
        how = ("name the key that holds the app's chunk ids with ?id_key=KEY, or use the store's "
               "own ids with ?id_key=store") if not given else (
               "name another key with ?id_key=KEY (id_key in the config), or ?id_key=store")
        raise RagcovError(f"{url}: row {row.id} has no metadata {key!r} "
                          f"({'named as the chunk id key' if given else 'which earlier rows have'}); "
                          f"its metadata keys: {keys}; {how}")
    return str(value)


def chunk_fields(store, doc_key=None, id_key=None, reading=None):
    reading = reading if reading is not None else Reading()
    reading.doc_key = doc_key
    given = bool(id_key) and id_key != STORE_IDS
    key: str | None = id_key if given else None
    positions: dict[str, int] = {}
    first = True
    for raw in store.iter_chunks():
        framed = llamaindex_row(raw.text, raw.metadata)
        if framed.framework and reading.framework is None:
            reading.framework = framed.framework
        row = StoreChunk(raw.id, framed.text, framed.metadata)
        if first and not id_key:
            key = next((k for k in DETECTED_ID_KEYS if row.metadata.get(k) not in (None, "")), None)
        first = False
        cid = row.id
        if key is not None:
            cid = _app_id(row, key, given, store.url)
            reading.to_app[row.id] = cid
            row = StoreChunk(cid, row.text, row.metadata)
        if framed.embed_text is not None:
            reading.embed_texts[cid] = framed.embed_text
        doc_id = _doc_id_of(row, doc_key)
        used = next((k for k in ((doc_key,) if doc_key else STORE_DOC_KEYS)
                     if row.metadata.get(k) not in (None, "")), "")
        reading.doc_keys_used[used] = reading.doc_keys_used.get(used, 0) + 1
        pos = positions.get(doc_id, 0)
        positions[doc_id] = pos + 1
        title = row.metadata.get("title")
        yield {"id": cid, "text": row.text, "doc_id": doc_id, "position": pos,
               "title": str(title) if title else None, "metadata": row.metadata}
    if key is not None:
        reading.id_key = key
        reading.id_origin = "given" if given else "detected"


def row_chunks(store, doc_key=None, id_key=None, reading=None) -> list[Chunk]:
    return [Chunk(**row) for row in chunk_fields(store, doc_key, id_key, reading)]
# -----------------------------------------------------------------------------------------


class ListStore:
    """Rows held in a list, read by the construction under test: a stand-in for a store's
    client (the stores themselves are read for real below), so hypothesis can draw rows.
    ``paged`` gives them as pages of ``page`` rows (a store that reads columns), else one
    row at a time (a store that has only ``iter_chunks``)."""

    url = "list://rows"

    def __init__(self, rows: list[StoreChunk], page: int, paged: bool) -> None:
        self.rows, self.page = rows, page
        if paged:
            self.iter_pages = lambda: pages_of(iter(self.copy()), self.page)

    def copy(self) -> list[StoreChunk]:  # each read gets its own dicts, as a client's reply does
        return [StoreChunk(r.id, r.text, json.loads(json.dumps(r.metadata))) for r in self.rows]

    def iter_chunks(self):
        return iter(self.copy())


def outcome(build) -> tuple[str, Any]:
    reading = Reading()
    try:
        chunks = build(reading)
    except (RagcovError, FieldError) as exc:
        return "refused", (type(exc).__name__, str(exc))
    return "read", ([asdict(c) for c in chunks], asdict(reading))


values = st.one_of(st.none(), st.just(""), st.sampled_from(["d1", "d2", "doc 3"]),
                   st.integers(-3, 3), st.booleans(), st.just(["d1"]), st.just("  "))
meta_keys = st.sampled_from([*STORE_DOC_KEYS, "title", "chunk_id", "app_id", "page", "version"])


def _node(text: str, meta: dict, source: str | None) -> str:
    node: dict[str, Any] = {"text": text, "metadata": meta,
                            "excluded_embed_metadata_keys": [], "metadata_template": "{key}: {value}"}
    if source:
        node["relationships"] = {"1": {"node_id": source}}
    return json.dumps(node)


@st.composite
def store_rows(draw) -> list[StoreChunk]:
    n = draw(st.integers(0, 25))
    rows = []
    for i in range(n):
        meta = draw(st.dictionaries(meta_keys, values, max_size=4))
        if draw(st.integers(0, 9)) == 0:  # a row a LlamaIndex vector store wrote
            meta = {"_node_content": _node(f"node {i}", dict(meta), draw(st.sampled_from([None, "src"]))),
                    "_node_type": "TextNode", "doc_id": "None"}
        rows.append(StoreChunk(f"r{i}", draw(st.sampled_from(["", "a text", f"text {i}", "é ✓"])), meta))
    return rows


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=store_rows(), page=st.integers(1, 8), paged=st.booleans(),
       doc_key=st.sampled_from([None, "source", "page"]),
       id_key=st.sampled_from([None, STORE_IDS, "app_id", "chunk_id"]))
def test_columns_make_the_chunks_rows_made(rows, page, paged, doc_key, id_key) -> None:
    store = ListStore(rows, page, paged)
    old = outcome(lambda reading: row_chunks(store, doc_key, id_key, reading))
    new = outcome(lambda reading: list(store_chunks(store, doc_key, id_key, reading)))
    assert new == old


def test_a_hand_worked_page() -> None:
    rows = [StoreChunk("a", "one", {"source": "s.pdf", "title": "T"}),
            StoreChunk("b", "two", {"doc_id": "d"}),
            StoreChunk("c", "three", {"source": "s.pdf", "doc_id": ""}),
            StoreChunk("d", "four", {})]
    reading = Reading()
    chunks = list(store_chunks(ListStore(rows, 2, True), reading=reading))
    assert [(c.id, c.doc_id, c.position, c.title) for c in chunks] == [
        ("a", "s.pdf", 0, "T"), ("b", "d", 0, None), ("c", "s.pdf", 1, None), ("d", "d", 1, None)]
    assert chunks[0].hash == "7692c3ad3540bb80"  # sha256("one"), its first 16 hex digits
    assert reading.doc_keys_used == {"source": 2, "doc_id": 1, "": 1}


# Each store's columns against the rows its client returns. -------------------------------
def test_lancedb_batches_match_the_rows_split_one_by_one(tmp_path: Path) -> None:
    lancedb = pytest.importorskip("lancedb")
    import pyarrow as pa

    from ragcov.stores.urls import open_store

    db = lancedb.connect(str(tmp_path / "lance"))
    vec = pa.FixedSizeListArray.from_arrays(pa.array([0.5] * 12, pa.float32()), 2)
    tables = {  # the text column every row has, and the layouts read row by row
        "plain": {"id": ["a", "b", "c", "d", "e", "f"], "text": ["x", "", "é", "z", "w", "v"],
                  "doc_id": ["d1", None, "d1", "", "d2", "d2"], "title": ["T", None, "", "U", None, None],
                  "page": [1, 2, None, 4, 5, 6]},
        "content": {"id": [1, 2, 3, 4, 5, 6], "content": ["x", "y", "z", "u", "v", "w"],
                    "source": ["s", "s", "t", "t", "t", "s"]},
        "null_text": {"id": ["a", "b", "c", "d", "e", "f"], "text": ["x", None, "z", "u", "v", "w"],
                      "page_content": ["p", "q", "r", "s", "t", "u"]},
        "no_text": {"id": ["a", "b", "c", "d", "e", "f"], "doc_id": ["d", "d", "e", "e", "e", "f"]},
        "nested": {"id": ["a", "b", "c", "d", "e", "f"], "text": ["x", "y", "z", "u", "v", "w"],
                   "metadata": [{"doc_id": f"m{i % 2}"} for i in range(6)], "doc_id": ["t"] * 6},
    }
    for name, columns in tables.items():
        db.create_table(name, pa.table({**columns, "vector": vec}))
        store = open_store(f"lancedb://{tmp_path}/lance?table={name}")
        expected = []
        for row in db.open_table(name).to_arrow().drop_columns(["vector"]).to_pylist():
            cid = row.pop("id")
            expected.append((str(cid), *split_payload(row)))
        for page_size in (1, 4, 100):
            got = [(r.id, r.text, r.metadata) for r in store.iter_chunks(page_size)]
            assert got == expected, (name, page_size)
        corpus = load_corpus(f"lancedb://{tmp_path}/lance?table={name}")
        assert [asdict(c) for c in corpus] == [asdict(c) for c in row_chunks(store)], name


def test_chroma_pages_match_its_rows(tmp_path: Path) -> None:
    chromadb = pytest.importorskip("chromadb")
    col = chromadb.PersistentClient(path=str(tmp_path / "c")).create_collection("app")
    metas = [{"doc_id": "d1", "title": "T"}, None, {"source": "s", "page": 2}, {"doc_id": ""},
             {"source": "s"}]
    col.add(ids=[f"c{i}" for i in range(5)], documents=["a", "b", "", "d", "e"],
            metadatas=metas, embeddings=[[float(i), 1.0] for i in range(5)])
    url = f"chroma://{tmp_path}/c?collection=app"
    store = load_corpus(url).store
    got = [(r.id, r.text, r.metadata) for r in store.iter_chunks(page_size=2)]
    raw = col.get(include=["documents", "metadatas"])
    assert got == [(i, t or "", dict(m or {})) for i, t, m in
                   zip(raw["ids"], raw["documents"], raw["metadatas"])]
    assert [asdict(c) for c in load_corpus(url)] == [asdict(c) for c in row_chunks(store)]


def test_local_qdrant_is_read_in_one_scroll(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient, models

    path = tmp_path / "q"
    client = QdrantClient(path=str(path))
    client.create_collection("c", vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT))
    client.upsert("c", points=[
        models.PointStruct(id=i, vector=[float(i), 1.0],
                           payload={"page_content": f"t{i}", "metadata": {"source": f"s{i % 3}"}})
        for i in range(11)])
    expected = []
    offset = None
    while True:  # the client's own pages, small
        points, offset = client.scroll("c", limit=2, offset=offset, with_payload=True)
        expected += [(str(p.id), *split_payload(p.payload)) for p in points]
        if offset is None:
            break
    client.close()
    url = f"qdrant://{path}?collection=c&trust=pickle"
    store = load_corpus(url).store
    calls = []
    scroll = store.client.scroll
    monkeypatch.setattr(store.client, "scroll", lambda *a, **k: calls.append(k["limit"]) or scroll(*a, **k))
    pages = list(store.iter_pages(page_size=3))
    assert calls == [11] and [len(p) for p in pages] == [11]
    assert [r for p in pages for r in zip(p.ids, p.texts, p.metadata)] == expected
    assert [asdict(c) for c in load_corpus(url)] == [asdict(c) for c in row_chunks(store)]


def test_pgvector_json_metadata_is_the_rows_metadata(pg) -> None:
    from ragcov.stores import open_store

    pg.create_database("reads")
    with pg.connect("reads") as con:
        con.execute("CREATE TABLE chunks (id text PRIMARY KEY, document text, embedding vector(2), "
                    "cmetadata jsonb)")
        metas = [{"source": "s", "page": 1, "tags": ["a", {"b": None}]}, None, '"{\\"doc_id\\": \\"d\\"}"',
                 '"not json"', '[1, 2]', {"doc_id": "d", "nested": {"x": 1.5, "y": True}}, {}]
        for i, meta in enumerate(metas):
            value = meta if meta is None or isinstance(meta, str) else json.dumps(meta)
            con.execute("INSERT INTO chunks VALUES (%s, %s, '[1,0]', %s::jsonb)",
                        (f"c{i}", None if i == 1 else f"text {i}", value))
    url = pg.url("reads", "table=chunks")
    store = open_store(url)
    assert store.metadata_json
    rows = store._rows("SELECT id, document, cmetadata FROM chunks ORDER BY id")
    expected = [(cid, text or "", store._metadata([meta])) for cid, text, meta in rows]
    assert expected[2][2] == {"doc_id": "d"} and expected[3][2] == {"cmetadata": "not json"}
    for page_size in (1, 3, 100):
        got = [r for p in store.iter_pages(page_size) for r in zip(p.ids, p.texts, p.metadata)]
        assert got == expected
    assert [asdict(c) for c in load_corpus(url)] == [asdict(c) for c in row_chunks(store)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(), max_size=30), st.one_of(st.none(), st.integers(0, 30)),
       st.one_of(st.none(), st.integers(1, 30)))
def test_read_ahead_gives_every_item_in_order_and_no_more_than_one_ahead(
        items: list[int], fail_at: int | None, stop_at: int | None) -> None:
    """The next item is read on a thread while the caller works: the same items in the same
    order, an error raised where its item is taken (not before), and a caller that stops
    leaves at most one item read past the last it took."""
    import threading

    from ragcov.stores.base import read_ahead

    asked: list[int] = []
    lock = threading.Lock()

    def source():  # type: ignore[no-untyped-def]
        for i, x in enumerate(items):
            with lock:
                asked.append(i)
            if i == fail_at:
                raise ValueError(f"item {i} cannot be read")
            yield x

    taken: list[int] = []
    it = read_ahead(source())
    try:
        for x in it:
            taken.append(x)
            if stop_at is not None and len(taken) == stop_at:
                break
    except ValueError as exc:
        assert fail_at is not None and str(exc) == f"item {fail_at} cannot be read"
        assert taken == items[:fail_at]
    else:
        end = len(items) if fail_at is None or fail_at >= len(items) else None
        if stop_at is None or stop_at >= len(items):
            assert end is not None and taken == items
        else:
            assert taken == items[:stop_at]
    it.close()
    assert len(asked) <= len(taken) + 2  # the one in flight, and the one that failed or ended


def test_a_caller_that_stops_cancels_the_read_in_flight() -> None:
    """A read that waits on its server (a query whose next page is slow to come): the
    caller stops after the first item, and the read in flight is asked to end (cancel),
    as Ctrl-C ends a pgvector read at once instead of after the whole query."""
    import threading

    from ragcov.stores.base import read_ahead

    cancelled = threading.Event()
    ended: list[str] = []

    def slow_pages():  # type: ignore[no-untyped-def]
        yield "page 1"
        # The server's wait: over when the query is cancelled (or after a minute, so a
        # broken cancel fails the assertions below rather than hanging the run).
        ended.append("cancelled" if cancelled.wait(60) else "waited a minute")
        yield "page 2"

    pages = read_ahead(slow_pages(), cancel=cancelled.set)
    assert next(pages) == "page 1"
    pages.close()
    assert ended == ["cancelled"]
