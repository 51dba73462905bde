"""Langfuse observation exports (``GET /api/public/observations``).

The API answers ``{"data": [observation, ...], "meta": {...}}``; a plain list of
observations (pages concatenated) is read too. A retrieval is an observation
of type RETRIEVER, or a SPAN whose output is a list of documents, which is what
Langfuse's LangChain callback handler records for a retriever
(``[{page_content, metadata, id?}]``). Each observation becomes the span the
OpenInference reader consumes (``parentObservationId`` its parent, a retrieval
of kind RETRIEVER, the output serialized as ``output.value``), so ids are read
and nested retrievals merged exactly as for OpenInference spans. GENERATION and
EVENT observations are kept only as links in the parent chain.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import FieldError
from ragcov.files import first_key
from ragcov.traces.jsontext import iter_json_values
from ragcov.traces.otlp import Span, span_from
from ragcov.traces.outputs import documents_in, looks_like_documents, strict_documents
from ragcov.traces.records import short
from ragcov.traces.spanfile import SpanSource


class LangfuseSpans(SpanSource):
    """Every observation in the file as a span, in file order."""

    def located(self) -> Iterator[tuple[int, Span]]:
        for line, value in iter_json_values(self.path):
            for obs in _observations(value, self.path, line):
                try:
                    span = span_from(_span_object(obs), 0, line)
                except FieldError as exc:
                    raise InputFormatError(self.path, line, str(exc)) from exc
                yield line, span


def _observations(value: Any, path: Any, line: int) -> list[dict[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value = value["data"]
    elif isinstance(value, dict) and "traceId" in value:
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputFormatError(path, line, "expected Langfuse observations: {\"data\": [...]} "
                               "or a list of observation objects")
    return value


def _span_object(obs: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    query = _query(obs.get("input"))
    if query:
        attributes["input.value"] = query
    output = obs.get("output")
    if output is not None:
        attributes["output.value"] = output if isinstance(output, str) else json.dumps(output)
    kind = str(obs.get("type") or "").upper()
    structured = _structured(output)
    entries = documents_in(structured)
    try:
        if kind == "RETRIEVER" and output is not None:
            strict_documents(structured)
        elif kind == "SPAN" and entries is not None and looks_like_documents(entries):
            strict_documents(structured)  # a retriever's output: its ids must be ids
            kind = "RETRIEVER"
        # An empty list is a retrieval that found nothing only when the name says so.
        elif kind == "SPAN" and entries == [] and "retriev" in str(obs.get("name") or "").lower():
            kind = "RETRIEVER"
    except FieldError as exc:
        raise FieldError(f"observation {short(obs.get('id'))}: {exc}") from None
    return {"traceId": obs.get("traceId"), "spanId": obs.get("id"),
            "parentSpanId": obs.get("parentObservationId"), "name": obs.get("name"),
            "startTime": obs.get("startTime"), "span_kind": kind or None,
            "attributes": attributes}


def _structured(output: Any) -> Any:
    """The output as data: a JSON string of a list or an object decoded, else as is."""
    if isinstance(output, str) and output.lstrip().startswith(("[", "{")):
        try:
            return json.loads(output)
        except json.JSONDecodeError:
            return output
    return output


def _query(value: Any) -> str:
    """The query text: the input itself, or its ``query``/``input`` field."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        inner = first_key(value, ("query", "input", "question"))
        if isinstance(inner, str):
            return inner
    return ""
