"""What every adapter shares: finding a retrieved item's corpus chunk id, and naming a bad item.

Frameworks often assign their own ids (LangChain's in-memory store gives every
document a random UUID when none was set), so an id is looked for in a fixed
order, first match in the corpus wins: the object's own id, then
``metadata["id"]``, then ``metadata["chunk_id"]``, then the chunk whose text has
the same content hash. Whenever a fallback was needed a warning says which one,
because a content match is only as good as the texts being identical.

An item that cannot be read is refused with one line naming the retriever, the
query, the item's rank and the item (:func:`unusable`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.fields import FieldError, Ranked, parse_id
from ragcov.files import text_hash
from ragcov.user_warnings import warn

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked

METADATA_ID_KEYS = ("id", "chunk_id")


class AdapterWarning(UserWarning):
    """A retrieved item's chunk id was found by a fallback, not given directly."""


class IdResolver:
    """Find the corpus chunk id of a retrieved item, remembering which fallbacks were used.

    ``label`` names the framework in messages ("LangChain", "LlamaIndex").
    Without a corpus the first id present is taken as is (the run is checked
    against the corpus when it is recorded).
    """

    def __init__(self, corpus: Corpus | None, label: str) -> None:
        self.corpus = corpus
        self.label = label
        self._by_hash: dict[str, str] | None = None
        self._ambiguous: set[str] = set()
        self.fallbacks: dict[str, int] = {}
        self._warned: set[str] = set()

    def _hash_index(self) -> dict[str, str]:
        if self._by_hash is None:
            index: dict[str, str] = {}
            assert self.corpus is not None
            for chunk in self.corpus:
                for h in {chunk.hash, text_hash(chunk.text.strip())}:
                    if h in index and index[h] != chunk.id:
                        self._ambiguous.add(h)
                    else:
                        index.setdefault(h, chunk.id)
            self._by_hash = index
        return self._by_hash

    def resolve(self, own_id: Any, metadata: Any, content: Any) -> str:
        """Return the chunk id, trying own id, metadata id/chunk_id, then content hash.

        None and blank strings count as absent. A value that cannot be an id (a
        list, a boolean, a float) is skipped, so the later candidates and the
        content may still find the chunk; if nothing does, the error names it.
        """
        if type(own_id) is str and self.corpus is not None and own_id in self.corpus:
            return own_id  # the usual case: the item's own id, a corpus chunk
        candidates: list[tuple[str, Any]] = [("the item's own id", own_id)]
        meta = metadata if isinstance(metadata, dict) else {}
        candidates += [(f"metadata[{key!r}]", meta.get(key)) for key in METADATA_ID_KEYS]
        first_present: str | None = None
        refused: list[str] = []
        for how, value in candidates:
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            try:
                cid = parse_id(value)
            except FieldError as exc:
                refused.append(f"{how}: {exc}")
                continue
            if self.corpus is None:
                self._note(how, candidates[0][0])
                return cid
            if cid in self.corpus:
                self._note(how, candidates[0][0])
                return cid
            first_present = first_present or cid
        if self.corpus is not None and isinstance(content, str) and content:
            index = self._hash_index()
            for h in (text_hash(content), text_hash(content.strip())):
                if h in index:
                    if h in self._ambiguous:
                        self._note("content hash (several chunks share this text; took the "
                                   "first)", candidates[0][0])
                    else:
                        self._note("content hash", candidates[0][0])
                    return index[h]
        if first_present is not None:
            # Not in the corpus: return it so the caller reports all unknown ids together.
            return first_present
        if refused:
            raise RagcovError(f"a {self.label} result has no usable chunk id: "
                              f"{'; '.join(refused)}")
        snippet = (content[:60] + "...") if isinstance(content, str) and len(content) > 60 \
            else content
        raise RagcovError(
            f"a {self.label} result has no chunk id: no id, no metadata 'id' or 'chunk_id', "
            f"and its content matches no corpus chunk (content: {snippet!r})"
        )

    def _note(self, how: str, direct: str) -> None:
        if how == direct:
            return
        self.fallbacks[how] = self.fallbacks.get(how, 0) + 1
        if how not in self._warned:
            self._warned.add(how)
            warn(f"{self.label} results carry no corpus chunk id of their own; "
                 f"matched them to the corpus by {how}", AdapterWarning)


# ------------------------------------------------------------ naming and checks
def qualname(obj: Any) -> str:
    """``module.Qualified.name`` of a function or class (the name of a retriever)."""
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) \
        or type(obj).__qualname__
    return f"{module}.{name}" if module and module != "builtins" else str(name)


def _shown(value: Any, limit: int = 100) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters."""
    text = " ".join(repr(value).splitlines())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unusable(kind: str, name: str, query: str, rank: int, item: Any,
             exc: Exception) -> RagcovError:
    """One line naming the retriever, the query, the item's rank and the item."""
    reason = " ".join(str(exc).splitlines())
    return RagcovError(f"{kind} {name!r}: result {rank} for query {_shown(query, 60)}: "
                       f"{reason} (item: {_shown(item)})")


def ranked_top_k(items: Iterable[Any], k: int, read: Callable[[Any], tuple[str, float | None]],
                 kind: str, name: str, query: str) -> Ranked:
    """The first ``k`` items as ``(chunk id, score)``; an unusable one is one line naming it.

    Every framework adapter reads its own objects (``read``) but shares how a bad item
    is reported, so the messages cannot drift apart.
    """
    ranked: Ranked = []
    for rank, item in enumerate(itertools.islice(items, k), start=1):
        try:
            ranked.append(read(item))
        except (FieldError, RagcovError) as exc:
            raise unusable(kind, name, query, rank, item, exc) from exc
    return ranked


def check_lists(results: list[Ranked], texts: Sequence[str]) -> list[Ranked]:
    """The results, checked to hold one list per query."""
    if len(results) != len(texts):  # pragma: no cover - every adapter maps one to one
        raise RagcovError(f"got {len(results)} result lists for {len(texts)} queries")
    return results
