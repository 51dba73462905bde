"""CoverageData: a handle on one data file (``.ragcov``).

Atomicity: a new file is built under a temporary name and renamed into place;
additions to an existing file happen in a single SQLite transaction, so a crash
leaves either the old file or the new one, never half of a run. Concurrency: every
writer (append, combine, erase, a run that replaces the file) takes its turn
(:func:`ragcov.data.schema.write_lock`) before it opens the file, so none commits
to a file another has just replaced or removed; an ``--append`` that finds no file
publishes its new file only if none appeared in the meantime (a hard link never
replaces); every read of the matrix happens in one read transaction, so it never
sees half of another process's append. Safety: a file that is not a ragcov data
file is never replaced, rows ragcov never writes are refused on read, and SQLite's
own errors (a damaged page, a locked file) surface as one line naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Collection, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.data.checks import check_appendable, check_read, first_problem, refuse
from ragcov.data.inserts import QUERIES_AT_ONCE, hit_columns, insert_columns, insert_rows
from ragcov.data.locking import open_for_reading, write_lock, writers_turn
from ragcov.data.names import DEFAULT_DATA_FILE
from ragcov.data.schema import (
    DataFileLocked,
    Meta,
    NoDataFile,
    create_tables,
    has_tables,
    is_empty,
    new_file,
    new_meta,
    read_meta,
    rows_in,
    sqlite_errors,
)
from ragcov.data.spans import add_spans, write_spans
from ragcov.data.totals import Totals, kept_covered, read_totals, store_totals, with_chunks
from ragcov.destinations import unwritable_reason, written_path
from ragcov.errors import RagcovError
from ragcov.files import TargetExists, atomic_path, check_destination

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.matrix import CoverageMatrix
    from ragcov.retrieval import Run


# Annotation key of the corpus's resolved path (a file or a folder).
CORPUS_SOURCE = "corpus_source"
QUERY_SOURCES = "query_sources"
# "store" when the corpus was read from a vector store: its read order is the store's, so a
# report lists a store's chunks by id, not by position (which a deleted chunk shifts).
CORPUS_KIND = "corpus_kind"
# Questions written by ``ragcov generate`` (id -> {"source", "hit_target"}): kept out of the
# suite's totals and gates until accepted, i.e. recorded again from the user's own suite.
GENERATED = "generated"
# The scripts the corpus is written in (script -> share of its letters, from a sample of
# its text): what a report says of the corpus's languages, read without its chunks.
SCRIPTS = "scripts"
# Annotation key of the measured recall of an approximate index (a report's caveat).
INDEX_RECALL = "index_recall"
# Each pytest test's outcome (node id -> passed, failed, skipped), kept across sessions, and
# every test that asked each question (query id -> node ids): what faults and pass rates read.
OUTCOMES = "outcomes"
QUERY_TESTS = "query_tests"


class CoverageData:
    """A handle on one data file. Reading is lazy; writes are atomic."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DATA_FILE) -> None:
        self.path = Path(path)

    # ---------------------------------------------------------------- reading
    def exists(self) -> bool:
        """A data file is there; a 0-byte file (``touch``, a killed ``>``) holds no data."""
        return self.path.is_file() and not is_empty(self.path)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one read transaction: every statement sees one snapshot.

        Inside :meth:`snapshot` of the same file (on this thread) it is that snapshot's
        connection, whichever reader asks: a report's matrix, probes, texts and
        positions then come from one state of the file, never from two on either side
        of a concurrent append."""
        held = _held_snapshot(self.path)
        if held is not None:
            yield held
            return
        with closing(open_for_reading(self.path)) as con, sqlite_errors(self.path):
            try:
                yield con
            finally:
                # A read has nothing to commit: SQLite may already have ended the
                # transaction (another process swapped the file in meanwhile), and that
                # must not turn a finished read into "not a readable data file".
                if con.in_transaction:
                    con.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read of this file inside the block, by any reader on this thread, in one
        read transaction (one snapshot; writers wait for it, as for any reader)."""
        key = _snapshot_key(self.path)
        held = getattr(_SNAPSHOTS, "by_path", None)
        if held is None:
            held = _SNAPSHOTS.by_path = {}
        if key in held:  # already inside one: the outer snapshot is the one
            yield
            return
        with self.reading() as con:
            con.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts here
            held[key] = con
            try:
                yield
            finally:
                del held[key]

    def meta(self) -> Meta:
        with self.reading() as con:
            return read_meta(con, self.path)

    def check_compatible(self, k: int, corpus_hash: str, retriever: dict[str, Any],
                         corpus: Corpus | None = None) -> None:
        """Raise unless a run with these settings may be appended to this file.

        Given the ``corpus``, a corpus that differs only in document ids is named as such.
        """
        with self.reading() as con:
            check_appendable(con, self.path, read_meta(con, self.path), k, corpus_hash, retriever,
                             corpus)

    def check_destination(self) -> None:
        """Raise unless this path may receive a data file: called before any work.

        A file that is not a ragcov data file (a coverage.py ``.coverage``, the
        corpus itself) is never replaced, and an unwritable folder is reported now
        rather than after an hour of retrieval.
        """
        if str(self.path) == "-":  # every other output takes - for stdout; SQLite cannot
            raise RagcovError("-: a data file cannot go to stdout (it is a SQLite file); give "
                              "--data-file a file path")
        check_destination(self.path)  # a link another user planted, or one in the cache
        # One stat, not exists() then is_file(): a file an erase or a combine's rename takes
        # away between two looks is gone (the path is free), not "not a regular file".
        try:
            st: os.stat_result | None = self.path.stat()
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise RagcovError(f"{self.path}: is a directory; --data-file needs a file path")
        # A 0-byte regular file (touch, a killed >) holds no data: it may be replaced.
        if st is not None and not (stat.S_ISREG(st.st_mode) and st.st_size == 0):
            if not stat.S_ISREG(st.st_mode):
                raise RagcovError(f"{self.path}: is not a regular file; refusing to replace it")
            try:
                self.meta()
            except NoDataFile:
                pass  # erased since the check above: the path is free
            except DataFileLocked:
                raise  # a valid file another process is writing: never advise removing it
            except RagcovError as exc:
                vanished = not os.path.lexists(self.path)
                # Erased while SQLite opened it ("unable to open database file"): the path
                # is free, as when the erase came before the open.
                if not vanished:
                    raise RagcovError(
                        f"{self.path}: exists and is not a readable ragcov data file; "
                        "refusing to replace it (remove it or choose another --data-file): "
                        f"{exc}") from exc
        reason = unwritable_reason(self.path)
        if reason is not None:
            raise RagcovError(f"{self.path}: {reason}; refusing to change it (make it writable "
                              "or choose another --data-file)")
        # A symlink is written through to its target, so the target's folder must take it.
        folder = written_path(self.path).parent
        existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            raise RagcovError(f"{self.path}: {existing} is not a directory")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise RagcovError(f"{self.path}: cannot write in {existing} (permission denied)")

    def check_integrity(self) -> None:
        """Raise when SQLite finds the file damaged (``PRAGMA quick_check``: linear, no index rebuild)."""
        with self.reading() as con:
            problems = [row[0] for row in con.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise RagcovError(f"{self.path}: database disk image is damaged "
                              f"({first_problem(problems)}); rerun without --append to record it again")

    def pending(self, queries: Iterable[tuple[str, str]], k: int, corpus_hash: str,
                retriever: dict[str, Any], corpus: Corpus | None = None) -> list[tuple[str, str]]:
        """The ``(id, text)`` pairs an ``--append`` still has to retrieve.

        Checked before any retrieval work: the file must accept this run, and a
        recorded query id that now comes with a different text is an error rather
        than being silently skipped (its old hits would be reported as the new one's).
        """
        self.check_destination()
        queries = list(queries)
        if not self.exists():
            return queries
        try:
            self.check_compatible(k, corpus_hash, retriever, corpus)
            self.check_integrity()  # no hour of retrieval added to a file that is already broken
            recorded = self.query_texts()
        except NoDataFile:  # erased meanwhile: nothing is recorded
            return queries
        for qid, text in queries:
            if qid in recorded and recorded[qid] != text:
                raise _text_conflict(qid, recorded[qid])
        return [(qid, text) for qid, text in queries if qid not in recorded]

    def annotation(self, key: str) -> Any:
        """A JSON value stored beside the meta (e.g. ``index_recall``), or None."""
        with self.reading() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (f"x:{key}",)).fetchone()
        return json.loads(row[0]) if row else None

    def annotate(self, key: str, value: Any) -> None:
        """Store a JSON value beside the meta, in one transaction.

        Annotations are facts about a recording that must not take part in the
        compatibility checks of ``--append`` and ``combine`` (the fingerprint must
        stay identical across runs; a measured recall varies with its sample).
        """
        with write_lock(self.path) as con:
            if con is None or not has_tables(con):
                raise RagcovError(f"{self.path}: no data file (run 'ragcov run' first)")
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        (f"x:{key}", json.dumps(value, sort_keys=True)))

    def totals(self, include_generated: bool = False) -> Totals | None:
        """The chunks, covered chunks, queries and k a gate compares, without reading the rows
        back (:mod:`ragcov.data.totals`); None for a file whose meta they cannot be
        counted from (the matrix's read names the damage)."""
        with self.reading() as con:
            return read_totals(con, self.path, include_generated)

    def query_texts(self) -> dict[str, str]:
        with self.reading() as con:
            return dict(con.execute("SELECT id, text FROM queries").fetchall())

    def chunk_texts(self) -> dict[str, str]:
        with self.reading() as con:
            return dict(con.execute("SELECT id, coalesce(text, '') FROM chunks"))

    def suite_matrix(self) -> CoverageMatrix:
        """The hit matrix of the suite: everything recorded less the questions ``ragcov
        generate`` wrote that no suite has accepted yet (what select, probe and a run's
        summary count, as every report does)."""
        m = self.matrix()
        generated = (m.meta or {}).get(GENERATED) or {}
        if not generated:
            return m
        return m.select_rows([i for i, q in enumerate(m.query_ids) if q not in generated])

    def matrix(self) -> CoverageMatrix:
        """The sparse hit matrix of everything recorded."""
        import numpy as np

        from ragcov.matrix import CoverageMatrix

        # One read transaction: queries and hits from the same snapshot, even while
        # other processes append (separate reads once indexed hits of unseen queries).
        with self.reading() as con:
            meta = read_meta(con, self.path)
            annotations = {key[2:]: json.loads(value) for key, value in con.execute(
                "SELECT key, value FROM meta WHERE key LIKE 'x:%'")}
            chunk_rows = con.execute(
                "SELECT id, doc_id, title FROM chunks ORDER BY idx").fetchall()
            query_rows = con.execute(
                "SELECT idx, id, text, context FROM queries ORDER BY idx").fetchall()
            # Straight into a structured array: no Python tuple per hit survives.
            try:
                hits = np.fromiter(
                    con.execute("SELECT query_idx, chunk_idx, rank, COALESCE(score, 0.0), "
                                "score IS NULL FROM hits"),
                    dtype=[("q", np.int64), ("c", np.int64), ("r", np.int32), ("s", np.float64),
                           ("null", np.bool_)])
            except (TypeError, ValueError, OverflowError):  # a text or blob where a number goes
                refuse(con, self.path)
            qidx = np.array([r[0] for r in query_rows], dtype=np.int64)
            position = np.zeros(int(qidx.max()) + 1 if qidx.size else 0, dtype=np.int64)
            position[qidx] = np.arange(qidx.size)
            check_read(con, self.path, hits, qidx, chunk_rows, query_rows, meta.k)
        rows, cols, ranks = position[hits["q"]], hits["c"], hits["r"]
        # An infinite score (an older file may hold one) is no score, as NULL is.
        scores = np.where(hits["null"] | ~np.isfinite(hits["s"]), np.nan, hits["s"])
        return CoverageMatrix.from_triples(
            rows, cols, ranks, scores,
            query_ids=[r[1] for r in query_rows], query_texts=[r[2] for r in query_rows],
            chunk_ids=[r[0] for r in chunk_rows], doc_ids=[r[1] for r in chunk_rows],
            k=meta.k, meta={**meta.as_dict(), **annotations},
            query_context=[r[3] for r in query_rows],
        )

    # ---------------------------------------------------------------- writing
    def write(self, corpus: Corpus, run: Run, append: bool = False,
              context: dict[str, str] | None = None, same_hits: bool = False,
              generated: dict[str, dict[str, Any]] | None = None, accept: Iterable[str] = ()
              ) -> int:
        """Record ``run`` over ``corpus``; returns how many queries were added.

        Without ``append`` the file is replaced. With it, the file must have been
        made with the same k, corpus and retriever, and queries already recorded
        are kept as they were. With ``same_hits`` (an import, whose hits are the
        record itself) a recorded query the run gives other hits is refused: keeping
        the recorded list would drop the new one unseen. ``generated`` marks the run's
        queries as written by ``ragcov generate`` (in the same transaction); any other
        write of a marked id, or of an id in ``accept`` (the whole suite of a ``run``,
        recorded ids included), accepts it: the user's suite now holds it.
        """
        _check_run_against_corpus(run, corpus)
        marks = _Marks(generated or {}, () if generated else (run.queries, accept))
        if append:
            return self._append(corpus, run, context or {}, same_hits, marks)
        self.check_destination()
        # In the writers' turn: an appender mid-transaction keeps its file (and its journal,
        # which SQLite finds by name) until it commits; one that waits appends to ours.
        with writers_turn(self.path):
            return self._create(corpus, run, context or {}, replace=True, marks=marks)

    def _create(self, corpus: Corpus, run: Run, context: dict[str, str], replace: bool,
                marks: _Marks | None = None) -> int:
        """A new file, built aside and published; without ``replace`` only if the path is free."""
        meta = new_meta(run.k, run.retriever, corpus.hash)
        with (atomic_path(self.path, replace=replace) as tmp, sqlite_errors(tmp),
              new_file(tmp, meta) as con):
            _insert_chunks(con, corpus)
            covered: set[int] = set()
            added = _insert_queries(con, corpus, run, {}, 0, context, covered)
            _mark_generated(con, marks)
            # Topics describe the corpus, not the run: a new recording keeps the old one's
            # (stale, and said to be, when the corpus changed).
            from ragcov.data.topics import carry_topics

            carry_topics(self.path, con)
            # What a gate reads: the hits just written are every hit of the new file.
            store_totals(con, covered=covered)
            return added

    def _append(self, corpus: Corpus, run: Run, context: dict[str, str],
                same_hits: bool = False, marks: _Marks | None = None) -> int:
        # Under the write lock that combine and erase take too, so an append never lands
        # in a file they have just replaced or removed.
        while True:
            with write_lock(self.path) as con:
                if con is None:  # no file (or erased since): a new one, if the path is still free
                    self.check_destination()
                    try:
                        return self._create(corpus, run, context, replace=False, marks=marks)
                    except TargetExists:
                        continue  # made meanwhile by a writer that takes no turn: append to it
                if not has_tables(con):  # an empty file (touch, a killed >): no data yet
                    create_tables(con, new_meta(run.k, run.retriever, corpus.hash))
                    _insert_chunks(con, corpus)
                check_appendable(con, self.path, read_meta(con, self.path), run.k, corpus.hash,
                                 run.retriever, corpus)
                # Spans this run knows (--documents) and the file was recorded without: kept.
                add_spans(con, corpus)
                start = con.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM queries").fetchone()[0]
                existing = _recorded_texts(con, run.queries, start)
                if same_hits:
                    _check_recorded_hits(con, corpus, run, existing)
                kept = kept_covered(con)  # read before any row is written (the rows' own key)
                covered: set[int] = set()
                added = _insert_queries(con, corpus, run, existing, start, context, covered)
                _mark_generated(con, marks)
                # In the append's transaction: never a total of other rows. The kept chunks
                # and this append's are every chunk the hits name; without them, SQL counts.
                store_totals(con, None if kept is None else with_chunks(kept, covered, len(corpus)))
                return added


@dataclass(frozen=True)
class _Marks:
    """Generated questions to mark (id -> mark), and the ids whose marks a write accepts."""

    mark: dict[str, dict[str, Any]]
    accept: tuple[Iterable[str], ...] = ()


def _mark_generated(con: sqlite3.Connection, marks: _Marks | None) -> None:
    """Mark the generated questions, or accept marked ones this write records again."""
    if marks is None:
        return
    row = con.execute("SELECT value FROM meta WHERE key = ?", (f"x:{GENERATED}",)).fetchone()
    if row is None and not marks.mark:
        return  # nothing ever generated here: nothing to accept
    marked: dict[str, Any] = json.loads(row[0]) if row else {}
    before = len(marked)
    marked.update(marks.mark)
    accepted = {qid for ids in marks.accept for qid in ids if qid in marked}  # each once
    for qid in accepted:
        del marked[qid]
    if marks.mark or len(marked) != before:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    (f"x:{GENERATED}", json.dumps(marked, sort_keys=True)))


@contextmanager
def one_read(data_file: str | os.PathLike[str]) -> Iterator[None]:
    """Every read of ``data_file`` in the block (a command's output checks, its report) in
    one snapshot: a concurrent ``--append`` lands before it or after it, never in between.
    A missing file is left to the command's own reader to report."""
    data = CoverageData(data_file)
    if not data.exists():
        yield
        return
    with data.snapshot():
        yield


# The snapshots open on each thread (a connection serves the thread that opened it).
_SNAPSHOTS = threading.local()


def _snapshot_key(path: Path) -> str:
    return os.path.realpath(path)


def _held_snapshot(path: Path) -> sqlite3.Connection | None:
    held = getattr(_SNAPSHOTS, "by_path", None)
    return held.get(_snapshot_key(path)) if held else None


def _insert_chunks(con: sqlite3.Connection, corpus: Corpus) -> None:
    insert_rows(con, "chunks", 7, ((i, c.id, c.doc_id, c.position, c.hash, c.title, c.text)
                                   for i, c in enumerate(corpus)))
    write_spans(con, corpus)  # where each chunk lies in its document, when that is known


def _check_run_against_corpus(run: Run, corpus: Corpus) -> None:
    unknown = corpus.unknown(run.chunk_ids())
    if unknown:
        shown = ", ".join(unknown[:20]) + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else "")
        from ragcov.retrieval import mismatch_hint

        raise RagcovError(f"{len(unknown)} retrieved chunk id(s) are not in the corpus: {shown}. "
                          f"{mismatch_hint(unknown, corpus)}")


def _recorded_texts(con: sqlite3.Connection, ids: Collection[str], start: int) -> dict[str, str]:
    """The recorded text of each of ``ids`` the file holds (the ones an append must keep).

    A small append to a large file looks its ids up in the id index: reading every
    recorded query (a million ids and texts) cost more than the append itself. An append
    of as many queries as a quarter of ``start`` (the file's next idx, about its queries)
    or more reads them all, which is then the cheaper way.
    """
    if len(ids) * 4 >= start:
        return dict(con.execute("SELECT id, text FROM queries").fetchall())
    return dict(rows_in(con, "SELECT id, text FROM queries WHERE id IN ({marks})", list(ids)))


def _check_recorded_hits(con: sqlite3.Connection, corpus: Corpus, run: Run,
                         existing: dict[str, str]) -> None:
    """Refuse a run that gives a recorded query other hits (chunks in rank order)."""
    again = [qid for qid in run.queries if qid in existing]
    for qid in again:  # through the query id's own index: no second read of every query
        recorded = [row[0] for row in con.execute(
            "SELECT h.chunk_idx FROM queries q JOIN hits h ON h.query_idx = q.idx "
            "WHERE q.id = ? ORDER BY h.rank", (qid,))]
        if recorded != [corpus.index_of(cid) for cid, _s in run.results.get(qid, [])]:
            raise RagcovError(
                f"query {qid!r} is already recorded with other hits ({len(again)} of this "
                f"import's queries are recorded already); an append keeps recorded queries as "
                f"they were, so the new list would be lost: import into another data file "
                f"(then `ragcov diff`), or give the queries ids of their own")


def _insert_queries(con: sqlite3.Connection, corpus: Corpus, run: Run, existing: dict[str, str],
                    start: int, context: dict[str, str], covered: set[int] | None = None) -> int:
    """Insert the run's queries not yet recorded; a recorded id must keep its text.

    The query rows and the hit rows go in hundreds to a statement
    (:mod:`ragcov.data.inserts`): a million imported retrievals are a few thousand
    statements, not six million. The hits go as columns, a slice of queries at a time
    (no tuple per hit, and no column of the whole run held at once); ``covered``, when
    given, collects the chunk idx every written hit names.
    """
    _record_corpus_source(con, corpus)
    _record_query_source(con, run.source)
    new: list[tuple[int, str, str, str | None]] = []
    for qid, text in run.queries.items():
        if qid in existing:
            if existing[qid] != text:
                raise _text_conflict(qid, existing[qid])
            continue
        new.append((start + len(new), qid, text, context.get(qid)))
        existing[qid] = text
    insert_rows(con, "queries", 4, new)
    for i in range(0, len(new), QUERIES_AT_ONCE):
        part = new[i:i + QUERIES_AT_ONCE]
        columns = hit_columns(corpus, [q[0] for q in part],
                              [run.results.get(q[1], []) for q in part])
        insert_columns(con, "hits", columns)
        if covered is not None:
            covered.update(columns[1])
    return len(new)



def _record_corpus_source(con: sqlite3.Connection, corpus: Corpus) -> None:
    """Where the corpus file or folder is, so no report output is ever written over it.

    An annotation, not meta: it takes no part in the checks of ``--append`` and
    ``combine``. A store URL is never recorded (it may hold a key).
    """
    if getattr(corpus, "store", None) is not None:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"x:{CORPUS_KIND}", '"store"'))
    if con.execute("SELECT 1 FROM meta WHERE key = ?", (f"x:{SCRIPTS}",)).fetchone() is None:
        from ragcov.analyzer import script_shares

        shares = {s: round(v, 4) for s, v in script_shares(corpus.texts).items()}
        con.execute("INSERT INTO meta VALUES (?, ?)", (f"x:{SCRIPTS}", json.dumps(shares)))
    source = getattr(corpus, "source", None)
    if source and os.path.exists(source):
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    (f"x:{CORPUS_SOURCE}", json.dumps(os.path.realpath(source))))


def _record_query_source(con: sqlite3.Connection, source: str | None) -> None:
    """Every query file recorded into this data file (appends add theirs), for the same
    reason as the corpus's: no report (``select --suite-out``, ``gap -o`` ...) may replace
    the user's suite."""
    if not source or not os.path.isfile(source):
        return
    row = con.execute("SELECT value FROM meta WHERE key = ?", (f"x:{QUERY_SOURCES}",)).fetchone()
    known = json.loads(row[0]) if row else []
    real = os.path.realpath(source)
    if real not in known:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    (f"x:{QUERY_SOURCES}", json.dumps([*known, real])))


def _text_conflict(qid: str, recorded: str) -> RagcovError:
    return RagcovError(f"query id {qid!r} is already recorded with a different text "
                       f"({recorded[:60]!r}); use a new id or a new data file")
