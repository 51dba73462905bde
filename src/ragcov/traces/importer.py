"""From a trace file to a Run over a corpus: pick the reader, resolve ids, cut to k.

Lists are cut to k before unknown ids are looked for: what ranked below k never
reached the model. Ids not in the corpus are an error that lists them, unless
``ignore_unknown``, which skips and counts them (a corpus that changed since the
traces were recorded); a skipped id leaves a hole, nothing is pulled up into it.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.retrieval import Run, mismatch_hint, validate_k
from ragcov.traces.detect import require_trace_file
from ragcov.traces.jsonl import read_jsonl
from ragcov.traces.langfuse import read_langfuse_spans
from ragcov.traces.openinference import (
    iter_openinference_traces,
    openinference_traces,
    read_openinference,
)
from ragcov.traces.otel import iter_otel_traces, read_otel
from ragcov.traces.otlp import Span
from ragcov.traces.phoenix import read_phoenix_spans
from ragcov.traces.ranx import read_ranx
from ragcov.traces.records import ImportResult, SpanStats, Trace
from ragcov.traces.spanfile import SpanFile
from ragcov.traces.trec import read_trec

if TYPE_CHECKING:
    from ragcov.retrievers.resolver import IdResolver

FORMATS = ("jsonl", "trec", "ranx", "openinference", "otel", "phoenix", "langfuse")
READERS: dict[str, Callable[[str | os.PathLike[str]], list[Trace]]] = {
    "jsonl": read_jsonl, "trec": read_trec, "ranx": read_ranx,
    "openinference": read_openinference, "otel": read_otel,
    "phoenix": lambda p: openinference_traces(p, read_phoenix_spans(p)[0]),
    "langfuse": lambda p: openinference_traces(p, read_langfuse_spans(p)[0])}
#: Span formats: the spans (a stream) to their traces. Each reads the whole stream
#: before it returns, so the stream's duplicate count is final by then.
SPAN_READERS: dict[str, Callable[[Any, Iterable[Span], SpanStats], Iterator[Trace]]] = {
    "openinference": iter_openinference_traces, "otel": iter_otel_traces,
    "phoenix": iter_openinference_traces, "langfuse": iter_openinference_traces}
#: Where a span format's spans come from when not from an exported JSON file.
SPAN_SOURCES: dict[str, Callable[[str | os.PathLike[str]], tuple[list[Span], int]]] = {
    "phoenix": read_phoenix_spans, "langfuse": read_langfuse_spans}
SHOW_UNKNOWN = 20


def read_traces(path: str | os.PathLike[str], fmt: str) -> list[Trace]:
    return list(_read_traces_counted(path, fmt)[0])


def _read_traces_counted(path: str | os.PathLike[str],
                         fmt: str) -> tuple[Iterable[Trace], int, SpanStats]:
    """The traces, how many duplicate spans were dropped, and what was merged or
    empty (span formats only)."""
    fmt = _format(path, fmt)
    if fmt not in READERS:
        raise RagcovError(f"unknown trace format {fmt!r}: expected one of {', '.join(FORMATS)}")
    require_trace_file(path)
    stats = SpanStats()
    if fmt in SPAN_SOURCES:
        spans, dropped = SPAN_SOURCES[fmt](path)
        return SPAN_READERS[fmt](path, spans, stats), dropped, stats
    if fmt in SPAN_READERS:
        stream = SpanFile(path)
        traces = SPAN_READERS[fmt](path, stream, stats)
        return traces, stream.dropped, stats
    return READERS[fmt](path), 0, stats


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector while an import builds its records.

    An import creates millions of small objects that hold no reference cycles;
    the collector would walk all of them again at every full collection (about a
    third of the import's time at a million spans, measured). Reference counting
    still frees everything as usual; the collector is restored afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def import_traces(path: str | os.PathLike[str], fmt: str, corpus: Corpus, k: int | None = None,
                  ignore_unknown: bool = False, name: str = "traces",
                  queries: dict[str, str] | None = None) -> ImportResult:
    """Read ``path`` in format ``fmt`` into a Run over ``corpus``.

    ``fmt`` is one of :data:`FORMATS`, or ``"auto"`` to detect it from the file
    (the result's ``format`` names it). ``k`` cuts every list to its top k; without
    it k is the longest list. Query texts missing from the traces (TREC and ranx
    carry none) are taken from ``queries`` when given. Traces are resolved to chunk
    ids as they are read, so only the Run grows with the file.
    """
    # Imported when called, so reading traces (read_traces) never loads the
    # retrievers package.
    from ragcov.retrievers.resolver import IdResolver

    fmt = _format(path, fmt)

    with cyclic_gc_paused():
        traces, duplicate_spans, stats = _read_traces_counted(path, fmt)
        resolver = IdResolver(corpus, f"{fmt} trace")
        # Without k every list is taken whole and k is the longest, learnt at the end.
        run = Run(k=validate_k(k) if k is not None else sys.maxsize,
                  retriever={"kind": "traces", "name": name})
        unknown: dict[str, int] = {}
        count = longest = 0
        known = corpus.positions
        for trace in traces:
            count += 1
            ranked, complete = _resolve(trace, resolver, known)
            longest = max(longest, len(ranked))  # ids not in the corpus count here too
            if k is not None:
                ranked = ranked[:k]
            if not complete and not all(cid in known for cid, _s in ranked):
                kept = []
                for cid, score in ranked:
                    if cid in known:
                        kept.append((cid, score))
                    else:
                        unknown[cid] = unknown.get(cid, 0) + 1
                ranked = kept
            text = trace.query or (queries or {}).get(trace.query_id, "")
            run.add(trace.query_id, text, ranked)
        if k is None:
            run.k = longest or 1
    if not count:
        raise RagcovError(f"{path}: no retrievals found in this {fmt} file")
    if unknown and not ignore_unknown:
        raise RagcovError(_unknown_message(path, list(unknown), corpus))
    return ImportResult(run, count, unknown, dict(resolver.fallbacks), duplicate_spans,
                        stats.merged, stats.empty, fmt, resolver.matching)


def _format(path: str | os.PathLike[str], fmt: str) -> str:
    """``fmt``, or with ``"auto"`` the format detected from the file (as ``ragcov import``
    does without ``--format``)."""
    if fmt != "auto":
        return fmt
    from ragcov.traces.detect import detect_format

    return detect_format(path)


def _resolve(trace: Trace, resolver: IdResolver, known: Mapping[str, int]) -> tuple[Ranked, bool]:
    """The trace's chunk ids in order, each once, and whether all are in the corpus; an
    item the corpus cannot place gets a descriptive id, so it is reported as unknown
    rather than dropped. An item's own id that is a corpus chunk is taken at once; the
    others are matched as one list, so identical texts go to distinct chunks."""
    items = trace.items
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
    ranked: Ranked = []
    seen: set[str] = set()
    for cid, item in zip(cids, items):
        if cid not in seen:
            seen.add(cid)
            ranked.append((cid, item.score))
    return ranked, complete


def _unknown_message(path: Any, ids: list[str], corpus: Any) -> str:
    """The unknown ids, their likely cause (another splitter, store-made ids) and the fix."""
    shown = ", ".join(ids[:SHOW_UNKNOWN])
    more = f" (and {len(ids) - SHOW_UNKNOWN} more)" if len(ids) > SHOW_UNKNOWN else ""
    return (f"{path}: {len(ids)} retrieved id{'s' if len(ids) != 1 else ''} not in the corpus: "
            f"{shown}{more}. {mismatch_hint(ids, corpus)} Or pass --ignore-unknown "
            "(ignore_unknown=True) to skip them")
