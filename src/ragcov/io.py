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
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragcov.errors import InputFormatError, RagcovError


def read_text(path: str | os.PathLike[str]) -> str:
    p = Path(path)
    if not p.exists():
        raise RagcovError(f"{p}: no such file")
    try:
        return p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(p, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; blank lines are allowed."""
    text = read_text(path)
    # Split on newlines only: str.splitlines() would also break at U+2028, U+2029 and
    # U+0085, which JSON writers leave raw inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, lineno, f"invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputFormatError(path, lineno, "expected a JSON object")
        yield lineno, obj


def iter_csv(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, row) for a CSV file with a header row."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))  # keeps newlines in quoted fields
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputFormatError(path, 1, f"invalid CSV ({exc})") from exc
    header = [h.strip() for h in header]
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputFormatError(path, reader.line_num, f"invalid CSV ({exc})") from exc
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFormatError(
                path, reader.line_num, f"expected {len(header)} fields as in the header, got {len(row)}"
            )
        yield reader.line_num, dict(zip(header, row))


def load_json(path: str | os.PathLike[str]) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc


def cache_dir() -> Path:
    """Where ragcov keeps derived files (embeddings, assembled models): $RAGCOV_CACHE_DIR."""
    return Path(os.environ.get("RAGCOV_CACHE_DIR") or Path.home() / ".cache" / "ragcov")


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


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Give a temporary path beside ``target``; rename it into place only on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes the file private (0600); give it the mode a plain open() would.
    os.chmod(tmp_path, 0o666 & ~_UMASK)
    try:
        yield tmp_path
        if tmp_path.is_file():  # durable before it replaces the old file
            with open(tmp_path, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(target: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> None:
    write_text_atomic(target, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


def write_jsonl_atomic(target: str | os.PathLike[str], records: list[dict[str, Any]]) -> None:
    write_text_atomic(
        target, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
