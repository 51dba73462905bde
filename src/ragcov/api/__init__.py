"""ragcov's public API: one verb for each thing a user asks, documented in docs/api.md.

The command line and the pytest plugin parse and print; the work is done here. ``run``
(``ragcov run``, from paths and names) over ``measure`` (loaded objects), ``index``,
``record_traces`` (import), ``report`` (the scoped data file every reporter reads),
``combine``, ``erase``, ``select_tests``, ``find_faults``, ``write_html``,
``generate_questions`` over ``generate``, ``probe_corpus`` over ``probe``,
``audit_reachability``, ``coverage_diff``, ``traffic_gap``, ``check_qrels``,
``corpus_drift``, ``fit_topics`` and ``topic_coverage``; with the loaders and factories
that build their arguments. :data:`__all__` is the whole public surface; ``import ragcov``
offers the same verbs.

Apart from this page: the settings of a run and a probe run and the rules they apply
(:mod:`ragcov.api.settings`), the steps the verbs are made of (:mod:`ragcov.api.steps`),
and what only the command line uses, its checks and gates (:mod:`ragcov.api.cli_support`).

Light at import: ``ragcov report --format total`` takes only names of ``_LIGHT``
(``cli_support`` among them); taking any other loads the modules of the public types
(corpus, suite, matrix: numpy under them) first, see ``_DEFERRED`` and ``_Door`` below;
each verb imports the rest of its stack in its body.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.api.settings import ProbeSettings, RunSettings
from ragcov.data import DEFAULT_DATA_FILE, CoverageData
from ragcov.errors import RagcovError
from ragcov.scope import ReportScope

__all__ = [
    # what the verbs take: loaders, factories, the types they return
    "load_corpus", "load_suite", "make_retriever", "wrap", "make_generator", "Corpus", "Suite",
    "CoverageMatrix", "CoverageData", "ReportScope", "RagcovError", "DEFAULT_DATA_FILE",
    # recording a run
    "measure", "run", "RunSettings", "RunResult", "index", "Indexed", "record_traces",
    "Recorded", "record_retrievals", "record_outcomes", "combine", "erase",
    # reading what was recorded
    "report", "configured_scope", "correctness", "audit_reachability", "select_tests",
    "find_faults", "FoundFaults", "write_html", "coverage_diff", "traffic_gap", "check_qrels",
    # probing, generating, drift, topics
    "probe", "ProbeRun", "probe_corpus", "ProbeSettings", "CorpusProbed",
    "generate", "generate_questions", "topic_targets",
    "corpus_drift", "DriftRun", "drift_summary", "write_drift_html",
    "fit_topics", "topic_coverage",
]

# The public names whose modules bring numpy load the first time a caller takes any name
# but the light ones (`api.measure`, `from ragcov.api import load_corpus`): see _Door.
if TYPE_CHECKING:
    from ragcov.compare.diff import CoverageDiff
    from ragcov.compare.gap import TrafficGap
    from ragcov.corpus import Corpus, load_corpus
    from ragcov.failures import Failures
    from ragcov.faults import FaultReport
    from ragcov.generation.loop_types import GenerationSummary, LoopConfig
    from ragcov.matrix import CoverageMatrix
    from ragcov.suite import Suite, load_suite
    from ragcov.traces import ImportResult

# name -> (module, attribute): the imports above that run (tests/test_gate_totals.py checks
# the two lists agree). Type-only names (CoverageDiff, ImportResult ...) are not loaded.
_DEFERRED: dict[str, tuple[str, str]] = {
    "Corpus": ("ragcov.corpus", "Corpus"), "load_corpus": ("ragcov.corpus", "load_corpus"),
    "CoverageMatrix": ("ragcov.matrix", "CoverageMatrix"),
    "Suite": ("ragcov.suite", "Suite"), "load_suite": ("ragcov.suite", "load_suite"),
}

# The names a caller may take without loading the verbs' modules: what the CLI's options
# are declared with, the plugin's configured scope, and this package's own modules.
_LIGHT = frozenset({
    "DEFAULT_DATA_FILE", "CoverageData", "RagcovError", "ReportScope", "configured_scope",
    "cli_support", "settings", "steps",
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


# --- What the verbs take: retrievers, generators (loaders and types: above) -------------------

# Factories reached through this door. Each imports its module when called: a retriever,
# a store client or an LLM client pulls in torch, a store's client or httpx, which no
# reading command may pay for at start-up (tests/test_startup.py). Plain imports a
# reader (and tests/test_architecture.py) can follow, not names forwarded by importlib.
def make_retriever(kind: str, corpus: Corpus, model: str | None = None, index: str = "flat",
                   progress: bool = True, **options: Any) -> Any:
    """A retriever by its CLI name (bm25, dense, store, ``module:attr`` or an HTTP URL)."""
    from ragcov.retrievers import make_retriever as make

    return make(kind, corpus, model=model, index=index, progress=progress, **options)


def wrap(obj: Any, corpus: Corpus | None = None, name: str | None = None) -> Any:
    """A ragcov retriever for the user's own (a callable, LangChain, LlamaIndex)."""
    from ragcov.retrievers import wrap as wrapped

    return wrapped(obj, corpus, name)


def make_generator(kind: str, corpus_texts: Sequence[str], **options: Any) -> Any:
    """A question generator by name (openai, llama-cpp, extractive) for generate and probe."""
    from ragcov.generation import make_generator as make

    return make(kind, corpus_texts, **options)


# --- Recording a run (run, index, import, combine, erase) -------------------------------------

def measure(corpus: Corpus, suite: Suite, retriever: Any, k: int = 5,
            data_file: str | os.PathLike[str] | None = None, append: bool = False,
            progress: bool = True, batch_size: int = 64) -> CoverageMatrix:
    """Run ``suite`` through ``retriever`` and return the hit matrix.

    With ``data_file`` the run is recorded there; with ``append`` only queries not
    already in the file are retrieved, and the matrix covers the whole file.
    """
    from ragcov.api.steps import CHECKPOINT, append_in_parts, first_stage_recorder, record_first_stage
    from ragcov.data.datafile import INDEX_RECALL
    from ragcov.retrieval import Run, run_retriever, validate_k, warn_if_k_takes_the_corpus
    from ragcov.retrievers.twins import record_matching, resolver_counts

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
    staged = first_stage_recorder(retriever, corpus, k) if data is not None else None
    if data is not None and append and len(todo) > CHECKPOINT:
        # An append commits as it goes: an hour of a slow retriever interrupted at its last
        # query keeps every part before it, and the rerun retrieves only what is missing.
        append_in_parts(data, corpus, suite, staged or retriever, todo, k, batch_size, progress,
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
        record_first_stage(data, staged, [qid for qid, _ in todo], corpus, k, run.retriever)

    record_matching(data, resolver_counts(retriever), append)
    if getattr(retriever, "placement", None) is not None:  # where it embedded (x:hardware)
        from ragcov.retrievers.hardware import record_hardware

        record_hardware(data, retriever.placement, append)
    if retriever.fingerprint().get("approximate") and hasattr(retriever, "measure_recall"):
        data.annotate(INDEX_RECALL, retriever.measure_recall(suite.texts, k=k))
    return data.suite_matrix()


@dataclass
class RunResult:
    """What ``run`` recorded: the hit matrix, where it went and the corpus's size."""

    matrix: CoverageMatrix
    data_file: Path
    chunks: int


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
    from ragcov.api.settings import index_options, record_retriever_source, with_reranker
    from ragcov.api.steps import say_languages
    from ragcov.progress import status
    from ragcov.retrievers import make_retriever
    from ragcov.retrievers.loader import is_spec
    from ragcov.retrievers.store import store_run_line
    from ragcov.retrievers.twins import resolver_counts

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
    say_languages(corpus_obj, r, say)
    from ragcov.retrievers.hardware import encoder_line, precision_recall_line

    if progress and (line := encoder_line(r)):
        say(line)
    m = measure(corpus_obj, suite, r, k=s.k, data_file=s.destination, append=s.append,
                progress=progress)
    if is_spec(s.kind):
        record_retriever_source(s.destination, s.kind)
    if line := precision_recall_line(r, suite, s.k, CoverageData(s.destination), s.append):
        say(line)
    twins = resolver_counts(r)
    if twins is not None and twins.line():
        say(twins.line())
    return RunResult(m, s.destination, len(corpus_obj))


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
    from ragcov.files import cache_dir
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
    from ragcov.api.settings import check_engine
    from ragcov.api.steps import record_traced_first_stage
    from ragcov.data.schema import NoDataFile
    from ragcov.retrievers.twins import record_matching
    from ragcov.traces.records import cyclic_gc_paused

    check_engine(engine, workers)
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
        record_traced_first_stage(data, path, fmt, corpus, result)
    return Recorded(result, added, data)


def record_retrievals(corpus: Corpus, k: int, fingerprint: dict[str, Any],
                      queries: dict[str, str], results: dict[str, Any],
                      data_file: str | os.PathLike[str], context: dict[str, str] | None = None,
                      matching: Any = None, source: str | None = None) -> None:
    """Write retrievals recorded elsewhere (the pytest plugin's session) into ``data_file``:
    ``queries`` id -> text, ``results`` id -> ranked ``(chunk id, score)``, ``context``
    id -> the test that asked, ``matching`` how hits without ids were matched, ``source``
    the ``module:attr`` that builds the retriever again (kept so every command can)."""
    from ragcov.api.settings import record_retriever_source
    from ragcov.retrieval import Run
    from ragcov.retrievers.twins import record_matching

    run = Run(k=k, retriever=fingerprint)
    for qid, text in queries.items():
        run.add(qid, text, results[qid])
    data = CoverageData(data_file)
    data.write(corpus, run, context=context)
    record_matching(data, matching)
    if source is not None:
        record_retriever_source(data_file, source)


def record_outcomes(data_file: str | os.PathLike[str], outcomes: dict[str, str],
                    askers: dict[str, list[str]] | None = None) -> None:
    """Keep each test's outcome (pytest node id -> passed, failed, skipped) with the data
    file, beside the outcomes of earlier sessions' other tests, and every test that asked
    each question (a question two tests ask fails with either)."""
    from ragcov.data.datafile import OUTCOMES, QUERY_TESTS

    data = CoverageData(data_file)
    data.annotate(OUTCOMES, {**(data.annotation(OUTCOMES) or {}), **outcomes})
    if askers:
        data.annotate(QUERY_TESTS, {**(data.annotation(QUERY_TESTS) or {}), **askers})


def combine(files: Sequence[str | os.PathLike[str]] = (),
            data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, keep: bool = False,
            append: bool = False) -> Any:
    """``ragcov combine``: merge data files, or the shards found beside ``data_file``.

    Returns :class:`ragcov.data.shards.Combined`: what was merged, what was skipped and why.
    """
    from ragcov.data.shards import combine_shards

    return combine_shards([Path(f) for f in files], Path(data_file), keep=keep, append=append)


def erase(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE) -> list[Path]:
    """``ragcov erase``: delete the data file and its shards; returns shard-named files spared."""
    from ragcov.data.shards import erase as erase_files

    return erase_files(Path(data_file))


# --- Reading what was recorded (report, select, faults, html, diff, gap, qrels) ---------------

def report(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, scope: Any = None) -> Any:
    """The data file's matrix with ``scope`` (a :class:`ReportScope`) applied.

    What ``ragcov report``, ``json``, ``xml``, ``lcov``, ``badge`` and ``html`` and the
    pytest plugin's reports all read: ``.matrix``, ``.summary()``, ``.excluded``,
    ``.reachability`` and the data file's ``.meta``. ``.texts`` is read from the file on
    first use (docs/api.md says when it is refused).
    """
    from ragcov.data.datafile import one_read
    from ragcov.scope import load_scoped

    with one_read(data_file):  # the report and the drift run it holds: one snapshot
        scoped = load_scoped(data_file, scope)
        scoped.drift = drift_summary(data_file)
    return scoped


def configured_scope(command: str = "report", start: str | os.PathLike[str] | None = None) -> Any:
    """The :class:`ReportScope` ``ragcov COMMAND`` applies from ``[tool.ragcov]`` (or
    ragcov.toml) with no flags: the pytest plugin's reports count what the CLI counts."""
    from ragcov.config import scope_settings

    values = scope_settings(command, None if start is None else Path(start))
    lists = {k: tuple(values[k]) for k in ("include", "omit", "exclude", "exclude_docs")
             if k in values}
    return ReportScope(**lists, min_chunk_chars=values.get("min_chunk_chars", 0),
                       reachable=values.get("reachable", False),
                       reachable_if_probed=bool(values.get("reachable", False)),
                       include_generated=values.get("include_generated", False))


def correctness(m: Any, qrels: str | os.PathLike[str] | None = None,
                level: str | None = None) -> Any:
    """Hit rate and recall@k from relevance labels, else the pass rate of the recorded test
    outcomes; None when neither exists (:class:`ragcov.failures.Correctness`)."""
    from ragcov.api.settings import read_qrels
    from ragcov.data.datafile import OUTCOMES
    from ragcov.failures import label_correctness, outcome_correctness

    if qrels is not None:
        return label_correctness(m, read_qrels(qrels, level))
    return outcome_correctness((m.meta or {}).get(OUTCOMES) or {})


def audit_reachability(data_file: str | os.PathLike[str], scope: Any = None) -> Any:
    """Every chunk's status (covered, untested, unreachable), hubs and the reachable
    denominator, from a data file's tests and probes; with ``scope`` (a
    :class:`ReportScope`, e.g. :func:`configured_scope`'s) its totals count the chunks a
    report with that scope counts, so probe and report print one set of numbers."""
    from ragcov.data.columns import chunk_hashes
    from ragcov.data.probes import chunk_details, probe_texts, read_probes
    from ragcov.reachability.audit import audit
    from ragcov.scope import load_scoped

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
    from ragcov.api.settings import check_seed
    from ragcov.api.steps import selected_records
    from ragcov.data.columns import chunk_positions
    from ragcov.selection import DEFAULT_AFTER_SATURATION, order_document

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

        pos = document_positions(m, chunk_positions(data_file, m.chunk_ids))
        where = {cid: j for j, cid in enumerate(m.chunk_ids)}
        doc["lost_ranges"] = chunk_ranges((m.doc_ids[where[c]], pos[where[c]])
                                          for c in doc["cut"]["lost_chunks"])
    return doc


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
    from ragcov.data.datafile import OUTCOMES, QUERY_TESTS
    from ragcov.failures import label_failures, load_scores, outcome_failures, score_failures
    from ragcov.faults import analyse
    from ragcov.qrels import load_qrels

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
    from ragcov.files import load_json
    from ragcov.reporters.html import curve_from_order_file, greedy_curve, html_report, recorded_curve
    from ragcov.scope import Scoped, load_scoped

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


def coverage_diff(base: str | os.PathLike[str], head: str | os.PathLike[str],
                  allow_different_k: bool = False,
                  allow_different_retriever: bool = False, match: str = "id") -> CoverageDiff:
    """What changed between two recordings (``ragcov diff``); queries paired by ``match``."""
    from ragcov.api.steps import diff_topics
    from ragcov.compare.diff import coverage_diff as diff  # only diff pays for its import

    d = diff(base, head, allow_different_k, allow_different_retriever, match)
    d.topics = diff_topics(d)
    return d


def traffic_gap(tests: str | os.PathLike[str], traffic: str | os.PathLike[str],
                top: int | None = 100, allow_different_k: bool = False,
                allow_different_retriever: bool = False, engine: str = "local",
                scheduler: str | None = None, workers: int | None = None) -> TrafficGap:
    """Production retrievals the tests never make (``ragcov gap``); with ``engine="dask"``
    the traffic's hits are counted on a Dask cluster (``scheduler``, or a LocalCluster
    of ``workers`` processes), with the same result."""
    from ragcov.api.settings import check_engine

    check_engine(engine)
    if engine == "dask":
        from ragcov.distributed_traffic import gap_dask

        return gap_dask(tests, traffic, top, allow_different_k, allow_different_retriever,
                        scheduler, workers)

    from ragcov.compare.gap import traffic_gap as gap  # only gap pays for its import

    return gap(tests, traffic, top, allow_different_k, allow_different_retriever)


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
    from ragcov.overwrite import check_outputs

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


# --- Probing (ragcov probe) -------------------------------------------------------------------

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
    from ragcov.api.settings import check_seed, require_recorded_run
    from ragcov.api.steps import llm_probe, probe_on_dask, record_rerank
    from ragcov.data.probes import ProbeRow, append_probes, recorded_probe_ids
    from ragcov.data.schema import check_compatible, read_meta
    from ragcov.data.stages import probe_rows_writer
    from ragcov.progress import progress_bar
    from ragcov.reachability.exact_check import (
        StageRecorder,
        check_pending,
        check_settings,
        pending_work,
        record_settings,
    )
    from ragcov.reachability.selfquery import LLM, NONE, build_probes, choose_chunks, probe_id
    from ragcov.retrieval import run_retriever

    check_seed(seed)
    data = CoverageData(data_file)
    require_recorded_run(data)
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
        record_rerank(data, fingerprint)
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
        added += probe_on_dask(data, corpus, fingerprint, todo, meta.k, batch_size, dask, progress)
    local = [] if dask is not None else todo
    with progress_bar("Probing", total=len(local) + len(asks), enabled=progress) as advance:
        for start in range(0, len(local), batch_size):
            batch = local[start:start + batch_size]
            added += record(batch)
            advance(len(batch))
        step = max(1, batch_size // 32)  # LLM calls are slow: commit what they wrote often
        for start in range(0, len(asks), step):
            part = asks[start:start + step]
            added += record([llm_probe(generator, texts, ids, r, seed) for r in part])
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
    built, already = len(probes) + len(asks), len(probes) - len(todo)
    del probes, todo, local  # a probe row each: not held while the audit reads them back
    return ProbeRun(built=built, added=added, already=already, wordless=wordless,
                    reachability=audit_reachability(data_file), checked=late)


@dataclass
class CorpusProbed:
    """What :func:`probe_corpus` did: the probe run, and lost gold where labels were given."""

    run: ProbeRun
    lost_gold: dict[str, Any] | None


def probe_corpus(settings: ProbeSettings, progress: bool = True,
                 notify: Any = None) -> CorpusProbed:
    """``ragcov probe`` from paths and names: load the corpus, build the recorded run's
    retriever (and reranker, and the LLM of ``--generator``), and :func:`probe` it."""
    from ragcov.api.settings import chunk_ids_of, with_reranker
    from ragcov.api.steps import lost_gold_of

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


# --- Generating questions (ragcov generate) ---------------------------------------------------

def generate(corpus: Corpus, retriever: Any, generator: Any, k: int,
             output: str | os.PathLike[str], data_file: str | os.PathLike[str],
             config: LoopConfig | dict[str, Any], seed_suite: Suite | None = None,
             on_step: Any = None, ragas: str | os.PathLike[str] | None = None,
             deepeval: str | os.PathLike[str] | None = None) -> GenerationSummary:
    """Write new test questions aimed at uncovered chunks (``ragcov generate``); resumable.

    Each question is checked against ``retriever`` and recorded in ``data_file``; the
    suite goes to ``output`` (JSON lines with provenance) and, when asked, also as a
    RAGAS test set and DeepEval goldens. ``config`` is a
    :class:`ragcov.generation.LoopConfig` or its fields as a dict (``{"budget": 20}``).
    """
    from ragcov.generation.export import write_deepeval, write_ragas
    from ragcov.generation.loop import run_generation
    from ragcov.generation.loop_types import LoopConfig
    from ragcov.retrieval import validate_k

    validate_k(k)
    if not isinstance(config, LoopConfig):
        config = LoopConfig(**config)
    config.check()
    summary = run_generation(corpus, retriever, generator, k, Path(output), Path(data_file),
                             config, seed_suite=seed_suite, on_step=on_step)
    if ragas is not None:
        write_ragas(ragas, summary.records, corpus)
    if deepeval is not None:
        write_deepeval(deepeval, summary.records, corpus)
    return summary


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
    from ragcov.api.settings import chunk_ids_of, recorded_choice
    from ragcov.generation.loop_types import LoopConfig
    from ragcov.generation.targets import gap_targets
    from ragcov.overwrite import check_outputs
    from ragcov.retrieval import validate_k
    from ragcov.retrievers.store import store_run_line

    say, caution = notify or (lambda line: None), warn or (lambda line: None)
    validate_k(k)
    chosen = dict(retriever or {})
    llm = dict(generator or {})
    config = LoopConfig(**(loop or {}))
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


# --- Retrieval under corpus change (ragcov drift) ---------------------------------------------

@dataclass
class DriftRun:
    """What ``corpus_drift`` did and found: the summary as recorded, and this run's account."""

    summary: Any       # ragcov.drift.summary.DriftSummary
    data_file: Path
    copies: int        # the copies the relations need
    searched: int      # searched now
    resumed: int       # already recorded by an interrupted run
    embedded: int      # chunks embedded now (a dense run's changed chunks)


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
    from ragcov.api.settings import check_drift_settings, chunk_ids_of, recorded_choice
    from ragcov.api.steps import drift_mix, recorded_suite
    from ragcov.data.schema import NoDataFile, check_compatible
    from ragcov.drift.distractors import check_distractor_path, load_distractors
    from ragcov.drift.engine import DriftSettings, run_drift
    from ragcov.drift.rebuild import rebuilder
    from ragcov.drift.relations import DEFAULT_RELATIONS, expand_relations, tables_in, unique_id_check
    from ragcov.drift.versions import find_versions

    say = notify or (lambda line: None)
    check_drift_settings(seed, k, engine, workers, noise_rate, resamples, confidence)
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
            drift_mix(check_compatible, meta, k, corpus_obj.hash, meta.retriever, str(path),
                      "this drift run")
    rebuild = rebuilder(kind, corpus_obj, model=model, index=index, backend=backend,
                        progress=progress)
    try:
        rebuild.check_searches_copies(k)  # before anything is recorded
        if isinstance(kind, str):
            from ragcov.retrievers.store import store_run_line

            if line := store_run_line(corpus_obj, kind, rebuild.base, k):
                say(line)
        drift_mix(measure, corpus_obj, suite, rebuild.base, k=k, data_file=path, append=True,
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


# --- Coverage by topic (ragcov topics, report --by topic) -------------------------------------

def fit_topics(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, n_topics: int | None = None,
               seed: int = 0, vectors: str = "auto", model: str | None = None,
               corpus: Corpus | None = None, refit: bool = False, engine: str = "local",
               scheduler: str | None = None, workers: int | None = None) -> Any:
    """Cluster the data file's chunks into topics and store them there (``ragcov topics``).

    ``vectors``: ``auto`` (the run's own: a dense run's cached embeddings, a store's
    vectors when ``corpus`` is its URL, else TF-IDF), ``dense``, ``store`` or ``tfidf``.
    ``n_topics`` None chooses N. The stored set is kept when it was made the same way
    from the same corpus (``refit`` makes it again). ``engine="dask"`` counts the chunks'
    words on a Dask cluster (``scheduler``, else a LocalCluster of
    ``workers``), with the topics of one process. Returns
    :class:`ragcov.topics.build.BuiltTopics`.
    """
    from ragcov.api.settings import check_engine, check_seed
    from ragcov.topics.build import build_topics

    check_seed(seed)
    check_engine(engine, workers)
    if engine == "local":
        return build_topics(str(data_file), n_topics, seed, vectors, model, corpus, refit)
    from ragcov.distributed import dask_mapper

    with dask_mapper(scheduler, workers) as mapper:
        return build_topics(str(data_file), n_topics, seed, vectors, model, corpus, refit, mapper)


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
    from ragcov.scope import load_scoped
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
