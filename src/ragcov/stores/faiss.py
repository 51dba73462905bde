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
from ragcov.stores.base import PAGE_SIZE, StoreChunk, require
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
