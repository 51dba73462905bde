"""Nested retriever spans: one query, however many RETRIEVER spans it opened.

Frameworks trace a retrieval at several levels: LlamaIndex's ``retrieve`` opens
``_retrieve`` inside it, a LangChain EnsembleRetriever opens one span per
retriever it fuses. Each is of kind RETRIEVER, but the application asked one
question, so a RETRIEVER span whose ancestor (in the same trace) is a RETRIEVER
span is folded into its outermost such ancestor. The outermost span's list is
the query's list, since that is what the caller got; when it recorded none, the
lists of the spans inside it are taken, in start-time order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ragcov.traces.otlp import Span
from ragcov.traces.records import Item

SpanKey = tuple[str | None, str | None]


@dataclass(slots=True)
class Group:
    """A query's RETRIEVER spans: the outermost one and what was recorded inside it."""

    span: Span
    query: str
    items: list[Item] | None
    is_root: bool
    inner: list[list[Item]] = field(default_factory=list)

    def final(self) -> list[Item] | None:
        """The outermost span's list, else the inner spans' lists one after another."""
        if self.items is not None:
            return self.items
        if not self.inner:
            return None
        return [item for items in self.inner for item in items]


class Nesting:
    """Which RETRIEVER span each RETRIEVER span belongs to, by following parent ids.

    Spans are noted as they are read (:meth:`note`), so none has to be kept for
    this; :meth:`finish` then names the retrievers. Only a span that is another's
    parent can enclose anything, so only those retrievers are remembered: an
    export without nesting costs one parent entry per child span, nothing more.
    """

    def __init__(self) -> None:
        self.parent: dict[SpanKey, str] = {}
        self.retrievers: set[SpanKey] = set()

    def note(self, s: Span) -> None:
        """Learn one span's parent (a root needs no entry: no parent is None)."""
        if s.span_id is not None and s.parent_id is not None:
            self.parent[(s.trace_id, s.span_id)] = s.parent_id

    def finish(self, retrievers: Iterable[Span]) -> bool:
        """Note which of ``retrievers`` enclose other spans; True when any does (a
        RETRIEVER span nested in another is then possible, and queries are grouped)."""
        if self.parent:
            parents = {(trace, parent) for (trace, _span), parent in self.parent.items()}
            self.retrievers = {(s.trace_id, s.span_id) for s in retrievers
                               if s.span_id is not None and (s.trace_id, s.span_id) in parents}
        return bool(self.retrievers)

    def root(self, span: Span) -> SpanKey:
        """The outermost RETRIEVER span around ``span`` (``span`` itself when none)."""
        key: SpanKey = (span.trace_id, span.span_id)
        if span.span_id is None:
            return (span.trace_id, f"#{span.order}")
        top = key
        seen = {key}
        parent = self.parent.get(key)
        while parent is not None:
            up = (span.trace_id, parent)
            if up in seen:  # a cycle in broken data: stop where it closes
                break
            seen.add(up)
            if up in self.retrievers:
                top = up
            parent = self.parent.get(up)
        return top


class Grouper:
    """RETRIEVER spans gathered into queries, in the order their first span arrives."""

    def __init__(self, nesting: Nesting) -> None:
        self.nesting = nesting
        self.groups: list[Group] = []
        self.index: dict[SpanKey, int] = {}
        self.merged = 0

    def add(self, span: Span, query: str, items: list[Item] | None) -> int:
        """Add one RETRIEVER span; the index of the query it belongs to."""
        root = self.nesting.root(span)
        is_root = root == (span.trace_id, span.span_id) or span.span_id is None
        i = self.index.get(root)
        if i is None:
            self.index[root] = len(self.groups)
            self.groups.append(Group(span, query, items if is_root else None, is_root,
                                     [] if is_root or items is None else [items]))
            return len(self.groups) - 1
        self.merged += 1
        group = self.groups[i]
        if is_root:  # the outer span arrived after an inner one (equal or missing times)
            group.span, group.is_root, group.items = span, True, items
            group.query = query or group.query
        else:
            if items is not None:
                group.inner.append(items)
            group.query = group.query or query
        return i
