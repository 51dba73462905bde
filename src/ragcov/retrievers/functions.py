"""A plain function ``(query text, k) -> items`` as a ragcov Retriever.

Ids and scores are read with :mod:`ragcov.fields`, as every other reader does: an
item whose id is None, a list, a boolean or blank, or whose score is a string, a
boolean, NaN or infinite, is refused with one line naming the retriever, the query
and the item, instead of being recorded as something else.
"""

from __future__ import annotations

import inspect
import itertools
import numbers
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
from ragcov.files import first_key
from ragcov.retrievers.langchain import langchain_entry
from ragcov.retrievers.llamaindex import llamaindex_entry
from ragcov.retrievers.resolver import Entry, IdResolver, check_lists, qualname, ranked_top_k

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Ranked

ID_ATTRS = ("id", "chunk_id", "node_id", "id_")


class CallableRetriever:
    """A function ``(query text, k) -> items``.

    An item may be a chunk id, an ``(id, score)`` pair, a dict with ``id`` or
    ``chunk_id`` (and ``score``), a LangChain Document, a LlamaIndex
    NodeWithScore, or any object with an ``id``/``chunk_id``/``node_id``
    attribute (and optionally ``score``). Items without an id (a passage's text,
    a dict with ``text`` and ``metadata``) are matched by their text.
    """

    batches_queries = False  # one query per call: progress moves per query

    def __init__(self, fn: Callable[[str, int], Any], corpus: Corpus | None = None,
                 name: str | None = None) -> None:
        if not callable(fn):
            raise RagcovError(f"{fn!r} is not callable")
        self.fn = fn
        self.name = name or qualname(fn)
        self._check_callable_as_retriever()
        self.resolver = IdResolver(corpus, "retriever")

    def _check_callable_as_retriever(self) -> None:
        """Refuse, before any query, a function that cannot take ``(query, k)``: named by
        mistake (``--retriever os:getcwd``) it would fail on the first query with a
        TypeError from deep inside the run."""
        try:
            signature = inspect.signature(self.fn)
        except (TypeError, ValueError):  # some builtins have none: the first call tells
            return
        try:
            signature.bind("query", 1)
        except TypeError as exc:
            raise RagcovError(f"{self.name} cannot be called as a retriever, fn(query, k) -> "
                              f"ids: {exc}") from None

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        results: list[Ranked] = []
        for text in texts:
            items = self.fn(text, k)
            if items is None or isinstance(items, (str, bytes, dict)) or not _iterable(items):
                raise RagcovError(
                    f"{self.name} returned {type(items).__name__}; expected a list of ids, "
                    "(id, score) pairs or objects carrying an id"
                )
            # Only the top k are recorded, so only they are drawn (items may be a generator).
            results.append(ranked_top_k(itertools.islice(items, k), k, self._item, "retriever",
                                        self.name, text, self.resolver))
        return check_lists(results, texts)

    def _item(self, item: Any) -> tuple[str | Entry, float | None]:
        """The item's id when it gives one outright, else what it says about its chunk
        (matched with the rest of its list, so identical texts stay distinct chunks)."""
        if type(item) is str and item.strip():
            # A chunk id, or a function that returns the passages themselves: an id the
            # corpus does not hold is looked up as a chunk's text before it is unknown.
            return Entry(item, None, item), None
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
            return Entry(own, item.get("metadata"), first_key(item, ITEM_TEXT_KEYS)), \
                parse_score(score)
        node = getattr(item, "node", None)
        if node is not None and hasattr(item, "score"):  # LlamaIndex NodeWithScore
            return llamaindex_entry(node), parse_score(item.score)
        if hasattr(item, "page_content"):  # LangChain Document
            return langchain_entry(item), parse_score(
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


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True
