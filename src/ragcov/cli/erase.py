"""``ragcov erase``: delete the data file and its parallel-mode shards, as ``coverage erase``."""

from __future__ import annotations

from ragcov import api
from ragcov.cli.console import err
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile


def erase(data_file: DataFile = DEFAULT_DATA_PATH) -> None:
    """Delete the data file and the DATA_FILE.* shards beside it."""
    for spared in api.erase(data_file):
        # A report beside the data file (.ragcov.json) is named like a shard but is not one.
        err.print(f"ragcov: warning: not erasing {spared}: not a ragcov data file", markup=False)
