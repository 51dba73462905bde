"""Reading ranked ids out of a decoded JSON reply, wherever a service puts them.

Replies differ from service to service; a *path* says where the ids (and
optionally the scores) are. A path is dotted keys with ``[]`` to take every
element of a list and ``[N]`` to take one:

    ids                      {"ids": ["a", "b"]}
    results[].id             {"results": [{"id": "a", "score": 0.9}, ...]}
    data.hits[].document.id  {"data": {"hits": [{"document": {"id": "a"}}]}}
    [].chunk_id              [{"chunk_id": "a"}, ...]

Without a path, the common shapes are recognised: a list of ids or of objects,
``{"ids": [...], "scores": [...]}``, or ``{"results"|"documents"|"hits"|"matches":
[{"id"|"chunk_id": ..., "score": ...}]}``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.fields import ITEM_ID_KEYS, ITEM_SCORE_KEYS, FieldError, parse_id, parse_score

if TYPE_CHECKING:
    from ragcov.retrievers.base import Ranked

LIST_KEYS = ("results", "documents", "hits", "matches", "data", "items")

_TOKEN = re.compile(r"\[(\d*)\]|([^.\[\]]+)")


def parse_path(path: str) -> list[str | int | None]:
    """Split ``a.b[].c[0]`` into ``["a", "b", None, "c", 0]`` (None = every element)."""
    steps: list[str | int | None] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise RagcovError(f"bad reply path {path!r} at {text[pos:]!r}")
        if m.group(2) is not None:
            steps.append(m.group(2))
        else:
            steps.append(int(m.group(1)) if m.group(1) else None)
        pos = m.end()
    if not steps:
        raise RagcovError(f"empty reply path {path!r}")
    return steps


def extract(obj: Any, path: str | list[str | int | None]) -> Any:
    """Follow a path into a decoded JSON reply; ``[]`` maps the rest over a list."""
    steps = parse_path(path) if isinstance(path, str) else path
    shown = path if isinstance(path, str) else ""
    for i, step in enumerate(steps):
        if step is None:
            if not isinstance(obj, list):
                raise RagcovError(f"reply path {shown!r}: expected a list, got "
                                  f"{type(obj).__name__}")
            rest = steps[i + 1:]
            return [extract(item, rest) if rest else item for item in obj]
        if isinstance(step, int):
            if not isinstance(obj, list) or step >= len(obj):
                raise RagcovError(f"reply path {shown!r}: no element [{step}]")
            obj = obj[step]
        else:
            if not isinstance(obj, dict) or step not in obj:
                raise RagcovError(f"reply path {shown!r}: no key {step!r}")
            obj = obj[step]
    return obj


def _default_mapping(reply: Any) -> tuple[list[Any], list[Any] | None]:
    """Recognise the common reply shapes when no path is configured."""
    items: Any = None
    if isinstance(reply, list):
        items = reply
    elif isinstance(reply, dict):
        if isinstance(reply.get("ids"), list):
            scores = reply.get("scores")
            return reply["ids"], scores if isinstance(scores, list) else None
        items = next((reply[key] for key in LIST_KEYS if isinstance(reply.get(key), list)), None)
    if items is None:
        raise RagcovError(
            "cannot find the ids in the reply: expected a list, {\"ids\": [...]}, or one of "
            f"{', '.join(LIST_KEYS)} holding a list; set ids=PATH"
        )
    ids: list[Any] = []
    scores: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ids.append(next((item[key] for key in ITEM_ID_KEYS if item.get(key) is not None),
                            None))
            scores.append(next((item[key] for key in ITEM_SCORE_KEYS
                                if item.get(key) is not None), None))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            ids.append(item[0])
            scores.append(item[1])
        else:
            ids.append(item)
            scores.append(None)
    return ids, scores


def read_ranked(reply: Any, ids_path: str | None, scores_path: str | None, k: int,
                where: str) -> Ranked:
    """The first k ``(chunk id, score)`` pairs of a decoded reply; errors start with ``where``."""
    try:
        if ids_path:
            ids = extract(reply, ids_path)
            scores = extract(reply, scores_path) if scores_path else None
        else:
            ids, scores = _default_mapping(reply)
            if scores_path:
                scores = extract(reply, scores_path)
    except RagcovError as exc:
        raise RagcovError(f"{where}: {exc}") from exc
    if not isinstance(ids, list):
        raise RagcovError(f"{where}: the ids are not a list (got {type(ids).__name__})")
    if scores is not None and (not isinstance(scores, list) or len(scores) != len(ids)):
        raise RagcovError(f"{where}: the scores do not line up with the ids "
                          f"({len(ids)} ids)")
    ranked: Ranked = []
    for i, raw_id in enumerate(ids):
        try:
            cid = parse_id(raw_id)
        except FieldError as exc:
            raise RagcovError(f"{where}: result {i + 1} has no usable id: {exc}") from None
        try:
            score = parse_score(scores[i]) if scores is not None else None
        except FieldError as exc:
            raise RagcovError(f"{where}: result {i + 1} has an unusable score: "
                              f"{exc}") from None
        ranked.append((cid, score))
    return ranked[:k]
