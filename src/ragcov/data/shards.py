"""A data file and its parallel-mode shards on disk: naming, finding, combining, erasing.

``ragcov run --parallel-mode`` writes ``DATA_FILE.HOST.PID.RANDOM`` (coverage.py's
name) so parallel jobs never write one file; ``combine`` finds those shards beside
the data file, merges them into it and deletes them; ``erase`` deletes the file and
its shards. Both name every file they pass over, and why, for the caller to print.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragcov.data.datafile import CoverageData
from ragcov.data.locking import write_lock
from ragcov.data.merge import combine
from ragcov.data.schema import DataFileLocked, NoDataFile, is_empty
from ragcov.errors import RagcovError
from ragcov.files import glob_escape, remove_stale_temps

# SQLite's side files of a shard being written, and its writers' lock file, are not shards.
_SIDE_SUFFIXES = ("-journal", "-wal", "-shm", "-lock")


def shard_path(data_file: Path) -> Path:
    """``DATA_FILE.HOST.PID.RANDOM``: coverage.py's parallel-mode name, unique per process."""
    host = socket.gethostname().split(".")[0] or "host"
    return data_file.with_name(f"{data_file.name}.{host}.{os.getpid()}.{secrets.token_hex(3)}")


def find_shards(data_file: Path, folder: Path | None = None) -> list[Path]:
    """The ``DATA_FILE.*`` files in ``folder`` (default: beside ``data_file``), sorted by name."""
    where = folder if folder is not None else (data_file.parent if str(data_file.parent) else Path("."))
    found = [p for p in where.glob(f"{glob_escape(data_file.name)}.*")
             if p.is_file() and not p.name.endswith(_SIDE_SUFFIXES)]
    return sorted(found, key=lambda p: p.name)


def _problem(path: Path) -> str | None:
    """None when ``path`` is a readable ragcov data file, else why not."""
    try:
        CoverageData(path).meta()
    except RagcovError as exc:
        return str(exc)
    return None


@dataclass
class Combined:
    """What ``combine_shards`` merged, what it could not use and why, and the query count."""

    inputs: list[Path]
    skipped: list[tuple[Path, str]]
    queries: int
    had_output: bool


def combine_shards(files: Sequence[Path], output: Path, keep: bool = False,
                   append: bool = False) -> Combined:
    """Merge ``files`` (data files, or folders searched for shards) into ``output``.

    With no files, the shards beside ``output``. Shards found by name that are not data
    files are skipped (coverage.py: "Couldn't use data file ...") and reported; the
    shards merged are deleted unless ``keep``.
    """
    explicit: list[Path] = []
    found: list[Path] = []
    for f in files:
        if f.is_dir():
            found += find_shards(output, f)
        else:
            explicit.append(f)
    if not files:
        found = find_shards(output)
    usable: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for shard in found:
        problem = _problem(shard)
        if problem is None:
            usable.append(shard)
        else:
            skipped.append((shard, problem))
    inputs = explicit + usable
    if not inputs:
        raise RagcovError("No data to combine" + _nothing_found(output, files, skipped))
    had_output = append and CoverageData(output).exists()
    n = combine(inputs, output, append=append, shards=[] if keep else usable)
    if not keep:
        for shard in usable:
            shard.unlink(missing_ok=True)
    return Combined(inputs, skipped, n, had_output)


def _nothing_found(output: Path, folders: Sequence[Path], skipped: list[tuple[Path, str]]) -> str:
    """What a combine that found nothing looked for: shards are found by the data file's name.

    ``folders`` are the files given, every one a folder searched (a file given is an input).
    """
    parts = []
    if folders:
        parts.append(f"no usable {output.name}.* shard in {', '.join(map(str, folders))}; "
                     "name other data files on the command line")
    if skipped:
        parts.append(f"{len(skipped)} shard-named file{'s' if len(skipped) != 1 else ''} unusable, "
                     f"first {skipped[0][1]}")
    return f" ({'; '.join(parts)})" if parts else ""


def erase(data_file: Path) -> list[Path]:
    """Delete ``data_file`` and its shards; the shard-named files left alone (not data files).

    Everything is checked before anything is deleted: a file that is not ragcov's (a
    coverage.py ``.coverage``, a corpus given as ``--data-file`` by mistake) stops it all.
    """
    if (data_file.exists() or data_file.is_symlink()) and (
            data_file.is_symlink() or not data_file.is_file()):
        raise RagcovError(f"{data_file}: is not a regular file; refusing to erase it")
    targets: list[Path] = []
    spared: list[Path] = []
    for shard in find_shards(data_file):
        # A report beside the data file (.ragcov.json) is named like a shard but is not one.
        try:
            if not is_empty(shard):
                CoverageData(shard).meta()
        except NoDataFile:
            continue  # merged and deleted by a combine meanwhile
        except DataFileLocked:
            raise
        except RagcovError:
            spared.append(shard)
            continue
        targets.append(shard)
    # The data file is checked in the writers' turn, not before it: a reader that opens
    # it as a combine renames a new file over it, while an appender writes there, takes
    # the appender's journal (SQLite finds journals by name) for its own and fails.
    _remove(data_file, check=True)
    for shard in targets:
        _remove(shard, check=False)
    remove_stale_temps(data_file)
    return spared


def _remove(path: Path, *, check: bool) -> None:
    # Under the write lock appenders and combine take: one of them that was waiting
    # finds the file gone and starts a new one, rather than appending to a deleted file.
    # Taking it opens the file and checks its format (an empty file passes: it holds no data).
    try:
        with write_lock(path) as con:
            if con is None:
                return  # removed meanwhile (another erase, a combine's rename): nothing to erase
            for side in ("-journal", "-wal", "-shm"):  # a stale journal must not meet a new file
                Path(f"{path}{side}").unlink(missing_ok=True)
            path.unlink(missing_ok=True)
    except DataFileLocked:
        raise
    except RagcovError as exc:
        if not check:
            raise
        raise RagcovError(f"{path}: is not a ragcov data file; refusing to erase it "
                          f"({exc})") from exc
