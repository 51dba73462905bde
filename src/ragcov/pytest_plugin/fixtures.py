"""The fixtures: ``ragcov_recorder`` (wrap your retriever) and ``ragcov_retriever`` (a built-in one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragcov.pytest_plugin.options import Settings
from ragcov.pytest_plugin.recorder import RecordingRetriever, active
from ragcov.pytest_plugin.wrapping import record
from ragcov.retrievers.loader import is_spec


@pytest.fixture(scope="session")
def ragcov_recorder() -> Callable[[Any], Any]:
    """A function that wraps a retriever for recording (identity when coverage is off)."""
    return record


@pytest.fixture(scope="session")
def ragcov_retriever(pytestconfig: pytest.Config) -> Any:
    """The retriever ``--ragcov-retriever`` names over the ragcov corpus (a built-in one,
    or the app's own ``module:attr``), recording when --ragcov is on."""
    from ragcov import api

    rec = active()
    if rec is not None:
        if is_spec(rec.settings.retriever):
            return _app_retriever(rec.settings.retriever, rec.corpus(), rec.k)
        return RecordingRetriever(api.make_retriever(rec.settings.retriever, rec.corpus(),
                                                 progress=False, device=rec.settings.device), rec)
    settings = Settings(pytestconfig)
    if settings.corpus is None:
        pytest.skip("ragcov_retriever needs a corpus: --ragcov-corpus PATH "
                    "or ragcov_corpus in the ini file")
    from ragcov.errors import RagcovError

    try:
        corpus = api.load_corpus(settings.corpus)
    except (RagcovError, OSError) as exc:
        # Once for the session, not an error (and a traceback) for every test using it.
        pytest.exit(f"ragcov: --ragcov-corpus: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    if is_spec(settings.retriever):
        return _app_retriever(settings.retriever, corpus, settings.k)
    return RecordingRetriever(api.make_retriever(settings.retriever, corpus, progress=False,
                                                 device=settings.device), None, settings.k)


def _app_retriever(spec: str, corpus: Any, k: int) -> Any:
    """The app's own retriever that ``module:attr`` builds, recorded under that name:
    ``ragcov probe``, ``generate`` and ``drift`` build it again from the data file, and
    ``ragcov run --retriever module:attr`` records the same retriever.

    A LangChain or LlamaIndex retriever is handed over with its own methods; anything
    else speaks ragcov's protocol (``retriever(query, k)`` -> ``[(chunk id, score)]``,
    ``retrieve(texts, k)``). The same object and the same shapes with coverage on or off,
    so no test passes or fails by whether ``--ragcov`` was given.
    """
    from ragcov import api
    from ragcov.errors import RagcovError
    from ragcov.pytest_plugin.wrapping import is_framework_retriever
    from ragcov.retrievers.loader import build_object

    try:
        obj = build_object(spec, corpus)
    except RagcovError as exc:
        pytest.exit(f"ragcov: --ragcov-retriever: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    if active() is not None:
        return record(obj, source=spec)
    if is_framework_retriever(obj):
        return obj
    # As record() wraps it with coverage on: its own retrieve(texts, k), else the adapter.
    inner = obj if callable(getattr(obj, "retrieve", None)) else api.wrap(obj, corpus, name=spec)
    return RecordingRetriever(inner, None, k)
