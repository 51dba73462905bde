"""Any retriever object a team already has, as a ragcov Retriever: :func:`wrap` and ``module:attr``.

:func:`wrap` recognises a ragcov retriever, a LangChain or LlamaIndex one, or a
plain function and returns something with ``retrieve(texts, k)`` and
``fingerprint()``; :func:`load_retriever` does the same for ``--retriever
module:attr`` on the command line.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.retrievers.functions import CallableRetriever
from ragcov.retrievers.langchain import LangChainRetriever
from ragcov.retrievers.llamaindex import LlamaIndexRetriever

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.retrievers.base import Retriever


# ------------------------------------------------------------------ wrap
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


def _resolve(spec: str) -> Any:
    return resolve_object(spec, "retriever")


def resolve_object(spec: str, what: str) -> Any:
    """What ``module:attr`` names (attr may be dotted): a retriever, a reranker ..."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise RagcovError(f"{what} {spec!r}: expected module:attr, e.g. myapp.rag:{what}")
    obj = _import(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise RagcovError(
                f"{what} {spec!r}: {module_name} has no attribute {attr!r}") from exc
    return obj


def takes_corpus(spec: str) -> bool:
    """Whether ``module:attr`` names a factory called with the corpus: only such a
    retriever can be built again on another corpus (``ragcov drift``'s copies)."""
    return _factory_call(_resolve(spec)) in ("corpus=", "corpus")


SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def is_spec(name: object) -> bool:
    """Whether ``name`` reads as ``module:attr``: a run recorded under such a name can be
    rebuilt by every command (probe, generate, drift) without ``--retriever``."""
    return isinstance(name, str) and SPEC.fullmatch(name) is not None


def load_retriever(spec: str, corpus: Corpus) -> Retriever:
    """Load ``module:attr`` (attr may be dotted) and wrap what it names.

    ``attr`` names a retriever (any kind :func:`wrap` accepts) or a factory that
    makes one: a class, or a function with no parameters or a ``corpus``
    parameter, which is called (with the corpus when it takes it).
    """
    return wrap(build_object(spec, corpus), corpus, name=spec)


def build_object(spec: str, corpus: Corpus) -> Any:
    """What ``module:attr`` names, its factory called: the app's own retriever object,
    before any wrapping (the pytest plugin hands it to tests with its own methods)."""
    obj = _resolve(spec)
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
    if isinstance(obj, type):
        raise RagcovError(f"retriever {spec!r}: the factory returned the class {obj.__name__}; "
                          "return an instance of it")
    return obj
