"""Reading a store never runs code from it and never writes to it; a store that is not
there, or a server that is down, is one line.

Every store here is built with its real client on local disk; the hostile pickles are
real pickles whose ``__reduce__`` runs a shell command that touches a marker file.
"""

from __future__ import annotations

import os
import pickle
import shlex
import socket
import sqlite3
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.errors import RagcovError


class Touch:
    """Unpickling this runs ``touch MARKER``: what a hostile ``index.pkl`` would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def hostile_faiss_folder(folder: Path, marker: Path) -> Path:
    import faiss

    folder.mkdir()
    faiss.write_index(faiss.IndexFlatL2(2), str(folder / "index.faiss"))
    (folder / "index.pkl").write_bytes(pickle.dumps(Touch(marker)))
    return folder


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q", "query": "alpha"}\n')
    return path


def one_line_error(code: int, err: str) -> str:
    assert code == 1, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), err
    return lines[0]


def test_faiss_folder_is_never_unpickled_from_detection(capsys, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = hostile_faiss_folder(tmp_path / "faiss_index", marker)
    with pytest.raises(RagcovError, match=r"unpickles index\.pkl.*trust=pickle"):
        load_corpus(folder)
    code, _, err = cli(capsys, "run", "--corpus", str(folder), "--queries", str(suite(tmp_path)),
                       "--retriever", "bm25", "--data-file", str(tmp_path / "d"), "--quiet")
    line = one_line_error(code, err)
    assert f"--corpus 'faiss://{folder.resolve()}?trust=pickle'" in line
    assert not marker.exists()


def test_faiss_url_without_trust_is_refused(capsys, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = hostile_faiss_folder(tmp_path / "faiss_index", marker)
    code, _, err = cli(capsys, "run", "--corpus", f"faiss://{folder}", "--queries",
                       str(suite(tmp_path)), "--retriever", "bm25",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert "trust=pickle" in one_line_error(code, err)
    assert not marker.exists()


def test_faiss_url_with_trust_opens_the_folder(tmp_path: Path) -> None:
    """The opt-in is what opens the folder: the same hostile pickle then runs (the danger is real)."""
    marker = tmp_path / "ran"
    folder = hostile_faiss_folder(tmp_path / "faiss_index", marker)
    with pytest.raises(RagcovError, match="not what FAISS.save_local writes"):
        load_corpus(f"faiss://{folder}?trust=pickle")
    assert marker.exists()


def hostile_qdrant_folder(path: Path, marker: Path) -> None:
    """A real local Qdrant store, one of whose stored points is replaced by a hostile pickle."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection("c", vectors_config=models.VectorParams(size=2,
                                                                     distance=models.Distance.COSINE))
    client.upsert("c", points=[models.PointStruct(id=1, vector=[1.0, 0.0], payload={"text": "a"})])
    client.close()
    storage = path / "collection" / "c" / "storage.sqlite"
    with sqlite3.connect(storage) as con:
        assert con.execute("UPDATE points SET point = ?", (pickle.dumps(Touch(marker)),)).rowcount == 1


def test_local_qdrant_is_not_unpickled_without_trust(capsys, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile_qdrant_folder(tmp_path / "qdrant", marker)
    url = f"qdrant://{tmp_path}/qdrant?collection=c"
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite(tmp_path)),
                       "--retriever", "bm25", "--data-file", str(tmp_path / "d"), "--quiet")
    line = one_line_error(code, err)
    assert "unpickles" in line and f"--corpus '{url}&trust=pickle'" in line
    assert not marker.exists()
    with pytest.raises(Exception):  # noqa: B017 - whatever the client makes of the hostile point
        load_corpus(f"{url}&trust=pickle")
    assert marker.exists()  # with the opt-in the client's unpickling is what runs it


# Reading never writes --------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["chroma", "qdrant"])
def test_probing_an_empty_folder_writes_nothing(capsys, tmp_path: Path, scheme: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for url in (f"{scheme}://{empty}?collection=c", f"{scheme}://{empty}?collection=c&trust=pickle"):
        code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite(tmp_path)),
                           "--retriever", "bm25", "--data-file", str(tmp_path / "d"), "--quiet")
        assert "is not a" in one_line_error(code, err)
        assert list(empty.iterdir()) == []


def test_chroma_url_naming_a_file(capsys, tmp_path: Path) -> None:
    file = tmp_path / "chroma.sqlite3"
    file.write_text("not a folder")
    code, _, err = cli(capsys, "run", "--corpus", f"chroma://{file}?collection=c", "--queries",
                       str(suite(tmp_path)), "--retriever", "bm25",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert "is not a folder" in one_line_error(code, err)
    assert file.read_text() == "not a folder"


@pytest.mark.parametrize("name", ["milvus_store", "milvus.sqlite"])
def test_milvus_path_without_db(capsys, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.mkdir() if name == "milvus_store" else path.write_text("x")
    code, _, err = cli(capsys, "run", "--corpus", f"milvus://{path}?collection=c", "--queries",
                       str(suite(tmp_path)), "--retriever", "bm25",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert "ends in .db" in one_line_error(code, err)


def test_milvus_empty_db_folder_is_left_empty(capsys, tmp_path: Path) -> None:
    empty = tmp_path / "new.db"
    empty.mkdir()
    code, _, err = cli(capsys, "run", "--corpus", f"milvus://{empty}?collection=c", "--queries",
                       str(suite(tmp_path)), "--retriever", "bm25",
                       "--data-file", str(tmp_path / "d"), "--quiet")
    assert "is not a Milvus Lite store" in one_line_error(code, err)
    assert list(empty.iterdir()) == []


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["chroma", "qdrant", "milvus"])
def test_server_that_is_down_is_one_line(capsys, tmp_path: Path, scheme: str) -> None:
    port = closed_port()
    url = f"{scheme}+http://user:s3cret@127.0.0.1:{port}?collection=c"
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite(tmp_path)),
                       "--retriever", "bm25", "--data-file", str(tmp_path / "d"), "--quiet")
    line = one_line_error(code, err)
    assert f"127.0.0.1:{port}" in line and f"cannot read the {scheme} server" in line
    assert "s3cret" not in err


def test_chroma_reads_its_pickle_file_without_running_it(tmp_path: Path) -> None:
    """Chroma (1.x) keeps ``index_metadata.pickle`` beside each HNSW index and decodes it in
    Rust (serde-pickle: data only); a hostile one must not run, so Chroma needs no opt-in."""
    import subprocess
    import sys

    marker = tmp_path / "ran"
    # Built in another process: this one's chromadb client must not hold the index in memory.
    build = (f"import chromadb, numpy as np\n"
             f"col = chromadb.PersistentClient(path={str(tmp_path / 'db')!r}).create_collection('docs')\n"
             f"v = np.random.default_rng(0).normal(size=(2000, 8)).tolist()\n"
             f"for i in range(0, 2000, 500):\n"
             f"    col.add(ids=[str(j) for j in range(i, i + 500)], embeddings=v[i:i + 500],"
             f" documents=['t'] * 500)\n")
    subprocess.run([sys.executable, "-c", build], check=True, timeout=300)
    pickles = list((tmp_path / "db").glob("*/index_metadata.pickle"))
    assert len(pickles) == 1
    pickles[0].write_bytes(pickle.dumps(Touch(marker)))
    with pytest.raises(Exception, match="unresolved global reference"):  # noqa: B017 - chromadb's own
        load_corpus(f"chroma://{tmp_path}/db?collection=docs").store.search([[0.0] * 8], 1)
    assert not marker.exists()  # the file was read (and rejected), not run


# The vectors a store holds, as the model check reads them --------------------------------
VECTORS = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, 1.0]}


def tiny_store(engine: str, root: Path) -> str:
    """A three-chunk store on the real engine, with known vectors."""
    ids, vectors = list(VECTORS), list(VECTORS.values())
    texts = [f"text {i}" for i in ids]
    if engine == "chroma":
        import chromadb

        chromadb.PersistentClient(path=str(root)).create_collection("col").add(
            ids=ids, embeddings=vectors, documents=texts)
        return f"chroma://{root}?collection=col"
    if engine == "lancedb":
        import lancedb

        lancedb.connect(str(root)).create_table("c", data=[
            {"id": i, "text": t, "vector": v} for i, t, v in zip(ids, texts, vectors)])
        return f"lancedb://{root}?table=c"
    if engine == "qdrant":
        from qdrant_client import QdrantClient, models

        client = QdrantClient(path=str(root))
        client.create_collection("c", vectors_config=models.VectorParams(
            size=3, distance=models.Distance.DOT))
        client.upsert("c", points=[models.PointStruct(id=n, vector=v, payload={"text": t})
                                   for n, (v, t) in enumerate(zip(vectors, texts), start=1)])
        client.close()
        return f"qdrant://{root}?collection=c&trust=pickle"
    if engine == "milvus":
        from pymilvus import MilvusClient

        client = MilvusClient(uri=str(root) + ".db")
        client.create_collection("c", dimension=3, id_type="string", max_length=20)
        client.insert("c", [{"id": i, "vector": v, "text": t} for i, v, t in zip(ids, vectors, texts)])
        client.close()
        return f"milvus://{root}.db?collection=c"
    from langchain_community.vectorstores import FAISS
    from langchain_core.embeddings import Embeddings

    class Given(Embeddings):  # the vectors are given; nothing is embedded
        def embed_documents(self, texts):
            raise AssertionError("not called")

        def embed_query(self, text):
            raise AssertionError("not called")

    FAISS.from_embeddings(list(zip(texts, vectors)), Given(), ids=ids).save_local(str(root))
    return f"faiss://{root}?trust=pickle"


@pytest.mark.parametrize("engine", ["chroma", "lancedb", "qdrant", "milvus", "faiss"])
def test_stored_vectors_come_back_by_chunk_id(tmp_path: Path, engine: str) -> None:
    corpus = load_corpus(tiny_store(engine, tmp_path / engine))
    ids = corpus.ids
    wanted = [ids[2], ids[0], "absent"]
    got = corpus.store.stored_vectors(wanted)
    by_text = {f"text {i}": v for i, v in VECTORS.items()}
    assert got[:2] == [pytest.approx(by_text[corpus.get(i).text]) for i in wanted[:2]]
    assert got[2] is None
