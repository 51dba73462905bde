"""What the session's retrievals returned, and the retriever wrapper that reports them.

Each query is recorded at the session's k whatever k a test asks for (the test still
gets what it asked for), and is named as the app names it, so relevance labels keyed by
the team's question ids (``--qrels``) join the run: the ``query_id`` given to
``record()``, else the id of the test that asked it (``tests/test_rag.py::test_x[q17]``;
a test's second and later questions get ``#2``, ``#3`` ...), else, outside any test,
``q-<hash of its text>``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ragcov.fields import Ranked
from ragcov.pytest_plugin.options import Settings

if TYPE_CHECKING:
    from ragcov.corpus import Corpus


_active: list[Recorder] = []  # a stack: pytester runs sessions inside sessions


def active() -> Recorder | None:
    """The recorder of the innermost session running with --ragcov, if any."""
    return _active[-1] if _active else None


def activate(recorder: Recorder) -> None:
    _active.append(recorder)


def deactivate(recorder: Recorder) -> None:
    """End ``recorder``'s session, if it is the innermost one."""
    if _active and _active[-1] is recorder:
        _active.pop()


def _query_id(text: str) -> str:
    """The suite's id rule for id-less queries, so every process names a text alike."""
    from ragcov.files import text_hash

    return f"q-{text_hash(text)[:12]}"


def _fingerprint(retriever: Any) -> dict[str, Any]:
    fp = getattr(retriever, "fingerprint", None)
    if callable(fp):
        return dict(fp())
    cls = type(retriever)
    return {"kind": "custom", "class": f"{cls.__module__}.{cls.__qualname__}"}


class Recorder:
    """What the session's retrievals returned, keyed by query id."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.k = settings.k
        self.fingerprint: dict[str, Any] | None = None
        self.queries: dict[str, str] = {}
        self.results: dict[str, Ranked] = {}
        self.context: dict[str, str] = {}
        # Every test that asked each question (the context keeps the first): a question two
        # tests ask fails with either.
        self.askers: dict[str, list[str]] = {}
        self.nodeid: str | None = None
        self._corpus: Corpus | None = None
        self._known: set[str] | None = None
        self._lock = threading.Lock()
        self._resolvers: dict[int, Any] = {}  # the adapters' id resolvers, for their counts
        self._asked: dict[str, dict[str, str]] = {}  # node id -> its questions' ids, by text
        # The module:attr that builds the session's retriever (record(source=...) or
        # --ragcov-retriever module:attr): kept with the data file for probe, generate, drift.
        self.source: str | None = None

    def corpus(self) -> Corpus:
        if self._corpus is None:
            from ragcov.corpus import load_corpus

            if self.settings.corpus is None:
                raise pytest.UsageError("--ragcov needs --ragcov-corpus PATH "
                                        "(or ragcov_corpus in the ini file)")
            self._corpus = load_corpus(self.settings.corpus)
            self._known = set(self._corpus.ids)
        return self._corpus

    def _name(self, text: str, query_id: str | None) -> str:
        """The query's id: the one given, else the asking test's node id, else the text's hash."""
        from ragcov.errors import RagcovError

        if query_id is not None:
            known = self.queries.get(query_id)
            if known is not None and known != text:
                raise RagcovError(f"query id {query_id!r} names two questions: {known[:60]!r} and "
                                  f"{text[:60]!r}")
            return query_id
        if self.nodeid is None:
            return _query_id(text)
        asked = self._asked.setdefault(self.nodeid, {})
        if text not in asked:
            asked[text] = self.nodeid if not asked else f"{self.nodeid}#{len(asked) + 1}"
        return asked[text]

    def add(self, retriever: Any, text: str, ranked: Sequence[tuple[str, float | None]],
            query_id: str | None = None) -> None:
        from ragcov.errors import RagcovError

        fp = _fingerprint(retriever)
        resolver = getattr(retriever, "resolver", None)
        if resolver is not None and hasattr(resolver, "matching"):
            self._resolvers.setdefault(id(resolver), resolver)
        ranked = _checked(retriever, text, list(ranked)[: self.k])
        self.corpus()
        assert self._known is not None
        unknown = sorted({cid for cid, _ in ranked} - self._known)
        if unknown:
            raise RagcovError(f"the retriever returned chunk id(s) not in the ragcov corpus "
                              f"{self.settings.corpus}: {', '.join(unknown[:10])}")
        with self._lock:
            if self.fingerprint is None:
                self.fingerprint = fp
            elif fp != self.fingerprint:
                raise RagcovError(f"ragcov records one retriever per run: {fp} differs from "
                                  f"{self.fingerprint}, recorded earlier")
            qid = self._name(text, query_id)
            if qid not in self.queries:
                self.queries[qid] = text
                self.results[qid] = ranked
                if self.nodeid is not None:
                    self.context[qid] = self.nodeid
            if self.nodeid is not None and self.nodeid not in self.askers.setdefault(qid, []):
                self.askers[qid].append(self.nodeid)

    def write(self, path: Path) -> bool:
        """Write what was recorded; False (and nothing written) when nothing was."""
        if not self.queries:
            return False
        from ragcov import api

        api.record_retrievals(self.corpus(), self.k, self.fingerprint or {}, self.queries,
                              self.results, path, context=self.context,
                              matching=self.matching(), source=self.source)
        return True

    def name_source(self, source: str) -> None:
        """The session's retriever is built by ``source``: one per session, as the retriever is."""
        from ragcov.errors import RagcovError

        with self._lock:
            if self.source is not None and self.source != source:
                raise RagcovError(f"ragcov records one retriever per run: source {source!r} "
                                  f"differs from {self.source!r}, named earlier")
            self.source = source

    def matching(self) -> Any:
        """How the session's hits without ids were matched to chunks (a MatchCounts)."""
        from ragcov.retrievers.twins import MatchCounts

        total = MatchCounts()
        for resolver in self._resolvers.values():
            total.add(resolver.matching)
        return total


def count_once_per_query(adapter: Any) -> Any:
    """``adapter``, its id resolver told to count a query text once: the recorder keeps
    the first retrieval of a text, so a question several tests ask is one query."""
    resolver = getattr(adapter, "resolver", None)
    if resolver is not None and hasattr(resolver, "once_per_query"):
        resolver.once_per_query = True
    return adapter


def _checked(retriever: Any, text: str, items: list[Any]) -> Ranked:
    """The items as (chunk id, score), read as every ragcov reader reads them.

    An id that is None, a list or a boolean, or a score that is a string, a boolean
    or not finite, fails the test that retrieved it, naming the retriever and the item.
    """
    from ragcov.errors import RagcovError
    from ragcov.fields import FieldError, parse_id, parse_score

    out: Ranked = []
    for rank, item in enumerate(items, start=1):
        try:
            if isinstance(item, (str, bytes)):  # "ab" would unpack into an id and a score
                raise TypeError(item)
            cid, score = item
            out.append((parse_id(cid), parse_score(score)))
        except (TypeError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, FieldError) else "not a (chunk id, score) pair"
            shown = " ".join(repr(item).splitlines())[:100]
            raise RagcovError(f"{type(retriever).__qualname__}: result {rank} for query "
                              f"{text[:60]!r}: {reason} (item: {shown})") from exc
    return out


class RecordingRetriever:
    """A retriever for tests, reporting every retrieval to ``recorder`` when there is one.

    It speaks the ragcov Retriever protocol (``retrieve(texts, k)``), adds
    ``retriever(text, k)`` for one query, and passes other attributes through. With a
    recorder it retrieves at least the session's k and records that, and returns the k
    the test asked for; without one (coverage off) it only forwards the calls, with
    ``k`` as the default.
    """

    def __init__(self, inner: Any, recorder: Recorder | None, k: int | None = None,
                 query_id: str | None = None) -> None:
        if recorder is None and k is None:
            raise TypeError("RecordingRetriever needs a recorder or a default k")
        self._inner = inner
        self._recorder = recorder
        self._k = recorder.k if recorder is not None else k
        self._query_id = query_id

    def fingerprint(self) -> dict[str, Any]:
        return _fingerprint(self._inner)

    def retrieve(self, texts: Sequence[str], k: int | None = None) -> list[Ranked]:
        want = self._k if k is None else k
        texts = list(texts)
        if self._recorder is None:
            return self._inner.retrieve(texts, want)
        results = self._inner.retrieve(texts, max(want, self._recorder.k))
        for text, ranked in zip(texts, results):
            self._recorder.add(self._inner, text, ranked, self._query_id)
        return [list(r)[:want] for r in results]

    def __call__(self, text: str, k: int | None = None) -> Ranked:
        return self.retrieve([text], k)[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

