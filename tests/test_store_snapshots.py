"""A store read while the app writes it: one consistent state, or one clear refusal.

Chroma is read in pages: a write landing between two pages is made for real here (the
test adds a row between pages with the app's own client) and the read is refused.
LanceDB reads pin the table's version: rows the app adds after the store was opened are
not in the read. Qdrant and Milvus Lite folders are copied: a write landing during the
copy cannot be timed from a test, so it is simulated (labelled below) by writing to the
folder from inside the copy step; the copy is taken again, and refused when every try
saw a write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcov.errors import RagcovError


def _chroma(tmp_path: Path, n: int):
    """The app's Chroma collection of ``n`` chunks, and ragcov's store over its folder."""
    chromadb = pytest.importorskip("chromadb")
    from ragcov.stores.chroma import ChromaStore
    from ragcov.stores.urls import parse_store_url

    app = chromadb.PersistentClient(path=str(tmp_path / "c")).create_collection("app")
    app.add(ids=[f"c{i}" for i in range(n)], documents=[f"chunk {i}" for i in range(n)],
            embeddings=[[float(i), 1.0] for i in range(n)])
    return app, ChromaStore(parse_store_url(f"chroma://{tmp_path}/c?collection=app"))


def test_a_chroma_write_between_pages_refuses_the_read(tmp_path: Path) -> None:
    app, store = _chroma(tmp_path, 6)
    rows = store.iter_chunks(page_size=2)
    first = [next(rows).id, next(rows).id]
    app.add(ids=["late"], documents=["written while ragcov read"], embeddings=[[9.0, 1.0]])
    with pytest.raises(RagcovError, match="changed while ragcov read it"):
        list(rows)
    assert first == ["c0", "c1"]
    # Read again once the writes are done: every row, the late one included.
    assert len(list(store.iter_chunks(page_size=2))) == 7


def test_a_chroma_collection_read_in_one_page_is_one_state(tmp_path: Path) -> None:
    app, store = _chroma(tmp_path, 2)
    rows = store.iter_chunks(page_size=10)
    first = next(rows)
    app.add(ids=["late"], documents=["after the one query"], embeddings=[[9.0, 1.0]])
    assert [first.id, *(r.id for r in rows)] == ["c0", "c1"]  # the state the one query read


def test_a_quiet_chroma_folder_reads_whole(tmp_path: Path) -> None:
    _, store = _chroma(tmp_path, 5)
    assert [r.id for r in store.iter_chunks(page_size=2)] == [f"c{i}" for i in range(5)]


def test_a_lancedb_read_sees_the_version_it_opened(tmp_path: Path) -> None:
    lancedb = pytest.importorskip("lancedb")
    from ragcov.corpus import load_corpus

    db = lancedb.connect(str(tmp_path / "l"))
    table = db.create_table("app", [{"id": f"c{i}", "text": f"chunk {i}", "doc_id": "d",
                                     "vector": [float(i), 1.0]} for i in range(4)])
    from ragcov.stores.lancedb import LanceDBStore
    from ragcov.stores.urls import parse_store_url

    store = LanceDBStore(parse_store_url(f"lancedb://{tmp_path}/l?table=app"))
    table.add([{"id": "late", "text": "written after ragcov opened the table", "doc_id": "d",
                "vector": [9.0, 1.0]}])
    assert [r.id for r in store.iter_chunks()] == ["c0", "c1", "c2", "c3"]
    assert "late" in load_corpus(f"lancedb://{tmp_path}/l?table=app").ids  # a new read sees it


class Owner:
    """What keeps the copy: it is removed with its owner."""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "storage.sqlite").write_text(json.dumps({"rows": 3}))
    return folder


def test_a_copy_a_write_landed_in_is_taken_again(tmp_path: Path, monkeypatch) -> None:
    from ragcov.stores import urls

    folder = _folder(tmp_path)
    real = urls._copy
    writes = iter([True, False])

    def copy_with_a_write_landing(source: Path, target: Path, skip) -> None:
        # SIMULATED concurrent writer: the app's write lands while the folder is copied.
        real(source, target, skip)
        if next(writes):
            (source / "storage.sqlite").write_text(json.dumps({"rows": 4, "more": "x" * 10}))

    monkeypatch.setattr(urls, "_copy", copy_with_a_write_landing)
    owner = Owner()
    copied = Path(urls.private_copy(urls.parse_store_url(f"qdrant://{folder}?collection=app"),
                                    owner=owner))
    assert json.loads((copied / "storage.sqlite").read_text())["rows"] == 4  # the state after
    del owner
    assert not copied.exists()


def test_a_copy_every_try_saw_a_write_in_is_refused(tmp_path: Path, monkeypatch) -> None:
    from ragcov.stores import urls

    folder = _folder(tmp_path)
    real = urls._copy
    count = iter(range(100))

    def copy_while_the_app_keeps_writing(source: Path, target: Path, skip) -> None:
        # SIMULATED concurrent writer: a write lands during every copy.
        real(source, target, skip)
        (source / "storage.sqlite").write_text("x" * (10 + next(count)))

    monkeypatch.setattr(urls, "_copy", copy_while_the_app_keeps_writing)
    with pytest.raises(RagcovError, match=r"changed while ragcov read it \(3 tries\)"):
        urls.private_copy(urls.parse_store_url(f"qdrant://{folder}?collection=app"), owner=Owner())
