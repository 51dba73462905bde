"""Run ``ragcov ARGS`` and SIGKILL itself at the N-th write point (fault injection, tests only).

Usage: ``python fault_child.py N ARGS...``. A *point* is any of: 200 SQLite VM
steps on any connection, and each call of ``os.replace``, ``os.rename``,
``os.link``, ``os.fsync``, ``os.write``, ``os.unlink``, ``shutil.rmtree``,
``Path.write_text``/``write_bytes``. With N = 0 nothing is killed and the number of
points the command passed is written to the file named by ``$RAGCOV_FAULT_COUNT``,
so a test can draw kill points uniformly over the whole command.

The kill is a real ``SIGKILL`` of this process at that instant: no ``finally`` runs,
no buffer is flushed, exactly as when the OOM killer or a CI timeout strikes.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import sqlite3
import sys
from typing import Any

KILL_AT = int(sys.argv[1])
COUNT_FILE = os.environ.get("RAGCOV_FAULT_COUNT")
_points = 0


def point() -> None:
    global _points
    _points += 1
    if _points == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def _counting(fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        point()
        return fn(*args, **kwargs)

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


for _name in ("replace", "rename", "link", "fsync", "write", "unlink"):
    setattr(os, _name, _counting(getattr(os, _name)))
shutil.rmtree = _counting(shutil.rmtree)
pathlib.Path.write_text = _counting(pathlib.Path.write_text)  # type: ignore[method-assign]
pathlib.Path.write_bytes = _counting(pathlib.Path.write_bytes)  # type: ignore[method-assign]

_connect = sqlite3.connect


def _connect_counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    con = _connect(*args, **kwargs)

    def progress() -> int:
        point()
        return 0

    con.set_progress_handler(progress, 200)
    return con


sqlite3.connect = _connect_counting  # type: ignore[assignment]


def _report() -> None:
    if COUNT_FILE:
        with open(COUNT_FILE, "w") as fh:
            fh.write(str(_points))


if __name__ == "__main__":
    from ragcov.cli import main

    try:
        main(sys.argv[2:])
    finally:
        _report()
