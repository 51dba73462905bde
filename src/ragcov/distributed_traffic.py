"""Production traffic on Dask: ``ragcov import`` and ``ragcov gap`` with ``--engine dask``.

Production logs outgrow one machine long before test suites do.

Production traffic comes as folders of shards (Phoenix parquet files, rotated
JSON-lines exports, TREC runs). Each shard (or each part of a large JSON-lines
file) is read on a worker by :func:`ragcov.traces.parallel.read_part`, the same
function the local engine runs; what needs the whole export (duplicate spans,
nesting, time order, query ids) is merged here in file order, so the data file
is the one a single-process import writes. Workers open the shard files by
path: on a cluster of several machines the files must be on storage they all
see, under the same path (docs/scale-out.md).

``gap`` counts the traffic's hits per chunk in ranges of the hits table on the
workers (the data file on shared storage too) and sums the counts here; the
traffic's hits are never read into this process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ragcov.compare.gap import TrafficGap, traffic_gap
from ragcov.corpus import Corpus
from ragcov.distributed import dask_client, in_order_again, n_workers
from ragcov.traces import ImportResult, import_traces
from ragcov.traces.parallel import Part, PartsReader, Sent, read_part


def dask_parts(client: Any) -> PartsReader:
    """Parts read by ``client``'s workers, a few per worker in flight, results in order."""
    def read(fmt: str, parts: list[Part], known: frozenset[str] | None) -> Iterable[Sent]:
        def scatter() -> Any:  # again too, the corpus ids lost with every worker that held them
            return client.scatter(known, broadcast=True, hash=False) if known else None

        def submit(i: int, known_f: Any) -> Any:
            path, lines = parts[i]  # workers may run elsewhere: the path as this machine sees it
            return client.submit(read_part, fmt, (os.path.abspath(path), lines), known_f,
                                 pure=False)

        return in_order_again(len(parts), submit, scatter, scatter(), "trace parts",
                              ahead=2 * n_workers(client))

    return read


def import_dask(path: str | os.PathLike[str], fmt: str, corpus: Corpus, k: int | None = None,
                ignore_unknown: bool = False, name: str = "traces",
                queries: dict[str, str] | None = None, scheduler: str | None = None,
                workers: int | None = None) -> ImportResult:
    """:func:`ragcov.traces.import_traces` with the shards read on Dask (``scheduler``, or a
    LocalCluster of ``workers`` processes on 127.0.0.1)."""
    with dask_client(scheduler, workers) as client:
        return import_traces(path, fmt, corpus, k=k, ignore_unknown=ignore_unknown, name=name,
                             queries=queries, read_parts=dask_parts(client))


def gap_dask(tests: str | os.PathLike[str], traffic: str | os.PathLike[str],
             top: int | None = 100, allow_different_k: bool = False,
             allow_different_retriever: bool = False, scheduler: str | None = None,
             workers: int | None = None) -> TrafficGap:
    """:func:`ragcov.compare.gap.traffic_gap` with the traffic's hits counted on Dask."""
    with dask_client(scheduler, workers) as client:
        def map_rows(fn: Callable[..., np.ndarray], tasks: list[tuple[Any, ...]]
                     ) -> list[np.ndarray]:
            return client.gather([client.submit(fn, *t, pure=False) for t in tasks])

        return traffic_gap(tests, traffic, top, allow_different_k, allow_different_retriever,
                           map_rows=map_rows)
