"""Phoenix spans dataframes saved as parquet (``px.Client().get_spans_dataframe()``).

Phoenix returns one row per span with the span's fields as columns
(``context.span_id``, ``context.trace_id``, ``parent_id``, ``span_kind``,
``name``, ``start_time``) and each OpenInference attribute as an
``attributes.<name>`` column; ``attributes.retrieval.documents`` holds the list
of ``{document.id, document.score, document.content, document.metadata}``.
Each row is turned back into the span object the OpenInference reader consumes,
so the id rules, nested-RETRIEVER merging and reranker handling are the same
as for an OTLP export. The parquet is read with pyarrow alone: pandas wrote it,
but is not needed to read it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import FieldError
from ragcov.traces.otlp import Span, span_from
from ragcov.traces.spanfile import SpanSource

#: Column → span object field; phoenix.client's newer dataframe drops the ``context.``.
_CONTEXT = {"context.span_id": "span_id", "context.trace_id": "trace_id",
            "span_id": "span_id", "trace_id": "trace_id"}
_FIELDS = {"parent_id": "parent_id", "span_kind": "span_kind", "name": "name",
           "start_time": "start_time"}


class PhoenixSpans(SpanSource):
    """The spans of a Phoenix spans parquet file, in row order, read a record batch at a
    time. A dataframe is indexed by span id, but dataframes are concatenated too: a
    span id on two rows is read as in an OTLP export (an exact copy dropped,
    different content refused), never as two queries."""

    unit = "row"

    def located(self) -> Iterator[tuple[int, Span]]:
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - pyarrow comes with the parquet extra
            raise RagcovError("reading a Phoenix parquet export needs pyarrow: "
                              "pip install pyarrow") from exc
        path = self.path
        try:
            batches = pq.ParquetFile(path).iter_batches()
            n = 0
            for batch in batches:
                for row in batch.to_pylist():
                    n += 1
                    try:
                        span = span_from(_span_object(row), 0, n)
                    except FieldError as exc:
                        raise InputFormatError(path, n, f"row {n}: {exc}") from exc
                    yield n, span
        except RagcovError:
            raise
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise RagcovError(f"{path}: not a readable parquet file ({exc})") from exc


def _span_object(row: dict[str, Any]) -> dict[str, Any]:
    """One dataframe row as a span object (``line`` in messages is the row number)."""
    obj: dict[str, Any] = {"context": {}}
    attributes: dict[str, Any] = {}
    empty_ids: list[str] = []
    for column, value in row.items():
        # A NaN cell is pandas' missing value; a NaN inside a cell is a value (a
        # document's score) and is left for the span reader to refuse.
        value = None if isinstance(value, float) and math.isnan(value) else _plain(value)
        if value is None:
            if column in _CONTEXT:
                empty_ids.append(column)
            continue
        if column.startswith("attributes."):
            attributes[column[len("attributes."):]] = value
        elif column in _CONTEXT:
            obj["context"].setdefault(_CONTEXT[column], value)
        elif column in _FIELDS:
            obj[_FIELDS[column]] = value
    obj["attributes"] = attributes
    # Phoenix gives every span both ids: an empty one is damage, and without a trace id
    # the span's query would silently take the span's own id.
    missing = [c for c in empty_ids if _CONTEXT[c] not in obj["context"]]
    if missing:
        raise FieldError(f"{missing[0]} is empty (a Phoenix span always has its trace and "
                         "span id)")
    return obj


def _plain(value: Any) -> Any:
    """A cell as JSON-like data: a time is ISO text, a parquet map (list of key/value
    pairs) an object."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value
