"""``ragcov erase``: delete the data file and its parallel-mode shards, as ``coverage erase``."""

from __future__ import annotations

from pathlib import Path

from ragcov.cli.combine import find_shards
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile
from ragcov.errors import RagcovError


def erase(data_file: DataFile = DEFAULT_DATA_PATH) -> None:
    """Delete the data file and the DATA_FILE.* shards beside it."""
    from ragcov.data import CoverageData
    from ragcov.files import remove_stale_temps

    targets = [p for p in (data_file, *find_shards(data_file)) if p.exists() or p.is_symlink()]
    # Every target is checked before anything is deleted: one file that is not ragcov's
    # (a coverage.py .coverage, a corpus given as --data-file by mistake) stops it all.
    for path in targets:
        if path.is_symlink() or not path.is_file():
            raise RagcovError(f"{path}: is not a regular file; refusing to erase it")
        try:
            CoverageData(path).meta()
        except RagcovError as exc:
            raise RagcovError(f"{path}: is not a ragcov data file; refusing to erase it "
                              f"({exc})") from exc
    for path in targets:
        for side in ("-journal", "-wal", "-shm"):  # a stale journal must not meet a new file
            Path(f"{path}{side}").unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    remove_stale_temps(data_file)
