"""The SQLite data file (``.ragcov``): :class:`CoverageData` and :func:`combine`.

One file holds what a coverage report needs and nothing it could recompute: the
run's settings (k, retriever fingerprint, corpus hash), the corpus's chunks (id,
document, position, content hash, text for the HTML report), the queries and the
hits with rank and score. Like coverage.py's data file it carries a schema
version and refuses to mix incompatible data.

* :mod:`ragcov.data.schema`: the tables, the meta row, connections and SQLite's
  errors as one line;
* :mod:`ragcov.data.datafile`: :class:`CoverageData`, reading, writing, appending;
* :mod:`ragcov.data.merge`: :func:`combine`, merging the files of sharded runs (not
  named ``combine`` so the module never shadows the function);
* :mod:`ragcov.data.locking`: writers of one file take turns;
* :mod:`ragcov.data.checks`: rows validated on read.

The file's name and version are defined here and the rest is imported on first
use, so ``from ragcov.data import DEFAULT_DATA_FILE`` (the pytest plugin declaring
its options) loads neither SQLite nor the rest of ragcov.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragcov.data.datafile import CoverageData
    from ragcov.data.merge import combine
    from ragcov.data.schema import BUSY_TIMEOUT_S, SCHEMA, Meta

from ragcov.data.names import DEFAULT_DATA_FILE, FORMAT_VERSION

_LAZY = {
    "CoverageData": "ragcov.data.datafile", "combine": "ragcov.data.merge",
    "Meta": "ragcov.data.schema", "SCHEMA": "ragcov.data.schema",
    "BUSY_TIMEOUT_S": "ragcov.data.schema",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragcov.data' has no attribute {name!r}")


__all__ = ["BUSY_TIMEOUT_S", "DEFAULT_DATA_FILE", "FORMAT_VERSION", "SCHEMA", "CoverageData",
           "Meta", "combine"]
