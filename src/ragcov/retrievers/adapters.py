"""Adapters that turn a team's own retriever into a ragcov Retriever.

Teams already have a retriever object: a function, a LangChain retriever or
vector store, a LlamaIndex retriever or index. Measuring its coverage should not
mean rewriting it, so :func:`wrap` recognises each kind and returns something
with ``retrieve(texts, k)`` and ``fingerprint()``; :func:`load_retriever` does the
same for ``--retriever module:attr`` on the command line.

The hard part is the chunk id. Frameworks often assign their own ids (LangChain's
in-memory store gives every document a random UUID when none was set), so an id
is looked for in a fixed order, first match in the corpus wins: the object's own
id, then ``metadata["id"]``, then ``metadata["chunk_id"]``, then the chunk whose
text has the same content hash. Whenever a fallback was needed a warning says
which one, because a content match is only as good as the texts being identical.

Ids and scores are read with :mod:`ragcov.fields`, as every other reader does: an
item whose id is None, a list, a boolean or blank, or whose score is a string, a
boolean, NaN or infinite, is refused with one line naming the retriever, the query
and the item, instead of being recorded as something else.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import numbers
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.fields import (
    ITEM_ID_KEYS,
    ITEM_SCORE_KEYS,
    ITEM_TEXT_KEYS,
    FieldError,
    parse_id,
    parse_score,
)
from ragcov.io import first_key, text_hash

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Retriever

Ranked = list[tuple[str, float | None]]

ID_ATTRS = ("id", "chunk_id", "node_id", "id_")
METADATA_ID_KEYS = ("id", "chunk_id")


class AdapterWarning(UserWarning):
    """A retrieved item's chunk id was found by a fallback, not given directly."""


# --------------------------------------------------------------------- ids
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
            warnings.warn(
                f"{self.label} results carry no corpus chunk id of their own; "
                f"matched them to the corpus by {how}",
                AdapterWarning, stacklevel=4,
            )


def _shown(value: Any, limit: int = 100) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters."""
    text = " ".join(repr(value).splitlines())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unusable(kind: str, name: str, query: str, rank: int, item: Any,
              exc: Exception) -> RagcovError:
    """One line naming the retriever, the query, the item's rank and the item."""
    reason = " ".join(str(exc).splitlines())
    return RagcovError(f"{kind} {name!r}: result {rank} for query {_shown(query, 60)}: "
                       f"{reason} (item: {_shown(item)})")


def _check_lists(results: list[Ranked], texts: Sequence[str]) -> list[Ranked]:
    if len(results) != len(texts):  # pragma: no cover - every adapter maps one to one
        raise RagcovError(f"got {len(results)} result lists for {len(texts)} queries")
    return results


# --------------------------------------------------------------- callable
class CallableRetriever:
    """A function ``(query text, k) -> items``.

    An item may be a chunk id, an ``(id, score)`` pair, a dict with ``id`` or
    ``chunk_id`` (and ``score``), a LangChain Document, a LlamaIndex
    NodeWithScore, or any object with an ``id``/``chunk_id``/``node_id``
    attribute (and optionally ``score``).
    """

    def __init__(self, fn: Callable[[str, int], Any], corpus: Corpus | None = None,
                 name: str | None = None) -> None:
        if not callable(fn):
            raise RagcovError(f"{fn!r} is not callable")
        self.fn = fn
        self.name = name or _qualname(fn)
        self.resolver = IdResolver(corpus, "retriever")

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        results: list[Ranked] = []
        for text in texts:
            items = self.fn(text, k)
            if items is None or isinstance(items, (str, bytes, dict)):
                raise RagcovError(
                    f"{self.name} returned {type(items).__name__}; expected a list of ids, "
                    "(id, score) pairs or objects carrying an id"
                )
            ranked: Ranked = []
            # Only the top k are recorded, so only they are read.
            for rank, item in enumerate(itertools.islice(items, k), start=1):
                try:
                    ranked.append(self._item(item))
                except (FieldError, RagcovError) as exc:
                    raise _unusable("retriever", self.name, text, rank, item, exc) from exc
            results.append(ranked)
        return _check_lists(results, texts)

    def _item(self, item: Any) -> tuple[str, float | None]:
        if item is None or isinstance(item, (str, bool, numbers.Number)):
            return parse_id(item), None
        if isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise FieldError("a pair must be (chunk id, score)")
            return parse_id(item[0]), parse_score(item[1])
        if isinstance(item, dict):
            score = next((item[key] for key in ITEM_SCORE_KEYS if item.get(key) is not None),
                         None)
            own = first_key(item, ITEM_ID_KEYS)
            if own is not None:
                parse_id(own)  # an id that cannot be one is the retriever's bug: say so
            cid = self.resolver.resolve(own, item.get("metadata"),
                                        first_key(item, ITEM_TEXT_KEYS))
            return cid, parse_score(score)
        node = getattr(item, "node", None)
        if node is not None and hasattr(item, "score"):  # LlamaIndex NodeWithScore
            return _llamaindex_id(node, self.resolver), parse_score(item.score)
        if hasattr(item, "page_content"):  # LangChain Document
            return _langchain_id(item, self.resolver), parse_score(
                (item.metadata or {}).get("score"))
        for attr in ID_ATTRS:
            value = getattr(item, attr, None)
            if value is not None and value != "":
                return parse_id(value), parse_score(getattr(item, "score", None))
        raise FieldError(
            f"{type(item).__name__} items carry no chunk id (expected an id, an (id, score) "
            f"pair, or an object with one of {', '.join(ID_ATTRS)})"
        )

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "callable", "name": self.name}


# --------------------------------------------------------------- LangChain
def _langchain_id(doc: Any, resolver: IdResolver) -> str:
    return resolver.resolve(getattr(doc, "id", None), getattr(doc, "metadata", None),
                            getattr(doc, "page_content", None))


class LangChainRetriever:
    """A LangChain retriever (``invoke(query) -> list[Document]``) or vector store.

    ``k`` is passed to ``invoke`` as a keyword; VectorStoreRetriever merges it into
    its search arguments and other retrievers drop it, so lists are also cut to k
    here. A vector store is searched with ``similarity_search_with_score`` so the
    scores are kept.
    """

    def __init__(self, obj: Any, corpus: Corpus | None = None, name: str | None = None) -> None:
        self.obj = obj
        self.is_store = not hasattr(obj, "invoke") and hasattr(obj, "similarity_search")
        self.name = name or _qualname(type(obj))
        self.resolver = IdResolver(corpus, "LangChain")

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        results: list[Ranked] = []
        for text in texts:
            if self.is_store:
                if hasattr(self.obj, "similarity_search_with_score"):
                    pairs = self.obj.similarity_search_with_score(text, k=k)
                else:
                    pairs = [(d, None) for d in self.obj.similarity_search(text, k=k)]
            else:
                pairs = [(d, (getattr(d, "metadata", None) or {}).get("score"))
                         for d in self.obj.invoke(text, k=k)]
            ranked: Ranked = []
            for rank, (doc, score) in enumerate(itertools.islice(pairs, k), start=1):
                try:
                    ranked.append((_langchain_id(doc, self.resolver), parse_score(score)))
                except (FieldError, RagcovError) as exc:
                    raise _unusable("LangChain retriever", self.name, text, rank, doc,
                                    exc) from exc
            results.append(ranked)
        return _check_lists(results, texts)

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "langchain", "name": self.name}
        store = self.obj if self.is_store else getattr(self.obj, "vectorstore", None)
        embeddings = getattr(store, "embeddings", None) if store is not None else None
        if store is not None and store is not self.obj:
            fp["vectorstore"] = _qualname(type(store))
        if embeddings is not None:
            fp["embeddings"] = _qualname(type(embeddings))
        search_type = getattr(self.obj, "search_type", None)
        if isinstance(search_type, str):
            fp["search_type"] = search_type
        return fp


# --------------------------------------------------------------- LlamaIndex
def _llamaindex_id(node: Any, resolver: IdResolver) -> str:
    content = None
    get_content = getattr(node, "get_content", None)
    if callable(get_content):
        try:
            content = get_content()
        except TypeError:  # pragma: no cover - very old signatures
            content = getattr(node, "text", None)
    return resolver.resolve(getattr(node, "node_id", None), getattr(node, "metadata", None),
                            content)


class LlamaIndexRetriever:
    """A LlamaIndex retriever (``retrieve(query) -> list[NodeWithScore]``) or index.

    LlamaIndex fixes top-k when the retriever is built, so an index is turned
    into ``index.as_retriever(similarity_top_k=k)``, and a retriever with a
    ``similarity_top_k`` attribute has it set to k before retrieving.
    """

    def __init__(self, obj: Any, corpus: Corpus | None = None, name: str | None = None) -> None:
        self.obj = obj
        self.is_index = not hasattr(obj, "retrieve") and hasattr(obj, "as_retriever")
        self.name = name or _qualname(type(obj))
        self.resolver = IdResolver(corpus, "LlamaIndex")
        self._retrievers: dict[int, Any] = {}

    def _retriever(self, k: int) -> Any:
        if self.is_index:
            if k not in self._retrievers:
                self._retrievers[k] = self.obj.as_retriever(similarity_top_k=k)
            return self._retrievers[k]
        if hasattr(self.obj, "similarity_top_k") and self.obj.similarity_top_k != k:
            self.obj.similarity_top_k = k
        return self.obj

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        retriever = self._retriever(k)
        results: list[Ranked] = []
        for text in texts:
            ranked: Ranked = []
            for rank, n in enumerate(itertools.islice(retriever.retrieve(text), k), start=1):
                try:
                    ranked.append((_llamaindex_id(n.node, self.resolver), parse_score(n.score)))
                except (FieldError, RagcovError) as exc:
                    raise _unusable("LlamaIndex retriever", self.name, text, rank, n,
                                    exc) from exc
            results.append(ranked)
        return _check_lists(results, texts)

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"kind": "llamaindex", "name": self.name}
        embed = getattr(self.obj, "_embed_model", None) or getattr(self.obj, "embed_model", None)
        if embed is not None:
            fp["embeddings"] = _qualname(type(embed))
        return fp


# ------------------------------------------------------------------ wrap
def _qualname(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) \
        or type(obj).__qualname__
    return f"{module}.{name}" if module and module != "builtins" else str(name)


def _from_framework(obj: Any, prefix: str) -> bool:
    return any((getattr(c, "__module__", "") or "").startswith(prefix)
               for c in type(obj).__mro__)


def is_ragcov_retriever(obj: Any) -> bool:
    return callable(getattr(obj, "retrieve", None)) and callable(getattr(obj, "fingerprint", None))


def wrap(obj: Any, corpus: Corpus | None = None, name: str | None = None) -> Retriever:
    """Return a ragcov Retriever for ``obj``, whichever kind of retriever it is.

    Recognised, in this order: a ragcov retriever (returned as it is); a
    LangChain retriever or vector store; a LlamaIndex retriever or index; a plain
    callable ``(query, k)``; then, by their methods, look-alikes from other
    packages. Pass ``corpus`` so ids can be found by the fallbacks (metadata,
    content) when the framework's own ids are not the corpus's.
    """
    if isinstance(obj, type):
        raise RagcovError(f"{obj.__name__} is a class; pass an instance of it")
    if is_ragcov_retriever(obj):
        return obj
    langchain_like = hasattr(obj, "invoke") or hasattr(obj, "similarity_search")
    llamaindex_like = hasattr(obj, "retrieve") or hasattr(obj, "as_retriever")
    if _from_framework(obj, "langchain") and langchain_like:
        return LangChainRetriever(obj, corpus, name)
    if _from_framework(obj, "llama_index") and llamaindex_like:
        return LlamaIndexRetriever(obj, corpus, name)
    if callable(obj):
        return CallableRetriever(obj, corpus, name)
    if langchain_like:
        return LangChainRetriever(obj, corpus, name)
    if llamaindex_like:
        return LlamaIndexRetriever(obj, corpus, name)
    raise RagcovError(
        f"cannot use {type(obj).__name__} as a retriever: expected a ragcov retriever, a "
        "LangChain retriever or vector store, a LlamaIndex retriever or index, or a function "
        "(query, k) -> ids"
    )


# ------------------------------------------------------------- module:attr
def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # The console script does not put the working directory on sys.path the way
        # `python -m` does; users expect their own project's modules to be found.
        cwd = os.getcwd()
        top = module_name.split(".")[0]
        if exc.name == top and cwd not in sys.path:
            sys.path.insert(0, cwd)
            try:
                return importlib.import_module(module_name)
            except ModuleNotFoundError:
                sys.path.remove(cwd)
        raise RagcovError(f"cannot import {module_name!r}: {exc}") from exc


def _factory_call(obj: Any) -> str | None:
    """How to call ``obj`` if it is a factory: "corpus=" (keyword), "corpus" (positional),
    "()" (no arguments), or None when it is not a factory.

    Classes are factories; so are functions with no parameters or with a
    parameter named ``corpus``. Any other function is the retriever itself.
    """
    is_class = isinstance(obj, type)
    if not (is_class or inspect.isfunction(obj) or inspect.ismethod(obj)):
        return None
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return "()" if is_class else None
    if "corpus" in params:
        return "corpus="
    if is_class:
        required = [p for p in params.values() if p.default is p.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return "corpus" if len(required) == 1 else "()"
    return "()" if len(params) == 0 else None


def load_retriever(spec: str, corpus: Corpus) -> Retriever:
    """Load ``module:attr`` (attr may be dotted) and wrap what it names.

    ``attr`` names a retriever (any kind :func:`wrap` accepts) or a factory that
    makes one: a class, or a function with no parameters or a ``corpus``
    parameter, which is called (with the corpus when it takes it).
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise RagcovError(f"retriever {spec!r}: expected module:attr, e.g. myapp.rag:retriever")
    obj = _import(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise RagcovError(
                f"retriever {spec!r}: {module_name} has no attribute {attr!r}") from exc
    call = _factory_call(obj)
    if call is not None:
        try:
            if call == "corpus=":
                obj = obj(corpus=corpus)
            elif call == "corpus":
                obj = obj(corpus)
            else:
                obj = obj()
        except RagcovError:
            raise
        except Exception as exc:
            raise RagcovError(f"retriever {spec!r}: the factory failed: "
                              f"{type(exc).__name__}: {exc}") from exc
    return wrap(obj, corpus, name=spec)
