"""Relevance labels (qrels): which documents or chunks are relevant to each query.

Read in the shapes IR people already keep them in, so nothing has to be
converted by hand:

* JSONL, one query a line naming what is relevant to it: ``doc_id`` (one document or
  page; also ``document_id``, ``corpus_id``, ``corpus-id``) or ``doc_ids`` (a list) at
  document level, ``chunk_id`` (one chunk) or ``chunk_ids`` (a list) at chunk level. A
  query may have several lines. An optional ``relevance``/``score`` field of 0 or
  less marks the pair as judged non-relevant (it is kept as "labelled", not as
  relevant). A line that names both levels, two different values for one field, or a
  label-like field ragcov does not read (``passage_id``, ``relevant_chunks``,
  ``gold_doc`` ...) is refused with its file and line: a label silently ignored would
  change the hit rate without a word.
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
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import QUERY_ID_KEYS, FieldError, located, parse_doc_id, parse_id, parse_score
from ragcov.files import first_key, iter_jsonl, read_text

Level = Literal["doc", "chunk"]
LEVELS: tuple[str, ...] = ("doc", "chunk")

DOC_KEYS = ("doc_id", "document_id", "corpus_id", "corpus-id")
DOC_LIST_KEYS = ("doc_ids",)
CHUNK_KEYS = ("chunk_id",)
CHUNK_LIST_KEYS = ("chunk_ids",)
REL_KEYS = ("relevance", "score", "rel", "label")
#: Every field a JSONL qrels line may carry that ragcov reads.
READ_KEYS = frozenset((*QUERY_ID_KEYS, *DOC_KEYS, *DOC_LIST_KEYS, *CHUNK_KEYS, *CHUNK_LIST_KEYS,
                       *REL_KEYS))
# A field whose name holds one of these reads as a label (what is relevant), so a line
# carrying one ragcov does not read is refused rather than read without it.
_LABEL_LIKE = re.compile(r"chunk|doc|passage|corpus|relevan|gold|positive|evidence|qrel|"
                         r"^(pid|did|cid|page|pages|page_id|page_ids|target|targets)$")


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


Judgement = tuple[int, str, str, float, "Level | None"]


def _relevance(value: object, path: object, line: int) -> float:
    """A judgement's grade: a finite number (numeric text included), or true/false.

    NaN is neither relevant nor not (``NaN > 0`` is false, so it would silently read
    as judged non-relevant) and an infinite grade is no grade: both are refused.
    """
    if isinstance(value, bool):  # a JSON label true/false
        return float(value)
    try:
        grade = parse_score(value, text_ok=True)
    except FieldError as exc:
        what = "a finite number" if "finite" in str(exc) else "a number"
        raise InputFormatError(path, line, f"relevance {value!r} is not {what}") from None
    if grade is None:
        raise InputFormatError(path, line, "the relevance is empty")
    return grade


def iter_judgements(path: str | os.PathLike[str]) -> Iterator[Judgement]:
    """Every judgement in a qrels file: ``(line, query id, item id, relevance, level)``.

    ``level`` is what a JSONL line says (``doc`` or ``chunk``) and None for the
    column formats, whose ids the caller must interpret. Malformed lines raise
    with file and line number.
    """
    p = Path(path)
    text = read_text(p)  # a missing file or a folder: its one line
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if p.suffix.lower() in (".jsonl", ".json") or first.lstrip().startswith("{"):
        yield from _jsonl_judgements(p)
    else:
        yield from _column_judgements(p, text)


def _present(obj: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [k for k in keys if k in obj and obj[k] is not None]


def _one_value(obj: dict[str, Any], keys: tuple[str, ...], p: Path, lineno: int) -> Any:
    """The value of the first of ``keys`` the line carries; two of them that disagree are
    refused (which one the file meant cannot be guessed)."""
    found = _present(obj, keys)
    for other in found[1:]:
        if obj[other] != obj[found[0]]:
            raise InputFormatError(p, lineno, f"{found[0]!r} and {other!r} disagree "
                                   f"({obj[found[0]]!r} vs {obj[other]!r}); keep one")
    return obj[found[0]] if found else None


def _id_list(value: object, p: Path, lineno: int, key: str, parse: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise InputFormatError(p, lineno, f"{key!r} must be a non-empty list of ids, got {value!r}")
    return [located(parse, v, p, lineno, what) for v in value]


def _jsonl_judgements(p: Path) -> Iterator[Judgement]:
    for lineno, obj in iter_jsonl(p):
        qid = first_key(obj, QUERY_ID_KEYS)
        if qid is None:
            raise InputFormatError(p, lineno, "no query id (expected 'query_id')")
        unread = [k for k in obj if k not in READ_KEYS and _LABEL_LIKE.search(k.lower())]
        if unread:
            raise InputFormatError(
                p, lineno, f"field {unread[0]!r} looks like a label, and ragcov does not read it "
                "(it reads 'doc_id', 'doc_ids', 'chunk_id', 'chunk_ids'; docs/faults.md)")
        groups = [(keys, found) for keys in (DOC_KEYS, DOC_LIST_KEYS, CHUNK_KEYS, CHUNK_LIST_KEYS)
                  if (found := _present(obj, keys))]
        if not groups:
            raise InputFormatError(p, lineno, "no label (expected one of 'doc_id', 'doc_ids', "
                                   "'chunk_id', 'chunk_ids')")
        if len(groups) > 1:
            raise InputFormatError(
                p, lineno, f"carries both {groups[0][1][0]!r} and {groups[1][1][0]!r}: a line names "
                "documents or chunks, not both (which one counts would change the hit rate)")
        keys, found = groups[0]
        value = _one_value(obj, keys, p, lineno)
        rel_value = _one_value(obj, REL_KEYS, p, lineno)
        rel = 1.0 if rel_value is None else _relevance(rel_value, p, lineno)
        qid = located(parse_id, qid, p, lineno, "query id")
        if keys in (CHUNK_KEYS, CHUNK_LIST_KEYS):
            level: Level = "chunk"
            items = (_id_list(value, p, lineno, found[0], parse_id, "chunk id")
                     if keys is CHUNK_LIST_KEYS else [located(parse_id, value, p, lineno, "chunk id")])
        else:
            level = "doc"
            items = (_id_list(value, p, lineno, found[0], parse_doc_id, "document id")
                     if keys is DOC_LIST_KEYS
                     else [located(parse_doc_id, value, p, lineno, "document id")])
        for item in items:
            yield lineno, qid, item, rel, level


def _column_judgements(p: Path, text: str) -> Iterator[Judgement]:
    """TREC (``QUERY_ID ITERATION DOC_ID RELEVANCE``) or BEIR TSV (with its header) lines."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if lineno == 1 and parts[0].lower() in ("query-id", "query_id", "qid"):
            continue  # BEIR header
        if len(parts) == 4:
            qid, _iteration, item, rel = parts
        elif len(parts) == 3:
            qid, item, rel = parts
        else:
            raise InputFormatError(
                p, lineno, f"expected 'QUERY_ID 0 DOC_ID RELEVANCE' (TREC) or "
                f"'query-id corpus-id score' (BEIR), got {len(parts)} fields")
        yield lineno, qid, item, _relevance(rel, p, lineno), None


def load_qrels(path: str | os.PathLike[str], level: Level | None = None) -> Qrels:
    """Read JSONL, TREC or BEIR qrels; the column formats are ``level`` (default doc)."""
    if level is not None and level not in LEVELS:
        raise RagcovError(f"qrels level must be 'doc' or 'chunk', got {level!r}")
    relevant: dict[str, set[str]] = {}
    found: Level | None = None
    for lineno, qid, item, rel, line_level in iter_judgements(path):
        if line_level is not None:
            if found is None:
                found = line_level
            elif line_level != found:
                raise InputFormatError(path, lineno,
                                       f"mixes {line_level}-level and {found}-level labels")
        items = relevant.setdefault(qid, set())
        if rel > 0:
            items.add(item)
    if not relevant:
        raise RagcovError(f"{path}: no relevance labels")
    if found is None:
        return Qrels(level or "doc", relevant, source=str(path))
    if level is not None and level != found:
        raise RagcovError(f"{path}: holds {found}-level labels, but {level}-level were asked for")
    return Qrels(found, relevant, source=str(path))
