"""pytest plugin: measure the chunk coverage of a RAG test suite while it runs.

``pytest --ragcov --ragcov-corpus chunks.jsonl`` records every retrieval made through
the ``ragcov_retriever`` fixture (a built-in retriever over the corpus) or through a
retriever wrapped with :func:`record` / the ``ragcov_recorder`` fixture, writes the
data file, prints the coverage table and, with ``--ragcov-fail-under``, fails the run
below the threshold, as pytest-cov does for line coverage.

Without ``--ragcov`` the plugin only declares its options: nothing of ragcov beyond
the plugin and the data file's default name is imported, nothing is recorded and
nothing is printed, so installing ragcov never slows down or changes anyone's test run.

This module is the entry point pytest loads (``pytest11``); its hooks and fixtures
live in the modules below and are gathered here for pytest to find:

* :mod:`~ragcov.pytest_plugin.options`: options, ini values, :class:`Settings`;
* :mod:`~ragcov.pytest_plugin.recorder`: :class:`Recorder`, :class:`RecordingRetriever`;
* :mod:`~ragcov.pytest_plugin.wrapping`: :func:`record`, and the LangChain and LlamaIndex
  wrappers that keep those frameworks' own methods;
* :mod:`~ragcov.pytest_plugin.fixtures`: ``ragcov_recorder`` and ``ragcov_retriever``;
* :mod:`~ragcov.pytest_plugin.session`: configure, per-test node ids, writing at the end;
* :mod:`~ragcov.pytest_plugin.reports`: the reports, through ragcov's own reporters.
"""

from __future__ import annotations

from ragcov.data import DEFAULT_DATA_FILE
from ragcov.pytest_plugin.fixtures import ragcov_recorder, ragcov_retriever
from ragcov.pytest_plugin.options import (
    DEFAULT_HTML_DIR,
    DEFAULT_K,
    REPORT_KINDS,
    RETRIEVER_KINDS,
    Settings,
    pytest_addoption,
)
from ragcov.pytest_plugin.recorder import Recorder, RecordingRetriever
from ragcov.pytest_plugin.session import pytest_configure, pytest_unconfigure
from ragcov.pytest_plugin.wrapping import RecordingLangChain, RecordingLlamaIndex, record
from ragcov.reporters import DEFAULT_JSON_FILE

__all__ = [
    "DEFAULT_DATA_FILE", "DEFAULT_HTML_DIR", "DEFAULT_JSON_FILE", "DEFAULT_K", "REPORT_KINDS",
    "RETRIEVER_KINDS", "Recorder", "RecordingLangChain", "RecordingLlamaIndex",
    "RecordingRetriever", "Settings", "pytest_addoption",
    "pytest_configure", "pytest_unconfigure", "ragcov_recorder", "ragcov_retriever", "record",
]
