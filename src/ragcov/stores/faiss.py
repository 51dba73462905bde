"""A LangChain ``FAISS.save_local`` folder: ``faiss:///PATH?trust=pickle``.

The folder holds ``index.faiss`` (the vectors) and ``index.pkl`` (a pickle of the
docstore and the position-to-id map). Unpickling runs code from the file, as
LangChain's own ``allow_dangerous_deserialization=True`` does, so the folder opens
only when its URL says ``trust=pickle`` (never from detection). LangChain does not
save the distance strategy; the index is searched as saved (L2 by default), which is
what ``similarity_search`` does for normalised models such as all-MiniLM-L6-v2.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.stores.base import PAGE_SIZE, StoreChunk, VectorsUnavailable, index_settings, require
from ragcov.stores.urls import StoreURL, require_trust


class FAISSStore:
    """Chunk ids are the docstore ids LangChain gave (``ids=`` when added, else UUIDs)."""

    def __init__(self, url: StoreURL) -> None:
        faiss = require("faiss", "FAISS")
        require("langchain_community", "LangChain FAISS")
        self.url = url.url
        require_trust(url, "reading a LangChain FAISS folder unpickles its index.pkl")
        folder = Path(url.path or "")
        name = url.param("index") or "index"
        files = folder / f"{name}.faiss", folder / f"{name}.pkl"
        for f in files:
            if not f.is_file():
                raise RagcovError(f"{url.url}: no {f.name} in {folder} (not a FAISS.save_local folder)")
        self.index = faiss.read_index(str(files[0]))
        with open(files[1], "rb") as fh:
            saved = pickle.load(fh)  # noqa: S301 - opened only with trust=pickle (module note)
        if not (isinstance(saved, tuple) and len(saved) == 2 and isinstance(saved[1], dict)):
            raise RagcovError(f"{url.url}: {files[1].name} is not what FAISS.save_local writes "
                              "(a docstore and a position-to-id map)")
        self.docstore, self.positions = saved
        self.name = name

    def recorded_model(self) -> str | None:
        return None

    def iter_chunks(self, page_size: int = PAGE_SIZE) -> Iterator[StoreChunk]:
        for pos in sorted(self.positions):
            cid = self.positions[pos]
            doc = self.docstore.search(cid)
            yield StoreChunk(str(cid), getattr(doc, "page_content", "") or "",
                             dict(getattr(doc, "metadata", None) or {}))

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        where = {str(cid): pos for pos, cid in self.positions.items()}
        out: list[list[float] | None] = []
        for cid in ids:
            try:
                out.append([float(x) for x in self.index.reconstruct(int(where[cid]))])
            except (KeyError, RuntimeError):  # an index kind that cannot give its vectors back
                out.append(None)
        return out

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        import numpy as np

        scores, rows = self.index.search(np.asarray(vectors, dtype="float32"), k)
        return [[(str(self.positions[int(r)]), -float(s)) for r, s in zip(rrow, srow) if r >= 0]
                for rrow, srow in zip(rows, scores)]

    def describe(self) -> dict[str, Any]:
        return {"store": "faiss", "index": self.name}

    def vector_metric(self) -> str:
        import faiss

        return "ip" if self.index.metric_type == faiss.METRIC_INNER_PRODUCT else "l2"

    def index_settings(self) -> dict[str, Any]:
        """Read from the index itself: faiss keeps an HNSW graph's efSearch and an IVF
        index's nprobe in the file (what LangChain's ``similarity_search`` searches with)."""
        import faiss

        index = faiss.downcast_index(self.index)
        kind = type(index).__name__
        if isinstance(index, faiss.IndexHNSW):
            hnsw = index.hnsw
            settings = {"type": kind, "M": int(hnsw.nb_neighbors(1)),
                        "efConstruction": int(hnsw.efConstruction), "efSearch": int(hnsw.efSearch)}
            remedy = (f"raise efSearch (now {hnsw.efSearch}) on the loaded index before searching: "
                      "store.index.hnsw.efSearch = 128, then save_local again; M (now "
                      f"{hnsw.nb_neighbors(1)}) and efConstruction (now {hnsw.efConstruction}) "
                      "are fixed when the graph is built: rebuild it with larger ones")
            return index_settings("hnsw", settings, remedy)
        try:
            ivf = faiss.extract_index_ivf(index)
        except RuntimeError:
            ivf = None
        if ivf is not None:
            settings = {"type": kind, "nlist": int(ivf.nlist), "nprobe": int(ivf.nprobe)}
            remedy = (f"raise nprobe (now {ivf.nprobe} of {ivf.nlist} lists): "
                      "faiss.extract_index_ivf(store.index).nprobe = N, then save_local again")
            return index_settings("ivf", settings, remedy)
        exact = isinstance(index, faiss.IndexFlat)
        return index_settings("flat" if exact else kind, {"type": kind}, None, exact=exact)

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        """The stored vectors in position order. Only index kinds that keep the vectors
        themselves are read back: a quantised index keeps codes (searching them exactly is
        not searching the vectors), and faiss aborts the whole process, uncatchably, when
        ``reconstruct_n`` meets an index kind that cannot reconstruct."""
        import faiss

        index = faiss.downcast_index(self.index)
        kinds = (faiss.IndexFlat, faiss.IndexHNSWFlat, faiss.IndexIVFFlat)
        if not isinstance(index, kinds):
            what = type(index).__name__
            raise VectorsUnavailable(f"the {what} index cannot give its vectors back as stored "
                                     "(ragcov reads them from flat, HNSW-flat and IVF-flat indexes; "
                                     "a quantised or id-mapped index keeps codes or other ids)")
        n = int(index.ntotal)
        for start in range(0, n, page_size):
            count = min(page_size, n - start)
            try:
                vectors = index.reconstruct_n(start, count)
            except RuntimeError as exc:
                first = (str(exc).strip().splitlines() or ["error"])[-1]
                raise VectorsUnavailable(f"the {type(index).__name__} index cannot give its "
                                         f"vectors back ({first})") from None
            ids = []
            for pos in range(start, start + count):
                if pos not in self.positions:
                    raise VectorsUnavailable(f"index position {pos} has no id in {self.name}.pkl")
                ids.append(str(self.positions[pos]))
            yield ids, vectors
