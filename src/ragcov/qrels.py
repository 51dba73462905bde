"""Relevance labels (qrels): which documents or chunks are relevant to each query.

Read in the shapes IR people already keep them in, so nothing has to be
converted by hand:

* JSONL, one relevant pair a line: ``{"query_id": ..., "doc_id": ...}`` (page or
  document level) or ``{"query_id": ..., "chunk_id": ...}`` (chunk level). A
  query may have several lines. An optional ``relevance``/``score`` field of 0 or
  less marks the pair as judged non-relevant (it is kept as "labelled", not as
  relevant).
* TREC qrels: ``QUERY_ID ITERATION DOC_ID RELEVANCE`` separated by whitespace;
  whether the ids name documents or chunks is the caller's ``level``.
* BEIR qrels TSV: header ``query-id corpus-id score``, tab separated.

A query that appears only with non-relevant judgements is labelled (it has no
relevant item); a query absent from the file is unlabelled. The two are kept
apart because a failure analysis must report unlabelled queries, never count
them as failures.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ragcov.errors import InputFormatError, RagcovError
from ragcov.io import first_key, iter_jsonl, read_text

Level = Literal["doc", "chunk"]
LEVELS: tuple[str, ...] = ("doc", "chunk")

QUERY_KEYS = ("query_id", "qid", "query-id", "id")
DOC_KEYS = ("doc_id", "document_id", "corpus_id", "corpus-id")
CHUNK_KEYS = ("chunk_id",)
REL_KEYS = ("relevance", "score", "rel", "label")


@dataclass
class Qrels:
    """Query id -> relevant ids, at one level (documents or chunks)."""

    level: Level
    relevant: dict[str, set[str]] = field(default_factory=dict)
    source: str | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise RagcovError(f"qrels level must be 'doc' or 'chunk', got {self.level!r}")

    @property
    def query_ids(self) -> set[str]:
        return set(self.relevant)

    def __len__(self) -> int:
        return len(self.relevant)


def _relevance(value: object, path: object, line: int) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InputFormatError(path, line, f"relevance {value!r} is not a number") from exc


def _add(relevant: dict[str, set[str]], qid: str, item: str | None, rel: float) -> None:
    items = relevant.setdefault(qid, set())
    if item is not None and rel > 0:
        items.add(item)


def _read_jsonl(path: Path, level: Level | None) -> Qrels:
    relevant: dict[str, set[str]] = {}
    found: Level | None = None
    for lineno, obj in iter_jsonl(path):
        qid = first_key(obj, QUERY_KEYS)
        if qid is None:
            raise InputFormatError(path, lineno, "no query id (expected 'query_id')")
        chunk = first_key(obj, CHUNK_KEYS)
        doc = first_key(obj, DOC_KEYS)
        if chunk is not None and doc is not None:
            raise InputFormatError(path, lineno, "give 'doc_id' or 'chunk_id', not both")
        if chunk is None and doc is None:
            raise InputFormatError(path, lineno, "no 'doc_id' or 'chunk_id'")
        this: Level = "chunk" if chunk is not None else "doc"
        if found is None:
            found = this
        elif this != found:
            raise InputFormatError(path, lineno, f"mixes {this}-level and {found}-level labels")
        rel_value = first_key(obj, REL_KEYS)
        rel = 1.0 if rel_value is None else _relevance(rel_value, path, lineno)
        _add(relevant, str(qid), str(chunk if chunk is not None else doc), rel)
    if found is None:
        raise RagcovError(f"{path}: no relevance labels")
    if level is not None and level != found:
        raise RagcovError(f"{path}: holds {found}-level labels, but {level}-level were asked for")
    return Qrels(found, relevant, source=str(path))


def _read_columns(path: Path, level: Level) -> Qrels:
    """TREC (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score``)."""
    relevant: dict[str, set[str]] = {}
    lines = read_text(path).splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if lineno == 1 and parts and parts[0].lower() in ("query-id", "query_id", "qid"):
            continue  # BEIR header
        if len(parts) == 4:
            qid, _iteration, item, rel = parts
        elif len(parts) == 3:
            qid, item, rel = parts
        else:
            raise InputFormatError(
                path, lineno, f"expected 'QUERY_ID 0 DOC_ID RELEVANCE' (TREC) or "
                f"'query-id corpus-id score' (BEIR), got {len(parts)} fields")
        _add(relevant, qid, item, _relevance(rel, path, lineno))
    if not relevant:
        raise RagcovError(f"{path}: no relevance labels")
    return Qrels(level, relevant, source=str(path))


def load_qrels(path: str | os.PathLike[str], level: Level | None = None) -> Qrels:
    """Read JSONL, TREC or BEIR qrels; ``level`` is required for the two column formats."""
    p = Path(path)
    if not p.is_file():
        raise RagcovError(f"{p}: no such file")
    if level is not None and level not in LEVELS:
        raise RagcovError(f"qrels level must be 'doc' or 'chunk', got {level!r}")
    first = next((ln for ln in read_text(p).splitlines() if ln.strip()), "")
    if p.suffix.lower() in (".jsonl", ".json") or first.lstrip().startswith("{"):
        return _read_jsonl(p, level)
    return _read_columns(p, level or "doc")


def write_qrels_jsonl(path: str | os.PathLike[str], qrels: Qrels) -> None:
    """Write JSONL qrels (one relevant pair a line), e.g. from a dataset's labels."""
    from ragcov.io import write_jsonl_atomic

    key = "doc_id" if qrels.level == "doc" else "chunk_id"
    write_jsonl_atomic(path, [{"query_id": q, key: item}
                              for q, items in qrels.relevant.items() for item in sorted(items)])
