"""Import recorded retrieval traces into a Run.

A system in production already logs what it retrieved; reading those logs gives
the coverage of real traffic without running anything. Supported formats:

``jsonl``
    One retrieval per line: ``{"query_id", "query", "retrieved": [ids]}``. Items
    may be ids, ``[id, score]`` pairs or objects with ``id``/``chunk_id`` and
    ``score``; a parallel ``scores`` list is read too. RAGAS's
    ``retrieved_context_ids`` and ``user_input`` are accepted, and so are
    ``retrieved_contexts`` (texts, matched to the corpus by content).
``trec``
    A TREC run file: ``qid Q0 doc_id rank score tag`` per line. Each query's
    list is ordered by score, highest first, ties by rank (as trec_eval and ranx
    read it).
``ranx``
    ranx / pytrec_eval JSON: ``{qid: {doc_id: score}}``, ordered by score.
``openinference``
    OpenInference spans exported as JSON (OTLP JSON, one span object per line,
    or a list of spans; attributes flat or nested). Each span of kind RETRIEVER
    is one query: ``input.value`` and ``retrieval.documents.N.document.id``
    (``.score``, and ``.content`` when the id is missing). When a RERANKER span
    follows it in the same trace, the reranker's
    ``reranker.output_documents.N.document.id`` are the final list, since that is
    what reached the LLM.
``otel``
    OpenTelemetry GenAI retrieval spans: ``gen_ai.retrieval.query.text`` and
    ``gen_ai.retrieval.documents`` (a JSON string or structured list of
    ``{"id", "score"}``).

Ids not in the corpus are an error that lists them, unless ``ignore_unknown``,
which skips and counts them (a corpus that changed since the traces were
recorded). Lists are cut to k before that check: what ranked below k never
reached the model. Malformed records are reported with file and line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragcov.corpus import Corpus
from ragcov.errors import InputFormatError, RagcovError
from ragcov.io import first_key, iter_jsonl, load_json, read_text
from ragcov.run import Run, validate_k

FORMATS = ("jsonl", "trec", "ranx", "openinference", "otel")

QUERY_ID_KEYS = ("query_id", "qid", "id", "_id")
QUERY_TEXT_KEYS = ("query", "user_input", "question", "input", "text")
RETRIEVED_KEYS = ("retrieved", "retrieved_ids", "retrieved_context_ids", "retrieval_context_ids",
                  "doc_ids", "chunk_ids")
CONTEXT_TEXT_KEYS = ("retrieved_contexts", "retrieval_context")
ITEM_ID_KEYS = ("id", "chunk_id", "doc_id", "_id")
ITEM_SCORE_KEYS = ("score", "similarity", "relevance_score")
ITEM_TEXT_KEYS = ("text", "content", "page_content")
SHOW_UNKNOWN = 20


@dataclass
class Item:
    """One retrieved entry as recorded: an id, or only content to be matched."""

    id: str | None
    score: float | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass
class Trace:
    query_id: str
    query: str
    items: list[Item]
    line: int | None = None


@dataclass
class ImportResult:
    """The Run, plus what was skipped or matched indirectly, for the user to see."""

    run: Run
    traces: int
    unknown: dict[str, int] = field(default_factory=dict)
    fallbacks: dict[str, int] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        return sum(self.unknown.values())


# ------------------------------------------------------------------ helpers
def _score(value: Any, path: Any, line: int | None, where: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InputFormatError(path, line, f"{where}: score {value!r} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InputFormatError(path, line, f"{where}: score {value!r} is not a number") from exc


def _id(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (dict, list, bool)):
        return None
    return str(value)


def _item_from(obj: Any, path: Any, line: int | None, where: str) -> Item:
    if isinstance(obj, (str, int)) and not isinstance(obj, bool):
        return Item(str(obj))
    if isinstance(obj, (list, tuple)) and len(obj) == 2 and _id(obj[0]) is not None:
        return Item(str(obj[0]), _score(obj[1], path, line, where))
    if isinstance(obj, dict):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None
        item = Item(_id(first_key(obj, ITEM_ID_KEYS)),
                    _score(first_key(obj, ITEM_SCORE_KEYS), path, line, where),
                    first_key(obj, ITEM_TEXT_KEYS), meta)
        if item.id is None and not isinstance(item.content, str):
            raise InputFormatError(path, line, f"{where}: an entry has no id "
                                   f"(expected one of {', '.join(ITEM_ID_KEYS)})")
        return item
    raise InputFormatError(path, line, f"{where}: cannot read a retrieved entry from {obj!r}")


# -------------------------------------------------------------------- JSONL
def read_jsonl(path: str | os.PathLike[str]) -> list[Trace]:
    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        qid_raw = first_key(obj, QUERY_ID_KEYS)
        qid = str(qid_raw) if qid_raw is not None else f"line-{lineno}"
        if qid in seen:
            raise InputFormatError(path, lineno,
                                   f"query id {qid!r} already appeared on line {seen[qid]}")
        seen[qid] = lineno
        text = first_key(obj, QUERY_TEXT_KEYS)
        if text is not None and not isinstance(text, str):
            raise InputFormatError(path, lineno, "the query text is not a string")
        retrieved = first_key(obj, RETRIEVED_KEYS)
        items: list[Item]
        if retrieved is not None:
            if not isinstance(retrieved, list):
                raise InputFormatError(path, lineno, "'retrieved' is not a list")
            items = [_item_from(x, path, lineno, "retrieved") for x in retrieved]
            scores = obj.get("scores")
            if scores is not None:
                if not isinstance(scores, list) or len(scores) != len(items):
                    raise InputFormatError(path, lineno,
                                           "'scores' is not a list as long as 'retrieved'")
                for item, s in zip(items, scores):
                    item.score = _score(s, path, lineno, "scores")
        else:
            contexts = first_key(obj, CONTEXT_TEXT_KEYS)
            if contexts is None:
                raise InputFormatError(path, lineno, "no retrieved ids (expected one of "
                                       f"{', '.join(RETRIEVED_KEYS + CONTEXT_TEXT_KEYS)})")
            if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
                raise InputFormatError(path, lineno, "retrieved contexts are not a list of texts")
            items = [Item(None, None, c) for c in contexts]
        traces.append(Trace(qid, text or "", items, lineno))
    return traces


# --------------------------------------------------------------------- TREC
def read_trec(path: str | os.PathLike[str]) -> list[Trace]:
    rows: dict[str, list[tuple[float, int, str]]] = {}
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 6:
            raise InputFormatError(path, lineno, f"expected 6 columns (qid Q0 doc_id rank score "
                                   f"tag), got {len(parts)}")
        qid, _q0, doc_id, rank_s, score_s, _tag = parts
        try:
            rank = int(rank_s)
        except ValueError as exc:
            raise InputFormatError(path, lineno, f"rank {rank_s!r} is not a whole number") \
                from exc
        try:
            score = float(score_s)
        except ValueError as exc:
            raise InputFormatError(path, lineno, f"score {score_s!r} is not a number") from exc
        rows.setdefault(qid, []).append((score, rank, doc_id))
        first_line.setdefault(qid, lineno)
    traces = []
    for qid, entries in rows.items():
        entries.sort(key=lambda e: (-e[0], e[1]))
        traces.append(Trace(qid, "", [Item(d, s) for s, _r, d in entries], first_line[qid]))
    return traces


# --------------------------------------------------------------------- ranx
def read_ranx(path: str | os.PathLike[str]) -> list[Trace]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputFormatError(path, None, "expected a JSON object {query_id: {doc_id: score}}")
    traces = []
    for qid, docs in data.items():
        if not isinstance(docs, dict):
            raise InputFormatError(path, None, f"query {qid!r}: expected an object "
                                   "{doc_id: score}")
        scored = []
        for n, (doc_id, score) in enumerate(docs.items()):
            value = _score(score, path, None, f"query {qid!r}, doc {doc_id!r}")
            if value is None:
                raise InputFormatError(path, None, f"query {qid!r}, doc {doc_id!r}: no score")
            scored.append((-value, n, doc_id, value))
        scored.sort()
        traces.append(Trace(str(qid), "", [Item(d, v) for _neg, _n, d, v in scored]))
    return traces


# -------------------------------------------------------------------- spans
@dataclass
class Span:
    trace_id: str | None
    span_id: str | None
    name: str
    start: float | None
    order: int
    line: int | None
    kind: str | None
    attributes: dict[str, Any]


def _iter_json_values(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Every top-level JSON value in the file with its line: one document, JSON
    lines, or pretty-printed objects one after another (as console exporters write)."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
        yield line, value


def _otlp_value(value: Any) -> Any:
    """Decode an OTLP JSON AnyValue ({"stringValue": ...} and friends)."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: _otlp_value(kv.get("value")) for kv in
                value["kvlistValue"].get("values", [])}
    return None


def _flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes (as Phoenix exports them) to OpenInference's dotted keys."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, value in enumerate(obj):
            _flatten(value, f"{prefix}.{i}", out)
    else:
        out[prefix] = obj


def _time(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.isdigit()):
        return int(value) / 1e9  # OTLP nanoseconds
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _span_from(obj: dict[str, Any], order: int, line: int) -> Span:
    raw = obj.get("attributes")
    attributes: dict[str, Any] = {}
    if isinstance(raw, list):  # OTLP: [{"key": ..., "value": {...}}]
        nested = {kv.get("key"): _otlp_value(kv.get("value")) for kv in raw
                  if isinstance(kv, dict)}
        _flatten(nested, "", attributes)
    elif isinstance(raw, dict):
        _flatten(raw, "", attributes)
    context = obj.get("context") if isinstance(obj.get("context"), dict) else {}
    trace_id = first_key(obj, ("traceId", "trace_id")) or first_key(context, ("trace_id",
                                                                                "traceId"))
    span_id = first_key(obj, ("spanId", "span_id")) or first_key(context, ("span_id", "spanId"))
    start = _time(first_key(obj, ("startTimeUnixNano", "start_time", "startTime")))
    kind = attributes.get("openinference.span.kind") or obj.get("span_kind")
    return Span(str(trace_id) if trace_id else None, str(span_id) if span_id else None,
                str(obj.get("name") or ""), start, order, line,
                str(kind).upper() if kind else None, attributes)


def read_spans(path: str | os.PathLike[str]) -> list[Span]:
    spans: list[Span] = []

    def visit(value: Any, line: int) -> None:
        if isinstance(value, list):
            for v in value:
                visit(v, line)
        elif isinstance(value, dict):
            if "resourceSpans" in value:
                for rs in value.get("resourceSpans") or []:
                    for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
                        visit(ss.get("spans") or [], line)
            elif isinstance(value.get("spans"), list):
                visit(value["spans"], line)
            elif isinstance(value.get("data"), list):
                visit(value["data"], line)
            elif "attributes" in value:
                spans.append(_span_from(value, len(spans), line))
            else:
                raise InputFormatError(path, line, "not a span (no attributes), nor OTLP "
                                       "resourceSpans, nor a list of spans")
        else:
            raise InputFormatError(path, line, "expected a span object or a list of spans")

    for line, value in _iter_json_values(path):
        visit(value, line)
    return spans


def _documents(attrs: dict[str, Any], prefix: str, path: Any, line: int | None,
               subkeys: tuple[str, str, str, str]) -> list[Item] | None:
    """Read documents stored under ``prefix`` either flattened (``prefix.N.<sub>``)
    or as one JSON string/list; None when the span records none."""
    id_key, score_key, content_key, meta_key = subkeys
    value = attrs.get(prefix)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, line, f"{prefix} is not valid JSON ({exc.msg})") \
                from exc
    if isinstance(value, list):
        flat: dict[str, Any] = {}
        _flatten({prefix: value}, "", flat)
        attrs = {**attrs, **flat}
    pattern = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.(.+)$")
    docs: dict[int, dict[str, Any]] = {}
    for key, v in attrs.items():
        m = pattern.match(key)
        if m:
            docs.setdefault(int(m.group(1)), {})[m.group(2)] = v
    if not docs:
        return None if value is None else []
    items = []
    for n in sorted(docs):
        d = docs[n]
        meta = d.get(meta_key)
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError:
                meta = None
        if not isinstance(meta, dict):
            nested = {k[len(meta_key) + 1:]: v for k, v in d.items()
                      if k.startswith(meta_key + ".")}
            meta = nested or None
        content = d.get(content_key)
        item = Item(_id(d.get(id_key)), _score(d.get(score_key), path, line, f"{prefix}.{n}"),
                    content if isinstance(content, str) else None, meta)
        if item.id is None and item.content is None and not (meta and first_key(
                meta, ("id", "chunk_id"))):
            raise InputFormatError(path, line, f"{prefix}.{n} has neither an id nor content")
        items.append(item)
    return items


def _query_text(attrs: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str):
            if attrs.get("input.mime_type") == "application/json" and key == "input.value":
                try:
                    decoded = json.loads(value)
                except json.JSONDecodeError:
                    return value
                if isinstance(decoded, dict):
                    inner = first_key(decoded, ("query", "input", "question", "query_str"))
                    if isinstance(inner, str):
                        return inner
                return value
            return value
    return ""


def _traces_from_retrievals(picked: list[tuple[Span, str, list[Item]]]) -> list[Trace]:
    """Query ids: the trace id when a trace holds one retrieval, else trace id:n."""
    per_trace: dict[str, int] = {}
    for span, _q, _items in picked:
        per_trace[span.trace_id or ""] = per_trace.get(span.trace_id or "", 0) + 1
    counters: dict[str, int] = {}
    traces = []
    for span, query, items in picked:
        if span.trace_id is None:
            qid = span.span_id or f"span-{span.order + 1}"
        elif per_trace[span.trace_id] == 1:
            qid = span.trace_id
        else:
            counters[span.trace_id] = counters.get(span.trace_id, 0) + 1
            qid = f"{span.trace_id}:{counters[span.trace_id]}"
        traces.append(Trace(qid, query, items, span.line))
    return traces


def _by_time(spans: list[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: (s.start if s.start is not None else float("-inf"),
                                        s.order))


OI_DOC = ("document.id", "document.score", "document.content", "document.metadata")


def read_openinference(path: str | os.PathLike[str]) -> list[Trace]:
    spans = _by_time(read_spans(path))
    picked: list[tuple[Span, str, list[Item]]] = []
    last_retrieval: dict[str | None, int] = {}
    for span in spans:
        if span.kind == "RETRIEVER":
            items = _documents(span.attributes, "retrieval.documents", path, span.line, OI_DOC)
            query = _query_text(span.attributes, ("input.value",))
            last_retrieval[span.trace_id] = len(picked)
            picked.append((span, query, items or []))
        elif span.kind == "RERANKER":
            items = _documents(span.attributes, "reranker.output_documents", path, span.line,
                               OI_DOC)
            if items is None:
                continue
            i = last_retrieval.pop(span.trace_id, None) if span.trace_id else None
            if i is not None:
                retr, query, _old = picked[i]
                picked[i] = (retr, query, items)
            else:  # a reranker with no retriever span before it: its output is still final
                query = _query_text(span.attributes, ("reranker.query", "input.value"))
                picked.append((span, query, items))
    return _traces_from_retrievals(picked)


OTEL_DOC = ("id", "score", "content", "metadata")


def read_otel(path: str | os.PathLike[str]) -> list[Trace]:
    picked: list[tuple[Span, str, list[Item]]] = []
    for span in _by_time(read_spans(path)):
        op = span.attributes.get("gen_ai.operation.name")
        items = _documents(span.attributes, "gen_ai.retrieval.documents", path, span.line,
                           OTEL_DOC)
        if items is None and op not in ("retrieval", "retrieve"):
            continue
        query = _query_text(span.attributes, ("gen_ai.retrieval.query.text", "input.value"))
        picked.append((span, query, items or []))
    return _traces_from_retrievals(picked)


READERS = {"jsonl": read_jsonl, "trec": read_trec, "ranx": read_ranx,
           "openinference": read_openinference, "otel": read_otel}


def read_traces(path: str | os.PathLike[str], fmt: str) -> list[Trace]:
    if fmt not in READERS:
        raise RagcovError(f"unknown trace format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not Path(path).is_file():
        raise RagcovError(f"{path}: no such file")
    return READERS[fmt](path)


# ------------------------------------------------------------------- import
def import_traces(path: str | os.PathLike[str], fmt: str, corpus: Corpus, k: int | None = None,
                  ignore_unknown: bool = False, name: str = "traces",
                  queries: dict[str, str] | None = None) -> ImportResult:
    """Read ``path`` in format ``fmt`` into a Run over ``corpus``.

    ``k`` cuts every list to its top k; without it k is the longest list. Query
    texts missing from the traces (TREC and ranx carry none) are taken from
    ``queries`` when given.
    """
    from ragcov.retrievers.adapters import IdResolver

    traces = read_traces(path, fmt)
    if not traces:
        raise RagcovError(f"{path}: no retrievals found in this {fmt} file")
    resolver = IdResolver(corpus, f"{fmt} trace")
    resolved: list[tuple[Trace, list[tuple[str, float | None]]]] = []
    for trace in traces:
        ranked: list[tuple[str, float | None]] = []
        seen: set[str] = set()
        for item in trace.items:
            try:
                cid = resolver.resolve(item.id, item.metadata, item.content)
            except RagcovError:
                snippet = (item.content or "")[:40]
                cid = f"<no id; content {snippet!r} not in the corpus>"
            if cid not in seen:
                seen.add(cid)
                ranked.append((cid, item.score))
        resolved.append((trace, ranked))
    if k is None:
        k = max((len(r) for _t, r in resolved), default=1) or 1
    validate_k(k)
    unknown: dict[str, int] = {}
    run = Run(k=k, retriever={"kind": "traces", "name": name})
    for trace, ranked in resolved:
        top = ranked[:k]
        kept = []
        for cid, score in top:
            if cid in corpus:
                kept.append((cid, score))
            else:
                unknown[cid] = unknown.get(cid, 0) + 1
        text = trace.query or (queries or {}).get(trace.query_id, "")
        run.add(trace.query_id, text, kept)
    if unknown and not ignore_unknown:
        ids = list(unknown)
        shown = ", ".join(ids[:SHOW_UNKNOWN])
        more = f" (and {len(ids) - SHOW_UNKNOWN} more)" if len(ids) > SHOW_UNKNOWN else ""
        raise RagcovError(
            f"{path}: {len(ids)} retrieved id{'s' if len(ids) != 1 else ''} not in the corpus: "
            f"{shown}{more}; pass --ignore-unknown (ignore_unknown=True) to skip them"
        )
    return ImportResult(run, len(traces), unknown, dict(resolver.fallbacks))
