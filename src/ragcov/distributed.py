"""Sharded runs on Dask: corpus embedding and query retrieval spread over workers.

Embedding the corpus and retrieving the suite are the expensive steps; the coverage
maths afterwards is cheap and stays in one process. The work goes to an existing
engine, ``dask.distributed`` (a ``LocalCluster`` on 127.0.0.1 when no scheduler
address is given), and on one machine the result is the single-process result,
bit for bit, when both encode under one torch thread count (the default with ragcov's
own LocalCluster; docs/scale-out.md says what holds otherwise: near-ties may differ):

* Dense corpus embeddings are computed in slices whose boundaries fall on the
  ``ENCODE_CHUNK`` boundaries the single-process encoder uses, so each slice is
  encoded in exactly the same batches, and under the same torch thread count
  (:func:`dask_encode_threads`: the count a local run in the driver would use,
  sent to every worker); the slices are gathered into one array
  (and cached as a single-process run would cache it), one index is built and
  every worker searches that same index (an HNSW graph is built once and shipped
  serialised, so all shards see the same approximate neighbours).
* BM25 is built once per worker over the full corpus, so scores (which depend on
  corpus-wide statistics) are those of one process.
* Query shards are contiguous and start on a retrieval-batch boundary, so every
  query is encoded and searched in the same batch as in a local run.

Each shard's run is recorded as its own data file and the files are merged with
:func:`ragcov.data.combine`, which refuses shards that disagree.

Scripts that call :func:`measure_dask` without a scheduler address start worker
processes, which re-import the main module: guard the call with
``if __name__ == "__main__":``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.data import DEFAULT_DATA_FILE, CoverageData
from ragcov.data.datafile import INDEX_RECALL
from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.progress import progress_bar, status
from ragcov.retrieval import Run, run_retriever, validate_k, warn_if_k_takes_the_corpus
from ragcov.retrievers.resolver import AdapterWarning
from ragcov.suite import Suite
from ragcov.user_warnings import CredentialWarning, RetrievalWarning

# Retrievers built on a worker, by run token: one build per worker per run.
_WORKER_RETRIEVERS: dict[str, Any] = {}
_WORKER_LOCK = threading.Lock()


# --------------------------------------------------------------------- planning
def aligned_slices(n: int, parts: int, unit: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into at most ``parts`` contiguous slices starting on multiples of unit.

    Alignment is what makes a shard process its items in the same batches as a
    single process would.
    """
    if n <= 0:
        return []
    units = math.ceil(n / unit)
    per = math.ceil(units / max(1, parts))
    step = per * unit
    return [(s, min(s + step, n)) for s in range(0, n, step)]


# --------------------------------------------------------------- worker tasks
def _worker_placement(spec: dict[str, Any], source: str) -> Any:
    """Where this worker embeds: its own device, as ``--device`` resolves here (a GPU
    worker on its GPU, a CPU worker on its cores); on a CPU, the backend the driver chose
    (so a sharded run encodes as a local one does)."""
    import dataclasses

    from ragcov.retrievers.hardware import resolve_placement

    placement = resolve_placement(spec.get("device"), spec.get("dtype"), spec.get("asked_backend"),
                                  source)
    if not placement.accelerated and spec.get("backend"):
        placement = dataclasses.replace(placement, backend=spec["backend"])
    return placement


def _embed_slice(source: str, texts: list[str], batch_size: int, threads: int,
                 backend: str | None = None, spec: dict[str, Any] | None = None) -> np.ndarray:
    return _embed_where(source, texts, batch_size, threads,
                        {**(spec or {}), **({"backend": backend} if backend else {})})[0]


def _embed_where(source: str, texts: list[str], batch_size: int, threads: int,
                 spec: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """A slice's embeddings on this worker's own device, and where that was."""
    from ragcov.retrievers.dense import encode, load_encoder

    placement = _worker_placement(spec, source)
    return (encode(load_encoder(source, placement=placement), texts, batch_size, progress=False,
                   threads=threads), placement.record())


def _worker_retriever(token: str, spec: dict[str, Any], corpus: Corpus,
                      shared: dict[str, Any] | None) -> Any:
    with _WORKER_LOCK:
        r = _WORKER_RETRIEVERS.get(token)
        if r is None:
            r = _build_retriever(spec, corpus, shared)
            _WORKER_RETRIEVERS[token] = r
        return r


def _build_retriever(spec: dict[str, Any], corpus: Corpus, shared: dict[str, Any] | None) -> Any:
    if spec["kind"] == "dense" and shared is not None:
        from ragcov.retrievers.dense import DenseRetriever

        prebuilt = None
        if shared.get("index_bytes") is not None:
            import faiss

            prebuilt = faiss.deserialize_index(shared["index_bytes"])
        from ragcov.retrievers.dense import resolve_model

        place = _worker_placement(spec, resolve_model(spec["model"])[1])
        r = DenseRetriever(corpus, model=spec["model"], index=spec["index"], progress=False,
                           batch_size=spec["batch_size"], embeddings=shared["embeddings"],
                           prebuilt_index=prebuilt, threads=spec["threads"],
                           backend=place.backend, device=place.device, dtype=place.dtype)
        if prebuilt is not None:
            prebuilt.hnsw.efSearch = r.ef_search
        return r
    from ragcov.retrievers import make_retriever

    return make_retriever(spec["kind"], corpus, model=spec["model"], index=spec["index"],
                          progress=False)


# A warning raised on a worker would print in the worker's log, with a source line of
# Dask's; it is caught there and sent back, and the driver warns once per message.
Caught = list[tuple[str, str]]
_CATEGORIES: dict[str, type[Warning]] = {c.__name__: c for c in (
    AdapterWarning, CredentialWarning, RetrievalWarning, UserWarning, RuntimeWarning,
    DeprecationWarning, FutureWarning)}


@contextlib.contextmanager
def _catching() -> Iterator[Caught]:
    caught: Caught = []
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        yield caught
    caught += [(_category_name(r.category), str(r.message)) for r in records]


def _category_name(category: type[Warning]) -> str:
    return category.__name__ if category.__name__ in _CATEGORIES else "UserWarning"


def _warn_caught(caught: Caught, shown: set[str]) -> None:
    from ragcov.user_warnings import warn

    for name, message in caught:
        if message not in shown:
            shown.add(message)
            warn(message, _CATEGORIES.get(name, UserWarning))


def _retrieve_shard(token: str, spec: dict[str, Any], corpus: Corpus,
                    shared: dict[str, Any] | None, queries: list[tuple[str, str]],
                    k: int) -> tuple[Run, Caught, dict[str, Any] | None]:
    with _catching() as caught:
        r = _worker_retriever(token, spec, corpus, shared)
        # The corpus check stops a shard whose ids the corpus lacks after its first queries.
        run = run_retriever(r, queries, k, batch_size=spec["batch_size"], progress=False,
                            corpus=corpus)
    placement = getattr(r, "placement", None)
    return run, caught, placement.record() if placement is not None else None


def _worker_fingerprint(token: str, spec: dict[str, Any], corpus: Corpus,
                        shared: dict[str, Any] | None) -> tuple[dict[str, Any], Caught]:
    with _catching() as caught:
        fingerprint = _worker_retriever(token, spec, corpus, shared).fingerprint()
    return fingerprint, caught


def _forget(token: str) -> None:
    with _WORKER_LOCK:
        _WORKER_RETRIEVERS.pop(token, None)


# --------------------------------------------------------------------- cluster
def dask_encode_threads(threads: int | None = None, scheduler: str | None = None,
                        backend: str = "torch") -> int:
    """The torch thread count every worker encodes with (the driver's too).

    ``threads`` when given, else ``$RAGCOV_ENCODE_THREADS``. Otherwise, on a
    LocalCluster of this machine, the count a local run in this process would use,
    so a sharded run gives a local run's bits; on a remote cluster 1, Dask's own
    one core per worker thread (other machines give other bits anyway).
    Call it before a LocalCluster starts: starting one sets ``OMP_NUM_THREADS=1``
    in this process's environment, which a torch imported afterwards would obey.
    """
    from ragcov.retrievers.dense import ENCODE_THREADS_ENV, encode_threads

    if threads is None and scheduler and not os.environ.get(ENCODE_THREADS_ENV, "").strip():
        return 1
    return encode_threads(threads, backend)


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None,
                task_threads: int = 1) -> Iterator[Any]:
    """A client of ``scheduler``, or of a LocalCluster of worker processes on 127.0.0.1.

    The LocalCluster has at most one worker per ``task_threads`` cores, so workers
    whose tasks each run ``task_threads`` torch threads do not oversubscribe the CPU.
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise RagcovError("--engine dask needs dask.distributed: pip install 'ragcov[dask]'") \
            from exc
    if workers is not None and workers < 1:
        raise RagcovError(f"--workers must be at least 1, got {workers}")
    if scheduler:
        try:
            client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: not an address
            raise RagcovError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        with client:
            yield client
        return
    # Partitions are work units, not processes: never start more workers than cores.
    cores = min(os.cpu_count() or 1, 8)
    fit = max(1, cores // max(1, task_threads))
    n = min(workers, fit) if workers else fit
    # Starting a LocalCluster sets OMP_NUM_THREADS=1 (and MKL's, OpenBLAS's) in this
    # process's environment for its workers; put ours back so a torch imported later
    # here is not silently single-threaded.
    saved = {key: os.environ.get(key) for key in THREAD_ENV}
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        _restore_env(saved)
        yield client


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _restore_env(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def n_workers(client: Any) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


# ------------------------------------------------------------------------ dense
def _dense_embeddings(client: Any, corpus: Corpus, model: str | None, parts: int,
                      batch_size: int, threads: int, progress: bool,
                      spec: dict[str, Any], places: list[dict[str, Any]]) -> np.ndarray:
    """The corpus embeddings: from the cache if a run made them, else embedded in shards
    (``places`` gets where each shard was embedded)."""
    from ragcov.retrievers.dense import (
        ENCODE_CHUNK,
        embedding_cache_key,
        embedding_cache_path,
        identify_model,
        load_cached_embeddings,
        resolve_model,
        save_embeddings,
    )
    from ragcov.retrievers.hardware import cache_variant

    name, source = resolve_model(model)
    # fp16/bf16 vectors have an entry of their own, as in a local run (fp32's is "").
    dtype = "fp32" if spec.get("dtype") in (None, "auto") else spec["dtype"]
    key = embedding_cache_key(corpus, identify_model(name, source).cache_key,
                              cache_variant("torch", dtype))
    path = embedding_cache_path(key)
    cached = load_cached_embeddings(path, len(corpus), key=key)
    if cached is not None:
        return cached
    # Several slices per worker so a slow worker does not hold the others up.
    slices = aligned_slices(len(corpus), parts * 4, ENCODE_CHUNK)
    texts = corpus.texts
    futures = [client.submit(_embed_where, source, texts[a:b], batch_size, threads, spec,
                             pure=False)
               for a, b in slices]
    pieces: list[np.ndarray | None] = [None] * len(slices)
    where = {f.key: i for i, f in enumerate(futures)}
    from dask.distributed import as_completed

    with progress_bar("Embedding corpus (dask, each worker on its own device)", total=len(corpus),
                      enabled=progress, unit="chunks") as advance:
        for fut in as_completed(futures):
            i = where[fut.key]
            pieces[i], place = fut.result()
            if place not in places:
                places.append(place)
            advance(slices[i][1] - slices[i][0])
    emb = np.concatenate([p for p in pieces if p is not None], axis=0)
    save_embeddings(path, emb, key)
    return emb


# -------------------------------------------------------------------------- API
def measure_dask(corpus: Corpus, suite: Suite, retriever: str = "dense",
                 model: str | None = None, index: str = "flat", k: int = 5,
                 data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, append: bool = False,
                 scheduler: str | None = None, partitions: int | None = None,
                 progress: bool = True, batch_size: int = 64,
                 recall_sample: int = 200, encode_threads: int | None = None,
                 backend: str | None = None, device: str | None = "auto",
                 dtype: str | None = "auto") -> CoverageMatrix:
    """Like :func:`ragcov.api.measure`, with embedding and retrieval sharded on Dask.

    ``partitions`` is the number of query shards (default: one per worker); each
    becomes a data file of its own, and the shards are combined into
    ``data_file``. With an HNSW index, recall@k against exact search is measured
    on ``recall_sample`` queries of the suite and recorded in the data file.
    ``encode_threads`` is the torch thread count of every encode, on the workers
    and in the driver (default: :func:`dask_encode_threads`). Each worker resolves
    ``device`` itself (:func:`_worker_placement`): with ``auto`` a GPU worker embeds on its
    GPU and a CPU worker on its cores; the data file records where (``x:hardware``).
    """
    from ragcov.retrievers.hardware import check_settings, record_places

    check_settings(retriever, device, dtype)
    validate_k(k)
    if len(suite) == 0:
        raise RagcovError("the suite is empty (no queries)")
    if partitions is not None and partitions < 1:
        raise RagcovError(f"--partitions must be at least 1, got {partitions}")
    warn_if_k_takes_the_corpus(k, len(corpus))
    if retriever == "dense":
        from ragcov.retrievers.dense import INDEX_KINDS

        if index not in INDEX_KINDS:
            raise RagcovError(f"unknown index {index!r}: expected one of {', '.join(INDEX_KINDS)}")
    data = CoverageData(data_file)
    data.check_destination()  # before a cluster starts; the rest once the retriever is known
    todo = [(q.id, q.text) for q in suite]
    # Resolved before a LocalCluster starts (see dask_encode_threads) and sent to workers.
    threads = 1
    asked_backend = backend  # each worker resolves it with its device; ``backend``: a CPU's
    if backend == "onnx-int8":  # its embeddings would share the fp32 cache entry here
        raise RagcovError("--backend onnx-int8 is not available with --engine dask: use "
                          "--engine local, or --backend onnx")
    if retriever == "dense":
        from ragcov.retrievers.dense import load_encoder, resolve_model
        from ragcov.retrievers.onnx_encoder import resolve_backend

        source = resolve_model(model)[1]
        if asked_backend in ("onnx", "onnx-int8") or dtype not in (None, "auto", "fp32"):
            # Refused before a cluster starts: ONNX with a GPU named, fp16 with none. Reduced
            # precision needs a GPU here too: the fingerprint and HNSW's recall are this
            # machine's encoder's.
            from ragcov.retrievers.hardware import resolve_placement

            resolve_placement(device, dtype, asked_backend, source)
        backend = resolve_backend(backend, source)
        if backend != "torch":  # exported once here, not by every worker at once
            load_encoder(source, backend=backend)
        threads = dask_encode_threads(encode_threads, scheduler, backend)
    spec = {"kind": retriever, "model": model, "index": index, "batch_size": batch_size,
            "threads": threads, "backend": backend, "asked_backend": asked_backend,
            "device": device, "dtype": dtype}
    places: list[dict[str, Any]] = []
    token = uuid.uuid4().hex
    shown: set[str] = set()
    recall: dict[str, Any] | None = None
    with dask_client(scheduler, partitions, task_threads=threads) as client:
        parts = partitions or n_workers(client)
        shared_f = None
        if retriever == "dense":
            from ragcov.retrievers.dense import DenseRetriever

            emb = _dense_embeddings(client, corpus, model, parts, batch_size, threads, progress,
                                    spec, places)
            # Here for the fingerprint (and HNSW's recall): on this machine's own device.
            local = DenseRetriever(corpus, model=model, index=index, batch_size=batch_size,
                                   embeddings=emb, progress=False, threads=threads, backend=backend,
                                   device="cpu" if device == "cpu" else "auto", dtype=dtype)
            fingerprint = local.fingerprint()
            shared: dict[str, Any] = {"embeddings": emb, "index_bytes": None}
            if index == "hnsw":
                import faiss

                shared["index_bytes"] = faiss.serialize_index(local.index)
                recall = local.measure_recall(suite.texts, k=k, sample=recall_sample)
            shared_f = client.scatter(shared, broadcast=True, hash=False)
            del local
        corpus_f = client.scatter(corpus, broadcast=True, hash=False)
        if retriever != "dense":
            with status(f"Building retriever {retriever} on a worker ...",
                        enabled=progress and "://" not in retriever):
                fingerprint, caught = client.submit(_worker_fingerprint, token, spec, corpus_f,
                                                    shared_f, pure=False).result()
            _warn_caught(caught, shown)
        if append:  # the same check as a local --append, before any query is retrieved
            todo = data.pending(todo, k, corpus.hash, fingerprint)
        def scatter() -> tuple[Any, Any]:
            return (client.scatter(corpus, broadcast=True, hash=False),
                    None if shared_f is None else client.scatter(shared, broadcast=True,
                                                                 hash=False))

        try:
            runs = _retrieve(client, token, spec, (corpus_f, shared_f), scatter, todo, k, parts,
                             progress, shown, places)
        finally:
            with contextlib.suppress(Exception):
                client.run(_forget, token)
    _record(data, corpus, runs, Run(k=k, retriever=fingerprint), append)
    if recall is not None:
        data.annotate(INDEX_RECALL, recall)
    if places:
        record_places(data, places, append)
    return data.matrix()


def _retrieve(client: Any, token: str, spec: dict[str, Any], data: tuple[Any, Any],
              scatter: Callable[[], tuple[Any, Any]], todo: list[tuple[str, str]], k: int,
              parts: int, progress: bool, shown: set[str], places: list[dict[str, Any]]
              ) -> list[Run]:
    """The queries retrieved in batches on the workers, each reading ``data`` (the corpus
    and the dense index's data, as ``scatter()`` put them on the cluster); a batch lost
    with its worker is sent again with them scattered again."""
    # One task per retrieval batch (still aligned on batch boundaries, so the result
    # is unchanged) so the bar moves batch by batch, not shard by shard.
    unit = spec["batch_size"]
    slices = aligned_slices(len(todo), max(parts, math.ceil(len(todo) / unit)), unit)

    def send(i: int, data: tuple[Any, Any]) -> Any:
        a, b = slices[i]
        return client.submit(_retrieve_shard, token, spec, *data, todo[a:b], k, pure=False)

    runs: list[Run | None] = [None] * len(slices)
    with progress_bar("Retrieving (dask)", total=len(todo), enabled=progress) as advance:
        for i, (run, caught, place) in _completed(len(slices), send, scatter, data, "queries",
                                                  then="; nothing was recorded"):
            runs[i] = run
            _warn_caught(caught, shown)
            if place is not None and place not in places:
                places.append(place)
            advance(slices[i][1] - slices[i][0])
    return [r for r in runs if r is not None]


def _record(data: CoverageData, corpus: Corpus, runs: Sequence[Run], empty: Run,
            append: bool) -> None:
    """Record the shards' runs, in suite order, the way a local run records its one run.

    One write: an append is one transaction on the existing file (concurrent appends
    keep each other's queries), never a whole new file combined over it.
    """
    merged = empty
    for run in runs:
        merged.queries.update(run.queries)
        merged.results.update(run.results)
    data.write(corpus, merged, append=append)


# ----------------------------------------------------------------------- probe
#: How many times a batch lost with its worker (a run's queries, a probe's) is sent again.
LOST_BATCH_TRIES = 3


class _Resend:
    """What :func:`_completed` and :func:`in_order_again` share about a batch lost with its
    workers: which failures are that, how often a batch may go again, and the data the
    batches read (``data``, as ``scatter()`` put it on the cluster), scattered again once
    per loss, not once per batch that read the lost copy."""

    def __init__(self, submit: Callable[[int, Any], Any], scatter: Callable[[], Any],
                 data: Any, what: str, then: str) -> None:
        self.submit, self.scatter, self.data = submit, scatter, data
        self.what, self.then = what, then
        self.copy = 0  # which scatter of the data the batches sent now read
        self.read: dict[str, int] = {}  # a batch's future -> the copy it was sent with
        self.lost: dict[int, int] = {}

    def send(self, i: int) -> Any:
        """Batch ``i`` sent with the data as it is on the cluster now."""
        fut = self.submit(i, self.data)
        self.read[fut.key] = self.copy
        return fut

    def result(self, i: int, fut: Any) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, None)`` when batch ``i`` must go again.

        Lost means cancelled by the scheduler (its worker, or the data scattered to it,
        gone for good). A batch that raised, ``CancelledError`` included, fails as its own
        error; a ``KilledWorker`` is Dask's word that the batch itself kills the workers
        that run it (after Dask's own retries), and is not sent again.
        """
        from concurrent.futures import CancelledError

        copy = self.read.pop(fut.key, None)
        try:
            return True, fut.result()
        except CancelledError:
            if fut.status != "cancelled":
                raise
        self.lost[i] = self.lost.get(i, 0) + 1
        if self.lost[i] > LOST_BATCH_TRIES:
            raise RagcovError(f"Dask: a batch of {self.what} was lost {self.lost[i]} times with "
                              f"its workers{self.then}") from None
        if copy == self.copy:  # the copy it read is gone: scatter it again, once
            self.data = self.scatter()
            self.copy += 1
        return False, None


def _completed(n: int, submit: Callable[[int, Any], Any], scatter: Callable[[], Any], data: Any,
               what: str, then: str = "", ahead: int | None = None
               ) -> Iterator[tuple[int, Any]]:
    """``(i, result)`` for the batches ``0..n-1`` as they complete, ``submit(i, data)``
    sending batch ``i`` to read ``data``, which ``scatter()`` put on the cluster (``ahead``
    in flight at most; all at once without it).

    A batch lost with its worker (or with the data scattered to it) is sent again with the
    data scattered again (:class:`_Resend`), :data:`LOST_BATCH_TRIES` times at most; then
    one line says a batch of ``what`` was lost (and ``then``). Any other error is the
    batch's own and propagates.
    """
    from dask.distributed import as_completed

    resend = _Resend(submit, scatter, data, what, then)
    pending = list(range(n))
    futures: dict[str, int] = {}
    live = as_completed()

    def send() -> None:
        if pending:
            i = pending.pop(0)
            fut = resend.send(i)
            futures[fut.key] = i
            live.add(fut)

    for _ in range(n if ahead is None else ahead):
        send()
    for fut in live:
        i = futures.pop(fut.key)
        done, result = resend.result(i, fut)
        if not done:
            pending.insert(0, i)
            send()
            continue
        yield i, result
        send()


def in_order_again(n: int, submit: Callable[[int, Any], Any], scatter: Callable[[], Any],
                   data: Any, what: str, ahead: int) -> Iterator[Any]:
    """The results of ``submit(0..n-1, data)`` in order, at most ``ahead`` in flight beyond
    the one given back (:func:`ragcov.traces.parallel.in_order`, with :func:`_completed`'s
    resend)."""
    resend = _Resend(submit, scatter, data, what, "")
    futures = {i: resend.send(i) for i in range(min(ahead, n))}
    for i in range(n):
        if i + ahead < n:
            futures[i + ahead] = resend.send(i + ahead)
        while True:
            done, result = resend.result(i, futures.pop(i))
            if done:
                break
            futures[i] = resend.send(i)  # the others that lost it go in their turn
        yield result


def probe_dask(corpus: Corpus, spec: dict[str, Any], fingerprint: dict[str, Any],
               batches: Sequence[list[tuple[str, str]]], k: int, on_batch: Any,
               scheduler: str | None = None, workers: int | None = None,
               progress: bool = True) -> None:
    """``ragcov probe --engine dask``: each batch of probe queries retrieved on a worker.

    The corpus goes to each worker once (scattered, broadcast), and each worker builds the
    retriever once (``spec``, as a run names it) over the whole corpus, so its scores are
    one process's; a worker whose retriever's fingerprint is not ``fingerprint`` (another
    package version, another model) is refused before any probe. ``on_batch(i, results)``
    records batch ``i`` in this process as it completes, so an interrupted probe keeps its
    finished batches and a rerun resumes as a local one does.
    """
    token = uuid.uuid4().hex
    shown: set[str] = set()
    with dask_client(scheduler, workers) as client:
        def scatter() -> Any:  # again too, if a lost worker took the batches' copy with it
            return client.scatter(corpus, broadcast=True, hash=False)

        corpus_f = scatter()
        try:
            theirs, caught = client.submit(_worker_fingerprint, token, spec, corpus_f, None,
                                           pure=False).result()
            _warn_caught(caught, shown)
            if theirs != fingerprint:
                from ragcov.data.schema import retriever_key

                raise RagcovError(f"the Dask workers build another retriever than this process "
                                  f"({retriever_key(theirs)} there, {retriever_key(fingerprint)} "
                                  "here): give them the same packages, model and settings")
            total = sum(len(b) for b in batches)

            def send(i: int, corpus_f: Any) -> Any:
                return client.submit(_retrieve_shard, token, spec, corpus_f, None, batches[i],
                                     k, pure=False)

            with progress_bar("Probing (dask)", total=total, enabled=progress) as advance:
                # A few batches per worker in flight: memory stays bounded, every worker busy.
                for i, (run, caught, _place) in _completed(
                        len(batches), send, scatter, corpus_f, "probes",
                        then="; the batches recorded are kept: run the probe again to resume",
                        ahead=2 * n_workers(client)):
                    _warn_caught(caught, shown)
                    on_batch(i, run.results)
                    advance(len(batches[i]))
        finally:
            with contextlib.suppress(Exception):
                client.run(_forget, token)


# ---------------------------------------------------------------------- topics
@contextlib.contextmanager
def dask_mapper(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """``ragcov topics --engine dask``: a ``mapper(fn, items)`` that runs each item on a
    worker and gives the results back in order (:data:`ragcov.topics.terms.Mapper`).

    The cluster starts at the first call, so topics the data file already holds are kept
    without one. Each item is scattered to the cluster on its own (a shard of chunk texts
    is tens of MiB), not packed into the task graph; an item lost with its worker is
    scattered and sent again (:func:`_completed`).
    """
    with contextlib.ExitStack() as stack:
        client: Any = None

        def mapper(fn: Any, items: Sequence[Any]) -> list[Any]:
            nonlocal client
            if not items:
                return []
            if client is None:
                client = stack.enter_context(dask_client(scheduler, workers))

            def scatter() -> list[Any]:  # again, all: a lost worker may have held any of them
                return client.scatter(list(items), hash=False)

            def send(i: int, held: list[Any]) -> Any:
                return client.submit(fn, held[i], pure=False)

            out: list[Any] = [None] * len(items)
            for i, result in _completed(len(items), send, scatter, scatter(), "topic work"):
                out[i] = result
            return out

        yield mapper


# ----------------------------------------------------------------------- drift
# Each worker's rebuilder and plans, by drift run token: built once per worker per run.
_WORKER_DRIFT: dict[str, Any] = {}


def _drift_state(token: str, job: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """This worker's rebuilder and the run's plans (made again here: :func:`plan` is
    deterministic by the seed, so the copies are the driver's, without shipping them)."""
    with _WORKER_LOCK:
        got = _WORKER_DRIFT.get(token)
        if got is None:
            from ragcov.drift.rebuild import rebuilder
            from ragcov.drift.relations import plan

            corpus = job["corpus"]
            rebuild = rebuilder(job["retriever"], corpus, model=job["model"], index=job["index_kind"],
                                backend=job["backend"], progress=False)
            plans = {p.name: p for p in plan(corpus, job["relations"], job["baseline"], job["k"],
                                             job["seed"], job["noise_rate"], job["distractors"],
                                             job["versions"])}
            got = _WORKER_DRIFT[token] = (rebuild, plans)
        return got


def _drift_fingerprint(token: str, job: dict[str, Any]) -> tuple[dict[str, Any], Caught]:
    with _catching() as caught:
        fingerprint = _drift_state(token, job)[0].base.fingerprint()
    return fingerprint, caught


def _drift_copy(token: str, job: dict[str, Any], name: str) -> tuple[Any, ...]:
    from ragcov.drift.engine import judged

    with _catching() as caught:
        rebuild, plans = _drift_state(token, job)
        copy, rows = judged(plans[name], job["corpus"], rebuild, job["queries"], job["baseline"],
                            job["index"], job.get("depth"))
    return name, copy.changed, copy.added, rows, caught


def _drift_forget(token: str) -> None:
    with _WORKER_LOCK:
        got = _WORKER_DRIFT.pop(token, None)
    if got is not None:
        got[0].close()  # scratch stores a store rebuilder made


def drift_dask(job: dict[str, Any], fingerprint: dict[str, Any], scheduler: str | None = None,
               workers: int | None = None) -> Any:
    """A remote for :func:`ragcov.drift.engine.run_drift`: the copies made, searched and
    judged on Dask workers, each building the retriever once on the corpus (sent once)
    and on each copy it is given; ``job`` holds what :func:`_drift_state` needs."""
    def remote(names: list[str], context: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
        token = uuid.uuid4().hex
        shown: set[str] = set()
        with dask_client(scheduler, workers) as client:
            whole = {**job, **context}

            def scatter() -> Any:  # again too, if a lost worker took the copies' job with it
                return client.scatter(whole, broadcast=True, hash=False)

            job_f = scatter()
            try:
                theirs, caught = client.submit(_drift_fingerprint, token, job_f,
                                               pure=False).result()
                _warn_caught(caught, shown)
                if theirs != fingerprint:
                    from ragcov.data.schema import retriever_key

                    raise RagcovError(f"the Dask workers build another retriever than this "
                                      f"process ({retriever_key(theirs)} there, "
                                      f"{retriever_key(fingerprint)} here): give them the same "
                                      "packages, model and settings")

                def send(i: int, job_f: Any) -> Any:
                    return client.submit(_drift_copy, token, job_f, names[i], pure=False)

                for _i, (name, changed, added, rows, caught) in _completed(
                        len(names), send, scatter, job_f, "drift copies",
                        then="; the copies recorded are kept: run drift again to resume"):
                    _warn_caught(caught, shown)
                    yield name, changed, added, rows
            finally:
                with contextlib.suppress(Exception):
                    client.run(_drift_forget, token)
    return remote
