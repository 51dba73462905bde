"""From a trace file to a Run over a corpus: pick the reader, resolve ids, cut to k.

Lists are cut to k before unknown ids are looked for: what ranked below k never
reached the model. Ids not in the corpus are an error that lists them, unless
``ignore_unknown``, which skips and counts them (a corpus that changed since the
traces were recorded); a skipped id leaves a hole, nothing is pulled up into it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.retrieval import Run, mismatch_hint, validate_k
from ragcov.traces.detect import require_trace_file
from ragcov.traces.formats import trace_format
from ragcov.traces.jsontext import NotLines
from ragcov.traces.parallel import (
    MAX_WORKERS,
    Part,
    PartsReader,
    Sent,
    cores,
    file_parts,
    merge,
    read_in_processes,
    read_part,
    worth_parallel,
)
from ragcov.traces.records import (
    ImportResult,
    Item,
    Resolved,
    SpanStats,
    Trace,
    cyclic_gc_paused,
)
from ragcov.traces.retrievals import collect
from ragcov.traces.shards import shard_files

if TYPE_CHECKING:
    from ragcov.retrievers.resolver import IdResolver

SHOW_UNKNOWN = 20
#: An OpenInference OTLP JSON export or a Phoenix parquet file is first tried column by
#: column (:mod:`.columnar`), with the general reader's result; False reads every file
#: with the general reader.
COLUMNAR = True
#: An OTLP JSON export smaller than this is read by the general reader: loading pyarrow
#: and its first calls cost more than the columns save (about 0.4 s against 30 µs a span).
COLUMNAR_MIN_BYTES = 16 * 2**20


def read_traces(path: str | os.PathLike[str], fmt: str) -> list[Trace]:
    return list(_read_traces_counted(path, fmt)[0])


def _read_traces_counted(path: str | os.PathLike[str], fmt: str, workers: int | None = 1,
                         known: Mapping[str, int] | None = None,
                         read_parts: PartsReader | None = None
                         ) -> tuple[Iterable[Trace], int, SpanStats]:
    """The traces, how many duplicate spans were dropped, and what was merged or
    empty (span formats only). A folder or glob is its shards read one after another,
    as one export (by ``read_parts`` when given: on a cluster); a large JSON-lines span
    file is read by ``workers`` processes (None: as many as pays on this machine)."""
    shards = shard_files(path)
    fmt = _format(path, fmt)
    spec = trace_format(fmt)
    stats = SpanStats()
    ids = frozenset(known) if known is not None else None
    if shards is not None:
        parts: list[Part] = [(str(s), None) for s in shards]
        sent = (read_parts or _read_here)(fmt, parts, ids)
        traces, dropped = merge(path, spec, ((p, True, r) for (p, _l), r in zip(parts, sent)),
                                stats)
        return traces, dropped, stats
    require_trace_file(path)
    if COLUMNAR and read_parts is None and known is not None and (spec.name == "phoenix" or (
            spec.name == "openinference" and os.path.getsize(path) >= COLUMNAR_MIN_BYTES)):
        from ragcov.traces.columnar import Fallback, read_columnar, read_phoenix_columnar

        try:
            fast, stats = (read_columnar if spec.name == "openinference"
                           else read_phoenix_columnar)(path, known)
            return fast, 0, stats
        except Fallback:
            pass  # read by the general reader, which decides (and locates any error)
    if read_parts is not None:  # one file on a cluster: in parts when it is JSON lines
        parts = file_parts(str(path)) if spec.lines else [(str(path), None)]
        try:
            traces, dropped = merge(path, spec, ((p, i == 0, r) for i, ((p, _l), r) in
                                                 enumerate(zip(parts, read_parts(fmt, parts, ids))
                                                           )), stats)
            return traces, dropped, stats
        except NotLines:
            stats = SpanStats()  # not one value a line: read whole, below
    if spec.records is not None:
        return spec.records(path), 0, stats
    assert spec.spans is not None and spec.finish is not None and spec.pick is not None

    if workers != 1 and (workers is not None or worth_parallel(path, spec)):
        n = workers or min(cores(), MAX_WORKERS)
        try:
            traces, dropped = read_in_processes(str(path), spec, ids, n, stats)
            return traces, dropped, stats
        except NotLines:
            stats = SpanStats()  # not one value a line: read whole, below
    source = spec.spans(path)
    read, nesting = collect(source, _counting(spec.pick, stats), path)
    return spec.finish(path, read, nesting, stats), source.dropped, stats


def _counting(pick: Callable[[Any, Any], Any], stats: SpanStats) -> Callable[[Any, Any], Any]:
    """``pick``, counting the RERANKER spans it is shown in ``stats``."""
    def counted(span: Any, where: Any) -> Any:
        if span.kind == "RERANKER":
            stats.rerankers += 1
        return pick(span, where)
    return counted


def _read_here(fmt: str, parts: list[Part], known: frozenset[str] | None) -> Iterator[Sent]:
    """The parts read one after another in this process."""
    for part in parts:
        yield read_part(fmt, part, known)


def import_traces(path: str | os.PathLike[str], fmt: str, corpus: Corpus, k: int | None = None,
                  ignore_unknown: bool = False, name: str = "traces",
                  queries: dict[str, str] | None = None, workers: int | None = None,
                  read_parts: PartsReader | None = None) -> ImportResult:
    """Read ``path`` in format ``fmt`` into a Run over ``corpus``.

    ``fmt`` is one of :data:`FORMATS`, or ``"auto"`` to detect it from the file
    (the result's ``format`` names it). ``k`` cuts every list to its top k; without
    it k is the longest list. Query texts missing from the traces (TREC and ranx
    carry none) are taken from ``queries`` when given. Traces are resolved to chunk
    ids as they are read, so only the Run grows with the file. ``path`` may be a
    folder or glob of shards (:mod:`.shards`), read by ``read_parts`` when given (a
    cluster); a large JSON-lines span file is read by ``workers`` processes (None:
    as many as pay here, 1: this process alone), with the same result.
    """
    # Imported when called, so reading traces (read_traces) never loads the
    # retrievers package.
    from ragcov.retrievers.resolver import IdResolver

    fmt = _format(path, fmt)

    with cyclic_gc_paused():
        traces, duplicate_spans, stats = _read_traces_counted(path, fmt, workers,
                                                              corpus.positions, read_parts)
        resolver = IdResolver(corpus, f"{fmt} trace")
        # Without k every list is taken whole and k is the longest, learnt at the end.
        run = Run(k=validate_k(k) if k is not None else sys.maxsize,
                  retriever={"kind": "traces", "name": name})
        unknown: dict[str, int] = {}
        count = longest = 0
        known = corpus.positions
        for trace in traces:
            count += 1
            # Repeats kept in place: the list is cut to k before they are dropped (Run.add).
            ranked, complete = _resolve(trace, resolver, known)
            # The retriever's k is its list's length: ids not in the corpus and repeats
            # count, so the same traces appended again (at the file's k) keep their hits.
            longest = max(longest, len(ranked))
            if k is not None and len(ranked) > k:  # a list that fits keeps its kind (Distinct)
                ranked = ranked[:k]
            if not complete and not all(cid in known for cid, _s in ranked):
                for cid in dict.fromkeys(cid for cid, _s in ranked if cid not in known):
                    unknown[cid] = unknown.get(cid, 0) + 1
                ranked = [(cid, score) for cid, score in ranked if cid in known]
            text = trace.query or (queries or {}).get(trace.query_id, "")
            run.add(trace.query_id, text, ranked)
        if k is None:
            run.k = longest or 1
    if not count:
        raise RagcovError(f"{path}: no retrievals found in this {fmt} file")
    if unknown and not ignore_unknown:
        raise RagcovError(_unknown_message(path, list(unknown), corpus))
    return ImportResult(run, count, unknown, dict(resolver.fallbacks), duplicate_spans,
                        stats.merged, stats.empty, fmt, resolver.matching, stats.rerankers)


def first_stage_lists(path: str | os.PathLike[str], fmt: str, corpus: Corpus
                      ) -> dict[str, Ranked] | None:
    """Per query id, the list its reranker was given (OpenInference ``RERANKER`` spans'
    input documents, ids in the corpus only); None when the export holds no reranker
    span with input documents, or is not one OpenInference file (a folder of shards is
    read for its final lists only).

    The spans are read again with :func:`~ragcov.traces.openinference.pick_first_stage`,
    which keeps every span the import picks, so query ids come out as the import's."""
    from ragcov.retrievers.resolver import IdResolver
    from ragcov.traces.openinference import pick_first_stage, pick_openinference

    fmt = _format(path, fmt)
    spec = trace_format(fmt)
    if spec.pick is not pick_openinference or shard_files(path) is not None or spec.spans is None:
        return None
    assert spec.finish is not None
    rerankers = 0

    def pick(span: Any, where: Any) -> Any:
        nonlocal rerankers
        picked = pick_first_stage(span, where)
        if span.kind == "RERANKER" and picked is not None:
            rerankers += 1
        return picked

    with cyclic_gc_paused():  # a second read of the whole export, as the import's first
        source = spec.spans(path)
        read, nesting = collect(source, pick, path)
    if not rerankers:
        return None
    resolver = IdResolver(corpus, f"{fmt} trace")
    known = corpus.positions
    out: dict[str, Ranked] = {}
    for trace in spec.finish(path, read, nesting, None):
        ranked, _complete = _resolve(trace, resolver, known)
        out[trace.query_id] = [(cid, score) for cid, score in dict(ranked).items() if cid in known]
    return out


def _format(path: str | os.PathLike[str], fmt: str) -> str:
    """``fmt``, or with ``"auto"`` the format detected from the file, or a folder's first
    shard (as ``ragcov import`` does without ``--format``)."""
    if fmt != "auto":
        return fmt
    from ragcov.traces.detect import detect_format

    shards = shard_files(path)
    return detect_format(shards[0] if shards else path)


def _resolve(trace: Trace, resolver: IdResolver, known: Mapping[str, int]) -> tuple[Ranked, bool]:
    """The trace's chunk ids in order (a repeat where it was), and whether all are in
    the corpus; an item the corpus cannot place gets a descriptive id, so it is reported
    as unknown rather than dropped. An item's own id that is a corpus chunk is taken at once; the
    others are matched as one list, so identical texts go to distinct chunks."""
    items = trace.items
    if isinstance(items, Resolved):  # read in a worker or in columns: ids in the corpus
        return items, True  # type: ignore[return-value]
    if all(type(item) is tuple for item in items):  # from workers, merged: ids in the corpus
        return items, True  # type: ignore[return-value]
    # Pairs (ids in the corpus) among documents to match: each pair is its id and score.
    items = [Item(*item) if type(item) is tuple else item for item in items]
    complete = True
    if all(item.id is not None and item.id in known for item in items):
        cids: list[str] = [item.id for item in items]  # type: ignore[misc]
    else:
        from ragcov.retrievers.resolver import Entry

        def placeholder(n: int, exc: Exception) -> str:
            return f"<no id; content {(items[n].content or '')[:40]!r} not in the corpus>"

        cids = resolver.resolve_list(
            [item.id if item.id is not None and item.id in known
             else Entry(item.id, item.metadata, item.content) for item in items],
            trace.query, placeholder)
        complete = all(cid in known for cid in cids)
    return [(cid, item.score) for cid, item in zip(cids, items)], complete


def _unknown_message(path: Any, ids: list[str], corpus: Any) -> str:
    """The unknown ids, their likely cause (another splitter, store-made ids) and the fix."""
    shown = ", ".join(ids[:SHOW_UNKNOWN])
    more = f" (and {len(ids) - SHOW_UNKNOWN} more)" if len(ids) > SHOW_UNKNOWN else ""
    return (f"{path}: {len(ids)} retrieved id{'s' if len(ids) != 1 else ''} not in the corpus: "
            f"{shown}{more}. {mismatch_hint(ids, corpus)} Or pass --ignore-unknown "
            "(ignore_unknown=True) to skip them")
