"""The test suite: queries with stable string ids.

Accepts the shapes RAG teams already keep their test sets in: JSONL/CSV with an id
and a question column, RAGAS test sets (``user_input``) and DeepEval goldens
(``input``, as a JSON list or a ``{"goldens": [...]}`` file). Queries without an id
get ``q-<content hash>`` so re-running the same file gives the same ids.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcov.corpus import repeated_ids_message
from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import QUERY_ID_KEYS, QUERY_TEXT_KEYS, FieldError, parse_id
from ragcov.files import first_key, iter_csv, iter_jsonl, load_json, text_hash


@dataclass(slots=True)
class Query:
    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The record as the file gave it (every field, its own key names): what a selected suite
    #: written back out keeps, gold labels such as ``doc_id`` included
    record: dict[str, Any] | None = field(default=None, compare=False, repr=False)


class Suite(Sequence[Query]):
    def __init__(self, queries: Iterable[Query], source: str | None = None) -> None:
        self.queries: list[Query] = list(queries)
        self.source = source
        seen: set[str] = set()
        dupes = []
        for q in self.queries:
            if q.id in seen:
                dupes.append(q.id)
            seen.add(q.id)
        if dupes:
            where = f"{source}: " if source else ""
            raise RagcovError(f"{where}duplicate query ids: {', '.join(sorted(set(dupes))[:20])}")

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, i):  # type: ignore[override]
        return self.queries[i]

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    @property
    def ids(self) -> list[str]:
        return [q.id for q in self.queries]

    @property
    def texts(self) -> list[str]:
        return [q.text for q in self.queries]

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> Suite:
        return cls(_with_ids([(None, t, {}) for t in texts]))

    def __repr__(self) -> str:
        return f"Suite({len(self)} queries)"


def _with_ids(rows: Iterable[tuple[Any, str, dict[str, Any]]],
              records: Sequence[dict[str, Any]] | None = None) -> list[Query]:
    """Give id-less rows ``q-<hash>``; repeated texts get ``-2``, ``-3``... in file order."""
    out: list[Query] = []
    used: dict[str, int] = {}
    for n, (qid, text, meta) in enumerate(rows):
        if qid is None:
            base = f"q-{text_hash(text)[:12]}"
            used[base] = used.get(base, 0) + 1
            qid = base if used[base] == 1 else f"{base}-{used[base]}"
        out.append(Query(id=str(qid), text=text, metadata=meta,
                         record=records[n] if records is not None else None))
    return out


def _row(path: object, lineno: int | None, obj: dict[str, Any]) -> tuple[Any, str, dict[str, Any]]:
    text = first_key(obj, QUERY_TEXT_KEYS)
    if not isinstance(text, str) or not text.strip():
        if "rewrite" in obj:  # a draft of ``ragcov probe --drafts-out`` copied from its chunk
            raise InputFormatError(path, lineno, "a draft copied from its chunk is no question: "
                                   "write the question a user would ask in 'question' ('rewrite' "
                                   "holds the chunk's own words)")
        raise InputFormatError(path, lineno, f"no query text (expected one of {', '.join(QUERY_TEXT_KEYS)})")
    qid = first_key(obj, QUERY_ID_KEYS)
    if isinstance(qid, str) and not qid.strip():
        qid = None
    if qid is not None:
        try:
            qid = parse_id(qid)
        except FieldError as exc:
            raise InputFormatError(path, lineno, f"query id: {exc}") from None
    meta = {k: v for k, v in obj.items() if k not in QUERY_ID_KEYS and k not in QUERY_TEXT_KEYS}
    return qid, text.strip(), meta


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Load queries from .jsonl, .csv or .json (list, or DeepEval ``goldens``/RAGAS ``samples``)."""
    p = Path(path)
    if not p.exists():
        raise RagcovError(f"{p}: no such file")
    if p.is_dir():
        if (p / "queries.jsonl").is_file():
            return load_suite(p / "queries.jsonl")
        raise RagcovError(f"{p}: a folder of queries must hold queries.jsonl")
    suffix = p.suffix.lower()
    unit = "line"
    where: list[int] = []  # each row's line number, or its position in a JSON list
    records: list[dict[str, Any]] = []
    if suffix in (".jsonl", ".ndjson"):
        rows = [_row(p, n, obj) for n, obj in _numbered(iter_jsonl(p), where, records)]
    elif suffix == ".csv":
        rows = [_row(p, n, obj) for n, obj in _numbered(iter_csv(p), where, records)]
    elif suffix == ".json":
        unit = "item"
        data = load_json(p)
        if isinstance(data, dict):
            data = first_key(data, ("goldens", "test_cases", "samples", "queries", "data"))
        if not isinstance(data, list):
            raise InputFormatError(p, None, "expected a JSON list of queries "
                                   "(or an object with 'goldens', 'test_cases' or 'samples')")
        rows = []
        for i, obj in enumerate(data):
            if not isinstance(obj, dict):
                raise InputFormatError(p, None, f"item {i} is not an object")
            rows.append(_row(f"{p} item {i}", None, obj))
            records.append(obj)
            where.append(i)
    else:
        raise RagcovError(f"{p}: unsupported query file (expected .jsonl, .csv or .json)")
    if not rows:
        raise RagcovError(f"{p}: the suite is empty (no queries)")
    queries = _with_ids(rows, records)
    _check_repeats(p, queries, where, unit)
    return Suite(queries, source=str(p))


def _numbered(rows: Iterable[tuple[int, dict[str, Any]]], where: list[int],
              records: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Pass ``(line, row)`` pairs through, noting each line in ``where`` and each record."""
    for lineno, obj in rows:
        where.append(lineno)
        records.append(obj)
        yield lineno, obj


def _check_repeats(path: Path, queries: Sequence[Query], where: Sequence[int], unit: str) -> None:
    """A repeated query id is an error located at the line (or item) that repeats it."""
    first: dict[str, int] = {}
    repeats: list[tuple[str, int, int]] = []
    repeated: set[str] = set()
    for q, at in zip(queries, where):
        if q.id not in first:
            first[q.id] = at
        elif q.id not in repeated:
            repeated.add(q.id)
            repeats.append((q.id, at, first[q.id]))
    if repeats:
        line = repeats[0][1] if unit == "line" else None
        raise InputFormatError(path, line, repeated_ids_message("query", repeats, unit))
