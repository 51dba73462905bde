"""pytest plugin: measure the chunk coverage of a RAG test suite while it runs.

``pytest --ragcov --ragcov-corpus chunks.jsonl`` records every retrieval made through
the ``ragcov_retriever`` fixture (a built-in retriever over the corpus) or through a
retriever wrapped with :func:`record` / the ``ragcov_recorder`` fixture, writes the
data file, prints the coverage table and, with ``--ragcov-fail-under``, fails the run
below the threshold, as pytest-cov does for line coverage.

Without ``--ragcov`` the plugin only declares its options: nothing of ragcov is
imported, nothing is recorded and nothing is printed, so installing ragcov never
slows down or changes anyone's test run.

Each query is recorded at the session's k whatever k a test asks for (the test still
gets what it asked for), and gets the id ``q-<hash of its text>``: the same question
asked by two tests, or by two pytest-xdist workers, is one query. Under xdist each
worker writes its own data file and the controller combines them.

With ``--ragcov`` the corpus is loaded at configure time, so a bad corpus is one usage
error (file and line) before any test runs, not one error per test that retrieves.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragcov.corpus import Corpus

REPORT_KINDS = ("term", "term-missing", "html", "json")
RETRIEVER_KINDS = ("dense", "bm25")
DEFAULT_K = 5
DEFAULT_DATA_FILE = ".ragcov"
DEFAULT_HTML_DIR = "ragcov-html"
DEFAULT_JSON_FILE = "ragcov.json"

_active: list[Recorder] = []  # a stack: pytester runs sessions inside sessions


# ---------------------------------------------------------------------------- options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragcov", "chunk coverage of retrieval tests")
    group.addoption("--ragcov", action="store_true", default=False,
                    help="Measure chunk coverage of the retrievals the tests make.")
    group.addoption("--ragcov-corpus", metavar="PATH", default=None,
                    help="The corpus: chunks .jsonl, BEIR folder or a folder of documents.")
    group.addoption("--ragcov-k", metavar="K", type=int, default=None,
                    help=f"Chunks recorded per query (default {DEFAULT_K}).")
    group.addoption("--ragcov-fail-under", metavar="PCT", type=float, default=None,
                    help="Fail the run if total chunk coverage is below PCT percent.")
    group.addoption("--ragcov-report", metavar="TYPE", action="append", default=None,
                    help="term (default), term-missing, html[:DIR], json[:FILE]; repeatable.")
    group.addoption("--ragcov-retriever", metavar="KIND", default=None,
                    help="Built-in retriever behind the ragcov_retriever fixture: dense or bm25.")
    group.addoption("--ragcov-data-file", metavar="FILE", default=None,
                    help=f"The coverage data file (default {DEFAULT_DATA_FILE}).")
    parser.addini("ragcov_corpus", "Corpus for --ragcov (as --ragcov-corpus).", default=None)
    parser.addini("ragcov_k", "Chunks recorded per query (as --ragcov-k).", default=None)
    parser.addini("ragcov_retriever", "dense or bm25 (as --ragcov-retriever).", default=None)


class Settings:
    """Options and ini values resolved once, with paths relative to the invocation dir."""

    def __init__(self, config: pytest.Config) -> None:
        root = Path(config.invocation_params.dir)
        corpus = config.getoption("ragcov_corpus") or config.getini("ragcov_corpus")
        self.corpus: Path | None = root / corpus if corpus else None
        k = config.getoption("ragcov_k")
        if k is None:
            k = config.getini("ragcov_k") or DEFAULT_K
        try:
            self.k = int(k)
        except ValueError:
            raise pytest.UsageError(f"--ragcov-k must be a whole number, got {k!r}") from None
        if self.k < 1:
            raise pytest.UsageError(f"--ragcov-k must be at least 1, got {self.k}")
        self.retriever = (config.getoption("ragcov_retriever") or config.getini("ragcov_retriever")
                          or "dense")
        if self.retriever not in RETRIEVER_KINDS:
            raise pytest.UsageError(f"--ragcov-retriever must be one of "
                                    f"{', '.join(RETRIEVER_KINDS)}, got {self.retriever!r}")
        self.fail_under: float | None = config.getoption("ragcov_fail_under")
        if self.fail_under is not None and not 0 <= self.fail_under <= 100:
            raise pytest.UsageError(f"--ragcov-fail-under must be a percentage (0-100), "
                                    f"got {self.fail_under:g}")
        self.data_file = root / (config.getoption("ragcov_data_file") or DEFAULT_DATA_FILE)
        self.reports: list[tuple[str, Path | None]] = []
        for spec in config.getoption("ragcov_report") or ["term"]:
            kind, _, dest = spec.partition(":")
            if kind not in REPORT_KINDS:
                raise pytest.UsageError(f"--ragcov-report must be one of "
                                        f"{', '.join(REPORT_KINDS)}, got {spec!r}")
            if dest and kind not in ("html", "json"):
                raise pytest.UsageError(f"--ragcov-report {kind} takes no destination: {spec!r}")
            default = {"html": DEFAULT_HTML_DIR, "json": DEFAULT_JSON_FILE}.get(kind)
            self.reports.append((kind, root / (dest or default) if default else None))


# ---------------------------------------------------------------------------- recording
def _query_id(text: str) -> str:
    """The suite's id rule for id-less queries, so every process names a text alike."""
    from ragcov.io import text_hash

    return f"q-{text_hash(text)[:12]}"


def _fingerprint(retriever: Any) -> dict[str, Any]:
    fp = getattr(retriever, "fingerprint", None)
    if callable(fp):
        return dict(fp())
    cls = type(retriever)
    return {"kind": "custom", "class": f"{cls.__module__}.{cls.__qualname__}"}


class Recorder:
    """What the session's retrievals returned, keyed by query id."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.k = settings.k
        self.fingerprint: dict[str, Any] | None = None
        self.queries: dict[str, str] = {}
        self.results: dict[str, list[tuple[str, float | None]]] = {}
        self.context: dict[str, str] = {}
        self.nodeid: str | None = None
        self._corpus: Corpus | None = None
        self._known: set[str] | None = None
        self._lock = threading.Lock()

    def corpus(self) -> Corpus:
        if self._corpus is None:
            from ragcov.corpus import load_corpus

            if self.settings.corpus is None:
                raise pytest.UsageError("--ragcov needs --ragcov-corpus PATH "
                                        "(or ragcov_corpus in the ini file)")
            self._corpus = load_corpus(self.settings.corpus)
            self._known = set(self._corpus.ids)
        return self._corpus

    def add(self, retriever: Any, text: str, ranked: Sequence[tuple[str, float | None]]) -> None:
        fp = _fingerprint(retriever)
        ranked = _checked(retriever, text, list(ranked)[: self.k])
        self.corpus()
        assert self._known is not None
        unknown = sorted({cid for cid, _ in ranked} - self._known)
        if unknown:
            from ragcov.errors import RagcovError

            raise RagcovError(f"the retriever returned chunk id(s) not in the ragcov corpus "
                              f"{self.settings.corpus}: {', '.join(unknown[:10])}")
        with self._lock:
            if self.fingerprint is None:
                self.fingerprint = fp
            elif fp != self.fingerprint:
                from ragcov.errors import RagcovError

                raise RagcovError(f"ragcov records one retriever per run: {fp} differs from "
                                  f"{self.fingerprint}, recorded earlier")
            qid = _query_id(text)
            if qid not in self.queries:
                self.queries[qid] = text
                self.results[qid] = ranked
                if self.nodeid is not None:
                    self.context[qid] = self.nodeid

    def write(self, path: Path) -> bool:
        """Write what was recorded; False (and nothing written) when nothing was."""
        if not self.queries:
            return False
        from ragcov.data import CoverageData
        from ragcov.run import Run

        run = Run(k=self.k, retriever=self.fingerprint or {})
        for qid, text in self.queries.items():
            run.add(qid, text, self.results[qid])
        CoverageData(path).write(self.corpus(), run, context=self.context)
        return True


def _checked(retriever: Any, text: str, items: list[Any]) -> list[tuple[str, float | None]]:
    """The items as (chunk id, score), read as every ragcov reader reads them.

    An id that is None, a list or a boolean, or a score that is a string, a boolean
    or not finite, fails the test that retrieved it, naming the retriever and the item.
    """
    from ragcov.errors import RagcovError
    from ragcov.fields import FieldError, parse_id, parse_score

    out: list[tuple[str, float | None]] = []
    for rank, item in enumerate(items, start=1):
        try:
            if isinstance(item, (str, bytes)):  # "ab" would unpack into an id and a score
                raise TypeError(item)
            cid, score = item
            out.append((parse_id(cid), parse_score(score)))
        except (TypeError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, FieldError) else "not a (chunk id, score) pair"
            shown = " ".join(repr(item).splitlines())[:100]
            raise RagcovError(f"{type(retriever).__qualname__}: result {rank} for query "
                              f"{text[:60]!r}: {reason} (item: {shown})") from exc
    return out


class RecordingRetriever:
    """A retriever that reports every retrieval to the session's recorder.

    It speaks the ragcov Retriever protocol (``retrieve(texts, k)``), adds
    ``retriever(text, k)`` for one query, and passes other attributes through.
    """

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def fingerprint(self) -> dict[str, Any]:
        return _fingerprint(self._inner)

    def retrieve(self, texts: Sequence[str], k: int | None = None
                 ) -> list[list[tuple[str, float | None]]]:
        want = self._recorder.k if k is None else k
        texts = list(texts)
        results = self._inner.retrieve(texts, max(want, self._recorder.k))
        for text, ranked in zip(texts, results):
            self._recorder.add(self._inner, text, ranked)
        return [list(r)[:want] for r in results]

    def __call__(self, text: str, k: int | None = None) -> list[tuple[str, float | None]]:
        return self.retrieve([text], k)[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class PlainRetriever:
    """The fixture's retriever when coverage is off: the same calls, nothing recorded."""

    def __init__(self, inner: Any, k: int) -> None:
        self._inner, self._k = inner, k

    def fingerprint(self) -> dict[str, Any]:
        return _fingerprint(self._inner)

    def retrieve(self, texts: Sequence[str], k: int | None = None
                 ) -> list[list[tuple[str, float | None]]]:
        return self._inner.retrieve(list(texts), self._k if k is None else k)

    def __call__(self, text: str, k: int | None = None) -> list[tuple[str, float | None]]:
        return self.retrieve([text], k)[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def record(retriever: Any) -> Any:
    """Wrap ``retriever`` so its retrievals count towards this run's coverage.

    Returns ``retriever`` itself when coverage is off, so tests can wrap
    unconditionally. An object with ``retrieve(texts, k) -> [[(chunk_id, score), ...]]``
    is used as it is; anything else (a function ``(query, k)``, a LangChain or
    LlamaIndex retriever) goes through :func:`ragcov.retrievers.adapters.wrap`, and
    tests then call ``retrieve`` or the wrapper itself rather than the framework's
    own method.
    """
    if not _active:
        return retriever
    rec = _active[-1]
    inner = retriever
    if not callable(getattr(retriever, "retrieve", None)):
        try:
            from ragcov.retrievers.adapters import wrap
        except ImportError as exc:  # pragma: no cover - adapters ship with ragcov
            raise TypeError("ragcov.pytest_plugin.record needs an object with "
                            "retrieve(texts, k) -> [[(chunk_id, score), ...], ...]") from exc
        inner = wrap(retriever, rec.corpus())
    return RecordingRetriever(inner, rec)


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def ragcov_recorder() -> Callable[[Any], Any]:
    """A function that wraps a retriever for recording (identity when coverage is off)."""
    return record


@pytest.fixture(scope="session")
def ragcov_retriever(pytestconfig: pytest.Config) -> Any:
    """The built-in retriever over the ragcov corpus, recording when --ragcov is on."""
    from ragcov.retrievers import make_retriever

    if _active:
        rec = _active[-1]
        return RecordingRetriever(make_retriever(rec.settings.retriever, rec.corpus(),
                                                 progress=False), rec)
    settings = Settings(pytestconfig)
    if settings.corpus is None:
        pytest.skip("ragcov_retriever needs a corpus: --ragcov-corpus PATH "
                    "or ragcov_corpus in the ini file")
    from ragcov.corpus import load_corpus
    from ragcov.errors import RagcovError

    try:
        corpus = load_corpus(settings.corpus)
    except (RagcovError, OSError) as exc:
        # Once for the session, not an error (and a traceback) for every test using it.
        pytest.exit(f"ragcov: --ragcov-corpus: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    return PlainRetriever(make_retriever(settings.retriever, corpus, progress=False), settings.k)


# ---------------------------------------------------------------------------- session
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("ragcov", default=False):
        return
    settings = Settings(config)
    if settings.corpus is None:
        raise pytest.UsageError("--ragcov needs --ragcov-corpus PATH "
                                "(or ragcov_corpus in the ini file)")
    if not settings.corpus.exists():
        raise pytest.UsageError(f"--ragcov-corpus: {settings.corpus}: no such file or folder")
    plugin = _Session(config, settings)
    from ragcov.errors import RagcovError

    try:
        plugin.recorder.corpus()  # at the start: one usage error, not one per test
    except (RagcovError, OSError) as exc:
        raise pytest.UsageError(f"--ragcov-corpus: {exc}") from None
    config.pluginmanager.register(plugin, "ragcov-session")
    _active.append(plugin.recorder)


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.pluginmanager.get_plugin("ragcov-session")
    if plugin is not None and _active and _active[-1] is plugin.recorder:
        _active.pop()


class _Session:
    """The hooks that run only with --ragcov."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.recorder = Recorder(settings)
        self.worker_id: str | None = getattr(config, "workerinput", {}).get("workerid")
        self.worker_files: list[Path] = []
        self.summary: Any = None
        self.lines: list[str] = []
        self.error: str | None = None
        self.failed_under = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        self.recorder.nodeid = item.nodeid
        try:
            return (yield)
        finally:
            self.recorder.nodeid = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """On the xdist controller: note each worker's data file."""
        output = getattr(node, "workeroutput", None) or {}
        if output.get("ragcov_data_file"):
            self.worker_files.append(Path(output["ragcov_data_file"]))
        if output.get("ragcov_error"):
            self.error = f"ragcov: error: {output['ragcov_error']}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from ragcov.errors import RagcovError

        if self.worker_id is not None:
            path = self.settings.data_file.with_name(
                f"{self.settings.data_file.name}.{self.worker_id}.{os.getpid()}")
            try:
                if self.recorder.write(path):
                    self.config.workeroutput["ragcov_data_file"] = str(path)  # type: ignore[attr-defined]
            except RagcovError as exc:
                self.config.workeroutput["ragcov_error"] = str(exc)  # type: ignore[attr-defined]
            return
        try:
            if self.error is None:
                self._finish()
        except RagcovError as exc:
            self.error = f"ragcov: error: {exc}"
        finally:
            for p in self.worker_files:  # workers' files go, whatever happened
                p.unlink(missing_ok=True)
        if (self.error or self.failed_under) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finish(self) -> None:
        from ragcov.api import fails_under
        from ragcov.data import CoverageData, combine
        from ragcov.report.table import render_headline, render_table
        from ragcov.results import display_percent, summarize

        s = self.settings
        data = CoverageData(s.data_file)
        if self.worker_files:
            combine(sorted(self.worker_files), s.data_file)
        elif not self.recorder.write(s.data_file):
            self.lines.append("ragcov: no retrievals were recorded (use the ragcov_retriever "
                              "fixture or wrap a retriever with ragcov.pytest_plugin.record)")
            if s.fail_under is not None and s.fail_under > 0:
                self.failed_under = True
                self.lines.append(f"FAIL Required chunk coverage of {s.fail_under:g}% not "
                                  "reached: nothing was recorded")
            return
        m = data.matrix()
        summary = summarize(m, jaccard=False)
        self.summary = summary
        for kind, dest in s.reports:
            if kind in ("term", "term-missing"):
                self.lines.append(render_table(summary, "text", show_missing=kind == "term-missing"))
            elif kind == "html":
                from ragcov.report.html import html_report

                index = html_report(m, data.chunk_texts(), dest)  # type: ignore[arg-type]
                self.lines.append(f"ragcov HTML report written to {index}")
            elif kind == "json":
                from ragcov.io import write_json_atomic
                from ragcov.report.jsonreport import json_report

                write_json_atomic(dest, json_report(m))  # type: ignore[arg-type]
                self.lines.append(f"ragcov JSON report written to {dest}")
        self.lines.append(render_headline(summary).splitlines()[0])
        self.lines.append(f"ragcov data written to {s.data_file}")
        if s.fail_under is not None:
            shown = display_percent(summary.coverage, 2)
            if fails_under(summary.coverage, s.fail_under, 2):
                self.failed_under = True
                self.lines.append(f"FAIL Required chunk coverage of {s.fail_under:g}% not "
                                  f"reached. Total chunk coverage: {shown}%")
            else:
                self.lines.append(f"Required chunk coverage of {s.fail_under:g}% reached. "
                                  f"Total chunk coverage: {shown}%")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker_id is not None:
            return
        terminalreporter.write_sep("-", "ragcov: chunk coverage")
        for line in self.lines:
            red = line.startswith("FAIL")
            terminalreporter.write_line(line, red=red, bold=red)
        if self.error:
            terminalreporter.write_line(self.error, red=True, bold=True)
