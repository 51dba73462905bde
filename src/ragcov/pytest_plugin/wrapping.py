"""record(): any retriever wrapped for recording, LangChain and LlamaIndex ones behind their own methods.

A suite already calls ``retriever.invoke(q)`` or ``retriever.retrieve(q)``; measuring
its coverage must not make it call anything else. These wrappers keep the framework's
methods, return exactly what the retriever returned, and record each query with the
chunk ids read from its Documents or nodes the way ragcov's adapters read them.
Whatever else a test touches passes through to the retriever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.pytest_plugin.recorder import RecordingRetriever, active, count_once_per_query

if TYPE_CHECKING:
    from ragcov.fields import Ranked
    from ragcov.pytest_plugin.recorder import Recorder


def _query_text(query: Any) -> str | None:
    """The text of a query: a string, or a LlamaIndex QueryBundle's ``query_str``."""
    text = getattr(query, "query_str", query)
    return text if isinstance(text, str) else None


class _Recording:
    """What both wrappers share: the retriever, its adapter, the recorder, pass-through."""

    def __init__(self, inner: Any, adapter: Any, recorder: Recorder, query_id: str | None = None,
                 source: str | None = None) -> None:
        self._inner = inner
        self._adapter = count_once_per_query(adapter)
        self._recorder = recorder
        self._query_id = query_id
        self._source = source

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"record({self._inner!r})"

    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = self._adapter.fingerprint()
        return fp

    def _record(self, query: Any, items: Any) -> None:
        text = _query_text(query)
        if text is None or not isinstance(items, (list, tuple)):
            return  # not a retrieval (e.g. an exception kept by batch(return_exceptions=True))
        # Read by the adapter, exactly as its own retrieve() reads a result list.
        self._recorder.add(self._adapter, text, self._adapter.ranked(text, items, self._recorder.k),
                           self._query_id)


class RecordingLangChain(_Recording):
    """A LangChain retriever: ``invoke``, ``ainvoke``, ``batch``, ``abatch`` recorded.

    ``retrieve(texts, k)`` and calling the wrapper (ragcov's own protocol) still work,
    through the LangChain adapter.
    """

    def __init__(self, inner: Any, recorder: Recorder, query_id: str | None = None,
                 source: str | None = None) -> None:
        from ragcov.retrievers.langchain import LangChainRetriever

        super().__init__(inner, LangChainRetriever(inner, recorder.corpus(), source), recorder,
                         query_id, source)
        self._protocol = RecordingRetriever(self._adapter, recorder, query_id=query_id)

    def invoke(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        docs = self._inner.invoke(input, *args, **kwargs)
        self._record(input, docs)
        return docs

    async def ainvoke(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        docs = await self._inner.ainvoke(input, *args, **kwargs)
        self._record(input, docs)
        return docs

    def batch(self, inputs: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        results = self._inner.batch(inputs, *args, **kwargs)
        for query, docs in zip(inputs, results):
            self._record(query, docs)
        return results

    async def abatch(self, inputs: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        results = await self._inner.abatch(inputs, *args, **kwargs)
        for query, docs in zip(inputs, results):
            self._record(query, docs)
        return results

    def retrieve(self, texts: Sequence[str], k: int | None = None) -> list[Ranked]:
        return self._protocol.retrieve(texts, k)

    def __call__(self, text: str, k: int | None = None) -> Ranked:
        return self._protocol(text, k)


class RecordingLlamaIndex(_Recording):
    """A LlamaIndex retriever: ``retrieve`` and ``aretrieve`` recorded."""

    def __init__(self, inner: Any, recorder: Recorder, query_id: str | None = None,
                 source: str | None = None) -> None:
        from ragcov.retrievers.llamaindex import LlamaIndexRetriever

        super().__init__(inner, LlamaIndexRetriever(inner, recorder.corpus(), source), recorder,
                         query_id, source)

    def retrieve(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        nodes = self._inner.retrieve(query, *args, **kwargs)
        self._record(query, nodes)
        return nodes

    async def aretrieve(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        nodes = await self._inner.aretrieve(query, *args, **kwargs)
        self._record(query, nodes)
        return nodes


def _from(obj: Any, prefix: str) -> bool:
    return any((getattr(c, "__module__", "") or "").startswith(prefix)
               for c in type(obj).__mro__)


def _wrapper_class(retriever: Any) -> type[_Recording] | None:
    """Which recording wrapper keeps ``retriever``'s own methods; None for anything else.

    A LangChain retriever is anything with ``invoke`` that is not a ragcov retriever
    (LangChain retrievers have no ``retrieve``); a LlamaIndex one is a ``llama_index``
    class with ``retrieve``. Vector stores and indexes, which tests do not query by a
    retriever's methods, go through the adapters as before.
    """
    if isinstance(retriever, type):
        return None
    if _from(retriever, "llama_index") and callable(getattr(retriever, "retrieve", None)):
        return RecordingLlamaIndex
    if (callable(getattr(retriever, "invoke", None))
            and not callable(getattr(retriever, "retrieve", None))):
        return RecordingLangChain
    return None


def is_framework_retriever(retriever: Any) -> bool:
    """Whether :func:`framework_wrapper` keeps ``retriever``'s own methods (a LangChain or
    LlamaIndex retriever) rather than ragcov's protocol."""
    return _wrapper_class(retriever) is not None


def framework_wrapper(retriever: Any, recorder: Recorder, query_id: str | None = None,
                      source: str | None = None) -> Any | None:
    """The recording wrapper for a LangChain or LlamaIndex retriever; None for anything else."""
    wrapper = _wrapper_class(retriever)
    return None if wrapper is None else wrapper(retriever, recorder, query_id, source)


def record(retriever: Any, query_id: str | None = None, source: str | None = None) -> Any:
    """Wrap ``retriever`` so its retrievals count towards this run's coverage.

    ``query_id`` names the question the wrapper is asked (the id your relevance labels
    use, so ``ragcov report --qrels`` joins the run); without it a question is named by
    the test that asks it (its node id). ``source`` is the ``module:attr`` that builds
    this retriever (the object or its factory): the run is recorded under that name, as
    ``ragcov run --retriever module:attr`` records it, so ``ragcov probe``, ``generate``
    and ``drift`` build the same retriever again from the data file.

    Returns ``retriever`` itself when coverage is off, so tests can wrap
    unconditionally. A LangChain retriever keeps ``invoke``, ``ainvoke``, ``batch``
    and ``abatch``, a LlamaIndex retriever ``retrieve`` and ``aretrieve``, each
    returning exactly what the retriever returns. An object with ``retrieve(texts, k)
    -> [[(chunk_id, score), ...]]`` is used as it is; anything else (a function
    ``(query, k)``, a vector store, an index) goes through
    :func:`ragcov.retrievers.wrap`, and tests call ``retrieve`` or the wrapper.
    """
    rec = active()
    if rec is None:
        return retriever
    if query_id is not None:
        from ragcov.fields import parse_id

        query_id = parse_id(query_id)
    if source is not None:
        from ragcov.retrievers.loader import is_spec

        if not is_spec(source):
            from ragcov.errors import RagcovError

            raise RagcovError(f"source {source!r}: expected module:attr, the retriever or the "
                              "factory that builds it (e.g. myapp.rag:make_retriever)")
        rec.name_source(source)
    # A recording wrapper wrapped again (the ragcov_retriever fixture, given a question's
    # id) names its questions anew; it does not record them twice.
    if isinstance(retriever, _Recording):
        return type(retriever)(retriever._inner, rec, query_id or retriever._query_id,
                               source or retriever._source)
    if isinstance(retriever, RecordingRetriever):
        return RecordingRetriever(retriever._inner, rec, query_id=query_id or retriever._query_id)
    wrapper = framework_wrapper(retriever, rec, query_id, source)
    if wrapper is not None:
        return wrapper
    inner = retriever
    if not callable(getattr(retriever, "retrieve", None)):
        from ragcov import api

        inner = count_once_per_query(api.wrap(retriever, rec.corpus(), name=source))
    return RecordingRetriever(inner, rec, query_id=query_id)
