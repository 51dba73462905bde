"""A real Chroma server (``chroma run`` on 127.0.0.1, a free port) as corpus and retriever."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import stop
from test_stores import K, check, run_store, sample  # noqa: F401 - the shared sample fixture


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path):
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if exe is None:
        pytest.skip("the chroma command is not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import chromadb

        deadline = time.monotonic() + 60
        while True:
            try:
                client = chromadb.HttpClient(host="127.0.0.1", port=port)
                client.heartbeat()
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("chroma run did not start")
                time.sleep(0.3)
        yield client, port
    finally:
        stop(proc, 10)


@pytest.mark.slow
def test_chroma_server(capsys, sample: dict, chroma_server, tmp_path: Path) -> None:  # noqa: F811
    client, port = chroma_server
    col = client.create_collection("finqa")  # Chroma's default space: l2
    col.add(ids=sample["ids"], documents=sample["texts"], embeddings=sample["vectors"].tolist(),
            metadatas=[{"source": d} for d in sample["docs"]])
    expected = col.query(query_embeddings=sample["qvectors"].tolist(), n_results=K)["ids"]
    url = f"chroma+http://127.0.0.1:{port}?collection=finqa"
    covered, ids = run_store(capsys, url, sample, tmp_path)
    check(covered, ids, expected, len(sample["ids"]))
    assert ids == sample["ids"]
