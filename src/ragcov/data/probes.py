"""Self-query probes in the data file, kept apart from the test queries.

Probes answer "can the retriever return this chunk at all?", a question about the
retriever, not about the suite: they live in their own two tables so that no
reader of the test matrix (``CoverageData.matrix``, ``combine``, every reporter)
can ever count them, and a suite's coverage is the same before and after a probe
run. The tables are created on first use; a file without them simply has no
probes, so files written before probes existed need no migration and older
readers ignore the tables.

Like an ``--append``, probes are added in transactions of one batch each: an
interrupted ``ragcov probe`` keeps every batch it committed and a rerun retrieves
only the probes not yet recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragcov.data.checks import check_probe_rows
from ragcov.data.inserts import hit_columns, insert_columns, insert_rows
from ragcov.data.locking import write_lock
from ragcov.data.schema import read_meta, rows_in
from ragcov.errors import RagcovError
from ragcov.matrix import csr_arrays

if TYPE_CHECKING:
    from pathlib import Path

    import scipy.sparse as sp

    from ragcov.corpus import Corpus
    from ragcov.data.datafile import CoverageData
    from ragcov.fields import Ranked

PROBE_SCHEMA = """
CREATE TABLE IF NOT EXISTS probes (
    idx INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, chunk_idx INTEGER NOT NULL,
    kind TEXT NOT NULL, text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS probe_hits (
    probe_idx INTEGER NOT NULL, chunk_idx INTEGER NOT NULL, rank INTEGER NOT NULL, score REAL,
    PRIMARY KEY (probe_idx, rank)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class ProbeRow:
    """One self-query: its id, the chunk it was built from, how, and its text."""

    id: str
    chunk: int   # the corpus position of the chunk the probe was built from
    kind: str    # "terms", "sentence" or "llm"
    text: str


@dataclass
class ProbeMatrix:
    """Every recorded probe and its top-k, as a sparse (probes x chunks) matrix.

    ``indptr``, ``indices`` and ``rank_data`` are the canonical CSR arrays of the
    1-based ranks (scipy's ``ranks`` is built from them on first use, so a report
    reads probes without importing scipy); ``source`` is, per probe row, the corpus
    position of the chunk the probe was built from.
    """

    ids: list[str]
    source: np.ndarray      # int64, per probe
    kinds: list[str]
    n_chunks: int
    indptr: np.ndarray
    indices: np.ndarray
    rank_data: np.ndarray   # int32 1-based rank
    _ranks: sp.csr_matrix | None = field(default=None, repr=False)

    @property
    def n_probes(self) -> int:
        return len(self.ids)

    @property
    def ranks(self) -> sp.csr_matrix:
        """(n_probes, n_chunks), int32 1-based rank, scipy CSR."""
        if self._ranks is None:
            import scipy.sparse as sp

            self._ranks = sp.csr_matrix((self.rank_data, self.indices, self.indptr),
                                        shape=(self.n_probes, self.n_chunks))
            self._ranks.has_sorted_indices = True
        return self._ranks

    def k_occurrence(self) -> np.ndarray:
        """Per chunk, the number of probe top-k lists it appears in."""
        return np.bincount(self.indices, minlength=self.n_chunks).astype(np.int64)

    def first_hits(self) -> np.ndarray:
        """Per probe, the chunk it ranked first (-1 when it retrieved nothing)."""
        first = np.full(self.n_probes, -1, dtype=np.int64)
        rows = np.repeat(np.arange(self.n_probes), np.diff(self.indptr))
        at_one = self.rank_data == 1
        first[rows[at_one]] = self.indices[at_one]
        return first


def _ensure(con) -> None:  # type: ignore[no-untyped-def]
    for stmt in PROBE_SCHEMA.strip().split(";"):
        if stmt.strip():
            con.execute(stmt)


def _has_tables(con) -> bool:  # type: ignore[no-untyped-def]
    row = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                      "AND name IN ('probes', 'probe_hits')").fetchone()
    return row[0] == 2


def recorded_probe_ids(data: CoverageData) -> set[str]:
    """The ids of the probes the file already holds (a resumed run skips them)."""
    with data.reading() as con:
        if not _has_tables(con):
            return set()
        return {r[0] for r in con.execute("SELECT id FROM probes")}


def append_probes(data: CoverageData, corpus: Corpus, k: int, retriever: dict,
                  rows: Sequence[ProbeRow], results: Sequence[Ranked],
                  after: Callable[[Any, dict[str, int]], None] | None = None) -> int:
    """Record one batch of probes and their ranked chunks in one transaction.

    The file's k, corpus and retriever are checked inside the transaction, so a
    probe run can never land in a file another process re-recorded meanwhile.
    ``after`` writes more in the same transaction (the batch's stage rows,
    :mod:`ragcov.data.stages`), given the new probes' ids and their idx.
    """
    from ragcov.data.schema import check_compatible

    if len(rows) != len(results):
        raise RagcovError(f"{len(results)} result lists for {len(rows)} probes")
    # The writers' turn, as ``--append`` takes it: a ``combine`` or ``erase`` replacing the
    # file waits for this batch, and this batch never lands in a file they replaced.
    with write_lock(data.path) as con:
        if con is None:
            raise RagcovError(f"{data.path}: no coverage data (removed while probing?); run "
                              "`ragcov run` again, then `ragcov probe`")
        meta = read_meta(con, data.path)
        check_compatible(meta, k, corpus.hash, retriever, str(data.path), "this probe run")
        _ensure(con)
        # Only this batch's ids are looked up (the UNIQUE index): a million probes
        # recorded in batches never re-read what earlier batches wrote.
        known = {r[0] for r in rows_in(con, "SELECT id FROM probes WHERE id IN ({marks})",
                                       [row.id for row in rows])}
        start = con.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM probes").fetchone()[0]
        new = [(row, ranked) for row, ranked in zip(rows, results) if row.id not in known]
        insert_rows(con, "probes", 5, ((start + i, row.id, row.chunk, row.kind, row.text)
                                       for i, (row, _) in enumerate(new)))
        insert_columns(con, "probe_hits", hit_columns(corpus, list(range(start, start + len(new))),
                                                      [ranked for _, ranked in new]))
        if after is not None:
            after(con, {row.id: start + i for i, (row, _) in enumerate(new)})
    return len(new)


def read_probes(data: CoverageData, n_chunks: int) -> ProbeMatrix | None:
    """The file's probes as a matrix, or None when no probe was ever run on it."""
    with data.reading() as con:
        if not _has_tables(con):
            return None
        # A column at a time, each streamed: two million probes' rows fetched whole as
        # tuples held 350 MB more at the audit that ends a 1M-chunk probe.
        def column(name: str) -> Iterator[Any]:
            return (v for (v,) in con.execute(f"SELECT {name} FROM probes ORDER BY idx"))

        ids = list(column("id"))
        one_each: dict[Any, Any] = {}  # a few kinds, each held once
        kinds = [one_each.setdefault(v, v) for v in column("kind")]
        # Cheap checks on what is read; the full check runs only to word an error.
        try:
            hits = np.fromiter(con.execute("SELECT probe_idx, chunk_idx, rank FROM probe_hits"),
                               dtype=[("p", np.int64), ("c", np.int64), ("r", np.int32)])
            pidx = np.fromiter(column("idx"), dtype=np.int64, count=len(ids))
            source = np.fromiter(column("chunk_idx"), dtype=np.int64, count=len(ids))
        except (TypeError, ValueError, OverflowError):  # a text or blob where a number goes
            check_probe_rows(con, data.path)
            raise RagcovError(f"{data.path}: damaged probe tables; run `ragcov probe` again on "
                              "a new recording") from None
        if (hits.size and hits["r"].min() < 1) or not all(type(v) is str for v in ids) \
                or not all(type(v) is str for v in one_each):
            check_probe_rows(con, data.path)
    if not ids:
        return None
    _check_positions(data, n_chunks, source, hits["c"])
    position = np.zeros(int(pidx.max()) + 1, dtype=np.int64)
    position[pidx] = np.arange(pidx.size)
    if hits.size and (hits["p"].min() < 0 or hits["p"].max() > pidx.max()):
        raise RagcovError(f"{data.path}: damaged probe_hits table (a hit of an unknown probe)")
    rows, shape = position[hits["p"]], (len(ids), n_chunks)
    arrays = csr_arrays(rows, hits["c"], shape)
    if arrays is None:  # a probe that retrieved one chunk twice: scipy's summing rule
        import scipy.sparse as sp

        ranks = sp.csr_matrix((hits["r"], (rows, hits["c"])), shape=shape, dtype=np.int32)
        ranks.sort_indices()
        arrays = (ranks.indptr, ranks.indices, None)
        rank_data = ranks.data
    else:
        rank_data = hits["r"][arrays[2]]
    return ProbeMatrix(ids=ids, source=source, kinds=kinds, n_chunks=n_chunks,
                       indptr=arrays[0], indices=arrays[1], rank_data=rank_data)


def _check_positions(data: CoverageData, n_chunks: int, *arrays: np.ndarray) -> None:
    """A hit or probe naming a chunk the file does not hold is a damaged file, said in one line."""
    for a in arrays:
        if a.size and (a.min() < 0 or a.max() >= n_chunks):
            raise RagcovError(f"{data.path}: damaged probe tables (a chunk position outside "
                              f"0..{n_chunks - 1}); run `ragcov probe` again on a new recording")


def chunk_details(data: CoverageData, positions: Sequence[int]) -> dict[int, tuple[str, str]]:
    """(text, content hash) of the chunks at ``positions``: only what a reason needs."""
    out: dict[int, tuple[str, str]] = {}
    with data.reading() as con:
        for idx, text, digest in rows_in(con, "SELECT idx, text, hash FROM chunks WHERE idx IN "
                                         "({marks})", positions):
            out[int(idx)] = (text or "", digest)
    missing = [p for p in positions if p not in out]
    if missing:
        raise RagcovError(f"{data.path}: damaged chunks table (no chunk at position {missing[0]})")
    return out


def probe_texts(data: CoverageData, ids: Sequence[str]) -> dict[str, str]:
    """The texts of the probes with these ids (the drafts of untested chunks' tests)."""
    out: dict[str, str] = {}
    with data.reading() as con:
        out.update((str(pid), str(text)) for pid, text in rows_in(
            con, "SELECT id, text FROM probes WHERE id IN ({marks})", ids))
    return out


def copy_probes(con, src, seen: set[str], path: Path) -> None:  # type: ignore[no-untyped-def]
    """Copy the probes of ``src`` whose ids are not in ``seen`` into ``con`` (a combine).

    Inputs share one corpus, so a probe's chunk positions hold in the output as they
    are. Without this a combine (``--append`` into a probed file) would drop the probes
    the user paid for, and ``--reachable`` would find none.
    """
    if not _has_tables(src):
        return
    check_probe_rows(src, path)
    _ensure(con)
    next_idx = con.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM probes").fetchone()[0]
    hits: dict[int, list[tuple[int, int, float | None]]] = {}
    for p, c, r, s in src.execute("SELECT probe_idx, chunk_idx, rank, score FROM probe_hits"):
        hits.setdefault(p, []).append((c, r, s))
    for idx, pid, chunk, kind, text in src.execute(
            "SELECT idx, id, chunk_idx, kind, text FROM probes ORDER BY idx"):
        if pid in seen:
            continue
        seen.add(pid)
        con.execute("INSERT INTO probes VALUES (?, ?, ?, ?, ?)", (next_idx, pid, chunk, kind, text))
        con.executemany("INSERT INTO probe_hits VALUES (?, ?, ?, ?)",
                        [(next_idx, c, r, s) for c, r, s in hits.get(idx, [])])
        next_idx += 1
