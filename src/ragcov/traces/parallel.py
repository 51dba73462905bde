"""Span exports read in parts by other processes, merged as one reader reads them.

Most of an import's time is decoding JSON and reading each span's documents, and
each span is read on its own, so that part runs in worker processes: a large
JSON-lines export is cut between lines, and a folder of shards is one part per
shard file. What depends on the whole export stays in this process and runs on
what the workers send back, in file order: a span exported twice is recognised
by its fingerprint (:func:`ragcov.traces.spanfile.fingerprint`, the same number
in every process), spans are numbered, parents noted for nesting, and the
format's ``finish`` orders the queries and names them. The traces are those of
the single-process reader, the same error first (with its file and line).

A document whose id is a corpus chunk travels as an ``(id, score)`` pair (its
content and metadata are never used then); any other as its four fields.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.traces.formats import FORMATS, TraceFormat
from ragcov.traces.jsontext import NotLines
from ragcov.traces.nesting import Nesting
from ragcov.traces.otlp import NO_ATTRIBUTES, Span
from ragcov.traces.records import Item, Resolved, SpanStats, Trace, cyclic_gc_paused
from ragcov.traces.retrievals import Collected
from ragcov.traces.spanfile import SpanCopies, SpanFile, fingerprint

#: One part: the file, and for a part of a JSON-lines file its byte range (None: whole).
Part = tuple[str, tuple[int, int] | None]
#: What a worker sends for one part: ("spans", spans, lines, RERANKER spans), ("traces", traces),
#: ("error", line, message) or ("not lines",).
Sent = tuple[Any, ...]

#: Reads parts (format, parts, corpus ids) somewhere, their results in order.
PartsReader = Callable[[str, list[Part], "frozenset[str] | None"], Iterable[Sent]]
#: Worker processes at most, on a large machine.
MAX_WORKERS = 8
#: A worker reads parts of about this many bytes (several per worker, so they
#: finish at different times and this process merges one while others are read).
PART_BYTES = 64 * 2**20
#: Files smaller than this are read in this process: workers would cost more.
PARALLEL_MIN_BYTES = 128 * 2**20


def read_part(fmt: str, part: Part, known: frozenset[str] | None) -> Sent:
    """Read one part in a worker: each span's ids, parent, fingerprint and line, and
    what the format picks from it; a record format's traces. Errors come back as data
    (their line counted in the part), to be raised where the merge meets them."""
    with cyclic_gc_paused():  # also on a Dask worker, where nothing else pauses it
        return _read_part(fmt, part, known)


def _read_part(fmt: str, part: Part, known: frozenset[str] | None) -> Sent:
    path, lines = part
    spec = FORMATS[fmt]
    try:
        if spec.records is not None:
            return ("traces", spec.records(path))
        assert spec.spans is not None and spec.pick is not None
        count = 0
        if lines is None:
            source = spec.spans(path)
        else:
            with open(path, "rb") as f:
                f.seek(lines[0])
                data = f.read(lines[1] - lines[0])
            count = data.count(b"\n")
            source = SpanFile(path, (data, lines[0] == 0))
            del data
        sent = []
        last = rerankers = 0
        for line, span in source.located():
            if span.kind == "RERANKER":
                rerankers += 1
            picked = spec.pick(span, path)
            if picked is not None:
                query, items = picked
                picked = (span.name, span.start, span.kind, query,
                          None if items is None else _compact(items, known))
            sent.append((span.trace_id, span.span_id, span.parent_id,
                         0 if span.span_id is None else fingerprint(span), line, picked))
            last = line
        return ("spans", sent, count if lines is not None else last, rerankers)
    except NotLines:
        return ("not lines",)
    except InputFormatError as exc:
        where = f"{exc.path}:{exc.line}: " if exc.line is not None else f"{exc.path}: "
        return ("error", exc.line, str(exc)[len(where):])


def _compact(items: list[Item], known: frozenset[str] | None) -> list[tuple[Any, ...]]:
    """Documents to send: :class:`Resolved` when every id is a corpus chunk, else each as
    an (id, score) pair when its id is one, its four fields when not. A repeated id stays
    where it is: the list is cut to k before repeats are dropped (``Run.add``)."""
    if known is None:
        return [(i.id, i.score, i.content, i.metadata) for i in items]
    if all(i.id in known for i in items):
        return Resolved([(i.id, i.score) for i in items])
    return [(i.id, i.score) if i.id in known else (i.id, i.score, i.content, i.metadata)
            for i in items]


class Merge:
    """The parts' spans, in file order, into what the format's ``finish`` reads."""

    def __init__(self, path: Any, spec: TraceFormat) -> None:
        self.path = path
        self.spec = spec
        self.copies = SpanCopies(path, getattr(spec.spans, "unit", "line"))
        self.nesting = Nesting()
        self.read: list[Collected] = []
        self.traces: list[Trace] = []
        self.first_shard: dict[str, Any] = {}
        self.kept = 0
        self.lines = 0  # lines before the part being merged, counted on across shards
        self.rerankers = 0

    def add(self, shard: Any, sent: Sent, new_shard: bool) -> None:
        kind = sent[0]
        if new_shard:
            self.copies.starts(shard, self.lines)
        if kind == "error":
            line = None if sent[1] is None else self.copies.local(self.lines + sent[1])
            raise InputFormatError(shard, line, sent[2])
        if kind == "not lines":
            raise NotLines(str(shard))
        if kind == "traces":
            self._add_traces(shard, sent[1])
            return
        _kind, spans, count, rerankers = sent
        self.rerankers += rerankers
        base, shard_base = self.lines, self.place_base()
        keep, note, read = self.copies.keep_mark, self.nesting.parent, self.read
        for trace_id, span_id, parent, fp, line, picked in spans:
            if span_id is not None:
                if not keep(trace_id, span_id, fp, base + line, shard):
                    continue
                if parent is not None:
                    note[(trace_id, span_id)] = parent
            order = self.kept
            self.kept += 1
            if picked is not None:
                name, start, kind_, query, items = picked
                span = Span(trace_id, span_id, name, start, order, base + line - shard_base,
                            kind_, NO_ATTRIBUTES, parent)
                if items is not None and type(items) is not Resolved:
                    items = [i if len(i) == 2 else Item(*i) for i in items]
                read.append((span, query, items))
        self.lines += count

    def place_base(self) -> int:
        return self.copies.place(self.lines + 1)[1]

    def _add_traces(self, shard: Any, traces: list[Trace]) -> None:
        for t in traces:
            earlier = self.first_shard.setdefault(t.query_id, shard)
            if earlier != shard:
                raise InputFormatError(shard, t.line, f"query id {t.query_id!r} already "
                                       f"appeared in {earlier}")
        self.traces += traces

    def finish(self, stats: SpanStats) -> Iterator[Trace]:
        self.copies.forget()
        stats.rerankers += self.rerankers
        if self.spec.records is not None:
            return iter(self.traces)
        assert self.spec.finish is not None
        read, self.read = self.read, []
        return self.spec.finish(self.path, read, self.nesting, stats)


def merge(path: Any, spec: TraceFormat, results: Iterable[tuple[str, bool, Sent]],
          stats: SpanStats) -> tuple[Iterator[Trace], int]:
    """The traces of parts sent back in file order (shard, whether it starts a shard, what
    was sent), and how many identical span copies were dropped."""
    m = Merge(path, spec)
    for shard, new_shard, sent in results:
        m.add(shard, sent, new_shard)
    traces = m.finish(stats)
    return traces, m.copies.dropped


def file_parts(path: str) -> list[Part]:
    """The file in parts of about :data:`PART_BYTES`."""
    return line_parts(path, PART_BYTES)


def line_parts(path: str, size: int) -> list[Part]:
    """Byte ranges of about ``size`` bytes covering the file, each ending after a newline."""
    total = os.path.getsize(path)
    parts: list[Part] = []
    with open(path, "rb") as f:
        start = 0
        while start < total:
            f.seek(min(start + size, total))
            f.readline()
            end = min(f.tell(), total)
            parts.append((path, (start, end)))
            start = end
    return parts


def read_in_processes(path: str, spec: TraceFormat, known: frozenset[str] | None,
                      workers: int, stats: SpanStats) -> tuple[Iterator[Trace], int]:
    """A JSON-lines span export read by ``workers`` processes; NotLines when a line is not
    one whole value (the caller reads the file whole instead)."""
    from concurrent.futures import ProcessPoolExecutor

    parts = file_parts(path)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = in_order(parts, lambda p: pool.submit(read_part, spec.name, p, known),
                           ahead=2 * workers)
        return merge(path, spec, ((path, i == 0, r) for i, r in enumerate(results)), stats)


def in_order(parts: list[Part], submit: Callable[[Part], Any], ahead: int) -> Iterator[Sent]:
    """The parts' results in order, at most ``ahead`` parts in flight beyond the one
    merged (what is sent back waits in memory only that long)."""
    futures = [submit(p) for p in parts[:ahead]]
    for i in range(len(parts)):
        if i + ahead < len(parts):
            futures.append(submit(parts[i + ahead]))
        result = futures[i].result()
        futures[i] = None
        yield result


def worth_parallel(path: str | os.PathLike[str], spec: TraceFormat) -> bool:
    """Whether reading ``path`` in worker processes pays: a large JSON-lines span file on a
    machine with more than one core."""
    try:
        big = os.path.getsize(path) >= PARALLEL_MIN_BYTES
    except OSError:
        return False
    return spec.lines and big and cores() > 1


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
