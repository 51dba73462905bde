"""A folder or glob of trace shards: exporters write production traffic as many files.

Phoenix writes a parquet file per export, collectors rotate their JSON-lines files,
a TREC run may be split by query. ``ragcov import DIR_OR_GLOB`` reads the shards in
name order as one export: a span in two shards is one span, nesting and time order
run across them; a record format's query id may appear in one shard only.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from ragcov.errors import RagcovError

GLOB_CHARS = "*?["


def shard_files(path: str | os.PathLike[str]) -> list[Path] | None:
    """The shard files of a folder (its files, hidden ones aside) or of a glob pattern, in
    name order; None when ``path`` is one file (or names nothing: the reader says so)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(c for c in p.iterdir() if c.is_file() and not c.name.startswith("."))
        if not files:
            raise RagcovError(f"{path}: the folder holds no trace files")
        return files
    text = str(path)
    if p.exists() or not any(c in text for c in GLOB_CHARS):
        return None
    files = sorted(Path(f) for f in glob.glob(text) if os.path.isfile(f))
    if not files:
        raise RagcovError(f"{path}: no trace files match this pattern")
    return files
