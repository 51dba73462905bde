"""The append-only logs that make generation resumable.

Each accepted question is one JSON line in the output file, written with one
``write`` and made durable with ``fsync`` before the next LLM call; rejected
outputs go to a sibling ``.rejected.jsonl`` the same way. A kill can only cut
the line being written: on reading back, an unfinished last line (no newline)
is that in-flight record and is dropped from the file; a broken line anywhere
else is damage and is reported, not skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.files import check_destination, iter_jsonl


def rejected_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.rejected.jsonl")


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records already written; truncates an unfinished last line left by a kill."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):
        # Cut only what a killed writer of ours left: the start of a record after whole
        # records. Any other file (a link's target, a file given by mistake) is refused
        # below, untouched.
        lines = data[:complete].split(b"\n")
        for lineno, line in enumerate([*lines[:-1], data[complete:]], start=1):
            if line.strip() and not _a_record(line, last=lineno == len(lines)):
                raise InputFormatError(path, lineno, "not a ragcov generation record")
        check_destination(path)
        with open(path, "r+b") as f:
            f.truncate(complete)
            f.flush()
            os.fsync(f.fileno())
    records = []
    for lineno, obj in iter_jsonl(path):
        if "seq" not in obj:
            raise InputFormatError(path, lineno, "not a ragcov generation record")
        records.append(obj)
    return records


def _a_record(line: bytes, last: bool) -> bool:
    """A whole record line, or (``last``) the start of one a kill cut short."""
    if last:
        start = line.lstrip()
        return start.startswith(b'{"seq"') or b'{"seq"'.startswith(start)
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and "seq" in obj


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one line and make it durable before returning."""
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    check_destination(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
