"""Merging the data files of sharded runs into one (``ragcov combine``, xdist, Dask)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from ragcov.data.checks import check_rows, doc_id_change
from ragcov.data.datafile import CoverageData
from ragcov.data.inserts import QUERIES_AT_ONCE, insert_columns, insert_rows
from ragcov.data.locking import write_lock
from ragcov.data.probes import copy_probes
from ragcov.data.schema import (
    check_compatible,
    has_tables,
    new_file,
    new_meta,
    sqlite_errors,
)
from ragcov.data.spans import copy_spans
from ragcov.data.topics import copy_topics
from ragcov.data.totals import store_totals
from ragcov.errors import RagcovError
from ragcov.files import TargetExists, atomic_path
from ragcov.user_warnings import RetrievalWarning, warn

# Per query id already written: its text and its (chunk idx, rank, score) hits.
_Seen = dict[str, tuple[str, list[tuple[int, int, float | None]]]]


def combine(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
            append: bool = False, shards: Sequence[str | os.PathLike[str]] = ()) -> int:
    """Merge data files from sharded runs into ``out``; returns the number of queries.

    All inputs must share k, corpus and retriever. A query id recorded in several
    files must have the same text and hits in each (the same query run twice by
    one deterministic system); anything else is a conflict, not a silent merge.
    With ``append``, what ``out`` holds when the merge starts is merged too.

    ``shards`` are the inputs the caller deletes once this returns. They are
    recorded in ``out`` in the same transaction as the merge, so a rerun after a
    kill between two deletions finds the ones left listed there: it merges into
    what was combined instead of replacing it with the shards that remain.
    """
    if not paths:
        raise RagcovError("combine needs at least one data file")
    out_path = Path(out)
    datas = [CoverageData(p) for p in paths]
    if out_path.resolve() not in {d.path.resolve() for d in datas}:
        CoverageData(out_path).check_destination()
    while True:
        # The write lock appenders take: none commits to the output between our read
        # of it and our rename over it (their rows would vanish with the old file).
        with write_lock(out_path) as held:
            inputs = datas
            if held is not None and has_tables(held):
                merged = _merged_shards(held)
                leftovers = {Path(p).resolve() for p in shards if _stamp(Path(p)) in merged}
                if leftovers:  # a combine killed while deleting its shards: finish it
                    inputs = [d for d in datas if d.path.resolve() not in leftovers]
                if append or leftovers:
                    inputs = [CoverageData(out_path), *inputs]
            try:
                return _combine_into(inputs, out_path, replace=held is not None,
                                     shards=[_stamp(Path(p)) for p in shards])
            except TargetExists:
                continue  # the output appeared while we merged: again, under its lock


# The meta row naming the shards a combine merged and is about to delete.
_MERGED_KEY = "combined_shards"


def _stamp(path: Path) -> tuple[str, int, int]:
    """A shard as combine saw it: name, size and modification time (a rewritten shard differs)."""
    st = path.stat()
    return path.name, st.st_size, st.st_mtime_ns


def _merged_shards(con: sqlite3.Connection) -> set[tuple[str, int, int]]:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (_MERGED_KEY,)).fetchone()
    try:
        return {(str(n), int(s), int(t)) for n, s, t in json.loads(row[0])} if row else set()
    except (ValueError, TypeError):
        return set()


def _warn_of_depths(datas: Sequence[CoverageData], k: int) -> None:
    """Files recorded at one k whose lists are of two depths (a retriever that returned
    fewer than k in one of them) make a file whose coverage is neither: said, with each."""
    depths = {}
    for d in datas:
        with d.reading() as con:
            row = con.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM hits "
                              "GROUP BY query_idx)").fetchone()
        depths[d.path] = int(row[0] or 0)
    if len(set(depths.values()) - {0}) > 1:
        shown = ", ".join(f"{depth} in {path}" for path, depth in depths.items())
        warn(f"the files were recorded at k={k} but to different depths ({shown}): a retriever "
             "returned fewer than k in some; the combined coverage mixes the two depths",
             RetrievalWarning)


def _combine_into(datas: Sequence[CoverageData], out_path: Path, replace: bool,
                  shards: Sequence[tuple[str, int, int]]) -> int:
    metas = [d.meta() for d in datas]
    first = metas[0]
    for d, m in zip(datas[1:], metas[1:]):
        try:
            check_compatible(first, m.k, m.corpus_hash, m.retriever, str(datas[0].path), str(d.path))
        except RagcovError as exc:
            moved = None
            if first.corpus_hash != m.corpus_hash:
                with datas[0].reading() as a, d.reading() as b:
                    moved = doc_id_change(a, b.execute(
                        "SELECT id, doc_id, hash FROM chunks ORDER BY idx").fetchall(),
                        f"in {datas[0].path}", f"in {d.path}")
            if moved is None:
                raise
            raise RagcovError(f"{exc}: {moved}") from exc
    _warn_of_depths(datas, first.k)
    meta = new_meta(first.k, first.retriever, first.corpus_hash)
    with (atomic_path(out_path, replace=replace) as tmp, sqlite_errors(out_path),
          new_file(tmp, meta) as con):
        seen: _Seen = {}
        probes_seen: set[str] = set()
        topics_copied = spans_copied = False
        next_idx = 0
        covered: set[int] = set()  # the chunk idx of every hit the new file holds
        for n, d in enumerate(datas):
            with d.reading() as src:
                check_rows(src, d.path)
                if n == 0:
                    _copy_corpus(con, src)
                next_idx = _copy_queries(con, src, d.path, seen, next_idx, covered)
                copy_probes(con, src, probes_seen, d.path)
                topics_copied = topics_copied or copy_topics(con, src, d.path)
                spans_copied = spans_copied or copy_spans(con, src, d.path)
                if n > 0:
                    _add_counts(con, src)
        if shards:
            con.execute("INSERT INTO meta VALUES (?, ?)", (_MERGED_KEY, json.dumps(list(shards))))
        store_totals(con, covered=covered)  # what a gate reads, from the rows written
    return next_idx


def _copy_corpus(con: sqlite3.Connection, src: sqlite3.Connection) -> None:
    """The first file's chunks and annotations (e.g. a measured index recall)."""
    insert_rows(con, "chunks", 7, src.execute("SELECT * FROM chunks ORDER BY idx"))
    con.executemany("INSERT INTO meta VALUES (?, ?)", src.execute(
        "SELECT key, value FROM meta WHERE key LIKE 'x:%'"))


# Annotations that count hits (how many were matched by text, not id): a combine adds
# them up, as an --append does, where other annotations come from the first file.
_COUNTED = ("x:id_matching",)


def _add_counts(con: sqlite3.Connection, src: sqlite3.Connection) -> None:
    for key in _COUNTED:
        row = src.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            continue
        have = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        total, counts = _json_dict(have[0] if have else "{}"), _json_dict(row[0])
        for name, n in counts.items():
            if isinstance(n, int) and not isinstance(n, bool):
                old = total.get(name, 0)
                total[name] = (old if isinstance(old, int) else 0) + n
            else:
                total.setdefault(name, n)
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(total)))


def _json_dict(text: str) -> dict[str, Any]:
    """A stored annotation as a dict; a damaged one counts as nothing (readers do the same)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _copy_queries(con: sqlite3.Connection, src: sqlite3.Connection, path: Path, seen: _Seen,
                  next_idx: int, covered: set[int]) -> int:
    """Add the queries of ``src`` not seen yet from ``next_idx`` on; returns the next idx.
    ``covered`` collects the chunk idx of every hit written."""
    hits: dict[int, list[tuple[int, int, float | None]]] = {}
    for q, c, r, s in src.execute(
            "SELECT query_idx, chunk_idx, rank, score FROM hits ORDER BY query_idx, rank"):
        hits.setdefault(q, []).append((c, r, s))
    queries: list[tuple[int, str, str, str | None]] = []
    lists: list[list[tuple[int, int, float | None]]] = []
    for qidx, qid, text, ctx in src.execute(
            "SELECT idx, id, text, context FROM queries ORDER BY idx"):
        qhits = hits.get(qidx, [])
        if qid in seen:
            old_text, old_hits = seen[qid]
            if old_text != text or [h[:2] for h in old_hits] != [h[:2] for h in qhits]:
                raise RagcovError(f"cannot combine: query {qid!r} has different text or hits in "
                                  f"{path} than in an earlier file")
            continue
        seen[qid] = (text, qhits)
        queries.append((next_idx, qid, text, ctx))
        lists.append(qhits)
        next_idx += 1
        if len(queries) == QUERIES_AT_ONCE:
            _write_queries(con, queries, lists, covered)
    _write_queries(con, queries, lists, covered)
    return next_idx


def _write_queries(con: sqlite3.Connection, queries: list[tuple[int, str, str, str | None]],
                   lists: list[list[tuple[int, int, float | None]]], covered: set[int]) -> None:
    """Write the queries gathered so far, each with its hits (as columns), then forget
    them; ``covered`` collects the chunk idx the hits name."""
    insert_rows(con, "queries", 4, queries)
    hits = list(chain.from_iterable(lists))
    chunk = list(map(itemgetter(0), hits))
    insert_columns(con, "hits", [
        list(chain.from_iterable(map(repeat, map(itemgetter(0), queries), map(len, lists)))),
        chunk, list(map(itemgetter(1), hits)), list(map(itemgetter(2), hits))])
    covered.update(chunk)
    queries.clear()
    lists.clear()
