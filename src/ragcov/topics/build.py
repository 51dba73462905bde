"""Making a data file's topics, or keeping the ones it holds when they still answer.

A topic set is a function of the corpus, the vectors (and their model), N and the
seed. The set the data file holds is kept when all are what is asked now (same corpus
digest, same settings); otherwise the topics are made again and replace it, so a rerun of
``ragcov topics`` in CI costs a read, and a changed corpus never keeps stale topics.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from typing import TYPE_CHECKING

from ragcov.data import CoverageData
from ragcov.data.topics import (
    StoredTopics,
    TopicLabel,
    chunk_ids_in_order,
    chunk_texts_in_order,
    write_topics,
)
from ragcov.data.topics import read_topics as read_stored
from ragcov.errors import RagcovError
from ragcov.topics.fit import check_topic_count, corpus_terms, fit, require_sklearn
from ragcov.topics.terms import Mapper, local_map
from ragcov.topics.vectors import check_source, chunk_vectors

if TYPE_CHECKING:
    from ragcov.corpus import Corpus

METHOD = "kmeans"


@dataclass
class BuiltTopics:
    """The data file's topics after ``ragcov topics``: made now or kept, and why."""

    topics: StoredTopics
    made: bool              # False: the stored set already answered the request
    note: str | None = None  # why ``--vectors auto`` took what it took


def settings_match(stored: StoredTopics, corpus_hash: str, vectors: str, n_topics: int | None,
                   seed: int, model: str | None = None) -> bool:
    s = stored.settings
    asked_vectors = s.get("asked_vectors", s.get("vectors"))
    return (stored.corpus_hash == corpus_hash and asked_vectors == vectors
            and s.get("asked_model") == model
            and s.get("requested") == ("auto" if n_topics is None else n_topics)
            and s.get("seed") == seed and s.get("method") == METHOD)


def stale_message(where: str, stored: StoredTopics, corpus_hash: str) -> str:
    return (f"{where}: its topics are stale (made from corpus {stored.corpus_hash}, the file now "
            f"records corpus {corpus_hash}); run `ragcov topics` again")


def build_topics(data_file: str, n_topics: int | None = None, seed: int = 0,
                 vectors: str = "auto", model: str | None = None, corpus: Corpus | None = None,
                 refit: bool = False, mapper: Mapper = local_map) -> BuiltTopics:
    """Cluster the data file's chunks into topics and store them there (or keep the
    stored ones when they were made the same way from the same corpus).

    ``mapper`` runs the work that grows with the corpus (counting each chunk's words),
    here or on Dask workers, with the same topics either way."""
    check_source(vectors)
    data = CoverageData(data_file)
    meta = data.meta()  # the readers' own refusals: no file, an empty one
    if corpus is not None and corpus.hash != meta.corpus_hash:
        raise RagcovError(f"--corpus is not the corpus recorded in {data_file} (hash "
                          f"{corpus.hash}, recorded {meta.corpus_hash}): give the same corpus "
                          "and chunking options as `ragcov run`")
    ids = chunk_ids_in_order(data)
    check_topic_count(n_topics, len(ids), str(data_file))
    stored = read_stored(data)
    if stored is not None and not refit and settings_match(stored, meta.corpus_hash, vectors,
                                                           n_topics, seed, model):
        return BuiltTopics(stored, made=False)
    require_sklearn()  # only to make topics: stored ones are read without it
    texts = chunk_texts_in_order(data)
    # Counted once, after the vectors' own refusals, and read by the TF-IDF and the labels.
    terms = cache(lambda: corpus_terms(texts, mapper))
    found = chunk_vectors(str(data_file), meta, texts, vectors, model, corpus, seed, terms)
    fitted = fit(found.matrix, texts, n_topics, seed, terms())
    labels = [TopicLabel(t, ", ".join(terms[:3]) or f"topic {t}", tuple(terms), ids[c],
                         int((fitted.assignment == t).sum()))
              for t, (terms, c) in enumerate(zip(fitted.terms, fitted.central), start=1)]
    settings = {"corpus_hash": meta.corpus_hash, "vectors": found.source, "asked_vectors": vectors,
                "asked_model": model, "seed": seed, "requested": "auto" if n_topics is None else n_topics,
                "method": METHOD, "topics": len(labels),
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if fitted.candidates:
        settings["candidates"] = {str(k): v for k, v in fitted.candidates.items()}
    made = StoredTopics(settings, labels, ids, fitted.assignment, fitted.xy)
    write_topics(data, made)
    return BuiltTopics(made, made=True, note=found.note)


def fresh_topics(data_file: str, corpus_hash: str | None = None,
                 missing_ok: bool = False) -> StoredTopics | None:
    """The data file's topics for a reader: one line when they are stale, or when there are
    none (None with ``missing_ok``)."""
    data = CoverageData(data_file)
    digest = corpus_hash or data.meta().corpus_hash
    stored = read_stored(data)
    if stored is None:
        if missing_ok:
            return None
        raise RagcovError(f"{data_file}: no topics recorded; run `ragcov topics` first")
    if stored.corpus_hash != digest:
        raise RagcovError(stale_message(str(data_file), stored, digest))
    return stored
