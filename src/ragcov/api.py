"""The one door: every command and the pytest plugin do their work through this module.

One verb per command: ``run`` (``ragcov run``, from paths and names) over ``measure``
(objects), ``index``, ``record_traces`` (import), ``report`` (the scoped data file
every reporter reads: report, json, xml, lcov, badge, html), ``combine``, ``erase``,
``select_tests`` (select), ``find_faults`` (faults), ``write_html`` (html),
``generate_questions`` (generate) over ``generate``, ``probe_corpus`` (probe) over
``probe``, ``coverage_diff`` (diff) and ``traffic_gap`` (gap). The CLI parses options,
calls one of these and prints what it returns; ``import ragcov`` offers the same verbs.

The loaders and factories a caller needs to build the verbs' arguments
(``load_corpus``, ``make_retriever``, ``make_generator`` ...) are reached through
this module too, as plain functions that import their stack on first use: the one
documented place where the CLI's light commands (``report``, the CI formats) avoid
loading a retriever's, a store's or a generator's stack.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

# What `ragcov report --format total` and a gate read from the data file's kept totals use
# (and the exceptions verbs catch): loaded with the module. numpy is not among them.
from ragcov.config import scope_settings
from ragcov.data import DEFAULT_DATA_FILE, CoverageData
from ragcov.data.datafile import INDEX_RECALL
from ragcov.data.schema import NoDataFile, check_compatible
from ragcov.errors import RagcovError
from ragcov.files import cache_dir, load_json

# Reached by the CLI and the pytest plugin through this door (explicit re-exports): what
# formats a number, what guards an output, and the names of strategies and settings.
from ragcov.overwrite import check_outputs as check_outputs
from ragcov.overwrite import to_stdout as to_stdout
from ragcov.scope import ReportScope, load_scoped
from ragcov.summary import ceiling_text as ceiling_text
from ragcov.summary import ceiling_warning as ceiling_warning
from ragcov.summary import display_percent as display_percent
from ragcov.summary import fail_under_failure
from ragcov.summary import summarize as summarize
from ragcov.summary import workload_warning as workload_warning

# The verbs' own modules (corpus, retrieval, matrix, probes, selection ...; numpy under
# most of them) load the first time a caller takes any other name from this module
# (`api.measure`, `from ragcov.api import load_corpus`): see _DEFERRED and _Door below.
if TYPE_CHECKING:
    from ragcov.compare.diff import CoverageDiff
    from ragcov.compare.gap import TrafficGap
    from ragcov.corpus import Corpus, load_corpus
    from ragcov.data.columns import chunk_hashes, chunk_positions
    from ragcov.data.probes import (
        ProbeRow,
        append_probes,
        chunk_details,
        probe_texts,
        read_probes,
        recorded_probe_ids,
    )
    from ragcov.data.shards import combine_shards, shard_path
    from ragcov.data.shards import erase as erase_files
    from ragcov.failures import Failures
    from ragcov.faults import FaultReport
    from ragcov.generation.loop_types import GenerationSummary, LoopConfig
    from ragcov.matrix import CoverageMatrix
    from ragcov.metrics import duplicate_groups as duplicate_groups
    from ragcov.metrics import redundant_tests as redundant_tests
    from ragcov.progress import progress_bar, status
    from ragcov.qrels import load_qrels
    from ragcov.reachability.audit import audit, lost_gold
    from ragcov.reachability.selfquery import LLM, NONE, build_probes, choose_chunks, probe_id
    from ragcov.reporters.table import approximate_index_note
    from ragcov.retrieval import Run, run_retriever, validate_k, warn_if_k_takes_the_corpus
    from ragcov.retrievers.twins import MatchCounts as MatchCounts
    from ragcov.retrievers.twins import record_matching, resolver_counts
    from ragcov.selection import ALL_STRATEGIES as ALL_STRATEGIES
    from ragcov.selection import DEFAULT_AFTER_SATURATION, order_document
    from ragcov.suite import Suite, load_suite
    from ragcov.traces import ImportResult

# name -> (module, attribute): the imports above that run (tests/test_api_lazy.py checks the
# two lists agree). Type-only names (CoverageDiff, ImportResult ...) are not loaded.
_DEFERRED: dict[str, tuple[str, str]] = {
    "Corpus": ("ragcov.corpus", "Corpus"), "load_corpus": ("ragcov.corpus", "load_corpus"),
    "chunk_hashes": ("ragcov.data.columns", "chunk_hashes"),
    "chunk_positions": ("ragcov.data.columns", "chunk_positions"),
    **{name: ("ragcov.data.probes", name) for name in (
        "ProbeRow", "append_probes", "chunk_details", "probe_texts", "read_probes",
        "recorded_probe_ids")},
    "combine_shards": ("ragcov.data.shards", "combine_shards"),
    "shard_path": ("ragcov.data.shards", "shard_path"),
    "erase_files": ("ragcov.data.shards", "erase"),
    "CoverageMatrix": ("ragcov.matrix", "CoverageMatrix"),
    "duplicate_groups": ("ragcov.metrics", "duplicate_groups"),
    "redundant_tests": ("ragcov.metrics", "redundant_tests"),
    "progress_bar": ("ragcov.progress", "progress_bar"), "status": ("ragcov.progress", "status"),
    "load_qrels": ("ragcov.qrels", "load_qrels"),
    "audit": ("ragcov.reachability.audit", "audit"),
    "lost_gold": ("ragcov.reachability.audit", "lost_gold"),
    **{name: ("ragcov.reachability.selfquery", name) for name in (
        "LLM", "NONE", "build_probes", "choose_chunks", "probe_id")},
    "approximate_index_note": ("ragcov.reporters.table", "approximate_index_note"),
    **{name: ("ragcov.retrieval", name) for name in (
        "Run", "run_retriever", "validate_k", "warn_if_k_takes_the_corpus")},
    **{name: ("ragcov.retrievers.twins", name) for name in (
        "MatchCounts", "record_matching", "resolver_counts")},
    **{name: ("ragcov.selection", name) for name in (
        "ALL_STRATEGIES", "DEFAULT_AFTER_SATURATION", "order_document")},
    "Suite": ("ragcov.suite", "Suite"), "load_suite": ("ragcov.suite", "load_suite"),
}

# The names a caller may take without loading the verbs' modules: the total and its gate
# (``report --format total``, ``--fail-under``) and what the CLI's options are declared with.
_LIGHT = frozenset({
    "DEFAULT_DATA_FILE", "CoverageData", "INDEX_RECALL", "NoDataFile", "RagcovError",
    "ReportScope", "check_outputs", "to_stdout", "ceiling_text", "ceiling_warning",
    "display_percent", "summarize", "workload_warning", "fail_under_message", "gate_total",
    "configured_scope", "configured_run", "one_read", "load_scoped", "check_compatible",
})


def _load_deferred() -> None:
    """Import every name of :data:`_DEFERRED` into this module, once.

    A verb's body finds its names in this module's namespace, where no ``__getattr__``
    is asked; so they are all put there before a caller holds any verb. A name already
    there (a test's monkeypatch) is kept. numpy loads here, and the threads its BLAS
    starts must leave Ctrl-C to the main thread (:mod:`ragcov.sigint`).
    """
    names = globals()
    if names.get("_deferred_loaded"):
        return
    from ragcov.sigint import threads_leave_sigint

    with threads_leave_sigint():
        for name, (module, attr) in _DEFERRED.items():
            names.setdefault(name, getattr(importlib.import_module(module), attr))
    names["_deferred_loaded"] = True


class _Door(types.ModuleType):
    """This module's type: taking any name but the light ones loads the verbs' modules first."""

    def __getattribute__(self, name: str) -> Any:
        if not (name in _LIGHT or name.startswith("__") or name == "_deferred_loaded"):
            _load_deferred()
        return super().__getattribute__(name)


sys.modules[__name__].__class__ = _Door


def measure(corpus: Corpus, suite: Suite, retriever: Any, k: int = 5,
            data_file: str | os.PathLike[str] | None = None, append: bool = False,
            progress: bool = True, batch_size: int = 64) -> CoverageMatrix:
    """Run ``suite`` through ``retriever`` and return the hit matrix.

    With ``data_file`` the run is recorded there; with ``append`` only queries not
    already in the file are retrieved, and the matrix covers the whole file.
    """
    validate_k(k)
    if len(suite) == 0:
        raise RagcovError("the suite is empty (no queries)")
    warn_if_k_takes_the_corpus(k, len(corpus))
    todo = [(q.id, q.text) for q in suite]
    data = CoverageData(data_file) if data_file is not None else None
    # Refuse a file that cannot take this run before any retrieval work, not after it.
    if data is not None and append:
        todo = data.pending(todo, k, corpus.hash, retriever.fingerprint(), corpus)
    elif data is not None:
        data.check_destination()
    run = Run(k=k, retriever=retriever.fingerprint(), source=getattr(suite, "source", None))
    staged = _first_stage_recorder(retriever, corpus, k) if data is not None else None
    if data is not None and append and len(todo) > CHECKPOINT:
        # An append commits as it goes: an hour of a slow retriever interrupted at its last
        # query keeps every part before it, and the rerun retrieves only what is missing.
        _append_in_parts(data, corpus, suite, staged or retriever, todo, k, batch_size, progress,
                         run)
    else:
        if todo:
            run_retriever(staged or retriever, todo, k, batch_size=batch_size, progress=progress,
                          run=run, corpus=corpus)
        if data is None:
            return CoverageMatrix.from_run(run, corpus)
        # The suite's own questions: any that ``ragcov generate`` wrote are accepted now.
        data.write(corpus, run, append=append, accept=[q.id for q in suite])
    if staged is not None:
        _record_first_stage(data, staged, [qid for qid, _ in todo], corpus, k, run.retriever)

    record_matching(data, resolver_counts(retriever), append)
    if getattr(retriever, "placement", None) is not None:  # where it embedded (x:hardware)
        from ragcov.retrievers.hardware import record_hardware

        record_hardware(data, retriever.placement, append)
    if retriever.fingerprint().get("approximate") and hasattr(retriever, "measure_recall"):
        data.annotate(INDEX_RECALL, retriever.measure_recall(suite.texts, k=k))
    return data.suite_matrix()


# Queries an ``--append`` retrieves between two commits.
CHECKPOINT = 256


def _append_in_parts(data: CoverageData, corpus: Corpus, suite: Suite, retriever: Any,
                     todo: list[tuple[str, str]], k: int, batch_size: int, progress: bool,
                     run: Run) -> None:
    """Retrieve and commit ``todo`` in parts of :data:`CHECKPOINT` queries (one transaction
    each), under one progress bar; ``run`` collects every part (the depth warning's)."""
    from ragcov.retrieval import warn_if_short

    with progress_bar("Retrieving", total=len(todo), enabled=progress) as advance:
        for start in range(0, len(todo), CHECKPOINT):
            part = todo[start:start + CHECKPOINT]
            piece = Run(k=k, retriever=run.retriever, source=run.source)
            run_retriever(retriever, part, k, batch_size=batch_size, progress=False, run=piece,
                          corpus=corpus, warn_short=False)
            data.write(corpus, piece, append=True,
                       accept=[q.id for q in suite] if start == 0 else ())
            for qid in piece.queries:
                run.add(qid, piece.queries[qid], piece.results.get(qid, []))
            advance(len(part))
    warn_if_short(run, [qid for qid, _ in todo], len(corpus))


def _first_stage_recorder(retriever: Any, corpus: Corpus, k: int) -> Any:
    """With a reranking stage, the retriever that also keeps each test's first-stage
    candidates (what the reranker was given); None without one."""
    from ragcov.reachability.exact_check import CheckSettings, StageRecorder
    from ragcov.retrievers.exact import first_stage

    if first_stage(retriever) is retriever:
        return None
    depth = int(getattr(retriever, "depth", k))
    return StageRecorder(retriever, corpus, CheckSettings(None, depth, k, lexical=True))


def _record_first_stage(data: CoverageData, staged: Any, ids: list[str], corpus: Corpus, k: int,
                        fingerprint: dict[str, Any]) -> None:
    from ragcov.data.schema import read_meta
    from ragcov.data.stages import TEST, record_rows

    def same_run(con: Any) -> None:
        check_compatible(read_meta(con, data.path), k, corpus.hash, fingerprint, str(data.path),
                         "this run")

    record_rows(data, TEST, staged.take(ids), same_run)
    _record_rerank(data, fingerprint)


@dataclass
class Recorded:
    """What ``record_traces`` did: the import's account and how many queries it added."""

    result: ImportResult
    added: int
    data: CoverageData

    @cached_property
    def matrix(self) -> CoverageMatrix:
        """The data file's hit matrix, read when first asked for: a large import that
        prints no summary (``-q``) never reads its million queries back."""
        return self.data.matrix()


def record_traces(path: str | os.PathLike[str], fmt: str, corpus: Corpus,
                  data_file: str | os.PathLike[str], k: int | None = None, append: bool = False,
                  ignore_unknown: bool = False, name: str = "traces",
                  queries: dict[str, str] | None = None, engine: str = "local",
                  scheduler: str | None = None, workers: int | None = None) -> Recorded:
    """Import recorded retrievals into ``data_file`` (``ragcov import``).

    ``path`` is a trace file, or a folder or glob of shards read as one export.
    ``engine="local"`` reads a large JSON-lines span file in ``workers`` processes
    (default: as many as pay here); ``"dask"`` reads the shards on a Dask cluster
    (``scheduler``, or a LocalCluster of ``workers`` processes). The data file is
    the same either way.
    """
    from ragcov.traces.records import cyclic_gc_paused

    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown engine {engine!r}: expected local or dask")
    if workers is not None and workers < 1:
        raise RagcovError(f"--workers must be at least 1, got {workers}")
    data = CoverageData(data_file)
    data.check_destination()
    if k is None and append and data.exists():

        with contextlib.suppress(NoDataFile):  # erased meanwhile: this batch starts a file
            k = data.meta().k  # the file's k, not this batch's longest list
    # The collector would walk the import's millions of new objects again and again.
    with cyclic_gc_paused():
        if engine == "dask":
            from ragcov.distributed_traffic import import_dask

            result = import_dask(path, fmt.lower(), corpus, k=k, ignore_unknown=ignore_unknown,
                                 name=name, queries=queries, scheduler=scheduler,
                                 workers=workers)
        else:
            from ragcov.traces import import_traces

            result = import_traces(path, fmt.lower(), corpus, k=k,
                                   ignore_unknown=ignore_unknown, name=name, queries=queries,
                                   workers=workers)
        added = data.write(corpus, result.run, append=append, same_hits=True)

    record_matching(data, result.matching, append)
    if engine == "local" and result.reranker_spans != 0:  # no RERANKER span: no first stage
        _record_traced_first_stage(data, path, fmt, corpus, result)
    return Recorded(result, added, data)


def _record_traced_first_stage(data: CoverageData, path: str | os.PathLike[str], fmt: str,
                               corpus: Corpus, result: Any) -> None:
    """The first stage of traced queries that went through a reranker (their RERANKER
    spans' input documents), kept beside the final lists: per test, first-stage coverage
    beside final coverage, and the chunks the reranker drops."""
    from ragcov.data.schema import read_meta
    from ragcov.data.stages import TEST, StageRow, record_rows, write_meta
    from ragcov.traces.importer import first_stage_lists

    lists = first_stage_lists(path, result.format or fmt.lower(), corpus)
    if not lists:
        return
    where = corpus.positions
    rows = [StageRow(qid, [(where[c], s) for c, s in ranked])
            for qid, ranked in lists.items() if qid in result.run.results]
    meta = data.meta()

    def same_file(con: Any) -> None:
        check_compatible(read_meta(con, data.path), meta.k, corpus.hash, meta.retriever,
                         str(data.path), "this import")

    record_rows(data, TEST, rows, same_file)
    write_meta(data, "rerank", {"reranker": "traces", "name": f"{Path(path).name} (RERANKER spans)",
                                "depth": max((len(r) for r in lists.values()), default=0)})


def check_seed(seed: int) -> int:
    """Seeds are whole numbers from 0, as numpy's generators take them; refused before any
    work, in the user's words, instead of a numpy traceback after the corpus is embedded."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise RagcovError(f"--seed must be a whole number of at least 0, got {seed!r}")
    return seed


def select_tests(data_file: str | os.PathLike[str], strategy: str = "coverage",
                 budget: int | None = None, target: float | None = None, seed: int = 0,
                 repeats: int = 1, after_saturation: str | None = None) -> dict[str, Any]:
    """Order the recorded queries (``ragcov select``): the order document, as JSON-ready dict.

    Besides the order file's keys, ``"suite"`` holds the selected queries as the files
    they were recorded from hold them (:func:`selected_records`), ``"unread_sources"``
    the recorded query files that could not be read again (their questions keep only id
    and text) and, after a cut, ``"lost_ranges"`` the chunks it loses as ``DOC:N`` ranges
    (all three dropped before the order file is written); ``"tests"`` (kept) the pytest
    node ids that asked them.
    """

    check_seed(seed)
    if repeats < 1:
        raise RagcovError(f"--repeats must be at least 1, got {repeats}")
    if target is not None and not 0 < target <= 100:
        raise RagcovError(f"--target must be a percentage in (0, 100], got {target:g}")
    # The readers' own refusals: "no data file", "an empty file, no data recorded yet".
    m = CoverageData(data_file).suite_matrix()
    if m.n_queries == 0:
        raise RagcovError(f"{data_file}: no queries recorded")
    doc = order_document(m, strategy, budget, target, seed, repeats,
                         after_saturation or DEFAULT_AFTER_SATURATION)
    unread: list[str] = []
    doc["suite"] = selected_records(data_file, m, doc["order"], unread)
    doc["unread_sources"] = unread
    tests = {qid: t for qid, t in zip(m.query_ids, m.query_context) if t}
    if tests:
        # The pytest node id each selected question was asked by (``pytest --ragcov``).
        doc["tests"] = list(dict.fromkeys(tests[q] for q in doc["order"] if q in tests))
    if doc["cut"] is not None:
        # What the cut costs, as ``report -m`` lists missing chunks (``DOC:3-5``); popped by
        # the CLI before the order file is written (it keeps the ids).
        from ragcov.reporters.names import chunk_ranges
        from ragcov.summary import document_positions

        pos = document_positions(m, chunk_positions(data_file))
        where = {cid: j for j, cid in enumerate(m.chunk_ids)}
        doc["lost_ranges"] = chunk_ranges((m.doc_ids[where[c]], pos[where[c]])
                                          for c in doc["cut"]["lost_chunks"])
    return doc


def selected_records(data_file: str | os.PathLike[str], m: Any, order: Sequence[str],
                     unread: list[str] | None = None) -> list[dict[str, Any]]:
    """The selected questions as the files they were recorded from hold them: every field
    (gold labels such as ``doc_id``, the file's own key names). A question no recorded
    file still holds with the same text (recorded by the pytest plugin, generated, a file
    moved or edited since) is written as ``{"id", "text"}``, with ``test`` when a pytest
    test asked it. Recorded files that cannot be read again are added to ``unread``, so
    the caller can say whose fields were not kept."""
    from ragcov.data.datafile import QUERY_SOURCES

    texts = dict(zip(m.query_ids, m.query_texts))
    tests = dict(zip(m.query_ids, m.query_context))
    originals: dict[str, dict[str, Any]] = {}
    for source in CoverageData(data_file).annotation(QUERY_SOURCES) or []:
        try:
            suite = load_suite(source)
        except (RagcovError, OSError):
            # Moved or broken since: its questions fall back to id and text, said by the caller.
            if unread is not None:
                unread.append(str(source))
            continue
        for q in suite:
            if q.record is not None and texts.get(q.id) == q.text:
                originals.setdefault(q.id, q.record)
    out = []
    for qid in order:
        record = dict(originals.get(qid) or {"id": qid, "text": texts[qid]})
        if tests.get(qid) and "test" not in record:
            record["test"] = tests[qid]
        out.append(record)
    return out


def write_html(data_file: Any, directory: str | os.PathLike[str],
               orders: Sequence[str | os.PathLike[str]] = (), greedy: bool = True,
               title: str = "Chunk coverage report", precision: int = 0,
               scope: Any = None, topics: Any = None) -> Path:
    """Write the HTML site (``ragcov html``); returns its index page.

    ``scope`` (a :class:`ragcov.scope.ReportScope`) chooses what the site counts.
    ``data_file`` may be what :func:`report` returned: a gate then judges the very
    numbers the site shows, not a second read that an append in between could change.
    ``topics`` (what :func:`topic_coverage` returned) adds the topic page.
    """
    from ragcov.reporters.html import curve_from_order_file, greedy_curve, html_report, recorded_curve
    from ragcov.scope import Scoped

    scoped = data_file if isinstance(data_file, Scoped) else load_scoped(data_file, scope)
    m = scoped.matrix
    curves = [curve_from_order_file(m, load_json(p), str(p)) for p in orders]
    if greedy:
        g = greedy_curve(m)
        # An order file from `ragcov select --strategy coverage` already draws this line.
        if g is not None and all(c.values != g.values for c in curves):
            curves.append(g)
    if curves:
        # The suite as recorded is the baseline an ordering is judged against.
        curves.append(recorded_curve(m))
    return html_report(m, scoped.texts, directory, curves=curves, precision=precision,
                       title=title, scoped=scoped, topics=topics)


@dataclass
class FoundFaults:
    """What ``find_faults`` found: the failures, their faults and APFDs, and warnings."""

    failures: Failures
    report: FaultReport
    warnings: list[str]


def find_faults(data_file: str | os.PathLike[str], qrels: str | os.PathLike[str] | None = None,
                qrels_level: str | None = None, scores: str | os.PathLike[str] | None = None,
                metric: str | None = None, fail_below: float | None = None, tau: float = 0.8,
                clustering: str = "components",
                orders: Sequence[str | os.PathLike[str]] = ()) -> FoundFaults:
    """Failing queries, grouped into faults, and the APFD of each order (``ragcov faults``).

    Failures come from relevance labels (``qrels``) or from imported per-query scores
    (``scores`` with ``metric``), at most one of the two; with neither, from the test
    outcomes ``pytest --ragcov`` recorded (a failed test's questions fail).
    """
    # Fault clustering loads scipy's graph and linear algebra: only this verb pays for it.
    from ragcov.apfd import load_order, order_names
    from ragcov.failures import label_failures, load_scores, outcome_failures, score_failures
    from ragcov.faults import analyse

    if qrels is not None and scores is not None:
        raise RagcovError("give either --qrels or --scores (with --metric), not both")
    if scores is not None and not metric:
        raise RagcovError("--scores needs --metric NAME (the column holding the metric)")
    if qrels_level is not None and qrels_level not in ("doc", "chunk"):
        raise RagcovError(f"--qrels-level must be doc or chunk, got {qrels_level!r}")
    if fail_below is not None and not math.isfinite(fail_below):
        # NaN compares false with every value (no query would fail: the gate is off), and
        # an infinite threshold cannot be written into the report's JSON.
        raise RagcovError(f"--fail-below must be a finite number, got {fail_below}")
    m = CoverageData(data_file).suite_matrix()
    warnings: list[str] = []
    if qrels is not None:
        labels = load_qrels(qrels, qrels_level)  # type: ignore[arg-type]
        if labels.level == "chunk":
            unknown = {c for items in labels.relevant.values() for c in items} - set(m.chunk_ids)
            if unknown:
                warnings.append(f"{len(unknown)} relevant chunk ids are not in the data file's "
                                f"corpus (first: {sorted(unknown)[0]})")
        failures = label_failures(m, labels, metric or "hit", fail_below)
    elif scores is not None:
        failures = score_failures(m, load_scores(scores, metric), fail_below)
    else:
        outcomes = (m.meta or {}).get(OUTCOMES)
        if not outcomes:
            raise RagcovError(f"{data_file} holds no test outcomes: give --qrels or --scores (with "
                              "--metric), or record the suite with pytest --ragcov")
        failures = outcome_failures(m, outcomes, (m.meta or {}).get(QUERY_TESTS) or {},
                                    fail_below)
    paths = list(orders)
    named = {name: load_order(p, m) for name, p in zip(order_names(paths), paths)}
    return FoundFaults(failures, analyse(m, failures, tau, clustering, named), warnings)


def generate_questions(corpus: str | os.PathLike[str], output: str | os.PathLike[str],
                       data_file: str | os.PathLike[str], k: int = 5,
                       queries: str | os.PathLike[str] | None = None,
                       targets: str | os.PathLike[str] | None = None, topic: str | None = None,
                       chunking: dict[str, Any] | None = None,
                       retriever: dict[str, Any] | None = None,
                       generator: dict[str, Any] | None = None, loop: dict[str, Any] | None = None,
                       ragas: str | os.PathLike[str] | None = None,
                       deepeval: str | os.PathLike[str] | None = None, progress: bool = True,
                       on_step: Any = None, notify: Any = None, warn: Any = None
                       ) -> GenerationSummary:
    """``ragcov generate`` from paths and names: every setting checked before the corpus is
    read or a model started, then the corpus, the chunks to aim at (``targets``: a ``gap``
    report; ``topic``: a topic's untested chunks), the generator and the retriever built,
    and :func:`generate` run. ``notify`` gets the lines a run always shows, ``warn`` the
    warnings (None: quiet)."""
    say, caution = notify or (lambda line: None), warn or (lambda line: None)
    validate_k(k)
    chosen = dict(retriever or {})
    llm = dict(generator or {})
    config = loop_config(**(loop or {}))
    config.check()
    if targets is not None and topic is not None:
        raise RagcovError("--targets and --topic both choose the chunks to aim at: give one")
    prompt = llm.get("prompt")
    check_outputs([output, ragas, deepeval], [corpus, prompt, targets, data_file], extends=output)
    kind, model, backend = recorded_choice(data_file, corpus, chosen.get("retriever"),
                                           chosen.get("model"), chosen.get("backend"),
                                           "generated questions")
    chosen.update(model=model, backend=backend)
    from ragcov.retrievers.dense import check_hardware

    check_hardware(kind, chosen.get("device", "auto"), chosen.get("dtype", "auto"),
                   chosen.get("backend"), chosen.get("model"))
    chunking = dict(chunking or {})  # split as the data file's run did (--chunk-ids)
    chunking["chunk_ids"] = chunk_ids_of(data_file, chunking.get("chunk_ids"), "generate")
    corpus_obj = load_corpus(corpus, **chunking)
    if targets is not None:
        ids, unknown = gap_targets(targets, corpus_obj)
        if unknown:
            caution(f"ragcov: warning: {len(unknown)} chunk(s) of {targets} are not in this corpus "
                    f"(first: {unknown[0]}); left out")
        if not ids:
            raise RagcovError(f"{targets}: no untested chunk of this corpus to aim at")
        config.priority = ids
    if topic is not None:
        number, label, ids = topic_targets(data_file, topic, corpus_obj)
        if not ids:
            raise RagcovError(f"topic {number} ({label}) has no chunk left that no test retrieves "
                              f"in {data_file}; nothing to aim at")
        caution(f"Aiming at topic {number} ({label}): {len(ids)} untested chunk(s)")
        config.priority = ids
    seed_suite = load_suite(queries) if queries is not None else None
    gen = make_generator(llm.pop("kind", "extractive"), corpus_obj.texts, **llm)
    r = make_retriever(kind, corpus_obj, model=chosen.get("model"), index=chosen.get("index", "flat"),
                       progress=progress, backend=chosen.get("backend"),
                       device=chosen.get("device", "auto"), dtype=chosen.get("dtype", "auto"))
    if line := store_run_line(corpus_obj, kind, r, k):
        say(line)
    return generate(corpus_obj, r, gen, k, output, data_file, config, seed_suite=seed_suite,
                    on_step=on_step, ragas=ragas, deepeval=deepeval)


def generate(corpus: Corpus, retriever: Any, generator: Any, k: int,
             output: str | os.PathLike[str], data_file: str | os.PathLike[str],
             config: LoopConfig, seed_suite: Suite | None = None,
             on_step: Any = None, ragas: str | os.PathLike[str] | None = None,
             deepeval: str | os.PathLike[str] | None = None) -> GenerationSummary:
    """Write new test questions aimed at uncovered chunks (``ragcov generate``); resumable.

    Each question is checked against ``retriever`` and recorded in ``data_file``; the
    suite goes to ``output`` (JSON lines with provenance) and, when asked, also as a
    RAGAS test set and DeepEval goldens.
    """
    from ragcov.generation.export import write_deepeval, write_ragas
    from ragcov.generation.loop import run_generation

    validate_k(k)
    config.check()
    summary = run_generation(corpus, retriever, generator, k, Path(output), Path(data_file),
                             config, seed_suite=seed_suite, on_step=on_step)
    if ragas is not None:
        write_ragas(ragas, summary.records, corpus)
    if deepeval is not None:
        write_deepeval(deepeval, summary.records, corpus)
    return summary


def coverage_diff(base: str | os.PathLike[str], head: str | os.PathLike[str],
                  allow_different_k: bool = False,
                  allow_different_retriever: bool = False, match: str = "id") -> CoverageDiff:
    """What changed between two recordings (``ragcov diff``); queries paired by ``match``."""

    from ragcov.compare.diff import coverage_diff as diff  # only diff pays for its import

    d = diff(base, head, allow_different_k, allow_different_retriever, match)
    d.topics = _topic_diff(d)
    return d


def _topic_diff(d: CoverageDiff) -> Any:
    """Per-topic change, from HEAD's topics (else BASE's) when they are of its own corpus."""
    from ragcov.data.topics import read_topics
    from ragcov.topics.coverage import topic_diff

    for side, rec in (("head", d.head), ("base", d.base)):
        stored = read_topics(CoverageData(rec.path))
        if stored is not None and stored.corpus_hash == rec.meta.corpus_hash:
            return topic_diff(d, stored, side)
    return None


def traffic_gap(tests: str | os.PathLike[str], traffic: str | os.PathLike[str],
                top: int | None = 100, allow_different_k: bool = False,
                allow_different_retriever: bool = False, engine: str = "local",
                scheduler: str | None = None, workers: int | None = None) -> TrafficGap:
    """Production retrievals the tests never make (``ragcov gap``); with ``engine="dask"``
    the traffic's hits are counted on a Dask cluster (``scheduler``, or a LocalCluster
    of ``workers`` processes), with the same result."""
    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown engine {engine!r}: expected local or dask")
    if engine == "dask":
        from ragcov.distributed_traffic import gap_dask

        return gap_dask(tests, traffic, top, allow_different_k, allow_different_retriever,
                        scheduler, workers)

    from ragcov.compare.gap import traffic_gap as gap  # only gap pays for its import

    return gap(tests, traffic, top, allow_different_k, allow_different_retriever)


@dataclass
class ProbeRun:
    """What ``probe`` did: probes built and recorded, chunks with no probe, the audit after."""

    built: int
    added: int
    already: int
    wordless: list[str]
    reachability: Any  # ragcov.reachability.Reachability
    checked: int = 0   # probes and tests recorded earlier that got the exact check now


def probe(corpus: Corpus, retriever: Any, data_file: str | os.PathLike[str],
          sample: int | None = None, include: Sequence[str] = (), omit: Sequence[str] = (),
          seed: int = 0, progress: bool = True, batch_size: int = 512,
          generator: Any = None, exact: bool = True, device: str | None = None,
          notify: Any = None, dask: dict[str, Any] | None = None) -> ProbeRun:
    """Run each chunk's self-queries through ``retriever`` and record them as probes
    (``ragcov probe``); resumable: probes already recorded are not retrieved again.

    Probes are measured against a recorded run: the data file must exist and its k,
    corpus and retriever must match, checked before any retrieval. The suite's own
    coverage is untouched (probes have their own tables). With ``dask`` (the
    retriever by name, ``retriever``/``model``/``index``, and ``scheduler``/``workers``)
    the self-queries are retrieved on a Dask cluster, each worker building that retriever
    once, and recorded here batch by batch. With ``generator`` (any of
    ``ragcov generate``'s), each chunk also gets one LLM-written question, asked and
    recorded in batches so an interrupted run keeps the questions it paid for.

    With ``exact`` (the default) every probe and test is also searched exactly over the
    vectors the retriever's index holds, on ``device`` (default: the retriever's), so
    each unreachable chunk is told lost at the embedding, the index or the reranker
    (:mod:`ragcov.reachability.stages`); probes and tests recorded without that check
    get it now. ``notify`` receives the one line saying what the check compares, or why
    it was skipped.
    """
    from ragcov.data.schema import read_meta
    from ragcov.data.stages import probe_rows_writer
    from ragcov.reachability.exact_check import (
        StageRecorder,
        check_pending,
        check_settings,
        pending_work,
        record_settings,
    )

    check_seed(seed)
    data = CoverageData(data_file)
    _require_recorded_run(data)
    meta = data.meta()
    fingerprint = retriever.fingerprint()
    check_compatible(meta, meta.k, corpus.hash, fingerprint, str(data.path), "this probe run")
    rows = choose_chunks(corpus, sample=sample, include=include, omit=omit, seed=seed)
    texts, ids = corpus.texts, corpus.ids
    probes = build_probes(texts, ids, rows)
    wordless = [ids[p.chunk] for p in probes if p.kind == NONE]
    done = recorded_probe_ids(data)
    todo = [p for p in probes if p.id not in done]
    asks = [] if generator is None else [r for r in rows if probe_id(ids[r], LLM) not in done]
    added = 0
    # BM25 has no vectors and no ANN index: no stage to tell apart, unless a reranker follows.
    staged = exact and (fingerprint.get("kind") != "bm25" or "rerank" in fingerprint)
    work = pending_work(data) if staged else {}
    settings = None
    if staged and (todo or asks or work):  # a finished file's rerun reads no stored vector
        settings = check_settings(retriever, corpus, meta.k, device)
    recorder = StageRecorder(retriever, corpus, settings) if settings is not None else None
    if settings is not None:
        record_settings(data, settings)
        _record_rerank(data, fingerprint)
        line = settings.line()
        if line and notify is not None:
            notify(line)

    def record(batch: list[ProbeRow]) -> int:
        asked = [(p.id, p.text) for p in batch if p.text]
        run = run_retriever(recorder or retriever, asked, meta.k, batch_size=batch_size,
                            progress=False, corpus=corpus, warn_short=False)
        staged = recorder.take([pid for pid, _ in asked]) if recorder is not None else []
        return append_probes(data, corpus, meta.k, fingerprint, batch,
                             [run.results.get(p.id, []) for p in batch],
                             after=probe_rows_writer(staged))

    def same_run(con: Any) -> None:
        check_compatible(read_meta(con, data.path), meta.k, corpus.hash, fingerprint,
                         str(data.path), "this probe run")

    late = 0
    if dask is not None and todo:
        if recorder is not None and recorder.settings.vectors is not None:
            raise RagcovError("probe --engine dask runs without the exact check, which searches "
                              "the index's vectors in this process: add --no-exact, or use "
                              "--engine local")
        from ragcov.distributed import probe_dask

        batches = [todo[start:start + batch_size] for start in range(0, len(todo), batch_size)]

        def recorded(i: int, results: dict[str, Any]) -> None:
            nonlocal added
            added += append_probes(data, corpus, meta.k, fingerprint, batches[i],
                                   [results.get(p.id, []) for p in batches[i]])

        spec = {"kind": dask["retriever"], "model": dask.get("model"),
                "index": dask.get("index", "flat"), "batch_size": 64, "threads": 1}
        probe_dask(corpus, spec, fingerprint,
                   [[(p.id, p.text) for p in b if p.text] for b in batches], meta.k, recorded,
                   scheduler=dask.get("scheduler"), workers=dask.get("workers"),
                   progress=progress)
    local = [] if dask is not None else todo
    with progress_bar("Probing", total=len(local) + len(asks), enabled=progress) as advance:
        for start in range(0, len(local), batch_size):
            batch = local[start:start + batch_size]
            added += record(batch)
            advance(len(batch))
        step = max(1, batch_size // 32)  # LLM calls are slow: commit what they wrote often
        for start in range(0, len(asks), step):
            part = asks[start:start + step]
            added += record([_llm_probe(generator, texts, ids, r, seed) for r in part])
            advance(len(part))
    if work and settings is not None and settings.vectors is not None:
        with progress_bar("Exact check", total=sum(map(len, work.values())),
                          enabled=progress) as advance:
            late = check_pending(data, settings, retriever, work, same_run, advance)
    # A framework's vector retriever (LlamaIndex): how its probes' queries were embedded.
    batching = getattr(retriever, "batch_embedding", None)
    if notify is not None and added and getattr(retriever, "vector_retriever", False):
        notify("ragcov: probes' queries embedded in batches by the retriever's own model (checked "
               "equal to its per-query vectors)" if batching else
               "ragcov: probes' queries embedded one at a time, as the retriever embeds them (its "
               "model embeds a query apart from a text)")
    return ProbeRun(built=len(probes) + len(asks), added=added,
                    already=len(probes) - len(todo), wordless=wordless,
                    reachability=audit_reachability(data_file), checked=late)


@dataclass(frozen=True)
class ProbeSettings:
    """The settings of one ``ragcov probe``, checked once where the command enters.

    As :class:`RunSettings` does for a run: the retriever, model, backend, precision and
    reranker not given are taken from the recorded run (probes must go through the
    suite's own pipeline), and everything a probe can be refused for (seed, gates,
    hardware, index and reranker settings, the labels file) is refused here, before the
    corpus is read or a model loaded. ``from_data_file`` says the retriever was taken
    from the data file, so the caller can name it.
    """

    corpus: str | os.PathLike[str]
    data_file: Path
    retriever: str
    from_data_file: bool = False
    model: str | None = None
    backend: str | None = None
    index: str = "flat"
    index_options: tuple[tuple[str, Any], ...] = ()
    device: str | None = "auto"
    dtype: str | None = "auto"
    rerank: str | None = None
    rerank_depth: int | None = None
    chunk_size: int = 1000
    chunk_overlap: int = 100
    split: bool = False
    doc_key: str | None = None
    id_key: str | None = None
    sample: int | None = None
    include: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    seed: int = 0
    exact: bool = True
    generator: str | None = None
    generator_options: tuple[tuple[str, Any], ...] = ()
    labels: Any = None  # the --qrels file's labels, read (and refused if malformed) here
    engine: str = "local"  # or "dask": the self-queries retrieved on a Dask cluster
    scheduler: str | None = None
    workers: int | None = None

    @classmethod
    def checked(cls, corpus: str | os.PathLike[str],
                data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE,
                retriever: str | None = None, model: str | None = None,
                backend: str | None = None, index: str = "flat", hnsw_m: int | None = None,
                hnsw_ef_search: int | None = None, device: str | None = "auto",
                dtype: str | None = "auto", rerank: str | None = None,
                rerank_depth: int | None = None, qrels: str | os.PathLike[str] | None = None,
                qrels_level: str | None = None, min_index_recall: float | None = None,
                max_index_hidden: int | None = None, generator: str | None = None,
                generator_options: dict[str, Any] | None = None, include: Sequence[str] = (),
                omit: Sequence[str] = (), seed: int = 0, **options: Any) -> ProbeSettings:
        """Every setting checked and resolved against the recorded run, once."""
        check_seed(seed)
        check_index_gates(min_index_recall, max_index_hidden)
        if options.get("engine", "local") not in ("local", "dask"):
            raise RagcovError(f"unknown --engine {options['engine']!r}: expected local or dask")
        if options.get("workers") is not None and options["workers"] < 1:
            raise RagcovError(f"--workers must be at least 1, got {options['workers']}")
        # The labels are read first: a malformed line stops the command before any probe.
        labels = read_qrels(qrels, qrels_level) if qrels is not None else None
        fp = recorded_retriever(data_file)  # read once: retriever, precision and reranker
        kind, model, backend = probe_settings(data_file, fp, str(corpus), retriever, model,
                                              backend)
        dtype = probe_dtype(fp, dtype)
        check_hardware(kind, device, dtype, backend, model)
        extra = index_options(kind, index, hnsw_m, hnsw_ef_search)
        rerank, rerank_depth = probe_rerank(fp, rerank, rerank_depth)
        check_rerank(rerank, rerank_depth, 1)
        # No recorded run, no probe: said before a dense corpus is embedded for nothing.
        _require_recorded_run(CoverageData(data_file))
        return cls(corpus=corpus, data_file=Path(data_file), retriever=kind,
                   from_data_file=retriever is None, model=model, backend=backend, index=index,
                   index_options=tuple(extra.items()), device=device, dtype=dtype,
                   rerank=rerank, rerank_depth=rerank_depth, include=tuple(include),
                   omit=tuple(omit), seed=seed, generator=generator,
                   generator_options=tuple((generator_options or {}).items()), labels=labels,
                   **options)


@dataclass
class CorpusProbed:
    """What :func:`probe_corpus` did: the probe run, and lost gold where labels were given."""

    run: ProbeRun
    lost_gold: dict[str, Any] | None


def probe_corpus(settings: ProbeSettings, progress: bool = True,
                 notify: Any = None) -> CorpusProbed:
    """``ragcov probe`` from paths and names: load the corpus, build the recorded run's
    retriever (and reranker, and the LLM of ``--generator``), and :func:`probe` it."""
    s = settings
    corpus = load_corpus(s.corpus, chunk_size=s.chunk_size, chunk_overlap=s.chunk_overlap,
                         split=s.split, doc_key=s.doc_key, id_key=s.id_key,
                         chunk_ids=chunk_ids_of(s.data_file, None, "a probe"))
    retriever = make_retriever(s.retriever, corpus, model=s.model, index=s.index,
                               progress=progress, backend=s.backend, device=s.device,
                               dtype=s.dtype, **dict(s.index_options))
    if s.rerank is not None:
        retriever = with_reranker(retriever, corpus, s.rerank, s.rerank_depth, 1, notify=notify)
    generator = None
    if s.generator is not None:
        generator = make_generator(s.generator, corpus.texts, **dict(s.generator_options))
    dask = None if s.engine == "local" else {
        "retriever": s.retriever, "model": s.model, "index": s.index,
        "scheduler": s.scheduler, "workers": s.workers}
    done = probe(corpus, retriever, s.data_file, sample=s.sample, include=s.include,
                 omit=s.omit, seed=s.seed, progress=progress, generator=generator,
                 exact=s.exact, notify=notify, dask=dask)
    gold = lost_gold_of(done.reachability, s.labels) if s.labels is not None else None
    return CorpusProbed(done, gold)


def _require_recorded_run(data: CoverageData) -> None:
    if not data.exists():
        raise RagcovError(f"{data.path}: no coverage data; probes are measured against a "
                          "recorded run (run `ragcov run` first, with the same retriever)")


def _record_rerank(data: CoverageData, fingerprint: dict[str, Any]) -> None:
    """The reranking stage of a run or probe run, as its fingerprint names it."""
    from ragcov.data.stages import write_meta

    if fingerprint.get("rerank"):
        write_meta(data, "rerank", fingerprint["rerank"])


def _llm_probe(generator: Any, texts: Sequence[str], ids: Sequence[str], row: int,
               seed: int) -> Any:
    """One question written for the chunk at ``row``; kept (empty) when the writer gives
    nothing usable, so a rerun does not ask again."""
    from ragcov.generation.cleaning import clean

    gen = generator.generate([texts[row]], attempt=1, seed=seed * 1_000_003 + row)
    return ProbeRow(probe_id(ids[row], LLM), row, LLM, clean(gen.raw))


def audit_reachability(data_file: str | os.PathLike[str], scope: Any = None) -> Any:
    """Every chunk's status (covered, untested, unreachable), hubs and the reachable
    denominator, from a data file's tests and probes; with ``scope`` (a
    :class:`ReportScope`, e.g. :func:`configured_scope`'s) its totals count the chunks a
    report with that scope counts, so probe and report print one set of numbers."""

    if scope is not None:
        return load_scoped(data_file, scope).reachability
    from ragcov.data.stages import read_stages_of

    data = CoverageData(data_file)
    tests = data.suite_matrix()
    probes = read_probes(data, tests.n_chunks)
    return audit(tests, probes, details=lambda positions: chunk_details(data, positions),
                 probe_texts=lambda ids: probe_texts(data, ids),
                 stages=read_stages_of(data, tests, probes)).with_candidates(
        data.chunk_texts(), dict(zip(tests.chunk_ids, chunk_hashes(data.path))))


def read_qrels(qrels: str | os.PathLike[str], level: str | None = None) -> Any:
    """Relevance labels for ``ragcov probe --qrels``, read before any probe runs: a bad
    file is reported at once, not after an hour of retrieval."""

    if level is not None and level not in ("doc", "chunk"):
        raise RagcovError(f"--qrels-level must be doc or chunk, got {level!r}")
    return load_qrels(qrels, level)  # type: ignore[arg-type]


def lost_gold_of(r: Any, labels: Any) -> dict[str, Any]:
    """Lost gold (``ragcov probe --qrels``): relevant chunks or documents no test retrieves,
    and those no probe retrieves either. Labels naming no chunk or document of the corpus
    are counted in ``not_in_corpus``, never dropped silently."""

    relevant = {i for items in labels.relevant.values() for i in items}
    if labels.level == "chunk":
        position = {cid: i for i, cid in enumerate(r.chunk_ids)}
        out = lost_gold(r, relevant_chunks={position[c] for c in relevant if c in position})
        known = set(position)
    else:
        out = lost_gold(r, relevant_docs=relevant)
        known = {str(d) for d in r.doc_ids}
    out["level"] = labels.level
    out["not_in_corpus"] = sorted(relevant - known)
    return out


# --- run from paths and names (``ragcov run``, ``ragcov index``) --------------------------

@dataclass
class RunResult:
    """What ``run`` recorded: the hit matrix, where it went and the corpus's size."""

    matrix: CoverageMatrix
    data_file: Path
    chunks: int


@dataclass(frozen=True)
class RunSettings:
    """The settings of one recording, checked once where the command enters.

    ``ragcov run`` used to hand 18 loose values down through the calls, and k, the
    destination and "is the corpus a store" were each checked several times on the way.
    :meth:`checked` checks everything a run can be refused for, before the corpus is read
    or a model loaded (as scikit-learn validates an estimator's parameters once), and the
    run reads its settings from here. ``kind`` is the retriever resolved (a store URL is
    searched by the store unless another is named); ``destination`` the data file the run
    writes (a new shard's name in parallel mode).
    """

    corpus: str | os.PathLike[str]
    queries: str | os.PathLike[str]
    kind: str
    destination: Path
    model: str | None = None
    backend: str | None = None
    k: int = 5
    index: str = "flat"
    append: bool = False
    chunk_size: int = 1000
    chunk_overlap: int = 100
    split: bool = False
    doc_key: str | None = None
    documents: str | os.PathLike[str] | None = None  # whole documents, to place chunks made elsewhere
    id_key: str | None = None
    chunk_ids: str | None = None  # position or content; an --append: the file's own
    engine: str = "local"
    scheduler: str | None = None
    partitions: int | None = None
    device: str | None = "auto"
    dtype: str | None = "auto"
    # A reranking stage (--rerank, --rerank-depth) and the built-in HNSW's graph settings.
    rerank: str | None = None
    rerank_depth: int | None = None
    hnsw_m: int | None = None
    hnsw_ef_search: int | None = None

    @classmethod
    def checked(cls, corpus: str | os.PathLike[str], queries: str | os.PathLike[str],
                retriever: str | None = None, data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE,
                parallel_mode: bool = False, **options: Any) -> RunSettings:
        """Every setting checked, once; a run that cannot be made is refused here."""
        from ragcov.retrievers import default_retriever
        from ragcov.retrievers.onnx_encoder import check_backend

        validate_k(options.get("k", 5))
        path = Path(data_file)
        if parallel_mode:
            if options.get("append"):
                raise RagcovError("--append and --parallel-mode do not go together: a shard is new")
            path = shard_path(path)
        engine = options.get("engine", "local")
        if engine not in ("local", "dask"):
            raise RagcovError(f"unknown engine {engine!r}: expected local or dask")
        check_backend(options.get("backend"))
        kind = default_retriever(retriever, corpus)
        device, dtype = options.get("device", "auto"), options.get("dtype", "auto")
        # Device and precision (ragcov.retrievers.hardware): refused now, before anything is
        # read or written. Dask workers each resolve their own device: the spelling only here.
        if engine == "local":
            from ragcov.retrievers.dense import check_hardware

            check_hardware(kind, device, dtype, options.get("backend"), options.get("model"))
        else:
            from ragcov.retrievers.hardware import check_settings

            check_settings(kind, device, dtype)
        if engine == "dask" and kind == "store":
            raise RagcovError("--retriever store (the default for a store URL) searches the store "
                              "from this process: use --engine local, or name another --retriever")
        index_options(kind, options.get("index", "flat"), options.get("hnsw_m"),
                      options.get("hnsw_ef_search"))
        check_rerank(options.get("rerank"), options.get("rerank_depth"), options.get("k", 5))
        if engine == "dask" and options.get("rerank") is not None:
            raise RagcovError("--rerank runs the reranker in this process: use --engine local")
        # Before the corpus is embedded: a destination that cannot take the run fails now.
        CoverageData(path).check_destination()
        if options.get("append"):
            options["chunk_ids"] = chunk_ids_of(path, options.get("chunk_ids"), "an --append")
        return cls(corpus=corpus, queries=queries, kind=kind, destination=path, **options)


def run(corpus: str | os.PathLike[str] | RunSettings, queries: str | os.PathLike[str] = "",
        retriever: str | None = None, progress: bool = True, notify: Any = None,
        **options: Any) -> RunResult:
    """``ragcov run``: load the corpus and suite, build the retriever by name, record the run.

    ``corpus`` is a :class:`RunSettings` already checked (what the CLI passes), or the
    corpus with the queries and the other settings as keywords (``k``, ``model``,
    ``data_file`` ...), checked here. ``notify`` receives the lines a user should see
    while it runs (which store and model answer, how hits without ids were matched).
    """
    settings = corpus if isinstance(corpus, RunSettings) else RunSettings.checked(
        corpus, queries, retriever, **options)
    return _run(settings, progress, notify or (lambda line: None))


def _run(s: RunSettings, progress: bool, say: Any) -> RunResult:
    from ragcov.retrievers import make_retriever
    from ragcov.retrievers.store import store_run_line

    corpus_obj = load_corpus(s.corpus, chunk_size=s.chunk_size, chunk_overlap=s.chunk_overlap,
                             split=s.split, doc_key=s.doc_key, documents=s.documents,
                             id_key=s.id_key, chunk_ids=s.chunk_ids)
    suite = load_suite(s.queries)
    model = s.model
    if s.engine == "dask":
        from ragcov.distributed import measure_dask

        if s.kind == "dense" and corpus_obj.store is not None:
            # The workers build their own retrievers; the store's model is checked here, once.
            from ragcov.retrievers.store import settle_model

            model = settle_model(corpus_obj, model).model
        m = measure_dask(corpus_obj, suite, retriever=s.kind, model=model, index=s.index, k=s.k,
                         data_file=s.destination, append=s.append, scheduler=s.scheduler,
                         partitions=s.partitions, progress=progress, backend=s.backend,
                         device=s.device, dtype=s.dtype)
        return RunResult(m, s.destination, len(corpus_obj))
    # dense and bm25 draw their own bars, a URL builds nothing (and may hold a secret);
    # a module:attr factory shows a spinner while it builds its store.
    factory = s.kind not in ("dense", "bm25") and "://" not in s.kind
    with status(f"Building retriever {s.kind} ...", enabled=progress and factory):
        r = make_retriever(s.kind, corpus_obj, model=model, index=s.index, progress=progress,
                           backend=s.backend, device=s.device, dtype=s.dtype,
                           **index_options(s.kind, s.index, s.hnsw_m, s.hnsw_ef_search))
    if s.rerank is not None:
        r = with_reranker(r, corpus_obj, s.rerank, s.rerank_depth, s.k, notify=say)
    if line := store_run_line(corpus_obj, s.kind, r, s.k):
        say(line)
    _say_languages(corpus_obj, r, say)
    from ragcov.retrievers.hardware import encoder_line, precision_recall_line

    if progress and (line := encoder_line(r)):
        say(line)
    m = measure(corpus_obj, suite, r, k=s.k, data_file=s.destination, append=s.append,
                progress=progress)
    if is_retriever_spec(s.kind):
        record_retriever_source(s.destination, s.kind)
    if line := precision_recall_line(r, suite, s.k, CoverageData(s.destination), s.append):
        say(line)
    twins = resolver_counts(r)
    if twins is not None and twins.line():
        say(twins.line())
    return RunResult(m, s.destination, len(corpus_obj))


def _say_languages(corpus: Corpus, retriever: Any, say: Any) -> None:
    """The corpus's scripts where any is not Latin, and one warning where an English-only
    embedding model embeds a corpus that is mostly not English."""
    from ragcov.analyzer import script_shares
    from ragcov.retrievers.languages import english_model_warning, scripts_line, stemmer_line
    from ragcov.user_warnings import RetrievalWarning, warn

    shares = script_shares(corpus.texts)  # read once, for the line and the warning
    if line := scripts_line(shares):
        say(line)
    fp = retriever.fingerprint()
    if line := stemmer_line(fp):
        say(line)
    if fp.get("kind") in ("dense", "store") and (
            line := english_model_warning(fp.get("model"), corpus.texts, shares)):
        warn(line, RetrievalWarning)


def index_options(kind: str, index: str, hnsw_m: int | None, hnsw_ef_search: int | None
                  ) -> dict[str, int]:
    """The dense retriever's HNSW settings, refused where nothing takes them."""
    given = {"hnsw_m": hnsw_m, "ef_search": hnsw_ef_search}
    flags = {"hnsw_m": "--hnsw-m", "ef_search": "--hnsw-ef-search"}
    out = {key: value for key, value in given.items() if value is not None}
    for key, value in out.items():
        if isinstance(value, bool) or value < 1:
            raise RagcovError(f"{flags[key]} must be a whole number of at least 1, got {value}")
    if out and (kind != "dense" or index != "hnsw"):
        raise RagcovError(f"{', '.join(flags[key] for key in out)} shape the dense retriever's "
                          "--index hnsw graph: give --retriever dense --index hnsw")
    return out


def check_rerank(rerank: str | None, depth: int | None, k: int) -> None:
    """``--rerank`` and ``--rerank-depth`` go together, the depth at least k."""
    from ragcov.retrievers.rerank import check_depth

    if (rerank is None) != (depth is None):
        raise RagcovError("--rerank MODEL and --rerank-depth N go together: the reranker orders "
                          "the first N candidates")
    check_depth(depth, k)


def with_reranker(retriever: Any, corpus: Corpus, rerank: str, depth: int | None, k: int,
                  notify: Any = None) -> Any:
    """``retriever`` as the first stage of a reranked pipeline (``--rerank``)."""
    from ragcov.retrievers.rerank import RerankedRetriever, make_reranker

    check_rerank(rerank, depth, k)
    assert depth is not None
    reranker = make_reranker(rerank)
    if notify is not None and not getattr(reranker, "trained_head", True):
        notify(f"ragcov: reranker {rerank}: its checkpoint has no trained classification head; "
               f"one is drawn from seed 0 (the same order every run, not a trained reranker's)")
    return RerankedRetriever(retriever, reranker, depth, corpus)


def probe_rerank(fp: dict[str, Any] | None, rerank: str | None, depth: int | None
                 ) -> tuple[str | None, int | None]:
    """The reranking stage for ``ragcov probe``: what was given, else the recorded run's
    (``fp``, its retriever fingerprint: a CrossEncoder's name or path, a function's
    ``module:attr``, and the depth)."""
    if rerank is not None or depth is not None:
        return rerank, depth
    recorded = (fp or {}).get("rerank") or {}
    name = recorded.get("name") or recorded.get("source") or recorded.get("model")
    if not recorded or not name:
        return None, None
    return str(name), int(recorded.get("depth"))


@dataclass
class Indexed:
    """What ``index`` did: the chunks, whether they were embedded now, model and backend."""

    chunks: int
    embedded: bool
    model: str
    backend: str
    cache: Path
    placement: Any = None  # where it was embedded (ragcov.retrievers.hardware.Placement)


def index(corpus: str | os.PathLike[str], model: str | None = None, backend: str | None = None,
          chunk_size: int = 1000, chunk_overlap: int = 100, split: bool = False,
          device: str | None = "auto", dtype: str | None = "auto",
          chunk_ids: str | None = None) -> Indexed:
    """``ragcov index``: embed the corpus for the dense retriever into the cache."""
    from ragcov.retrievers import make_retriever
    from ragcov.retrievers.dense import check_hardware
    from ragcov.retrievers.onnx_encoder import check_backend

    check_backend(backend)  # before the corpus is read
    check_hardware("dense", device, dtype, backend, model)
    corpus_obj = load_corpus(corpus, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                             split=split, chunk_ids=chunk_ids)
    # The dense retriever's own door: over a store URL the store's model is settled first
    # (checked against its vectors), as ``run --retriever dense`` does, so the cache
    # ``index`` fills is the one that run will read.
    r = make_retriever("dense", corpus_obj, model=model, backend=backend, device=device,
                       dtype=dtype)
    return Indexed(len(corpus_obj), bool(r.chunks_embedded), r.model_name, r.backend, cache_dir(),
                   r.placement)


# --- drift: retrieval under corpus change (``ragcov drift``) -------------------------------

@dataclass
class DriftRun:
    """What ``corpus_drift`` did and found: the summary as recorded, and this run's account."""

    summary: Any       # ragcov.drift.summary.DriftSummary
    data_file: Path
    copies: int        # the copies the relations need
    searched: int      # searched now
    resumed: int       # already recorded by an interrupted run
    embedded: int      # chunks embedded now (a dense run's changed chunks)


def recorded_suite(data_file: str | os.PathLike[str]) -> Suite:
    """The questions a run recorded (``ragcov run``, a pytest session) as a suite, so a
    command that reruns them (drift) needs no queries file of its own."""
    data = CoverageData(data_file)
    texts = data.query_texts() if data.exists() else {}
    if texts:  # the suite: questions ``generate`` wrote and no suite accepted are not in it
        kept = set(data.suite_matrix().query_ids)
        texts = {qid: text for qid, text in texts.items() if qid in kept}
    if not texts:
        raise RagcovError(f"{data_file} holds no recorded queries: give --queries, or record "
                          "the suite first (ragcov run, or pytest --ragcov)")
    from ragcov.suite import Query

    return Suite([Query(qid, text) for qid, text in texts.items()],
                 source=f"{data_file} (its recorded queries)")


def corpus_drift(corpus: str | os.PathLike[str] | Corpus,
                 queries: str | os.PathLike[str] | Suite | None,
                 retriever: Any = None, model: str | None = None, backend: str | None = None,
                 k: int = 5, index: str = "flat",
                 data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE,
                 relations: Sequence[str] | None = None, seed: int = 0, noise_rate: float = 0.02,
                 distractors: str | os.PathLike[str] | None = None, resamples: int = 2000,
                 confidence: float = 0.95, chunk_size: int = 1000, chunk_overlap: int = 100,
                 split: bool = False, doc_key: str | None = None, id_key: str | None = None,
                 progress: bool = True,
                 notify: Any = None, on_copy: Any = None, engine: str = "local",
                 scheduler: str | None = None, workers: int | None = None) -> DriftRun:
    """``ragcov drift``: run the suite on transformed copies of the corpus and judge each
    metamorphic relation (noise, format, stale, distractors, duplicate; identity on request).

    ``corpus`` and ``queries`` are paths (as ``run`` takes them) or loaded objects;
    ``queries`` None reruns the questions ``data_file`` recorded (a pytest session's);
    ``retriever`` is a name (``dense``, ``bm25``, ``store``, ``module:attr`` naming a
    factory that takes the corpus) or, from Python, a callable ``corpus -> retriever``.
    The suite's baseline is recorded in ``data_file`` as ``run --append`` records it; the
    copies' results go to the file's ``drift_*`` tables. Resumable: a rerun with the same
    settings searches only the copies not yet recorded. ``relations`` None is the default
    set, from which the table forms of ``format`` drop out when the corpus has no table.
    """
    from ragcov.drift.distractors import check_distractor_path, load_distractors
    from ragcov.drift.engine import DriftSettings, run_drift
    from ragcov.drift.rebuild import rebuilder
    from ragcov.drift.relations import DEFAULT_RELATIONS, expand_relations, tables_in, unique_id_check
    from ragcov.drift.versions import find_versions

    say = notify or (lambda line: None)
    check_seed(seed)
    validate_k(k)
    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown --engine {engine!r}: expected local or dask")
    if workers is not None and workers < 1:
        raise RagcovError(f"--workers must be at least 1, got {workers}")
    if isinstance(noise_rate, bool) or not isinstance(noise_rate, (int, float)) or \
            not 0 <= noise_rate <= 1:
        raise RagcovError(f"--noise-rate must be a rate from 0 to 1, got {noise_rate}")
    if not isinstance(resamples, int) or resamples < 100:
        raise RagcovError(f"--resamples must be a whole number of at least 100, got {resamples}")
    if not 0 < confidence < 1:
        raise RagcovError(f"--confidence must be between 0 and 1, got {confidence}")
    asked = relations is not None
    names = expand_relations(relations if asked else DEFAULT_RELATIONS)  # type: ignore[arg-type]
    if not names:
        raise RagcovError("no relation to test: give --relation noise, format, stale, "
                          "distractors, duplicate or identity")
    if distractors is not None and "distractors" in names and not isinstance(corpus, Corpus):
        check_distractor_path(distractors, corpus)
    kind = retriever if retriever is not None and not isinstance(retriever, str) else None
    if kind is None:
        kind, model, backend = recorded_choice(
            data_file, corpus if not isinstance(corpus, Corpus) else "", retriever, model,
            backend, "the drift run")
    path = Path(data_file)
    CoverageData(path).check_destination()
    corpus_obj = corpus if isinstance(corpus, Corpus) else load_corpus(
        corpus, chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split, doc_key=doc_key,
        id_key=id_key, chunk_ids=chunk_ids_of(path, None, "drift"))
    suite = (queries if isinstance(queries, Suite) else recorded_suite(path) if queries is None
             else load_suite(queries))
    if len(suite) == 0:
        raise RagcovError("the suite is empty (no queries)")
    unique_id_check(corpus_obj)
    notes: dict[str, list[str]] = {}
    forms = [n for n in names if n in ("format:rows", "format:markdown", "format:csv")]
    if forms and tables_in(corpus_obj) == 0:
        if asked:
            raise RagcovError(f"{corpus_obj.source or 'the corpus'}: no table to re-express for "
                              f"{', '.join(forms)} (tables are Markdown pipe tables: | cells | "
                              "lines with a |---| line under the header); test format:whitespace "
                              "or format:case, or leave format out")
        names = [n for n in names if n not in forms]
        notes["format:whitespace"] = ["the corpus has no table: its rows, markdown and csv forms "
                                      "were not tested"]
    settings = DriftSettings(relations=names, seed=seed, noise_rate=float(noise_rate),
                             resamples=resamples, confidence=confidence, notes=notes)
    if "distractors" in names:
        settings.distractors, settings.distractor_source, extra = load_distractors(
            distractors, corpus_obj, chunk_size, chunk_overlap)
        notes.setdefault("distractors", []).extend(extra)
    versions = find_versions(corpus_obj) if "stale" in names else None
    if versions is not None:
        notes["stale:versions"] = [
            f"the corpus's own versions ({versions.key!r}): {len(versions.current)} superseded "
            f"chunks in {versions.versioned_documents} documents"]
    recorded = CoverageData(path)
    if recorded.exists():  # k and corpus now, before a model embeds the corpus
        with contextlib.suppress(NoDataFile):
            meta = recorded.meta()
            _drift_mix(check_compatible, meta, k, corpus_obj.hash, meta.retriever, str(path),
                       "this drift run")
    rebuild = rebuilder(kind, corpus_obj, model=model, index=index, backend=backend,
                        progress=progress)
    try:
        rebuild.check_searches_copies(k)  # before anything is recorded
        if isinstance(kind, str):
            from ragcov.retrievers.store import store_run_line

            if line := store_run_line(corpus_obj, kind, rebuild.base, k):
                say(line)
        _drift_mix(measure, corpus_obj, suite, rebuild.base, k=k, data_file=path, append=True,
                   progress=progress)
        remote = None
        if engine == "dask":
            from ragcov.distributed import drift_dask

            remote = drift_dask(
                {"corpus": corpus_obj, "retriever": kind, "model": model, "index_kind": index,
                 "backend": backend, "relations": settings.relations, "k": k, "seed": seed,
                 "noise_rate": float(noise_rate), "distractors": settings.distractors,
                 "versions": versions}, rebuild.base.fingerprint(), scheduler, workers)
        done = run_drift(corpus_obj, suite, rebuild, CoverageData(path), k, settings, versions,
                         progress=progress, notify=say, on_copy=on_copy, remote=remote)
    finally:
        rebuild.close()
    summary = drift_summary(path)
    return DriftRun(summary, path, done.copies, done.searched, done.resumed,
                    int(getattr(rebuild, "embedded", 0)))


def _drift_mix(step: Any, *args: Any, **kwargs: Any) -> Any:
    """``step`` with a data file that holds another run refused in drift's words."""
    try:
        return step(*args, **kwargs)
    except RagcovError as exc:
        if not str(exc).startswith("cannot mix coverage data"):
            raise
        raise RagcovError(f"{exc}; drift records the suite's run in the data file it reports "
                          "into: give the recorded run's settings, or another --data-file"
                          ) from None


def drift_summary(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE) -> Any:
    """The drift run recorded in ``data_file`` (:class:`ragcov.drift.summary.DriftSummary`),
    or None when it holds none: what ``report``, ``json``, ``html`` and ``diff`` show."""
    from ragcov.data.drift import read_drift
    from ragcov.drift.summary import summarize_drift

    record = read_drift(CoverageData(data_file))
    return None if record is None else summarize_drift(record)


def write_drift_html(data_file: Any, directory: str | os.PathLike[str]) -> Path | None:
    """``drift.html`` of the drift run in ``data_file`` (or of what :func:`report` read
    from it) into ``directory`` (an HTML report folder, or a new one); None when the file
    holds no drift run."""
    from ragcov.reporters.drift import write_drift_page
    from ragcov.scope import Scoped

    summary = data_file.drift if isinstance(data_file, Scoped) else drift_summary(data_file)
    return None if summary is None else write_drift_page(summary, directory)


def drift_limits(values: Sequence[str], relations: Sequence[str] | None = None) -> dict[str, float]:
    """``--max-violation-rate`` values as relation -> highest rate, checked before any work:
    with ``relations`` (``--relation``; None: the default ones) a limit on a relation that
    will not run is refused."""
    from ragcov.drift.relations import DEFAULT_RELATIONS, expand_relations
    from ragcov.drift.summary import check_limits_run, parse_limits

    limits = parse_limits(values)
    check_limits_run(limits, expand_relations(relations if relations is not None
                                              else DEFAULT_RELATIONS))
    return limits


def drift_gate(summary: Any, limits: dict[str, float]) -> list[str]:
    """The ``--max-violation-rate`` gate: one line per relation above its limit."""
    from ragcov.drift.summary import gate_failures

    return gate_failures(summary, limits)


# --- the data file as every reporter reads it ----------------------------------------------

def report(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, scope: Any = None) -> Any:
    """The data file's matrix with ``scope`` (a :class:`ReportScope`) applied.

    What ``ragcov report``, ``json``, ``xml``, ``lcov``, ``badge`` and ``html`` and the
    pytest plugin's reports all read: ``.matrix``, ``.summary()``, ``.excluded``,
    ``.reachability`` and the data file's ``.meta``.
    """
    with one_read(data_file):  # the report and the drift run it holds: one snapshot
        scoped = load_scoped(data_file, scope)
        scoped.drift = drift_summary(data_file)
    return scoped


@contextlib.contextmanager
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


def approximate_note(scoped: Any) -> str | None:
    """The caveat for hits from an approximate index (with its measured recall); None if
    exact. From what :func:`report` read (the file's meta and annotations): no second read."""
    meta = scoped.matrix.meta or {}
    return approximate_index_note(meta.get("retriever") or {}, meta.get(INDEX_RECALL))


def diff_gate_failures(d: CoverageDiff, max_gini_rise: float | None,
                       min_query_overlap: float | None) -> list[str]:
    """``ragcov diff``'s ``--max-gini-rise`` and ``--min-query-overlap``: the messages of
    those that fail (retrieval-fairness's two diff gates)."""
    from ragcov.compare.diff import gate_failures

    return gate_failures(d, max_gini_rise, min_query_overlap)


def check_index_gates(min_recall: float | None, max_hidden: int | None) -> None:
    """``--min-index-recall`` and ``--max-index-hidden`` refused before any work when out of range."""
    from ragcov.reachability.stages import check_index_gates as check

    check(min_recall, max_hidden)


def index_failure(reachability: Any, min_recall: float | None, max_hidden: int | None
                  ) -> str | None:
    """``--min-index-recall`` / ``--max-index-hidden`` over a reachability view: None when
    they pass (or are not asked), else the message; an error when no exact check was done."""
    from ragcov.reachability.stages import index_failure as failure

    return failure(None if reachability is None else reachability.stages, min_recall, max_hidden)


def fail_under_message(coverage: float, fail_under: float | None, precision: int | None = None,
                       what: str = "total", shown_precision: int | None = None,
                       flag: str = "fail-under") -> str | None:
    """The one ``--fail-under`` gate: None when it passes, else the message to print."""
    return fail_under_failure(coverage, fail_under, precision, what, shown_precision, flag)


def gate_total(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, scope: Any = None) -> Any:
    """The total a gate compares (``report --format total``, ``--fail-under``) from the
    totals the data file keeps, without reading its rows back: a
    :class:`ragcov.data.totals.Totals`, or None where they cannot answer (a scope that
    leaves chunks out, no data file): the caller reads the rows (:func:`report`), which
    gives the same number."""
    scope = scope if scope is not None else ReportScope()
    data = CoverageData(data_file)
    if not scope.whole or not data.exists():
        return None
    return data.totals(scope.include_generated)


def combine(files: Sequence[str | os.PathLike[str]] = (),
            data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, keep: bool = False,
            append: bool = False) -> Any:
    """``ragcov combine``: merge data files, or the shards found beside ``data_file``.

    Returns :class:`ragcov.data.shards.Combined`: what was merged, what was skipped and why.
    """

    return combine_shards([Path(f) for f in files], Path(data_file), keep=keep, append=append)


def erase(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE) -> list[Path]:
    """``ragcov erase``: delete the data file and its shards; returns shard-named files spared."""

    return erase_files(Path(data_file))


def chunk_ids_of(data_file: str | os.PathLike[str], given: str | None, what: str) -> str | None:
    """The id scheme a command that adds to ``data_file`` splits with: the one the file
    recorded (``--chunk-ids`` need not be repeated); another one given is refused, since
    every chunk would be renamed and the corpus no longer the recorded one."""
    from ragcov.corpus import POSITION_IDS, check_chunk_ids
    from ragcov.data.spans import recorded_chunk_ids

    data = CoverageData(data_file)
    if not data.exists():
        return given
    recorded = recorded_chunk_ids(data)
    if given is not None and check_chunk_ids(given) != (recorded or POSITION_IDS):
        raise RagcovError(f"{data_file} names its chunks by {recorded or POSITION_IDS}; {what} "
                          f"uses the same ids (drop --chunk-ids, or give {recorded or POSITION_IDS})")
    return recorded or given


def recorded_retriever(data_file: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The retriever fingerprint a data file recorded; None when there is no data file."""
    data = CoverageData(data_file)
    return data.meta().retriever if data.exists() else None


def recorded_choice(data_file: str | os.PathLike[str], corpus: str | os.PathLike[str],
                    retriever: str | None, model: str | None = None, backend: str | None = None,
                    who: str = "its additions") -> tuple[str, str | None, str | None]:
    """Retriever, model and backend of a command that adds to ``data_file`` (generate,
    drift): what was given, else the run's own, so one recorded run (``ragcov run`` or a
    pytest session) serves every command; a new file takes the default."""
    try:
        fp = recorded_retriever(data_file)
    except NoDataFile:
        fp = None  # an empty file: nothing recorded yet
    return probe_settings(data_file, fp, str(corpus), retriever, model, backend, who)


def probe_settings(data_file: str | os.PathLike[str], fp: dict[str, Any] | None, corpus: str,
                   retriever: str | None, model: str | None, backend: str | None,
                   who: str = "probes") -> tuple[str, str | None, str | None]:
    """Retriever, model and backend for ``ragcov probe``: what was given, else what the
    recorded run used. Probes must go through the run's own retriever (the check in
    :func:`probe` says so if they would not); an int8 dense run's backend is recorded,
    so its probes use int8 embeddings too. ``fp``: the retriever fingerprint
    ``data_file`` recorded (None: no data file)."""
    if fp is None:
        from ragcov.retrievers import default_retriever

        return retriever or default_retriever(None, corpus), model, backend
    kind = fp.get("kind")
    built_in = ("dense", "bm25", "store")
    if kind == "dense" and model is not None and retriever in (None, "dense"):
        from ragcov.retrievers.dense import resolve_model

        # Refused now: the check in :func:`probe` would come after the corpus is embedded.
        if resolve_model(model)[0] != fp.get("model"):
            raise RagcovError(f"{data_file} was recorded with the model {fp.get('model')!r}; "
                              f"{who} must use the same one (drop --model, or give "
                              f"{fp.get('model')!r})")
    if retriever is not None:
        # Refused now, not after embedding a whole corpus for a run that cannot be mixed.
        if retriever in built_in and kind in built_in and retriever != kind:
            raise RagcovError(f"{data_file} was recorded with the {kind} retriever; {who} must "
                              f"go through the same one (drop --retriever, or give {kind})")
        return retriever, model, backend
    if kind in built_in:
        recorded_model = fp.get("model") if kind == "dense" else None
        return kind, model or recorded_model, backend or fp.get("backend")
    from ragcov.retrievers.loader import is_spec

    name = fp.get("name")
    if is_spec(name):  # recorded as `module:attr` (ragcov run, or the plugin told its source)
        return str(name), model, backend
    source = CoverageData(data_file).annotation(RETRIEVER_SOURCE)
    if is_spec(source):  # a retriever of ragcov's protocol, loaded or recorded by that name
        return str(source), model, backend
    what = f"{kind} retriever {name}" if name else f"{kind} retriever"
    raise RagcovError(
        f"{data_file} was recorded with the {what}, which names no module:attr that builds it "
        "again: record the run under the factory's name (ragcov run --retriever module:attr; "
        "under pytest --ragcov-retriever module:attr, or ragcov_recorder(retriever, "
        "source='module:attr')), then every command reuses it")


OUTCOMES = "outcomes"


QUERY_TESTS = "query_tests"


def record_outcomes(data_file: str | os.PathLike[str], outcomes: dict[str, str],
                    askers: dict[str, list[str]] | None = None) -> None:
    """Keep each test's outcome (pytest node id -> passed, failed, skipped) with the data
    file, beside the outcomes of earlier sessions' other tests, and every test that asked
    each question (a question two tests ask fails with either)."""
    data = CoverageData(data_file)
    data.annotate(OUTCOMES, {**(data.annotation(OUTCOMES) or {}), **outcomes})
    if askers:
        data.annotate(QUERY_TESTS, {**(data.annotation(QUERY_TESTS) or {}), **askers})


def correctness(m: Any, qrels: str | os.PathLike[str] | None = None,
                level: str | None = None) -> Any:
    """Hit rate and recall@k from relevance labels, else the pass rate of the recorded test
    outcomes; None when neither exists (:class:`ragcov.failures.Correctness`)."""
    from ragcov.failures import label_correctness, outcome_correctness

    if qrels is not None:
        return label_correctness(m, read_qrels(qrels, level))
    return outcome_correctness((m.meta or {}).get(OUTCOMES) or {})


def check_qrels(qrels: str | os.PathLike[str], corpus: str | os.PathLike[str] | Corpus,
                old_corpus: str | os.PathLike[str] | Corpus | None = None,
                data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, level: str | None = None,
                fix: str | os.PathLike[str] | None = None, chunking: dict[str, Any] | None = None
                ) -> Any:
    """``ragcov qrels check``: sort each label of ``qrels`` (made on the old chunking: the
    ``old_corpus``, else the corpus ``data_file`` recorded) into valid, re-anchorable,
    merged, split and orphaned against ``corpus``, by text span; with ``fix``, write the
    sound ones under their new ids there (:class:`ragcov.compare.labels.LabelCheck`).

    ``chunking`` holds how the new corpus is read (``chunk_size``, ``chunk_overlap``,
    ``split``, ``documents``, ``chunk_ids``), as ``run`` takes them; without ``chunk_ids``
    documents ragcov splits are named as the data file's were, so the repaired labels
    keep the names the team chose."""
    from ragcov.compare.labels import check_labels, fixed_text
    from ragcov.corpus import splits_documents
    from ragcov.data.spans import recorded_chunk_ids, recorded_corpus
    from ragcov.files import write_text_atomic

    if level is not None and level not in ("doc", "chunk"):
        raise RagcovError(f"--qrels-level must be doc or chunk, got {level!r}")
    if fix is not None:
        check_outputs([Path(fix)], [qrels, corpus if not isinstance(corpus, Corpus) else None,
                                    old_corpus if not isinstance(old_corpus, Corpus) else None,
                                    data_file if old_corpus is None else None])
    chunking = dict(chunking or {})
    if (chunking.get("chunk_ids") is None and old_corpus is None and not isinstance(corpus, Corpus)
            and splits_documents(corpus, bool(chunking.get("split")))):
        chunking["chunk_ids"] = recorded_chunk_ids(CoverageData(data_file))
    new = corpus if isinstance(corpus, Corpus) else load_corpus(corpus, **chunking)
    if isinstance(old_corpus, Corpus):
        old = old_corpus
    elif old_corpus is not None:
        old = load_corpus(old_corpus)
    else:
        data = CoverageData(data_file)
        if not data.exists():
            raise RagcovError(f"{data_file}: no data file to read the old chunking from; give "
                              "--old-corpus (the chunks the labels were made on) or --data-file")
        old = recorded_corpus(data)
    done = check_labels(qrels, new, old, level)
    if fix is not None:
        text, n = fixed_text(done)
        write_text_atomic(fix, text)
        done.written, done.kept = Path(fix), n
    return done


def probe_dtype(fp: dict[str, Any] | None, dtype: str | None) -> str | None:
    """``--dtype`` for ``ragcov probe``: as given, else the recorded run's precision (its
    fingerprint ``fp`` names fp16 or bf16), so probes embed as the run did."""
    if dtype not in (None, "auto"):
        return dtype
    return (fp or {}).get("precision") or dtype


RETRIEVER_SOURCE = "retriever_source"


def is_retriever_spec(name: object) -> bool:
    """Whether ``name`` reads as ``module:attr`` (a retriever or its factory)."""
    from ragcov.retrievers.loader import is_spec

    return is_spec(name)


def record_retriever_source(data_file: str | os.PathLike[str], source: str) -> None:
    """Keep the ``module:attr`` that builds the run's retriever beside its fingerprint, so
    every command can build it again (a retriever of ragcov's own protocol fingerprints
    itself, without the name it was loaded by)."""
    CoverageData(data_file).annotate(RETRIEVER_SOURCE, source)


def record_retrievals(corpus: Corpus, k: int, fingerprint: dict[str, Any],
                      queries: dict[str, str], results: dict[str, Any],
                      data_file: str | os.PathLike[str], context: dict[str, str] | None = None,
                      matching: Any = None) -> None:
    """Write retrievals recorded elsewhere (the pytest plugin's session) into ``data_file``:
    ``queries`` id -> text, ``results`` id -> ranked ``(chunk id, score)``, ``context``
    id -> the test that asked, ``matching`` how hits without ids were matched."""

    run = Run(k=k, retriever=fingerprint)
    for qid, text in queries.items():
        run.add(qid, text, results[qid])
    data = CoverageData(data_file)
    data.write(corpus, run, context=context)
    record_matching(data, matching)


# Factories reached through this door. Each imports its module when called: a retriever,
# a store client or an LLM client pulls in torch, a store's client or httpx, which no
# reading command may pay for at start-up (tests/test_startup.py). Plain imports a
# reader (and tests/test_architecture.py) can follow, not names forwarded by importlib.
def make_retriever(kind: str, corpus: Corpus, model: str | None = None, index: str = "flat",
                   progress: bool = True, **options: Any) -> Any:
    """A retriever by its CLI name (bm25, dense, store, ``module:attr`` or an HTTP URL)."""
    from ragcov.retrievers import make_retriever as make

    return make(kind, corpus, model=model, index=index, progress=progress, **options)


def default_retriever(retriever: str | None, corpus: str | os.PathLike[str]) -> str:
    """The retriever a run uses when none is named (a store URL: the store's own search)."""
    from ragcov.retrievers import default_retriever as default

    return default(retriever, corpus)


def check_hardware(kind: str, device: str | None, dtype: str | None, backend: str | None,
                   model: str | None) -> Any:
    """Every ``--device``/``--dtype`` error of a command embedding with retriever ``kind``,
    raised before the corpus is read; the placement it will take (None: embeds nothing)."""
    from ragcov.retrievers.dense import check_hardware as check

    return check(kind, device, dtype, backend, model)


def store_run_line(corpus: Corpus, kind: str, retriever: Any, k: int) -> str | None:
    """The one line that says which store, retriever and model a run over a store uses."""
    from ragcov.retrievers.store import store_run_line as line

    return line(corpus, kind, retriever, k)


def wrap(obj: Any, corpus: Corpus | None = None, name: str | None = None) -> Any:
    """A ragcov retriever for the user's own (a callable, LangChain, LlamaIndex)."""
    from ragcov.retrievers import wrap as wrapped

    return wrapped(obj, corpus, name)


def make_generator(kind: str, corpus_texts: Sequence[str], **options: Any) -> Any:
    """A question generator by name (openai, llama-cpp, extractive) for generate and probe."""
    from ragcov.generation import make_generator as make

    return make(kind, corpus_texts, **options)


def LangChainRetriever(retriever: Any, corpus: Corpus | None = None,  # noqa: N802
                  name: str | None = None) -> Any:
    """A LangChain retriever as a ragcov one (the pytest plugin's ``record`` wraps with it)."""
    from ragcov.retrievers.langchain import LangChainRetriever as adapter

    return adapter(retriever, corpus, name)


def LlamaIndexRetriever(retriever: Any, corpus: Corpus | None = None,  # noqa: N802
                   name: str | None = None) -> Any:
    """A LlamaIndex retriever as a ragcov one (the pytest plugin's ``record`` wraps with it)."""
    from ragcov.retrievers.llamaindex import LlamaIndexRetriever as adapter

    return adapter(retriever, corpus, name)


def loop_config(**settings: Any) -> LoopConfig:
    """The settings of a generation run (``ragcov generate``), checked."""
    from ragcov.generation.loop_types import LoopConfig as config

    return config(**settings)


def check_min_topic_coverage(minimum: float | None) -> None:
    """``--min-topic-coverage`` refused before any work when it is not a percentage."""
    from ragcov.topics.coverage import check_min_topic_coverage as check

    check(minimum)


def min_topic_failure(report: Any, minimum: float | None, precision: int | None = None
                      ) -> str | None:
    """The ``--min-topic-coverage`` gate: None when every topic is at least that covered."""
    from ragcov.topics.coverage import min_topic_failure as failure

    return failure(report, minimum, precision)


def gap_targets(path: Any, corpus: Any) -> tuple[list[str], list[str]]:
    """The untested chunks ``ragcov gap`` wrote, in the order generation aims at them."""
    from ragcov.generation.targets import gap_targets as targets

    return targets(path, corpus)


def configured_run(start: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``k`` and ``data_file`` as ``ragcov run`` reads them from the config file, and
    ``fail_under`` and ``precision`` as ``ragcov report`` does: what the pytest plugin
    takes from the file when no option or ini value says otherwise."""
    from ragcov.config import plugin_settings

    return plugin_settings(None if start is None else Path(start))[1]


def configured_scope(command: str = "report", start: str | os.PathLike[str] | None = None) -> Any:
    """The :class:`ReportScope` ``ragcov COMMAND`` applies from ``[tool.ragcov]`` (or
    ragcov.toml) with no flags: the pytest plugin's reports count what the CLI counts."""
    values = scope_settings(command, None if start is None else Path(start))
    lists = {k: tuple(values[k]) for k in ("include", "omit", "exclude", "exclude_docs")
             if k in values}
    return ReportScope(**lists, min_chunk_chars=values.get("min_chunk_chars", 0),
                       reachable=values.get("reachable", False),
                       reachable_if_probed=bool(values.get("reachable", False)),
                       include_generated=values.get("include_generated", False))


# --- coverage by topic (``ragcov topics``, ``report --by topic``) ---------------------------

def fit_topics(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, n_topics: int | None = None,
               seed: int = 0, vectors: str = "auto", model: str | None = None,
               corpus: Corpus | None = None, refit: bool = False) -> Any:
    """Cluster the data file's chunks into topics and store them there (``ragcov topics``).

    ``vectors``: ``auto`` (the run's own: a dense run's cached embeddings, a store's
    vectors when ``corpus`` is its URL, else TF-IDF), ``dense``, ``store`` or ``tfidf``.
    ``n_topics`` None chooses N. The stored set is kept when it was made the same way
    from the same corpus (``refit`` makes it again). Returns
    :class:`ragcov.topics.build.BuiltTopics`.
    """
    from ragcov.topics.build import build_topics

    check_seed(seed)
    return build_topics(str(data_file), n_topics, seed, vectors, model, corpus, refit)


def topic_coverage(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, scope: Any = None,
                   traffic: str | os.PathLike[str] | None = None, scoped: Any = None,
                   allow_different_k: bool = False,
                   allow_different_retriever: bool = False, missing_ok: bool = False) -> Any:
    """Coverage per stored topic (``ragcov topics``, ``report --by topic``), in the order to
    act on it; with ``traffic`` (imported production traces over the same corpus) the
    share of production hits each topic takes, and takes on untested chunks.

    ``scoped`` is what :func:`report` returned for ``data_file``, when already read.
    Returns :class:`ragcov.topics.coverage.TopicReport`; refuses, in one line, a file
    with stale topics, or without topics (``missing_ok``: returns None).
    """
    from ragcov.topics.build import fresh_topics
    from ragcov.topics.coverage import topic_numbers

    scoped = scoped if scoped is not None else load_scoped(data_file, scope)
    stored = fresh_topics(str(data_file), scoped.meta.corpus_hash if scoped.meta else None,
                          missing_ok)
    if stored is None:
        return None
    hits = None
    if traffic is not None:
        import numpy as np

        from ragcov.compare.gap import traffic_gap as gap

        g = gap(data_file, traffic, top=0, allow_different_k=allow_different_k,
                allow_different_retriever=allow_different_retriever)
        hits = np.bincount(g.traffic.hit_chunk, minlength=g.traffic.n_chunks)
    return topic_numbers(scoped, stored, str(data_file), hits)


def topic_targets(data_file: str | os.PathLike[str], topic: str, corpus: Corpus
                  ) -> tuple[int, str, list[str]]:
    """``generate --topic ID|LABEL``: the topic's number, label and its chunks no test
    retrieves yet (corpus order), the chunks generation aims at."""
    from ragcov.topics.build import fresh_topics
    from ragcov.topics.coverage import find_topic, topic_positions

    data = CoverageData(data_file)
    if not data.exists():
        raise RagcovError(f"{data_file}: no coverage data, so no topics; run `ragcov run` and "
                          "`ragcov topics` first")
    recorded = data.meta().corpus_hash
    if recorded != corpus.hash:
        raise RagcovError(f"{data_file} records another corpus (hash {recorded}, --corpus "
                          f"{corpus.hash}); its topics name other chunks")
    stored = fresh_topics(str(data_file), recorded)
    number = find_topic(stored, topic)
    m = data.matrix()
    mine = (topic_positions(stored, m.chunk_ids) == number) & ~m.covered()
    label = next(t.label for t in stored.labels if t.topic == number)
    return number, label, [m.chunk_ids[j] for j in mine.nonzero()[0]]
