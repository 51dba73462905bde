"""OpenInference spans (Arize Phoenix and other OpenInference instrumentations).

Each span of kind RETRIEVER is one query: ``input.value`` and
``retrieval.documents.N.document.id`` (``.score``, and ``.content`` when the id
is missing). When a RERANKER span follows it in the same trace, the reranker's
``reranker.output_documents.N.document.id`` are the final list, since that is
what reached the LLM.
"""

from __future__ import annotations

import os
from typing import Any

from ragcov.traces.otlp import Span, read_spans
from ragcov.traces.records import Trace
from ragcov.traces.retrievals import (
    Retrieval,
    by_time,
    query_text,
    read_documents,
    traces_from_retrievals,
)

OI_DOC = ("document.id", "document.score", "document.content", "document.metadata")


def read_openinference(path: str | os.PathLike[str]) -> list[Trace]:
    return openinference_traces(path, read_spans(path))


def openinference_traces(path: Any, spans: list[Span]) -> list[Trace]:
    """The retrievals among ``spans``, in start-time order, each reranked list final."""
    picked: list[Retrieval] = []
    last_retrieval: dict[str | None, int] = {}
    for span in by_time(spans):
        if span.kind == "RETRIEVER":
            items = read_documents(span.attributes, "retrieval.documents", path, span.line,
                                   OI_DOC)
            query = query_text(span.attributes, ("input.value",))
            last_retrieval[span.trace_id] = len(picked)
            picked.append((span, query, items or []))
        elif span.kind == "RERANKER":
            items = read_documents(span.attributes, "reranker.output_documents", path,
                                   span.line, OI_DOC)
            if items is None:
                continue
            i = last_retrieval.pop(span.trace_id, None) if span.trace_id else None
            if i is not None:
                retr, query, _old = picked[i]
                picked[i] = (retr, query, items)
            else:  # a reranker with no retriever span before it: its output is still final
                query = query_text(span.attributes, ("reranker.query", "input.value"))
                picked.append((span, query, items))
    return traces_from_retrievals(picked, path)
