"""The retriever a drift run tests, built again on each transformed copy of the corpus.

A relation is about one retriever: its kind, model and settings stay, only the corpus
changes. :func:`rebuilder` returns, for each kind ragcov can index on a copy, an
object whose ``base`` is the retriever over the corpus itself and whose ``on(copy)``
is the same retriever over the copy:

- ``bm25``: indexed again (the same k1, b and stopwords);
- ``dense``: unchanged chunks keep the very vectors the base run searched (found by
  their content hash), and only the chunks a copy changed or added are embedded,
  cached on disk as a small corpus of their own, so a resumed run embeds nothing
  twice; the queries are embedded once for every copy;
- ``store`` (the store's own search): the store is rebuilt into a scratch copy with
  its own settings and the vectors it holds (:mod:`ragcov.drift.scratch`); the store
  itself is only read;
- ``module:attr`` naming a factory that takes the corpus (a class, or a function with
  a ``corpus`` parameter), and in Python any callable ``corpus -> retriever``.

A retriever that cannot be given another corpus (an HTTP endpoint, a ready-made
object) is refused in one line: its results on a "copy" would be its results on the
corpus, and every relation would hold by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ragcov.corpus import Chunk, Corpus
from ragcov.drift.base import QueryMemo, Rebuilder
from ragcov.errors import RagcovError


class BM25Rebuilder(Rebuilder):
    def __init__(self, corpus: Corpus, progress: bool) -> None:
        from ragcov.retrievers import make_retriever

        self.base = make_retriever("bm25", corpus, progress=progress)

    def on(self, copy: Corpus) -> Any:
        from ragcov.retrievers.bm25 import BM25Retriever

        b = self.base
        return BM25Retriever(copy, k1=b.k1, b=b.b, stopwords=b.stopwords, progress=False,
                             stemmer=b.stemmer or "none")


class DenseRebuilder(Rebuilder):
    def __init__(self, corpus: Corpus, model: str | None, index: str, backend: str | None,
                 progress: bool) -> None:
        from ragcov.retrievers import make_retriever

        self.progress = progress
        self.base = make_retriever("dense", corpus, model=model, index=index, progress=progress,
                                   backend=backend)
        # Content hash -> the vector the base run searched: a chunk a copy leaves as it was
        # is searched with the same bits, so the identity copy cannot move any top-k.
        self.vectors: dict[str, np.ndarray] = {}
        for chunk, row in zip(corpus, self.base.embeddings):
            self.vectors.setdefault(chunk.hash, row)
        self.queries = QueryMemo(self.base.embed_queries)
        self.embedded = 0

    def embeddings(self, copy: Corpus) -> np.ndarray:
        """The copy's vectors: reused by content hash, the rest embedded (or read from the
        cache, where an earlier run of the same copy left them)."""
        from ragcov.retrievers.dense import encode, encoder_dimension
        from ragcov.retrievers.embedding_cache import (
            embedding_cache_key,
            embedding_cache_path,
            load_cached_embeddings,
            save_embeddings,
        )

        new = list({c.hash: c for c in copy if c.hash not in self.vectors}.values())
        if new:
            b = self.base
            # The changed chunks as a corpus of their own: the embedding cache keys it by
            # their ids and contents, and checks what it reads back.
            changed = Corpus([Chunk(id=c.id, text=c.text, doc_id=c.doc_id) for c in new],
                             chunking={"method": "drift-changed", **copy.chunking})
            # Keyed as the base's own entry is (the model's content, int8 apart from fp32).
            key = embedding_cache_key(changed, b.model.cache_key,
                                      "onnx-int8" if b.backend == "onnx-int8" else "")
            path = embedding_cache_path(key)
            emb = load_cached_embeddings(path, len(new), encoder_dimension(b.encoder), key=key)
            if emb is None:
                # No bar of its own: the copies' bar is on the terminal (one live display).
                emb = encode(b.encoder, [c.text for c in new], b.batch_size,
                             "Embedding changed chunks", False, threads=b.threads)
                self.embedded += len(new)
                save_embeddings(path, emb, key)
            self.vectors.update((c.hash, row) for c, row in zip(new, emb))
        return np.stack([self.vectors[c.hash] for c in copy]).astype(np.float32, copy=False)

    def on(self, copy: Corpus) -> Any:
        from ragcov.retrievers.dense import DenseRetriever

        b = self.base
        r = DenseRetriever(copy, model=b.model_name, index=b.index_kind, batch_size=b.batch_size,
                           use_cache=False, hnsw_m=b.hnsw_m, ef_search=b.ef_search,
                           progress=False, embeddings=self.embeddings(copy), threads=b.threads,
                           backend=b.backend)
        r.embed_queries = self.queries  # type: ignore[method-assign]
        return r


CANARY_TEXT = ("ragcov drift check: quorvane tillbeck the marsupine ledger of oxtallow "
               "fennimore grist, vendrake ossifer and plumbright causeway")


class FactoryRebuilder(Rebuilder):
    """A factory of the user's own, called with each copy."""

    def __init__(self, corpus: Corpus, make: Callable[[Corpus], Any], name: str = "") -> None:
        self.make = make
        self.name = name
        self.corpus = corpus
        self.base = make(corpus)

    def on(self, copy: Corpus) -> Any:
        return self.make(copy)

    def check_searches_copies(self, k: int) -> None:
        """Refuse a factory whose retriever ignores the corpus it is handed (a fixed
        collection, an index opened by name, an index that adds only ids it lacks): every
        copy would return the corpus's own results and each relation would hold by
        construction, a silent pass. One chunk of a copy is given words found nowhere else,
        under its own id and document; the retriever built on that copy must find it by
        those words."""
        from ragcov.retrieval import run_retriever

        def top(retriever: Any, corpus: Corpus) -> list[str]:
            found = run_retriever(retriever, [("check", CANARY_TEXT)], k, progress=False,
                                  corpus=corpus, warn_short=False).results.get("check", [])
            return [cid for cid, _ in found]

        # The chunk rewritten is one the corpus itself does not return for those words, so
        # finding it can only come from the copy (ties at score 0 come back in any order).
        before = set(top(self.base, self.corpus))
        chunks = list(self.corpus.chunks)
        at = next((i for i, c in enumerate(chunks) if c.id not in before), None)
        if at is None:
            return  # every chunk is in the top-k: a corpus this small cannot tell
        old = chunks[at]
        chunks[at] = Chunk(old.id, CANARY_TEXT, old.doc_id, old.position, old.title,
                           dict(old.metadata))
        copy = Corpus(chunks, chunking=self.corpus.chunking, source=self.corpus.source)
        ids = top(self.on(copy), copy)
        if old.id not in ids:
            who = f"retriever {self.name!r}" if self.name else "the retriever"
            shown = ", ".join(ids[:3]) or "nothing"
            raise RagcovError(
                f"{who} does not search the corpus copy it is handed: a chunk whose text the "
                f"copy changed ({old.id}) is not in its top-{k} for its new text (it returned "
                f"{shown}), so every relation would hold by construction; build the retriever "
                "from the factory's `corpus` argument (its chunks' ids and texts)")


def rebuilder(retriever: str | Callable[[Corpus], Any], corpus: Corpus, model: str | None = None,
              index: str = "flat", backend: str | None = None, progress: bool = True
              ) -> Rebuilder:
    """How to build ``retriever`` on a copy of ``corpus`` (see the module note)."""
    if callable(retriever):
        from ragcov.retrievers import wrap

        return FactoryRebuilder(corpus, lambda c: wrap(retriever(c), c))
    if retriever == "bm25":
        return BM25Rebuilder(corpus, progress)
    if retriever == "dense":
        return DenseRebuilder(corpus, model, index, backend, progress)
    if retriever == "store":
        from ragcov.drift.scratch import StoreRebuilder

        return StoreRebuilder(corpus, model, backend)
    if retriever.startswith(("http://", "https://")):
        raise RagcovError("an HTTP retriever searches its own index, which ragcov cannot rebuild "
                          "on a transformed copy of the corpus: drift needs dense, bm25, store or "
                          "a module:attr factory that takes the corpus")
    if ":" in retriever:
        from ragcov.retrievers.loader import load_retriever, takes_corpus

        if not takes_corpus(retriever):
            raise RagcovError(f"retriever {retriever!r} is built without the corpus, so it cannot "
                              "be built on a transformed copy: name a factory that takes it (a "
                              "class, or a function with a `corpus` parameter)")
        return FactoryRebuilder(corpus, lambda c: load_retriever(retriever, c), retriever)
    from ragcov.retrievers import make_retriever

    make_retriever(retriever, corpus)  # the factory's own "unknown retriever" line
    raise RagcovError(f"drift cannot rebuild retriever {retriever!r} on a copy")  # pragma: no cover
