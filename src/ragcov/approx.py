"""The measured recall of an approximate index, kept beside a data file's meta.

The retriever fingerprint only says *that* results are approximate (it must stay
identical across runs so ``--append`` and ``combine`` accept them); the recall
figure varies with the sample and the index build, so it is stored under its own
meta key, which readers of older files simply do not find.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from typing import Any

from ragcov.data import CoverageData

RECALL_KEY = "index_recall"


def record_recall(data_file: str | os.PathLike[str], recall: dict[str, Any]) -> None:
    """Store ``recall`` (as returned by ``DenseRetriever.measure_recall``) in one transaction."""
    data = CoverageData(data_file)
    with closing(data._open()) as con:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    (RECALL_KEY, json.dumps(recall, sort_keys=True)))
        con.execute("COMMIT")


def read_recall(data_file: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The recorded recall, or None when the file has none (exact index, older file)."""
    data = CoverageData(data_file)
    with closing(data._open()) as con:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (RECALL_KEY,)).fetchone()
        except sqlite3.DatabaseError:
            return None
    return json.loads(row[0]) if row else None
