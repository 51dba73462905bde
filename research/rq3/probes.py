"""The pool and its self-query probes, recorded once in a ragcov data file and reused.

RQ3's hub orders need each chunk's k-occurrence measured *without the test pool*:
the self-query probes of ``ragcov probe`` (two per chunk, built from the chunk's own
text), run through the same retriever at the same k. They are recorded exactly as a
user records them (``ragcov.api.measure`` then ``ragcov.api.probe`` into one data
file), so the orders read the same tables ``ragcov select`` reads.

Retrieving ~2,400 probes and the pool with a dense encoder costs minutes on a small
machine, so the data file is kept in ragcov's cache directory, keyed by everything
that changes its content (dataset, retriever, model, k, chunking, corpus hash); a
second run reads it back in a second. ``RAGCOV_RESEARCH_NO_CACHE=1`` records afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from research.common import ExperimentSetup, Prepared


def cache_path(setup: ExperimentSetup, corpus_hash: str) -> Path:
    from ragcov.files import cache_dir

    key = json.dumps({**setup.describe(), "data": None, "corpus": corpus_hash}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "research" / f"{setup.label}-{digest}.ragcov"


def prepare_with_probes(setup: ExperimentSetup) -> tuple[Prepared, np.ndarray]:
    """The pool's matrix (as :func:`research.common.prepare`) and each chunk's probe k-occurrence."""
    from ragcov.api import measure, probe
    from ragcov.data.datafile import CoverageData
    from ragcov.data.probes import read_probes
    from ragcov.retrieval import validate_k
    from ragcov.retrievers import make_retriever
    from research.datasets import load_dataset

    validate_k(setup.k)
    t0 = time.perf_counter()
    ds = load_dataset(setup.dataset, setup.data)
    corpus = ds.corpus(setup.chunk_size, setup.chunk_overlap)
    path = cache_path(setup, corpus.hash)
    data = CoverageData(path)
    fresh = os.environ.get("RAGCOV_RESEARCH_NO_CACHE") == "1"
    probes = None if fresh or not data.exists() else read_probes(data, len(corpus))
    fingerprint: dict = {}
    if probes is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        r = make_retriever(setup.retriever, corpus, model=setup.model, progress=setup.progress)
        fingerprint = r.fingerprint()
        measure(corpus, ds.suite(), r, k=setup.k, data_file=path, progress=setup.progress)
        probe(corpus, r, path, progress=setup.progress)
        probes = read_probes(data, len(corpus))
    m = data.matrix()
    occ = probes.k_occurrence() if probes is not None else np.zeros(len(corpus), dtype=np.int64)
    return Prepared(ds, corpus, m, fingerprint, time.perf_counter() - t0), occ
