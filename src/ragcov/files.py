"""Shared readers and the atomic-write helper.

Every input file goes through here so that bad bytes and bad lines are reported
the same way everywhere (file and line number), and every output is written to a
temporary file and renamed into place so an interrupted write leaves the old file.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ragcov.destinations import (
    is_special_file,
    refuse_foreign_link,
    refuse_links_below,
    replaceable_target,
)
from ragcov.errors import InputFormatError, RagcovError


def require_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, or the one-line error for what is not there or is a folder (a
    device or a pipe is read like a file)."""
    p = Path(path)
    if not p.exists():
        raise RagcovError(f"{p}: no such file")
    if p.is_dir():
        raise RagcovError(f"{p}: is a directory, not a file")
    return p


def read_text(path: str | os.PathLike[str]) -> str:
    p = require_file(path)
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # utf-8-sig counts from after a byte order mark: the byte is named in the file.
        at = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, at) + 1
        column = at - (data.rfind(b"\n", 0, at) + 1) + 1
        raise _not_utf8(p, line, exc, at, column) from exc


def _not_utf8(path: Path, line: int, exc: UnicodeDecodeError, at: int, column: int
              ) -> InputFormatError:
    """The one message for a byte that is not UTF-8: its line, its byte in the file, and
    its column (bytes from the line's start)."""
    return InputFormatError(path, line, f"not UTF-8 text ({exc.reason} at byte {at}, "
                                        f"column {column})")


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; blank lines are allowed.

    The file is read a line at a time: a million-chunk corpus held whole, as bytes, as
    text and as a list of lines, was a gigabyte more at the peak of a run than its chunks.
    """
    for lineno, line in _utf8_lines(path):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, lineno, f"invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputFormatError(path, lineno, "expected a JSON object")
        if _SURROGATE_ESCAPE.search(line):
            _refuse_lone_surrogates(obj, path, lineno)
        yield lineno, obj


def _utf8_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, split at ``\\n`` only (a binary file's lines):
    str.splitlines() would also break at U+2028, U+2029 and U+0085, which JSON writers
    leave raw inside strings. A byte that is not UTF-8 is refused at its line, as
    :func:`read_text` refuses it."""
    p = require_file(path)
    offset = 0
    with p.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                start = exc.start + (3 if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else 0)
                raise _not_utf8(p, lineno, exc, offset + start, start + 1) from exc
            offset += len(raw)
            yield lineno, line.removesuffix("\n")


def iter_csv(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, row) for a CSV file with a header row."""
    text = read_text(path)
    # Keeps newlines in quoted fields; strict, so an unterminated quote is an error at
    # the end of the file instead of a field that silently swallows every row after it.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputFormatError(path, 1, f"invalid CSV ({exc})") from exc
    header = [h.strip() for h in header]
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:  # dict(zip(...)) would keep the last column of each name, silently
        names = ", ".join(repr(h) for h in repeated)
        raise InputFormatError(path, 1, f"the header names {names} more than once")
    while True:
        started = reader.line_num + 1  # where the row that may fail begins
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputFormatError(path, started, f"invalid CSV ({_csv_problem(exc)})") from exc
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFormatError(
                path, reader.line_num, f"expected {len(header)} fields as in the header, got {len(row)}"
            )
        yield reader.line_num, dict(zip(header, row))


def _csv_problem(exc: csv.Error) -> str:
    if "unexpected end of data" in str(exc) or "EOF" in str(exc):
        return "a quoted field starting on this line is never closed"
    return str(exc)


def load_json(path: str | os.PathLike[str]) -> Any:
    text = read_text(path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
    lone = next((m for m in _SURROGATE_ESCAPE.finditer(text) if not _paired(text, m)), None)
    if lone is not None:
        _refuse_lone_surrogates(obj, path, text.count("\n", 0, lone.start()) + 1)
    return obj


# JSON may escape half of a UTF-16 pair on its own ("\ud800"): Python reads it as a
# lone surrogate, which no UTF-8 file, hash or database can take, so it is refused
# here, with its line, before it fails somewhere far from its cause.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\\ud800-\\udfff]")


def _paired(text: str, escape: re.Match[str]) -> bool:
    """Whether a surrogate escape is half of a pair (high then low), so not lone."""
    if int(escape.group()[2:], 16) < 0xDC00:  # a high half: a low one must follow
        low = _SURROGATE_ESCAPE.match(text, escape.end())
        return low is not None and int(low.group()[2:], 16) >= 0xDC00
    high = _SURROGATE_ESCAPE.match(text, escape.start() - 6) if escape.start() >= 6 else None
    return high is not None and int(high.group()[2:], 16) < 0xDC00


def _refuse_lone_surrogates(obj: Any, path: str | os.PathLike[str], line: int) -> None:
    """A paired escape decodes to one character; any surrogate left is a lone one."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                raise InputFormatError(path, line, f"holds a lone UTF-16 surrogate "
                                                   f"(\\u{ord(found.group()):04x}), which is not "
                                                   "text; fix the writer that split the pair")


def cache_dir() -> Path:
    """Where ragcov keeps derived files (embeddings, assembled models): $RAGCOV_CACHE_DIR."""
    return Path(os.environ.get("RAGCOV_CACHE_DIR") or Path.home() / ".cache" / "ragcov")


def check_destination(target: str | os.PathLike[str]) -> None:
    """The rule every file ragcov writes passes first (:func:`atomic_path`,
    :func:`write_text_atomic`, the generation journal, the HTML folders).

    In the cache, whose every name ragcov makes, no symlink is followed and only a
    regular file is replaced. Elsewhere the user named the path: a link they made is
    written through (as an editor does), one another user made is refused.
    """
    root = cache_dir()
    given = Path(os.path.abspath(target))
    for base in {Path(os.path.abspath(root)), Path(os.path.realpath(root))}:
        if given.is_relative_to(base) and given != base:
            refuse_links_below(given, base)
            return
    refuse_foreign_link(target)


def first_key(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _read_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


_UMASK = _read_umask()  # read once, at import: os.umask() is process-wide


class TargetExists(FileExistsError):
    """``atomic_path(..., replace=False)`` found the target taken when it came to publish."""


def temp_prefix(target: Path) -> str:
    """Temporary names carry the writer's pid, so a later run can tell a dead one's leftovers."""
    return f".{target.name}.{os.getpid()}-"


# A temporary file, an old version set aside, and SQLite's side files of a temporary.
TEMP_SUFFIXES = (".tmp", ".old", ".tmp-journal", ".tmp-wal", ".tmp-shm")


def remove_stale_temps(target: Path) -> int:
    """Remove temporaries beside ``target`` left by writers that no longer run (kill -9).

    Only names made by :func:`temp_prefix` whose pid is not alive on this machine are
    touched: a concurrent writer's temporary is never removed. An old version set
    aside (``.old``) by a writer killed between its two renames is put back when the
    target is missing, so the previous content is never lost. Returns how many.
    """
    removed = 0
    with contextlib.suppress(OSError):
        for entry in target.parent.glob(f".{glob_escape(target.name)}.*-*.*"):
            pid_text = entry.name[len(target.name) + 2:].split("-", 1)[0]
            if not pid_text.isdigit() or entry.suffix not in TEMP_SUFFIXES or _alive(int(pid_text)):
                continue
            with contextlib.suppress(OSError):
                if entry.suffix == ".old" and not os.path.lexists(target):
                    os.replace(entry, target)
                elif entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed += 1
    return removed


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``).

    Replacing a folder takes two renames (the old one aside, the new one in), and a kill
    between them leaves no folder at the target until the next writer puts the old one
    back: a browser or a CI upload reading then finds nothing. The exchange has no such
    instant. False where the call or the file system does not offer it (not Linux, an old
    glibc, a file system without the flag): the caller then renames twice.
    """
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint)
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return done == 0


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process: leave its files alone
    return True


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str], replace: bool = True) -> Iterator[Path]:
    """Give a temporary path beside ``target``; move it into place only on success.

    A symlink the user made is written through: the temporary goes beside the link's
    target and replaces that, so the link stays a link and its target is current (as an
    editor or coverage.py does); a link in the cache or made by another user is refused
    (:func:`check_destination`). A directory, a device or a FIFO is refused: renaming a
    regular file over it would put a file where the system expects something else.

    With ``replace=False`` the temporary is published only if ``target`` is still
    absent at that moment (a hard link, which never replaces); otherwise
    :class:`TargetExists` is raised and the temporary removed, so two processes
    creating the same file never overwrite each other.
    """
    check_destination(target)
    given, target = target, replaceable_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent)
    except OSError as exc:  # the error names the path given, never a temporary's
        raise RagcovError(f"{given}: cannot write in {target.parent} "
                          f"({exc.strerror or exc})") from exc
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes the file private (0600); give it the mode a plain open() would.
    os.chmod(tmp_path, 0o666 & ~_UMASK)
    try:
        yield tmp_path
        if tmp_path.is_file():  # durable before it replaces the old file
            with open(tmp_path, "rb+") as fh:
                os.fsync(fh.fileno())
        try:
            if replace:
                os.replace(tmp_path, target)
            else:
                _publish_new(tmp_path, target)
        except TargetExists:
            raise
        except OSError as exc:
            raise RagcovError(f"{given}: cannot replace it ({exc.strerror or exc})") from exc
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _publish_new(tmp_path: Path, target: Path) -> None:
    try:
        os.link(tmp_path, target)
    except FileExistsError as exc:
        raise TargetExists(str(target)) from exc
    except OSError:
        # No hard links here (some network or FAT file systems): exclusive create of
        # the name, then the rename over our own placeholder.
        try:
            fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError as exc:
            raise TargetExists(str(target)) from exc
        os.close(fd)
        os.replace(tmp_path, target)


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    """Regular files atomically; a device or FIFO (``/dev/null``, a pipe) by writing to it.

    Nothing is ever renamed over a non-regular file: as root that would replace
    ``/dev/null`` itself with a regular file, for every program on the machine.
    """
    check_destination(target)
    if is_special_file(target):
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def json_text(obj: Any, indent: int | None = 2, plain: Sequence[str] = ()) -> str:
    """Every JSON document ragcov writes, in one form: UTF-8 as is, a final newline, and
    strict: a NaN or infinity here is a bug upstream, never a bare ``Infinity``.

    ``plain``: top-level keys of ``obj`` whose values hold only strings, integers, lists
    and dicts (a report's per-chunk section: a million entries). The standard library
    indents in Python (15 s for a 1M-chunk report on 2 cores); orjson writes such values
    in C, byte for byte as the standard library does (no float is there to be written
    another way), and the rest of the document is the standard library's. A value orjson
    refuses (an integer past 64 bits, a lone surrogate) is left to the standard library.
    """
    text = json.dumps
    if indent != 2 or not plain or not isinstance(obj, dict):
        return text(obj, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
    import orjson

    token = f"ragcov-{os.urandom(16).hex()}-"
    shell, parts = dict(obj), {}
    for key in plain:
        if key not in shell:
            continue
        try:
            encoded = orjson.dumps(shell[key], option=orjson.OPT_INDENT_2).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            continue
        parts[text(token + key)] = encoded.replace("\n", "\n  ")  # one level in
        shell[key] = token + key
    out = text(shell, indent=2, ensure_ascii=False, allow_nan=False)
    for placeholder, encoded in parts.items():
        out = out.replace(placeholder, encoded, 1)
    return out + "\n"


# An integer orjson reads as a float (past 64 bits: below -2^63, above 2^64 - 1) has at
# least this many digits; a 19-digit one (a nanosecond timestamp) it reads as an int.
_PAST_64_BITS = re.compile(r"-[0-9]{19}|[0-9]{20}")
_PAST_64_BITS_BYTES = re.compile(rb"-[0-9]{19}|[0-9]{20}")


def loads_json(data: str | bytes | memoryview, path: str | os.PathLike[str] | None = None,
               line: int = 0) -> Any:
    """One JSON value as ``json.loads`` reads it, by orjson (several times faster) where
    the two agree. orjson reads an integer past 64 bits as a float, and refuses what the
    standard library reads (NaN, a number past a double's range such as ``1e400``, a lone
    surrogate escape): those go to ``json.loads``, whose error is the one raised when
    neither reads the value. With ``path``, a lone surrogate is refused at ``line`` (no
    UTF-8 file or database takes it)."""
    import orjson

    if isinstance(data, memoryview):
        data = bytes(data)
    long = (_PAST_64_BITS_BYTES if isinstance(data, bytes) else _PAST_64_BITS).search(data)
    if long is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    value = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    if path is not None:
        _refuse_lone_surrogates(value, path, line)
    return value


def jsonl_text(records: Iterable[Any]) -> str:
    """JSON lines as ragcov writes them: one compact, strict, UTF-8 document a line."""
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)


def write_json_atomic(target: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> None:
    write_text_atomic(target, json_text(obj, indent))


def write_jsonl_atomic(target: str | os.PathLike[str], records: list[dict[str, Any]]) -> None:
    write_text_atomic(
        target, jsonl_text(records)
    )
