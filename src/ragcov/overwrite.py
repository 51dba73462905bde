"""Which outputs a command may not write over: its inputs, the recorded corpus, data files.

Every command that writes files passes its outputs and inputs to :func:`check_outputs`
before any work, so a report never lands on the data file it reads or the corpus that
file was recorded from.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from ragcov.config import config_files
from ragcov.data import CoverageData
from ragcov.data.datafile import CORPUS_SOURCE, QUERY_SOURCES
from ragcov.destinations import is_special_file, unwritable_reason, written_path
from ragcov.errors import RagcovError
from ragcov.files import check_destination


def to_stdout(output: Path | None) -> bool:
    """``-``, no path, or a path naming this process's own stdout stream (``/dev/stdout``,
    ``/dev/fd/1`` on a terminal or pipe): then the report is the stream's content, and the
    command's account ("Wrote ...") goes to stderr instead of into the JSON."""
    if output is None or str(output) == "-":
        return True
    try:
        st, ours = os.stat(output), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    return not stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino)


def check_outputs(outputs: Iterable[Path | None], inputs: Iterable[Path | str | None],
                  extends: Path | None = None) -> None:
    """Refuse, before any work, an output that would overwrite something the command reads.

    Every command that writes files passes its outputs and inputs here. An output is
    refused when it resolves (symlinks followed, hard links by inode) to an input, to
    the corpus a data-file input recorded (a file, or a file inside a corpus folder),
    or to any existing ragcov data file; a directory, a file that cannot be changed
    and a folder that cannot be written are refused by the name given.
    ``-`` (stdout) and devices or FIFOs (written through, never replaced) are fine.
    The query files a data-file input's runs read are protected too: a suite is the
    user's own file, and no report (``gap -o``, ``badge -o``, ``select --suite-out``)
    may replace it. ``extends`` names the one output that may be such a file:
    ``generate`` extends a recorded suite file, resuming from its output.
    """
    protected: list[tuple[Path, str, bool]] = [  # (path, what it is, a recorded query file)
        (written_path(p), "a ragcov config file", False) for p in config_files()]
    for given in inputs:
        if given is None or str(given) in ("", "-") or "://" in str(given):
            continue
        protected.append((written_path(given), f"an input of this command ({given})", False))
        # Only a regular file is opened: a FIFO input (``--qrels <(...)``) is read once.
        corpus, queries = (_recorded_sources(Path(given)) if os.path.isfile(given)
                           else (None, []))
        if corpus is not None:
            protected.append((Path(corpus), f"the corpus {given} was recorded from", False))
        protected += [(Path(q), f"a query file {given} was recorded from", True)
                      for q in queries]
    taken: dict[Path, Path] = {}
    on_stdout: Path | None = None
    for output in outputs:
        if to_stdout(output):
            if output is None:  # not written, or the command's one default output
                continue
            if on_stdout is not None:  # two documents interleaved on one stream parse as neither
                raise RagcovError(f"{output}: stdout given for two outputs (also as {on_stdout}); "
                                  "give one of them a file path")
            on_stdout = Path(str(output))
            continue
        assert output is not None
        check_destination(output)  # a link another user planted, or one in the cache
        real = written_path(output)
        if real.is_dir():
            raise RagcovError(f"{output}: is a directory; give a file path")
        if is_special_file(output):  # the kernel follows /dev/stdout where realpath cannot
            continue
        for path, what, suite in protected:
            if suite and output is extends:
                continue
            inside = path.is_dir() and real.exists() and real.is_relative_to(path)
            if real == path or inside or _same_file(real, path):
                whose = f"a file of {what} ({path})" if inside and real != path else what
                raise RagcovError(f"{output}: is {whose}; refusing to overwrite it (choose "
                                  "another output path)")
        if real.suffix == ".py" and real.is_file():  # a test module, the app: never a report
            raise RagcovError(f"{output}: is a Python source file; refusing to overwrite it "
                              "(choose another output path)")
        if real in taken:
            raise RagcovError(f"{output}: given for two outputs (also as {taken[real]})")
        taken[real] = output
        if _is_data_file(real):
            raise RagcovError(f"{output}: is a ragcov data file; refusing to overwrite it with "
                              "a report (choose another output path)")
        companion = _companion_of_data_file(real)
        if companion is not None:
            raise RagcovError(f"{output}: is {companion}; refusing to overwrite it (choose "
                              "another output path)")
        reason = unwritable_reason(real)
        if reason is not None:
            raise RagcovError(f"{output}: {reason}; refusing to change it (choose another "
                              "output path)")
        folder = next(p for p in (real.parent, *real.parents) if p.exists())
        if not os.access(folder, os.W_OK | os.X_OK):
            raise RagcovError(f"{output}: cannot write in {folder} (permission denied)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_SQLITE_HEADER = b"SQLite format 3\x00"
# Files that live beside a data file while it is written: its writers' lock (see
# ragcov.data.locking) and SQLite's journals. Replacing one breaks the data file: a
# writer waiting on the old lock's inode no longer takes turns with the next one, and a
# hot journal replaced cannot roll back the transaction it belongs to.
_COMPANIONS = {"-lock": "the lock file writers of {} take turns on",
               "-journal": "SQLite's journal of {}", "-wal": "SQLite's journal of {}",
               "-shm": "SQLite's shared memory of {}"}


def _companion_of_data_file(path: Path) -> str | None:
    """What ``path`` is to the ragcov data file it sits beside (``DATA-lock``, ...), or None."""
    for suffix, what in _COMPANIONS.items():
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            data = path.with_name(path.name[:-len(suffix)])
            if _is_data_file(data):
                return what.format(data)
    return None


def _is_data_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                return False
    except OSError:
        return False
    try:
        CoverageData(path).meta()
    except RagcovError:
        return False
    return True


def _recorded_sources(path: Path) -> tuple[str | None, list[str]]:
    """The corpus path and query files a data file recorded; none for anything else (its
    reader reports it)."""
    if not _is_data_file(path):
        return None, []
    try:
        data = CoverageData(path)
        corpus, queries = data.annotation(CORPUS_SOURCE), data.annotation(QUERY_SOURCES)
    except RagcovError:
        return None, []
    return (corpus if isinstance(corpus, str) else None,
            [q for q in queries if isinstance(q, str)] if isinstance(queries, list) else [])
