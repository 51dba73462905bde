"""CoverageData: the SQLite data file (``.ragcov``).

One file holds what a coverage report needs and nothing it could recompute: the
run's settings (k, retriever fingerprint, corpus hash), the corpus's chunks (id,
document, position, content hash, text for the HTML report), the queries and the
hits with rank and score. Like coverage.py's data file it carries a schema
version and refuses to mix incompatible data.

Atomicity: a new file is built under a temporary name and renamed into place;
additions to an existing file happen in a single SQLite transaction, so a crash
leaves either the old file or the new one, never half of a run. Concurrency: an
``--append`` that finds no file publishes its new file only if none appeared in the
meantime (a hard link never replaces), and appends otherwise; every read of the
matrix happens in one read transaction, so it never sees half of another
process's append. Safety: a file that is not a ragcov data file is never
replaced, and SQLite's own errors (a damaged page, a locked file) surface as one
line naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.io import TargetExists, atomic_path

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.matrix import CoverageMatrix
    from ragcov.run import Run

# Version of the data-file schema.
#   1: meta, chunks, queries, hits (rank, score).
FORMAT_VERSION = 1
DEFAULT_DATA_FILE = ".ragcov"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (
    idx INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL,
    position INTEGER NOT NULL, hash TEXT NOT NULL, title TEXT, text TEXT
);
CREATE TABLE queries (
    idx INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL, context TEXT
);
CREATE TABLE hits (
    query_idx INTEGER NOT NULL, chunk_idx INTEGER NOT NULL, rank INTEGER NOT NULL, score REAL,
    PRIMARY KEY (query_idx, rank)
);
"""


@dataclass(frozen=True)
class Meta:
    format: int
    ragcov_version: str
    k: int
    retriever: dict[str, Any]
    corpus_hash: str
    created: str

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "ragcov_version": self.ragcov_version, "k": self.k,
                "retriever": self.retriever, "corpus_hash": self.corpus_hash,
                "created": self.created}


# How long a reader or writer waits for another process's transaction to finish.
# Appends are short transactions, so a long wait means a stuck process, not load.
BUSY_TIMEOUT_S = 60.0


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_S)
    con.execute("PRAGMA foreign_keys = OFF")
    return con


def _database_error(path: Path, exc: sqlite3.Error) -> RagcovError:
    """SQLite's error as one line that names the file and says what to do."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        hint = (f"another process held it for over {BUSY_TIMEOUT_S:g} s; "
                "retry when it has finished")
    elif "malformed" in text or "not a database" in text or "corrupt" in text:
        hint = "the file is damaged; rerun to record it again"
    elif "readonly" in text or "read-only" in text:
        hint = "the file or its folder is not writable"
    else:
        hint = "cannot use the data file"
    return RagcovError(f"{path}: {text} ({hint})")


@contextmanager
def _sqlite_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise _database_error(path, exc) from exc


def _create_schema(con: sqlite3.Connection) -> None:
    for stmt in SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def _retriever_key(fp: dict[str, Any]) -> str:
    """The retriever identity compared across files, canonical JSON."""
    return json.dumps(fp, sort_keys=True)


class CoverageData:
    """A handle on one data file. Reading is lazy; writes are atomic."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DATA_FILE) -> None:
        self.path = Path(path)

    # ---------------------------------------------------------------- reading
    def exists(self) -> bool:
        return self.path.is_file()

    def _open(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise RagcovError(f"{self.path}: is a directory, not a data file")
        if not self.path.is_file():
            raise RagcovError(f"{self.path}: no data file (run 'ragcov run' first)")
        try:
            con = _connect(self.path)
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc) from exc
        try:
            rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError as exc:
            con.close()
            if "locked" in str(exc) or "unable to open" in str(exc):
                raise _database_error(self.path, exc) from exc
            raise RagcovError(f"{self.path}: not a ragcov data file ({exc})") from exc
        except sqlite3.DatabaseError as exc:
            con.close()
            raise RagcovError(f"{self.path}: not a ragcov data file ({exc})") from exc
        fmt = int(rows.get("format", "0"))
        if fmt > FORMAT_VERSION:
            con.close()
            raise RagcovError(
                f"{self.path}: data file format {fmt} is newer than this ragcov understands "
                f"(format {FORMAT_VERSION}); upgrade ragcov"
            )
        if fmt < 1:
            con.close()
            raise RagcovError(f"{self.path}: not a ragcov data file (no format version)")
        return con

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one read transaction: every statement sees one snapshot."""
        with closing(self._open()) as con, _sqlite_errors(self.path):
            con.execute("BEGIN")
            try:
                yield con
            finally:
                con.execute("COMMIT")

    def meta(self) -> Meta:
        with self._reading() as con:
            return _read_meta(con, self.path)

    def check_compatible(self, k: int, corpus_hash: str, retriever: dict[str, Any]) -> None:
        """Raise unless a run with these settings may be appended to this file."""
        _check_compatible(self.meta(), k, corpus_hash, retriever, str(self.path), "this run")

    def check_destination(self) -> None:
        """Raise unless this path may receive a data file: called before any work.

        A file that is not a ragcov data file (a coverage.py ``.coverage``, the
        corpus itself) is never replaced, and an unwritable folder is reported now
        rather than after an hour of retrieval.
        """
        if self.path.is_dir():
            raise RagcovError(f"{self.path}: is a directory; --data-file needs a file path")
        if self.path.exists():
            if not self.path.is_file():
                raise RagcovError(f"{self.path}: is not a regular file; refusing to replace it")
            try:
                self.meta()
            except RagcovError as exc:
                raise RagcovError(
                    f"{self.path}: exists and is not a readable ragcov data file; refusing to "
                    f"replace it (remove it or choose another --data-file): {exc}") from exc
        folder = self.path.parent if str(self.path.parent) else Path(".")
        existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            raise RagcovError(f"{self.path}: {existing} is not a directory")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise RagcovError(f"{self.path}: cannot write in {existing} (permission denied)")

    def check_integrity(self) -> None:
        """Raise when SQLite finds the file damaged (``PRAGMA quick_check``: linear, no index rebuild)."""
        with self._reading() as con:
            problems = [row[0] for row in con.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise RagcovError(f"{self.path}: database disk image is damaged ({problems[0]}); "
                              "rerun without --append to record it again")

    def pending(self, queries: Iterable[tuple[str, str]], k: int, corpus_hash: str,
                retriever: dict[str, Any]) -> list[tuple[str, str]]:
        """The ``(id, text)`` pairs an ``--append`` still has to retrieve.

        Checked before any retrieval work: the file must accept this run, and a
        recorded query id that now comes with a different text is an error rather
        than being silently skipped (its old hits would be reported as the new one's).
        """
        self.check_destination()
        queries = list(queries)
        if not self.exists():
            return queries
        self.check_compatible(k, corpus_hash, retriever)
        self.check_integrity()  # no hour of retrieval added to a file that is already broken
        recorded = self.query_texts()
        for qid, text in queries:
            if qid in recorded and recorded[qid] != text:
                raise _text_conflict(qid, recorded[qid])
        return [(qid, text) for qid, text in queries if qid not in recorded]

    def annotation(self, key: str) -> Any:
        """A JSON value stored beside the meta (e.g. ``index_recall``), or None."""
        with self._reading() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (f"x:{key}",)).fetchone()
        return json.loads(row[0]) if row else None

    def annotate(self, key: str, value: Any) -> None:
        """Store a JSON value beside the meta, in one transaction.

        Annotations are facts about a recording that must not take part in the
        compatibility checks of ``--append`` and ``combine`` (the fingerprint must
        stay identical across runs; a measured recall varies with its sample).
        """
        with closing(self._open()) as con, _sqlite_errors(self.path):
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        (f"x:{key}", json.dumps(value, sort_keys=True)))
            con.execute("COMMIT")

    def query_ids(self) -> set[str]:
        with self._reading() as con:
            return {r[0] for r in con.execute("SELECT id FROM queries")}

    def query_texts(self) -> dict[str, str]:
        with self._reading() as con:
            return dict(con.execute("SELECT id, text FROM queries").fetchall())

    def chunk_texts(self) -> dict[str, str]:
        with self._reading() as con:
            return {cid: text or "" for cid, text in con.execute("SELECT id, text FROM chunks")}

    def matrix(self) -> CoverageMatrix:
        """The sparse hit matrix of everything recorded."""
        import numpy as np

        from ragcov.matrix import CoverageMatrix

        # One read transaction: queries and hits from the same snapshot, even while
        # other processes append (separate reads once indexed hits of unseen queries).
        with self._reading() as con:
            meta = _read_meta(con, self.path)
            annotations = {key[2:]: json.loads(value) for key, value in con.execute(
                "SELECT key, value FROM meta WHERE key LIKE 'x:%'")}
            chunk_rows = con.execute(
                "SELECT id, doc_id, title FROM chunks ORDER BY idx").fetchall()
            query_rows = con.execute(
                "SELECT idx, id, text, context FROM queries ORDER BY idx").fetchall()
            # Straight into a structured array: no Python tuple per hit survives.
            hits = np.fromiter(
                con.execute("SELECT query_idx, chunk_idx, rank, COALESCE(score, 0.0), "
                            "score IS NULL FROM hits"),
                dtype=[("q", np.int64), ("c", np.int64), ("r", np.int32), ("s", np.float64),
                       ("null", np.bool_)])
        qidx = np.array([r[0] for r in query_rows], dtype=np.int64)
        position = np.zeros(int(qidx.max()) + 1 if qidx.size else 0, dtype=np.int64)
        position[qidx] = np.arange(qidx.size)
        rows, cols, ranks = position[hits["q"]], hits["c"], hits["r"]
        scores = np.where(hits["null"], np.nan, hits["s"])
        return CoverageMatrix.from_triples(
            rows, cols, ranks, scores,
            query_ids=[r[1] for r in query_rows], query_texts=[r[2] for r in query_rows],
            chunk_ids=[r[0] for r in chunk_rows], doc_ids=[r[1] for r in chunk_rows],
            k=meta.k, meta={**meta.as_dict(), **annotations},
            query_context=[r[3] for r in query_rows],
        )

    # ---------------------------------------------------------------- writing
    def write(self, corpus: Corpus, run: Run, append: bool = False,
              context: dict[str, str] | None = None) -> int:
        """Record ``run`` over ``corpus``; returns how many queries were added.

        Without ``append`` the file is replaced. With it, the file must have been
        made with the same k, corpus and retriever, and queries already recorded
        are kept as they were.
        """
        _check_run_against_corpus(run, corpus)
        if append and self.exists():
            return self._append(corpus, run, context or {})
        self.check_destination()
        meta = {
            "format": str(FORMAT_VERSION),
            "ragcov_version": _version(),
            "k": str(run.k),
            "retriever": _retriever_key(run.retriever),
            "corpus_hash": corpus.hash,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        # With append and no file yet, another process may create one meanwhile: publish
        # ours only if the path is still free, else append to theirs (nothing replaced).
        try:
            with atomic_path(self.path, replace=not append) as tmp, _sqlite_errors(tmp):
                tmp.unlink()
                with closing(_connect(tmp)) as con:
                    con.execute("BEGIN")
                    _create_schema(con)
                    con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
                    con.executemany(
                        "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                        ((i, c.id, c.doc_id, c.position, c.hash, c.title, c.text)
                         for i, c in enumerate(corpus)),
                    )
                    added = _insert_queries(con, corpus, run, {}, 0, context or {})
                    con.execute("COMMIT")
        except TargetExists:
            return self._append(corpus, run, context or {})
        return added

    def _append(self, corpus: Corpus, run: Run, context: dict[str, str]) -> int:
        with closing(self._open()) as con, _sqlite_errors(self.path):
            meta = _read_meta(con, self.path)
            _check_compatible(meta, run.k, corpus.hash, run.retriever, str(self.path), "this run")
            con.execute("BEGIN IMMEDIATE")
            try:
                existing = dict(con.execute("SELECT id, text FROM queries").fetchall())
                start = con.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM queries").fetchone()[0]
                added = _insert_queries(con, corpus, run, existing, start, context)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return added


def _version() -> str:
    from ragcov import __version__

    return __version__


def _read_meta(con: sqlite3.Connection, path: Path) -> Meta:
    rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    try:
        return Meta(format=int(rows["format"]), ragcov_version=rows["ragcov_version"],
                    k=int(rows["k"]), retriever=json.loads(rows["retriever"]),
                    corpus_hash=rows["corpus_hash"], created=rows["created"])
    except (KeyError, ValueError) as exc:
        raise RagcovError(f"{path}: damaged meta table ({exc})") from exc


def _check_run_against_corpus(run: Run, corpus: Corpus) -> None:
    unknown = corpus.unknown(run.chunk_ids())
    if unknown:
        shown = ", ".join(unknown[:20]) + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
        raise RagcovError(f"{len(unknown)} retrieved chunk id(s) are not in the corpus: {shown}")


def _insert_queries(con: sqlite3.Connection, corpus: Corpus, run: Run, existing: dict[str, str],
                    start: int, context: dict[str, str]) -> int:
    """Insert the run's queries not yet recorded; a recorded id must keep its text."""
    added = 0
    for qid, text in run.queries.items():
        if qid in existing:
            if existing[qid] != text:
                raise _text_conflict(qid, existing[qid])
            continue
        qidx = start + added
        con.execute("INSERT INTO queries VALUES (?, ?, ?, ?)", (qidx, qid, text, context.get(qid)))
        con.executemany(
            "INSERT INTO hits VALUES (?, ?, ?, ?)",
            ((qidx, corpus.index_of(cid), rank, score)
             for rank, (cid, score) in enumerate(run.results.get(qid, []), start=1)),
        )
        existing[qid] = text
        added += 1
    return added


def _text_conflict(qid: str, recorded: str) -> RagcovError:
    return RagcovError(f"query id {qid!r} is already recorded with a different text "
                       f"({recorded[:60]!r}); use a new id or a new data file")


def _check_compatible(meta: Meta, k: int, corpus_hash: str, retriever: dict[str, Any],
                      where: str, other: str) -> None:
    problems = []
    if meta.k != k:
        problems.append(f"k differs ({meta.k} in {where}, {k} in {other})")
    if meta.corpus_hash != corpus_hash:
        problems.append(f"the corpus differs (hash {meta.corpus_hash} in {where}, "
                        f"{corpus_hash} in {other})")
    if _retriever_key(meta.retriever) != _retriever_key(retriever):
        problems.append(f"the retriever differs ({_retriever_key(meta.retriever)} in {where}, "
                        f"{_retriever_key(retriever)} in {other})")
    if problems:
        raise RagcovError(f"cannot mix coverage data: {'; '.join(problems)}")


def combine(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Merge data files from sharded runs into ``out``; returns the number of queries.

    All inputs must share k, corpus and retriever. A query id recorded in several
    files must have the same text and hits in each (the same query run twice by
    one deterministic system); anything else is a conflict, not a silent merge.
    """
    if not paths:
        raise RagcovError("combine needs at least one data file")
    datas = [CoverageData(p) for p in paths]
    metas = [d.meta() for d in datas]
    first = metas[0]
    for d, m in zip(datas[1:], metas[1:]):
        _check_compatible(first, m.k, m.corpus_hash, m.retriever, str(datas[0].path), str(d.path))
    out_path = Path(out)
    if out_path.resolve() not in {d.path.resolve() for d in datas}:
        CoverageData(out_path).check_destination()
    with atomic_path(out_path) as tmp, _sqlite_errors(out_path):
        tmp.unlink()
        with closing(_connect(tmp)) as con:
            con.execute("BEGIN")
            _create_schema(con)
            meta = first.as_dict()
            meta["retriever"] = _retriever_key(first.retriever)
            meta["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            meta["ragcov_version"] = _version()
            con.executemany("INSERT INTO meta VALUES (?, ?)", ((k, str(v)) for k, v in meta.items()))
            seen: dict[str, tuple[str, list[tuple[int, int, float | None]]]] = {}
            next_idx = 0
            for n, d in enumerate(datas):
                with d._reading() as src:
                    if n == 0:
                        con.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                                        src.execute("SELECT * FROM chunks ORDER BY idx"))
                        # Annotations (e.g. a measured index recall) of the first file.
                        con.executemany("INSERT INTO meta VALUES (?, ?)", src.execute(
                            "SELECT key, value FROM meta WHERE key LIKE 'x:%'"))
                    hits: dict[int, list[tuple[int, int, float | None]]] = {}
                    for q, c, r, s in src.execute(
                            "SELECT query_idx, chunk_idx, rank, score FROM hits ORDER BY query_idx, rank"):
                        hits.setdefault(q, []).append((c, r, s))
                    for qidx, qid, text, ctx in src.execute(
                            "SELECT idx, id, text, context FROM queries ORDER BY idx"):
                        qhits = hits.get(qidx, [])
                        if qid in seen:
                            old_text, old_hits = seen[qid]
                            if old_text != text or [h[:2] for h in old_hits] != [h[:2] for h in qhits]:
                                raise RagcovError(
                                    f"cannot combine: query {qid!r} has different text or hits in "
                                    f"{d.path} than in an earlier file"
                                )
                            continue
                        seen[qid] = (text, qhits)
                        con.execute("INSERT INTO queries VALUES (?, ?, ?, ?)", (next_idx, qid, text, ctx))
                        con.executemany("INSERT INTO hits VALUES (?, ?, ?, ?)",
                                        ((next_idx, c, r, s) for c, r, s in qhits))
                        next_idx += 1
            con.execute("COMMIT")
    return next_idx
