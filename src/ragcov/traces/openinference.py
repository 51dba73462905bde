"""OpenInference spans (Arize Phoenix and other OpenInference instrumentations).

Each query is a span of kind RETRIEVER: ``input.value`` and its documents. A
document's chunk id is read from, in order: ``retrieval.documents.N.document.id``;
the document's ``document.metadata`` (``id``, then ``chunk_id``; a JSON string
or an object); the document at the same position in the serialized
``output.value`` (LangChain's Documents with their ``id``, LlamaIndex's
NodeWithScore reprs), which is where openinference-instrumentation-langchain
leaves the ids; and last the document's content, matched to the corpus by hash.
When a span records no ``retrieval.documents`` at all, the documents of
``output.value`` are its list.

A RETRIEVER span inside another RETRIEVER span of the same trace (LlamaIndex's
``retrieve`` and ``_retrieve``) is the same query: see :mod:`.nesting`. When a
RERANKER span follows in the same trace, the reranker's
``reranker.output_documents.N.document.id`` are the final list, since that is
what reached the LLM.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from ragcov.traces.nesting import Grouper, Nesting
from ragcov.traces.otlp import Span
from ragcov.traces.outputs import fill_ids, output_documents
from ragcov.traces.records import Item, SpanStats, Trace
from ragcov.traces.retrievals import (
    Collected,
    Picked,
    Retrieval,
    collect,
    iter_traces,
    query_text,
    read_documents,
    start_time,
)
from ragcov.traces.spanfile import read_spans

OI_DOC = ("document.id", "document.score", "document.content", "document.metadata")


def read_openinference(path: str | os.PathLike[str]) -> list[Trace]:
    return openinference_traces(path, read_spans(path))


def _queries(read: list[Collected],
             grouper: Grouper | None) -> tuple[list[Retrieval], int, int]:
    """The queries in time order, each with its final list; how many spans were merged
    and how many queries recorded no documents. Without a grouper no RETRIEVER span
    encloses another, and each is its own query."""
    queries: list[Collected] = []
    rerankers: dict[int, list[Item]] = {}
    alone: list[tuple[int, Retrieval]] = []  # rerankers with no retrieval before them
    last_retrieval: dict[str | None, int] = {}
    track = any(span.kind == "RERANKER" for span, _q, _i in read)
    for entry in read:
        span, query, items = entry
        if span.kind == "RETRIEVER":
            if grouper is None:
                queries.append(entry)
                i = len(queries) - 1
            else:
                i = grouper.add(span, query, items)
            if track:
                last_retrieval[span.trace_id] = i
            continue
        i = last_retrieval.pop(span.trace_id, None) if span.trace_id else None
        if i is not None:
            rerankers[i] = items or []
        else:  # a reranker with no retriever span before it: its output is still final
            n = len(queries) if grouper is None else len(grouper.groups)
            alone.append((n, (span, query, items or [])))
    merged = 0
    if grouper is not None:
        queries = [(g.span, g.query, g.final()) for g in grouper.groups]
        merged = grouper.merged
    picked: list[Retrieval] = []
    empty = at = 0
    for n, entry in enumerate(queries):
        while at < len(alone) and alone[at][0] <= n:
            picked.append(alone[at][1])
            at += 1
        final = rerankers.pop(n, None)
        if final is not None:
            picked.append((entry[0], entry[1], final))
        elif entry[2] is None:
            empty += 1
            picked.append((entry[0], entry[1], []))
        else:
            picked.append(entry)  # type: ignore[arg-type]  # its list is not None
    picked += [r for _n, r in alone[at:]]
    return picked, merged, empty


def retriever_documents(span: Span, path: Any) -> list[Item] | None:
    """The span's documents, ids filled in from ``output.value``; None when it records none."""
    items = read_documents(span.attributes, "retrieval.documents", path, span.line, OI_DOC)
    serialized = output_documents(span.attributes)
    if items is None:
        return serialized
    return fill_ids(items, serialized)


def pick_openinference(span: Span, path: Any) -> Picked | None:
    """What a RETRIEVER or RERANKER span recorded: its query and documents (None for a
    retriever that recorded none); None for any other span, or a reranker with no list."""
    if span.kind == "RETRIEVER":
        return query_text(span.attributes, ("input.value",)), retriever_documents(span, path)
    if span.kind == "RERANKER":
        return _reranker(span, path, "reranker.output_documents")
    return None


def pick_first_stage(span: Span, path: Any) -> Picked | None:
    """As :func:`pick_openinference`, with a reranker's ``reranker.input_documents`` (what
    it was given: the first stage) in place of its output: read through the same
    ``finish``, every query keeps its id and gets the list before its reranker."""
    if span.kind == "RERANKER":
        return _reranker(span, path, "reranker.input_documents")
    return pick_openinference(span, path)


def _reranker(span: Span, path: Any, documents: str) -> Picked | None:
    items = read_documents(span.attributes, documents, path, span.line, OI_DOC)
    if items is None:
        return None
    return query_text(span.attributes, ("reranker.query", "input.value")), items


def finish_openinference(path: Any, read: list[Collected], nesting: Nesting,
                         stats: SpanStats | None = None) -> Iterator[Trace]:
    """The picked spans as queries: in start-time order, nested retrievers merged, each
    reranked list final; ``stats`` gets the merged and empty span counts."""
    read.sort(key=lambda r: start_time(r[0]))  # stable: file order on ties
    nested = nesting.finish(span for span, _q, _i in read if span.kind == "RETRIEVER")
    picked, merged, empty = _queries(read, Grouper(nesting) if nested else None)
    del read, nesting
    if stats is not None:
        stats.merged += merged
        stats.empty += empty
    return iter_traces(picked, path)


def openinference_traces(path: Any, spans: Iterable[Span],
                         stats: SpanStats | None = None) -> list[Trace]:
    """The retrievals among ``spans``: see :func:`finish_openinference`."""
    return list(iter_openinference_traces(path, spans, stats))


def iter_openinference_traces(path: Any, spans: Iterable[Span],
                              stats: SpanStats | None = None) -> Iterator[Trace]:
    """:func:`openinference_traces` one at a time. Each span's documents are read as
    the span arrives and its attributes let go, so ``spans`` may be a stream."""
    return finish_openinference(path, *collect(spans, pick_openinference, path), stats)
