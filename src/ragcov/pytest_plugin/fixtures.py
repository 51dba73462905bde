"""The fixtures: ``ragcov_recorder`` (wrap your retriever) and ``ragcov_retriever`` (a built-in one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragcov.pytest_plugin.options import Settings
from ragcov.pytest_plugin.recorder import RecordingRetriever, active
from ragcov.pytest_plugin.wrapping import record


@pytest.fixture(scope="session")
def ragcov_recorder() -> Callable[[Any], Any]:
    """A function that wraps a retriever for recording (identity when coverage is off)."""
    return record


@pytest.fixture(scope="session")
def ragcov_retriever(pytestconfig: pytest.Config) -> Any:
    """The built-in retriever over the ragcov corpus, recording when --ragcov is on."""
    from ragcov import api

    rec = active()
    if rec is not None:
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
    return RecordingRetriever(api.make_retriever(settings.retriever, corpus, progress=False,
                                                 device=settings.device), None, settings.k)
