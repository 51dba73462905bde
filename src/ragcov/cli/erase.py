"""``ragcov erase``: delete the data file and its parallel-mode shards, as ``coverage erase``."""

from __future__ import annotations

from pathlib import Path

from ragcov.cli.combine import find_shards
from ragcov.cli.console import err
from ragcov.cli.options import DEFAULT_DATA_PATH, DataFile
from ragcov.errors import RagcovError


def erase(data_file: DataFile = DEFAULT_DATA_PATH) -> None:
    """Delete the data file and the DATA_FILE.* shards beside it."""
    from ragcov.data import CoverageData
    from ragcov.data.locking import write_lock
    from ragcov.data.schema import DataFileLocked, NoDataFile, is_empty
    from ragcov.files import remove_stale_temps

    targets: list[Path] = []
    if data_file.exists() or data_file.is_symlink():
        # Checked before anything is deleted: a data file that is not ragcov's (a
        # coverage.py .coverage, a corpus given as --data-file by mistake) stops it all.
        if data_file.is_symlink() or not data_file.is_file():
            raise RagcovError(f"{data_file}: is not a regular file; refusing to erase it")
        try:
            if not is_empty(data_file):  # an empty file (touch, a killed >) holds no data
                _check_data_file(data_file)
            targets.append(data_file)
        except NoDataFile:
            pass  # removed meanwhile (another erase, a combine's rename): nothing to erase
    for shard in find_shards(data_file):
        # A report beside the data file (.ragcov.json) is named like a shard but is not
        # one: it stays, and says so.
        try:
            if not is_empty(shard):
                CoverageData(shard).meta()
        except NoDataFile:
            continue  # merged and deleted by a combine meanwhile
        except DataFileLocked:
            raise
        except RagcovError:
            err.print(f"ragcov: warning: not erasing {shard}: not a ragcov data file", markup=False)
            continue
        targets.append(shard)
    for path in targets:
        # Under the write lock appenders and combine take: one of them that was waiting
        # finds the file gone and starts a new one, rather than appending to a deleted file.
        with write_lock(path):
            for side in ("-journal", "-wal", "-shm"):  # a stale journal must not meet a new file
                Path(f"{path}{side}").unlink(missing_ok=True)
            path.unlink(missing_ok=True)
    remove_stale_temps(data_file)


def _check_data_file(path: Path) -> None:
    from ragcov.data import CoverageData
    from ragcov.data.schema import NoDataFile

    try:
        CoverageData(path).meta()
    except NoDataFile:
        raise
    except RagcovError as exc:
        raise RagcovError(f"{path}: is not a ragcov data file; refusing to erase it "
                          f"({exc})") from exc
