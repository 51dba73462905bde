"""What every adapter shares: finding a retrieved item's corpus chunk id, and naming a bad item.

Frameworks often assign their own ids (LangChain's in-memory store gives every
document a random UUID when none was set), so an id is looked for in a fixed
order, first match in the corpus wins: the object's own id, then
``metadata["id"]``, then ``metadata["chunk_id"]``, then the chunk whose text has
the same content hash. Whenever a fallback was needed a warning says which one,
because a content match is only as good as the texts being identical.

Identical texts are common (a disclaimer, a table header, a boilerplate footer in
every document), and some stores hand results back without any id (LangChain's
Chroma gives ``Document.id = None``). Content alone would fold every such twin into
one chunk, and a list holding two of them would lose a hit. So a result list is
read as a whole: items naming their chunk take it first, and a content match never
takes a chunk another hit of the same list already has. Among twins the item's
metadata decides (a stored key with another value rules a twin out; its source or
document, its position agree or not); where nothing tells twins apart the first
free one in corpus order is taken and counted as ambiguous (:mod:`ragcov.retrievers.twins`).

An item that cannot be read is refused with one line naming the retriever, the
query, the item's rank and the item (:func:`unusable`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.fields import FieldError, Ranked, parse_id
from ragcov.files import text_hash
from ragcov.retrievers.twins import MatchCounts, fits, pick_twin
from ragcov.user_warnings import warn

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked

METADATA_ID_KEYS = ("id", "chunk_id")


class AdapterWarning(UserWarning):
    """A retrieved item's chunk id was found by a fallback, not given directly."""


@dataclass(slots=True)
class Entry:
    """What a retrieved item says about itself: its own id, its metadata, its text."""

    own_id: Any
    metadata: Any
    content: Any


class IdResolver:
    """Find the corpus chunk id of a retrieved item, remembering which fallbacks were used.

    ``label`` names the framework in messages ("LangChain", "LlamaIndex").
    Without a corpus the first id present is taken as is (the run is checked
    against the corpus when it is recorded). ``matching`` counts the hits placed by
    content; with ``once_per_query`` a query text is counted once however often it
    is retrieved (the pytest plugin records the first retrieval of a text).
    """

    def __init__(self, corpus: Corpus | None, label: str) -> None:
        self.corpus = corpus
        self.label = label
        self._by_hash: dict[str, list[int]] | None = None
        self.fallbacks: dict[str, int] = {}
        self._warned: set[str] = set()
        self.matching = MatchCounts()
        self.once_per_query = False
        self._counted: set[str] = set()

    def _hash_index(self) -> dict[str, list[int]]:
        """Content hash (as stored, and of the stripped text) → corpus positions, in order."""
        if self._by_hash is None:
            index: dict[str, list[int]] = {}
            assert self.corpus is not None
            for i, chunk in enumerate(self.corpus):
                for h in dict.fromkeys((chunk.hash, text_hash(chunk.text.strip()))):
                    index.setdefault(h, []).append(i)
            self._by_hash = index
        return self._by_hash

    def resolve(self, own_id: Any, metadata: Any, content: Any) -> str:
        """The chunk id of one item read on its own (no list to keep twins apart in)."""
        return self.resolve_list([Entry(own_id, metadata, content)])[0]

    def resolve_list(self, entries: Sequence[Entry | str], query: str | None = None,
                     failed: Callable[[int, Exception], str] | None = None) -> list[str]:
        """The chunk ids of one result list, never two hits of it on one chunk by content.

        A ``str`` entry is an id already read. Entries that name a corpus chunk
        themselves take it first, wherever they rank; then the hits matched by text
        are placed, those whose metadata leaves the fewest twins first, so a hit
        that could be any twin never takes the one a later hit's metadata names.
        ``failed(position, exc)`` is asked about an entry that names no chunk
        (position from 0): it raises, or returns the id to record instead.
        """
        ids: list[str | None] = [None] * len(entries)
        taken: set[str] = set()
        for n, entry in enumerate(entries):
            ids[n] = entry if isinstance(entry, str) else self._direct(entry)
            if ids[n] is not None:
                taken.add(ids[n])  # type: ignore[arg-type]
        by_text: list[tuple[int, int, list[tuple[int, int]], int]] = []
        for n, entry in enumerate(entries):
            if ids[n] is not None:
                continue
            assert not isinstance(entry, str)
            try:
                found = self._resolve(entry)
            except (FieldError, RagcovError) as exc:
                if failed is None:
                    raise
                found = failed(n, exc)
            if isinstance(found, str):
                ids[n] = found
                taken.add(found)
            else:
                assert self.corpus is not None
                pool = fits(self.corpus.chunks, found, entry.metadata)
                by_text.append((len(pool) if len(found) > 1 else 0, n, pool, len(found)))
        counts = MatchCounts()
        for _, n, pool, twins in sorted(by_text, key=lambda t: t[:2]):
            assert self.corpus is not None
            ids[n] = cid = pick_twin(self.corpus.chunks, pool, twins, taken, counts)
            taken.add(cid)
        if not (self.once_per_query and query is not None and query in self._counted):
            self.matching.add(counts)
            if self.once_per_query and query is not None:
                self._counted.add(query)
        return ids  # type: ignore[return-value]

    def _candidates(self, entry: Entry) -> list[tuple[str, Any]]:
        meta = entry.metadata if isinstance(entry.metadata, dict) else {}
        return [("the item's own id", entry.own_id)] + [
            (f"metadata[{key!r}]", meta.get(key)) for key in METADATA_ID_KEYS]

    def _direct(self, entry: Entry) -> str | None:
        """The corpus chunk the item names by an id of its own or in its metadata, if any."""
        if self.corpus is None:
            return None
        own = entry.own_id
        if type(own) is str and own in self.corpus:
            return own  # the usual case: the item's own id, a corpus chunk
        candidates = self._candidates(entry)
        for how, value in candidates:
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            try:
                cid = parse_id(value)
            except FieldError:
                continue
            if cid in self.corpus:
                self._note(how, candidates[0][0])
                return cid
        return None

    def _resolve(self, entry: Entry) -> str | list[int]:
        """Own id, metadata id/chunk_id, then content hash: an id, or the corpus positions
        of the chunks holding the item's text (one of which :func:`pick_twin` takes).

        None and blank strings count as absent. A value that cannot be an id (a
        list, a boolean, a float) is skipped, so the later candidates and the
        content may still find the chunk; if nothing does, the error names it.
        """
        own_id, content = entry.own_id, entry.content
        if type(own_id) is str and self.corpus is not None and own_id in self.corpus:
            return own_id
        candidates = self._candidates(entry)
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
            if self.corpus is None or cid in self.corpus:
                self._note(how, candidates[0][0])
                return cid
            first_present = first_present or cid
        if self.corpus is not None and isinstance(content, str) and content:
            index = self._hash_index()
            for h in (text_hash(content), text_hash(content.strip())):
                if h in index:
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


def ranked_top_k(items: Iterable[Any], k: int,
                 read: Callable[[Any], tuple[str | Entry, float | None]],
                 kind: str, name: str, query: str, resolver: IdResolver) -> Ranked:
    """The first ``k`` items as ``(chunk id, score)``; an unusable one is one line naming it.

    Every framework adapter reads its own objects (``read``: an id already known, or
    what the item says about itself) but shares how the list is matched to chunks
    (:meth:`IdResolver.resolve_list`) and how a bad item is reported, so neither can
    drift apart.
    """
    top = list(itertools.islice(items, k))
    rows: list[tuple[str | Entry, float | None]] = []
    for rank, item in enumerate(top, start=1):
        try:
            rows.append(read(item))
        except (FieldError, RagcovError) as exc:
            raise unusable(kind, name, query, rank, item, exc) from exc

    def failed(n: int, exc: Exception) -> str:
        raise unusable(kind, name, query, n + 1, top[n], exc) from exc

    ids = resolver.resolve_list([what for what, _ in rows], query, failed)
    return [(cid, score) for cid, (_, score) in zip(ids, rows)]


def check_lists(results: list[Ranked], texts: Sequence[str]) -> list[Ranked]:
    """The results, checked to hold one list per query."""
    if len(results) != len(texts):  # pragma: no cover - every adapter maps one to one
        raise RagcovError(f"got {len(results)} result lists for {len(texts)} queries")
    return results
