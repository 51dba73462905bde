"""What a report counts: include/omit filters and exclusions, applied once for every reporter.

coverage.py's ``--include``/``--omit`` choose which files a report covers, and
``exclude_lines`` (``# pragma: no cover``) takes lines out of the denominator while
still showing them as excluded. ragcov does the same with documents and chunks:

* ``include`` / ``omit``: globs on document ids; a document left out is not reported
  at all.
* ``exclude_docs``: globs on document ids; ``exclude``: regular expressions searched
  in chunk text (``^``/``$`` match at line ends, as coverage.py matches per line);
  ``min_chunk_chars``: chunks shorter than this (after trimming). Excluded chunks
  leave the denominator and are listed, with the reason, in every report.
* ``reachable``: chunks ``ragcov probe`` found no self-query retrieves are a retrieval
  defect, not a missing test; like coverage.py's excluded lines they leave the
  denominator (reason ``unreachable: ...``) and are listed in every report.
* ``include_generated``: questions ``ragcov generate`` wrote are left out until accepted
  (recorded again from the user's suite), unless this is set.

Retrievals of a chunk left out are dropped with it: the reported matrix is the
matrix of the chunks that count, so totals, metrics and redundancy all agree.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError

# numpy and the matrix stack load where a report reads rows: a gate answered from the data
# file's kept totals (``report --format total``) only needs ReportScope.
if TYPE_CHECKING:
    import numpy as np

    from ragcov.matrix import CoverageMatrix
    from ragcov.summary import CoverageSummary
    from ragcov.textcov import TextCoverage, TextSpans


@dataclass(frozen=True)
class ReportScope:
    include: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exclude_docs: tuple[str, ...] = ()
    min_chunk_chars: int = 0
    reachable: bool = False
    # ``reachable = true`` from a config file: a team sets it for every report, and a data
    # file not probed yet (a first run, a PR's job) is reported whole, with a warning, not
    # refused. Asked for on the command line, it needs probes.
    reachable_if_probed: bool = False
    # Questions ``ragcov generate`` wrote count only once accepted (recorded from the suite)
    # unless this is set: a vague generated question must not raise a gated total unseen.
    include_generated: bool = False

    def __post_init__(self) -> None:
        # Globs are given as coverage.py's are: repeated, or comma-separated in one value
        # (``--omit 'V/*,PKG/*'``), so a list written for coverage.py reads the same here.
        # A glob for an id holding a comma writes ``?`` for it. Regexes stay whole.
        for name in ("include", "omit", "exclude_docs"):
            object.__setattr__(self, name, _globs(getattr(self, name)))
        if self.min_chunk_chars < 0:
            raise RagcovError(f"min_chunk_chars must be 0 or more, got {self.min_chunk_chars}")
        for pattern in self.exclude:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise RagcovError(f"exclude: {pattern!r} is not a regular expression ({exc})"
                                  ) from None

    @property
    def filters(self) -> bool:
        return bool(self.include or self.omit)

    @property
    def whole(self) -> bool:
        """Every chunk counts (no include/omit, exclusion or ``reachable``): the scope whose
        totals the data file keeps (:mod:`ragcov.data.totals`)."""
        return not (self.include or self.omit or self.exclude or self.exclude_docs
                    or self.min_chunk_chars or self.reachable or self.reachable_if_probed)


def _no_columns() -> np.ndarray:
    import numpy as np

    return np.zeros(0, dtype=np.int64)


def _globs(given: Sequence[str] | str) -> tuple[str, ...]:
    values = (given,) if isinstance(given, str) else given
    return tuple(g for value in values for g in (p.strip() for p in str(value).split(",")) if g)


@dataclass(frozen=True)
class ExcludedChunk:
    chunk_id: str
    doc_id: str
    reason: str   # "exclude_docs: GLOB", "min_chunk_chars: N", "exclude: REGEX"
    column: int   # in the data file's corpus order


@dataclass
class Scoped:
    """The matrix of the chunks that count, and what was set aside."""

    matrix: CoverageMatrix
    texts: Mapping[str, str]
    positions: Mapping[str, int]
    excluded: list[ExcludedChunk] = field(default_factory=list)
    columns: np.ndarray = field(default_factory=lambda: _no_columns())
    omitted_documents: int = 0
    full: CoverageMatrix | None = None  # the matrix before any chunk was left out
    scope: ReportScope = field(default_factory=ReportScope)
    reachability: Any = None  # ragcov.reachability.Reachability when the file was probed
    meta: Any = None  # the data file's settings (k, retriever): ragcov.data.schema.Meta
    # The corpus was read from a vector store: chunks are listed by id (no stable positions).
    from_store: bool = False
    # Generated questions not yet accepted, left out of the counts (id -> mark), if any.
    generated_left_out: dict[str, Any] = field(default_factory=dict)
    # The drift run the file holds (ragcov.drift.summary.DriftSummary), read with the rest.
    drift: Any = None
    # Where chunks are lost (ragcov.reachability.stages.Stages) over the report's chunks:
    # the probed file's, or a traced reranker's first stage in a file with no probes.
    stages: Any = None
    # Text coverage (ragcov.textcov.TextCoverage) when the file knows where chunks lie.
    text: Any = None
    text_spans: Any = None  # ragcov.textcov.TextSpans: the documents' text and chunk spans
    # Columns of ``full`` (or of ``matrix``) sharing one text, as the data file's hashes
    # found them (:func:`ragcov.data.columns.same_text_columns`); None: look in ``texts``.
    same_text: list[Any] | None = None
    _summaries: dict[tuple[Any, ...], CoverageSummary] = field(default_factory=dict, repr=False,
                                                               compare=False)

    @functools.cached_property
    def copied(self) -> list[Any]:
        """The tests whose question copies a run of a chunk they retrieve
        (:class:`ragcov.copies.CopiedTest`), read on first use: most reporters never ask."""
        from ragcov.copies import copied_tests
        from ragcov.data.columns import ChunkTexts

        # The retrieved chunks' texts only, not every chunk's.
        read = self.texts.of if isinstance(self.texts, ChunkTexts) else None
        return copied_tests(self.matrix, self.texts, read=read)

    def duplicates(self) -> list[Any]:
        """The groups of chunks with the same text among those counted
        (:class:`ragcov.metrics.DuplicateGroup`): from the groups the data file's content
        hashes found, when it was read from one, else from the texts."""
        import numpy as np

        from ragcov.metrics import duplicate_groups, groups_of

        if self.same_text is None:
            return duplicate_groups(self.matrix, self.texts)
        if self.full is None or self.matrix is self.full:
            return groups_of(self.matrix, self.same_text)
        columns = self.columns  # the counted chunks' columns in the full matrix, ascending
        groups = []
        for cols in self.same_text:
            at = np.searchsorted(columns, cols)
            kept = at[(at < columns.size) & (columns[np.minimum(at, columns.size - 1)] == cols)]
            if kept.size > 1:
                groups.append(kept)
        return groups_of(self.matrix, sorted(groups, key=lambda cols: int(cols[0])))

    def summary(self, **options: Any) -> CoverageSummary:
        """The summary every reporter prints: excluded chunks counted aside.

        Made once per set of options: a command's gate and its reporter ask for the same
        one, and at a million chunks each making costs seconds. (The summary is frozen, and
        a Scoped's rows do not change once read.)"""
        from ragcov.summary import query_depth, summarize

        key = tuple(sorted(options.items()))
        made = self._summaries.get(key)
        if made is None:
            made = self._summaries[key] = summarize(
                self.matrix, excluded=self.excluded, positions=self.positions,
                omitted_documents=self.omitted_documents,
                depth=query_depth(self.full if self.full is not None else self.matrix), **options)
        return made


def _matches(doc_id: str, globs: Sequence[str]) -> str | None:
    return next((g for g in globs if fnmatchcase(doc_id, g)), None)


def exclusion_reason(doc_id: str, text: str, scope: ReportScope,
                     compiled: Sequence[re.Pattern[str]], unreachable: str | None = None
                     ) -> str | None:
    if unreachable is not None:
        return f"unreachable: {unreachable}"
    glob = _matches(doc_id, scope.exclude_docs)
    if glob is not None:
        return f"exclude_docs: {glob}"
    if scope.min_chunk_chars and len(text.strip()) < scope.min_chunk_chars:
        return f"min_chunk_chars: {len(text.strip())} < {scope.min_chunk_chars}"
    for rx in compiled:
        if rx.search(text):
            return f"exclude: {rx.pattern}"
    return None


def apply_scope(m: CoverageMatrix, texts: Mapping[str, str], positions: Mapping[str, int],
                scope: ReportScope, reachability: Any = None) -> Scoped:
    """The chunks that count under ``scope``, and why each other one was set aside.

    Document rules (``include``, ``omit``, ``exclude_docs``) are decided once per
    document, not once per chunk, and chunks are read one by one only for the rules that
    look at a chunk (``min_chunk_chars``, ``exclude``, ``--reachable``): at a million
    chunks with no such rule, scoping is a few array operations.
    """
    import numpy as np

    unreachable = _unreachable(m, reachability, scope) if scope.reachable else {}
    compiled = [re.compile(p, re.MULTILINE) for p in scope.exclude]
    names, doc_of = m.documents()
    out_docs = np.fromiter(((bool(scope.include) and _matches(d, scope.include) is None)
                            or _matches(d, scope.omit) is not None for d in names),
                           dtype=bool, count=len(names))
    doc_glob = [_matches(d, scope.exclude_docs) for d in names]
    counted = ~out_docs[doc_of]
    if compiled or scope.min_chunk_chars:
        looked_at = np.flatnonzero(counted)  # every counted chunk's text is read
    else:
        globbed = np.fromiter((g is not None for g in doc_glob), dtype=bool, count=len(names))
        marked = globbed[doc_of]
        if unreachable:
            marked[np.fromiter(unreachable, dtype=np.int64, count=len(unreachable))] = True
        looked_at = np.flatnonzero(counted & marked)
    excluded: list[ExcludedChunk] = []
    dropped = np.zeros(m.n_chunks, dtype=bool)
    chunk_ids = m.chunk_ids
    for j in looked_at.tolist():
        cid, doc = chunk_ids[j], names[doc_of[j]]
        reason = exclusion_reason(doc, texts.get(cid, ""), scope, compiled, unreachable.get(j))
        if reason is not None:
            excluded.append(ExcludedChunk(cid, doc, reason, j))
            dropped[j] = True
    keep = np.flatnonzero(counted & ~dropped)
    omitted = {names[d] for d in np.flatnonzero(out_docs).tolist()}
    if not keep.size:
        what = "every chunk is excluded" if excluded else "no document matches --include/--omit"
        raise RagcovError(f"{what}; nothing left to report")
    columns = keep.astype(np.int64)
    inner = m if len(keep) == m.n_chunks else m.select_columns(columns)
    if reachability is not None:
        # Counted over the report's chunks, as its table is: the chunks it set aside as
        # unreachable (--reachable) stay in, the rest of the exclusions and omissions do not.
        over = sorted([*keep.tolist(),
                       *(e.column for e in excluded if e.reason.startswith("unreachable: "))])
        reachability = reachability.restricted(np.asarray(over, dtype=np.int64))
    return Scoped(inner, texts, positions, excluded, columns, len(omitted), full=m, scope=scope,
                  reachability=reachability)


def _unreachable(m: CoverageMatrix, reachability: Any, scope: ReportScope) -> dict[int, str]:
    """Column -> why, for the chunks a probe run found unreachable (``--reachable``)."""
    import numpy as np

    if reachability is None and scope.reachable_if_probed:
        from ragcov.user_warnings import RetrievalWarning, warn

        warn("reachable = true (config) but the data file has no probes: every chunk is "
             "counted; run `ragcov probe` to leave out the unreachable ones", RetrievalWarning)
        return {}
    if reachability is None:
        raise RagcovError("--reachable needs probes in the data file: run `ragcov probe` "
                          "with the same corpus and retriever first")
    from ragcov.reachability.audit import UNREACHABLE

    out = {}
    for j in np.flatnonzero(reachability.status == UNREACHABLE):
        by = reachability.displacer(j)
        out[int(j)] = (f"displaced by {by}" if by is not None
                       else (reachability.reason[j] or "no probe retrieves it"))
        if reachability.cause(j):  # where it is lost, when the probe run's exact check said
            out[int(j)] += f" (lost at the {reachability.cause(j)})"
    return out


def load_scoped(data_file: str | os.PathLike[str], scope: ReportScope | None = None) -> Scoped:
    """The data file's matrix with ``scope`` applied: what every report reads."""
    from ragcov.data import CoverageData

    data = CoverageData(data_file)
    with data.snapshot():  # one read: the matrix, probes, texts and positions of one state
        return _load_scoped(data, data_file, scope or ReportScope())


def _load_scoped(data: Any, data_file: str | os.PathLike[str], scope: ReportScope) -> Scoped:
    import numpy as np

    from ragcov.data.columns import ChunkTexts, chunk_hashes, chunk_positions, same_text_columns
    from ragcov.data.datafile import CORPUS_KIND
    from ragcov.data.probes import chunk_details, probe_texts, read_probes
    from ragcov.data.spans import read_text_spans

    m = data.matrix()
    generated = dict((m.meta or {}).get("generated") or {})
    left_out: dict[str, Any] = {}
    if generated and not scope.include_generated:
        keep = [i for i, q in enumerate(m.query_ids) if q not in generated]
        left_out = {q: generated[q] for q in m.query_ids if q in generated}
        m = m.select_rows(keep)
    from ragcov.data.stages import read_stages_of

    probes = read_probes(data, m.n_chunks)
    reachability = None
    record = read_stages_of(data, m, probes)
    if probes is not None:
        from ragcov.reachability.audit import audit

        reachability = audit(m, probes, details=lambda rows: chunk_details(data, rows),
                             probe_texts=lambda ids: probe_texts(data, ids),
                             stages=record)
    # Texts are read when a rule, a probe audit or a reporter asks for them (the table never
    # does); positions and the duplicate groups come from two columns read in this snapshot.
    texts = ChunkTexts(data.path, m.meta["corpus_hash"], m.n_chunks)
    scoped = apply_scope(m, texts, chunk_positions(data_file, m.chunk_ids), scope, reachability)
    scoped.same_text = same_text_columns(data.path)
    if reachability is not None:
        # Junk is looked for once the scope is known: the lines it suggests are checked
        # against the chunks this report counts, so they exclude the candidates and nothing
        # the suite covers.
        reachability.with_candidates(texts, dict(zip(m.chunk_ids, chunk_hashes(data.path))),
                                     scoped.matrix.chunk_ids, scope.min_chunk_chars, scope)
        view = scoped.reachability
        if view is not reachability:  # the report's view was cut before junk was known
            at = {cid: j for j, cid in enumerate(reachability.chunk_ids)}
            view.junk = {i: reachability.junk[at[cid]] for i, cid in enumerate(view.chunk_ids)
                         if at[cid] in reachability.junk}
            view.junk_config = reachability.junk_config
            view.junk_rules = reachability.junk_rules
    if scoped.reachability is not None:
        scoped.stages = scoped.reachability.stages
    elif record is not None:
        from ragcov.reachability.stages import attribute

        none = np.zeros(m.n_chunks, dtype=bool)
        scoped.stages = attribute(record, np.full(m.n_chunks, None, object), none, None,
                                  m).restricted(scoped.columns)
    scoped.generated_left_out = left_out
    scoped.text_spans = read_text_spans(data)
    scoped.text = scoped_text_coverage(scoped, scoped.text_spans)
    scoped.meta = data.meta()
    scoped.from_store = data.annotation(CORPUS_KIND) == "store"
    return scoped


def scoped_text_coverage(scoped: Scoped, spans: TextSpans | None) -> TextCoverage | None:
    """Text coverage over the report's documents: its chunks, covered or not, and the
    excluded ones (whose characters leave the denominator). None without spans."""
    if spans is None:
        return None
    from ragcov.textcov import text_coverage

    m = scoped.matrix
    covered = m.chunk_frequencies() > 0
    every = scoped.full if scoped.full is not None else m
    return text_coverage(spans, m.chunk_ids, m.doc_ids, covered,
                         [(e.chunk_id, e.doc_id) for e in scoped.excluded], every.doc_ids)
