"""Which trace format a file is in, from its name and its first JSON value.

``ragcov import`` without ``--format`` should just work on what a tracing tool
exported. A parquet file is a Phoenix spans dataframe; a text file whose first
line has six columns is a TREC run; otherwise the first JSON value tells: OTLP
``resourceSpans`` or span objects (OpenInference when they carry
``openinference.span.kind``, OpenTelemetry GenAI when ``gen_ai.`` attributes),
Langfuse observations (``traceId`` with a ``type``), a JSONL retrieval record,
or a ranx run ``{qid: {doc_id: score}}``. Only the start is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError
from ragcov.traces.jsonl import CONTEXT_TEXT_KEYS, RETRIEVED_KEYS
from ragcov.traces.jsontext import iter_json_values


def require_trace_file(path: str | os.PathLike[str]) -> None:
    """Refuse what is not one trace file (a folder of shards is read by the importer as
    shards, never here)."""
    p = Path(path)
    if p.is_dir():
        raise RagcovError(f"{path}: is a folder, not one trace file")
    if not p.exists():
        raise RagcovError(f"{path}: no such file")
    if not p.is_file():  # a device or a pipe: read in parts, or once to tell its format
        raise RagcovError(f"{path}: is not a regular file (a trace file may be read more "
                          "than once, or in parts); give the file itself")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format name of ``path``; a one-line error listing the formats when unsure."""
    p = Path(path)
    require_trace_file(p)
    with open(p, "rb") as f:
        head = f.read(4096)
    if p.suffix.lower() in (".parquet", ".pq") or head.startswith(b"PAR1"):
        return "phoenix"
    found = _from_text(head) or _from_json(path)
    if found is None:
        from ragcov.traces.formats import FORMATS  # the one table of formats

        raise RagcovError(f"{path}: cannot tell the trace format; pass --format "
                          f"({', '.join(FORMATS)})")
    return found


def _from_text(head: bytes) -> str | None:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.lstrip()[:1] in "{[":
            return None
        parts = line.split()
        return "trec" if len(parts) == 6 else None
    return None


def _from_json(path: str | os.PathLike[str]) -> str | None:
    try:
        for _line, value in iter_json_values(path):
            return _classify(value)
    except (RagcovError, ValueError):
        return None
    return None


def _classify(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("data"), list) and value["data"]:
        value = value["data"]
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, dict):
        return None
    if "resourceSpans" in value or "attributes" in value or \
            isinstance(value.get("spans"), list):
        text = json.dumps(value)
        return "otel" if "gen_ai." in text and "openinference.span.kind" not in text \
            else "openinference"
    if "traceId" in value and ("type" in value or "parentObservationId" in value):
        return "langfuse"
    if any(k in value for k in RETRIEVED_KEYS + CONTEXT_TEXT_KEYS):
        return "jsonl"
    if value and all(isinstance(v, dict) for v in value.values()):
        return "ranx"
    return None
