"""JSONL traces: one retrieval per line, as applications and RAGAS datasets log them.

Logs are written by hand-rolled code, so several spellings are read (the key
vocabulary of :mod:`ragcov.fields`, RAGAS's field names) and scores may be
numeric text. What cannot be an id or a score is still refused with its line.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.fields import ITEM_ID_KEYS, ITEM_SCORE_KEYS, ITEM_TEXT_KEYS, QUERY_ID_KEYS, QUERY_TEXT_KEYS
from ragcov.files import first_key, iter_jsonl
from ragcov.traces.records import Item, Trace, parse_id_at, parse_score_at

RETRIEVED_KEYS = ("retrieved", "retrieved_ids", "retrieved_context_ids", "retrieval_context_ids",
                  "doc_ids", "chunk_ids")
CONTEXT_TEXT_KEYS = ("retrieved_contexts", "retrieval_context")


def item_from(obj: Any, path: Any, line: int | None, where: str, text_ok: bool) -> Item:
    """One retrieved entry: an id, an ``[id, score]`` pair, or an object with an id
    (or only content, to be matched to the corpus by hash)."""
    if obj is None or isinstance(obj, (str, numbers.Number)):
        return Item(parse_id_at(obj, path, line, where))
    if isinstance(obj, (list, tuple)) and len(obj) == 2:
        return Item(parse_id_at(obj[0], path, line, where),
                    parse_score_at(obj[1], path, line, where, text_ok))
    if isinstance(obj, dict):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None
        raw_id = first_key(obj, ITEM_ID_KEYS)
        content = first_key(obj, ITEM_TEXT_KEYS)
        item = Item(None if raw_id is None else parse_id_at(raw_id, path, line, where),
                    parse_score_at(first_key(obj, ITEM_SCORE_KEYS), path, line, where, text_ok),
                    content if isinstance(content, str) else None, meta)
        if item.id is None and item.content is None:
            raise InputFormatError(path, line, f"{where}: an entry has no id "
                                   f"(expected one of {', '.join(ITEM_ID_KEYS)})")
        return item
    raise InputFormatError(path, line, f"{where}: cannot read a retrieved entry from {obj!r}")


def read_jsonl(path: str | os.PathLike[str]) -> list[Trace]:
    """Every line a retrieval; a line without a query id is the query ``line-N``."""
    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        qid_raw = first_key(obj, QUERY_ID_KEYS)
        qid = (f"line-{lineno}" if qid_raw is None
               else parse_id_at(qid_raw, path, lineno, "query id"))
        if qid in seen:
            raise InputFormatError(path, lineno,
                                   f"query id {qid!r} already appeared on line {seen[qid]}")
        seen[qid] = lineno
        text = first_key(obj, QUERY_TEXT_KEYS)
        if text is not None and not isinstance(text, str):
            raise InputFormatError(path, lineno, "the query text is not a string")
        traces.append(Trace(qid, text or "", _items(obj, path, lineno), lineno))
    return traces


def _items(obj: dict[str, Any], path: Any, lineno: int) -> list[Item]:
    """The retrieved ids (with a parallel ``scores`` list), else the retrieved texts."""
    given = [key for key in RETRIEVED_KEYS if obj.get(key) is not None]
    # Which list is the retrieval is the writer's to say: the first key would win
    # unseen (an empty "retrieved" beside a full "retrieved_context_ids").
    other = next((key for key in given[1:] if obj[key] != obj[given[0]]), None)
    if other is not None:
        raise InputFormatError(path, lineno, f"'{given[0]}' and '{other}' give different "
                               "retrieved lists; keep the one that is the retrieval")
    retrieved = obj[given[0]] if given else None
    if retrieved is None:
        return _contexts(obj, path, lineno)
    if not isinstance(retrieved, list):
        raise InputFormatError(path, lineno, "'retrieved' is not a list")
    # JSONL logs are loosely typed: a score written as "0.9" is read as a number.
    items = [item_from(x, path, lineno, f"retrieved[{n}]", text_ok=True)
             for n, x in enumerate(retrieved)]
    scores = obj.get("scores")
    if scores is not None:
        if not isinstance(scores, list) or len(scores) != len(items):
            raise InputFormatError(path, lineno, "'scores' is not a list as long as 'retrieved'")
        for n, (item, s) in enumerate(zip(items, scores)):
            item.score = parse_score_at(s, path, lineno, f"scores[{n}]", text_ok=True)
    return items


def _contexts(obj: dict[str, Any], path: Any, lineno: int) -> list[Item]:
    """Retrieved texts only (RAGAS ``retrieved_contexts``): matched by content later."""
    contexts = first_key(obj, CONTEXT_TEXT_KEYS)
    if contexts is None:
        raise InputFormatError(path, lineno, "no retrieved ids (expected one of "
                               f"{', '.join(RETRIEVED_KEYS + CONTEXT_TEXT_KEYS)})")
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise InputFormatError(path, lineno, "retrieved contexts are not a list of texts")
    return [Item(None, None, c) for c in contexts]
