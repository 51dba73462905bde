"""Benchmark: enumerating a vector store's chunks (``--corpus chroma://...``, ``lancedb://...``).

Stores: a Chroma persistent folder and a LanceDB table of N chunks, each a short
text, a document id in its metadata and an 8-dimensional random vector (the model
plays no part in enumeration, and random vectors build a million-row store in
minutes). ragcov: ``load_corpus(URL)`` (pages of 10,000 rows for Chroma, 1,000 for
LanceDB, into a Corpus).
Baseline, in the same run: the client's own read of every row, kept in memory
as the client returns it: Chroma ``collection.get(include=[documents, metadatas])``
in pages of 10,000 (one call for every row fails past about 30,000 rows with
"too many SQL variables"), LanceDB ``table.to_arrow()`` of the non-vector columns. Each side runs in a fresh
subprocess, so its peak resident memory is its own (and its client's import counts);
the two alternate, and each keeps its best of 3 (2 at full size).

Run alone: ``.venv/bin/python benchmarks/bench_stores.py [--tiny|--quick|--full]``
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 2_000, "quick": 100_000, "full": 1_000_000}
REPEATS = {"tiny": 1, "quick": 3, "full": 2}
DIM = 8
BATCH = 5_000


def _rows(start: int, stop: int, rng):
    ids = [f"doc-{i // 10}#{i % 10}" for i in range(start, stop)]
    texts = [f"chunk {i} of document {i // 10}: revenue, margins and guidance for the year"
             for i in range(start, stop)]
    metas = [{"doc_id": f"doc-{i // 10}"} for i in range(start, stop)]
    return ids, texts, metas, rng.random((stop - start, DIM), dtype="float32")


def build_chroma(path: Path, n: int) -> str:
    import chromadb
    import numpy as np

    col = chromadb.PersistentClient(path=str(path)).create_collection("bench")
    rng = np.random.default_rng(0)
    for start in range(0, n, BATCH):
        ids, texts, metas, vecs = _rows(start, min(n, start + BATCH), rng)
        col.add(ids=ids, documents=texts, metadatas=metas, embeddings=vecs)
    return f"chroma://{path}?collection=bench"


def build_lance(path: Path, n: int) -> str:
    import lancedb
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    table = None
    db = lancedb.connect(str(path))
    for start in range(0, n, 50_000):
        ids, texts, metas, vecs = _rows(start, min(n, start + 50_000), rng)
        batch = pa.table({"id": ids, "text": texts, "doc_id": [m["doc_id"] for m in metas],
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM)})
        table = db.create_table("bench", batch) if table is None else table
        if start:
            table.add(batch)
    return f"lancedb://{path}?table=bench"


def _ragcov(url: str) -> int:
    from ragcov.corpus import load_corpus

    return len(load_corpus(url))


def _raw(url: str) -> int:
    if url.startswith("chroma"):
        import chromadb

        path = url.split("://", 1)[1].split("?", 1)[0]
        col = chromadb.PersistentClient(path=path).get_collection("bench")
        pages = []
        while True:
            page = col.get(include=["documents", "metadatas"], limit=10_000,
                           offset=sum(len(p["ids"]) for p in pages))
            pages.append(page)
            if len(page["ids"]) < 10_000:
                return sum(len(p["ids"]) for p in pages)
    import lancedb

    path = url.split("://", 1)[1].split("?", 1)[0]
    return lancedb.connect(path).open_table("bench").to_arrow().select(["id", "text", "doc_id"]).num_rows


def _measure(side: str, url: str, queue) -> None:
    t = time.perf_counter()
    n = (_ragcov if side == "ragcov" else _raw)(url)
    queue.put((n, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _in_child(side: str, url: str) -> tuple[int, float, float]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(side, url, queue))
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"the {side} read of {url} failed (exit {proc.exitcode})")
    return queue.get()


def main(mode: str = "full") -> list[dict]:
    n = SIZES[mode]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in (("Chroma", build_chroma), ("LanceDB", build_lance)):
            t = time.perf_counter()
            url = build(Path(tmp) / name.lower(), n)
            built = time.perf_counter() - t
            # Alternated, best of a few: one fresh process a side is at the mercy of the
            # machine's load (a 2x swing between two runs at 100k on a shared machine).
            sides: dict[str, list[tuple[int, float, float]]] = {"ragcov": [], "raw": []}
            for _ in range(REPEATS[mode]):
                for side in sides:
                    sides[side].append(_in_child(side, url))
            got, seconds, peak = min(sides["ragcov"], key=lambda r: r[1])
            raw_n, raw_s, raw_peak = min(sides["raw"], key=lambda r: r[1])
            assert got == raw_n == n, (got, raw_n, n)
            rows.append(row(f"enumerate {n:,} chunks from {name}", seconds, raw_s,
                            note=f"baseline: the client's own full read (peak {raw_peak:.0f} MiB); "
                                 f"store built in {built:.0f} s",
                            peak_mib=peak, baseline_peak_mib=raw_peak,
                            chunks_per_s=n / seconds if seconds else None))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
