"""Versions a corpus carries itself: which chunks an update superseded, and by what.

A corpus that keeps old versions beside new ones (a restated filing next to the
original, a re-scanned page next to the first scan) says so in a field: ``version``,
``updated_at`` ... in a chunk's JSONL line or metadata, or in a store's metadata
(:data:`ragcov.fields.VERSION_KEYS`). Versions are a document's: a chunk is
superseded when its document has a chunk of a later version, and its current
counterpart is the chunk at the same place (n-th chunk of that version) in the
document's latest version.
"""

from __future__ import annotations

import datetime as dt
import numbers
from dataclasses import dataclass
from typing import Any

from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.fields import VERSION_KEYS


@dataclass(frozen=True)
class Versions:
    """The corpus's own versions: per superseded chunk, its current counterpart."""

    key: str                          # the field they were read from
    #: superseded chunk position -> the position of its counterpart in the latest
    #: version of its document (-1: that version has no chunk at the same place)
    current: dict[int, int]
    versioned_documents: int          # documents with more than one version

    @property
    def superseded(self) -> list[int]:
        return sorted(self.current)


def _comparable(value: Any) -> tuple[int, Any] | None:
    """A version as something ordered: numbers by value, ISO dates and times in time,
    any other text as text (each kind ranked apart, so they never compare across)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        return (0, float(value))
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return (0, float(text))
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return (2, text)
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return (1, when)


def find_versions(corpus: Corpus) -> Versions | None:
    """The corpus's versions, or None when no chunk carries a version field."""
    key = next((k for k in VERSION_KEYS for c in corpus if c.metadata.get(k) is not None), None)
    if key is None:
        return None
    by_doc: dict[str, dict[Any, list[int]]] = {}
    for i, chunk in enumerate(corpus):
        v = _comparable(chunk.metadata.get(key))
        if v is not None:
            by_doc.setdefault(chunk.doc_id, {}).setdefault(v, []).append(i)
    kinds = {v[0] for versions in by_doc.values() for v in versions}
    if len(kinds) > 1:
        raise RagcovError(f"the corpus's {key!r} field mixes numbers, dates and other text; "
                          "its versions cannot be ordered")
    current: dict[int, int] = {}
    versioned = 0
    for versions in by_doc.values():
        if len(versions) < 2:
            continue
        versioned += 1
        order = sorted(versions)
        latest = versions[order[-1]]
        for v in order[:-1]:
            for n, i in enumerate(versions[v]):
                current[i] = latest[n] if n < len(latest) else -1
    return Versions(key, current, versioned)
