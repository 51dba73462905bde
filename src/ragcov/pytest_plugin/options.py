"""The plugin's command-line options and ini values, resolved once into :class:`Settings`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragcov.data import DEFAULT_DATA_FILE
from ragcov.reporters import DEFAULT_HTML_DIR
from ragcov.reporters.registry import REPORTERS
from ragcov.stores.urls import URL

# The terminal tables, the site, and every file reporter of the one registry (json, xml, lcov).
REPORT_KINDS = ("term", "term-missing", "html",
                *(name for name, r in REPORTERS.items() if r.default_file))
RETRIEVER_KINDS = ("dense", "bm25", "store")
DEFAULT_K = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragcov", "chunk coverage of retrieval tests")
    group.addoption("--ragcov", action="store_true", default=False,
                    help="Measure chunk coverage of the retrievals the tests make.")
    group.addoption("--ragcov-corpus", metavar="PATH", default=None,
                    help="The corpus: chunks .jsonl, BEIR folder, a folder of documents, or a "
                         "vector store URL (chroma:///PATH?collection=NAME, ...).")
    group.addoption("--ragcov-k", metavar="K", type=int, default=None,
                    help=f"Chunks recorded per query (default {DEFAULT_K}).")
    group.addoption("--ragcov-fail-under", metavar="PCT", type=float, default=None,
                    help="Fail the run if total chunk coverage is below PCT percent.")
    group.addoption("--ragcov-report", metavar="TYPE", action="append", default=None,
                    help="term (default), term-missing (either with :skip-covered), html[:DIR], "
                         "json[:FILE]; repeatable.")
    group.addoption("--ragcov-retriever", metavar="KIND", default=None,
                    help="The retriever behind the ragcov_retriever fixture: dense, bm25, "
                         "store (the --ragcov-corpus store's own search; the default for a "
                         "store URL, else dense), module:attr (your retriever or its factory; "
                         "probe, generate and drift then rebuild it from the data file) or an "
                         "http(s) URL.")
    group.addoption("--ragcov-data-file", metavar="FILE", default=None,
                    help=f"The coverage data file (default {DEFAULT_DATA_FILE}).")
    group.addoption("--ragcov-device", metavar="DEVICE", default=None,
                    help="Where the ragcov_retriever fixture's dense retriever (or a store's "
                         "query encoder) embeds: auto (default), cpu, cuda, cuda:N or mps.")
    parser.addini("ragcov_corpus", "Corpus for --ragcov (as --ragcov-corpus).", default=None)
    parser.addini("ragcov_k", "Chunks recorded per query (as --ragcov-k).", default=None)
    parser.addini("ragcov_retriever", "dense, bm25, store, module:attr or a URL (as "
                  "--ragcov-retriever).",
                  default=None)
    parser.addini("ragcov_device", "auto, cpu, cuda, cuda:N or mps (as --ragcov-device).",
                  default=None)


class Settings:
    """Options, ini values and ragcov's config file resolved once, in that order of
    precedence (as pytest-cov reads coverage's config under its own options).

    A path given on the command line is relative to the invocation dir; one in the ini
    file to the ini file's folder, as pytest reads its own path settings, so ``pytest``
    run from a subfolder finds the same corpus.
    """

    def __init__(self, config: pytest.Config) -> None:
        root = self.root = Path(config.invocation_params.dir)
        conf = _ragcov_config(root)
        given = config.getoption("ragcov_corpus")
        corpus = given or config.getini("ragcov_corpus")
        base = root if given or config.inipath is None else Path(config.inipath).parent
        # A store URL is read as ragcov run reads it.
        self.corpus: Path | str | None = (None if not corpus else corpus if URL.match(corpus)
                                          else base / corpus)
        self.k = _k(config, conf.get("k"))
        self.retriever = _retriever(config, self.corpus)
        self.fail_under = _fail_under(config, conf.get("fail_under"))
        self.precision: int | None = conf.get("precision")
        # RAGCOV_FILE as `ragcov` reads it (pytest-cov honours COVERAGE_FILE the same way).
        self.data_file = root / (config.getoption("ragcov_data_file")
                                 or os.environ.get("RAGCOV_FILE") or conf.get("data_file")
                                 or DEFAULT_DATA_FILE)
        self.reports = _reports(config, root)
        check_report_files(self.reports, self.data_file, self.corpus)
        self.device = _device(config, conf.get("device"))


def _ragcov_config(root: Path) -> dict:
    """k, data_file, fail_under and precision from ragcov.toml or [tool.ragcov], as the
    CLI finds the file; a bad value is a usage error naming the file and the key."""
    from ragcov.config import plugin_settings
    from ragcov.errors import RagcovError

    try:
        return plugin_settings(root)[1]
    except RagcovError as exc:
        raise pytest.UsageError(f"ragcov: {exc}") from None


def _k(config: pytest.Config, configured: int | None = None) -> int:
    k = config.getoption("ragcov_k")
    if k is None:
        k = config.getini("ragcov_k") or configured or DEFAULT_K
    try:
        k = int(k)
    except ValueError:
        raise pytest.UsageError(f"--ragcov-k must be a whole number, got {k!r}") from None
    if k < 1:
        raise pytest.UsageError(f"--ragcov-k must be at least 1, got {k}")
    return k


def _retriever(config: pytest.Config, corpus: Path | str | None) -> str:
    """As ``ragcov run``: a store corpus is searched by the store unless another kind is named."""
    from ragcov.stores.urls import is_store_url

    default = "store" if corpus is not None and is_store_url(corpus) else "dense"
    kind = (config.getoption("ragcov_retriever") or config.getini("ragcov_retriever")
            or default)
    from ragcov.retrievers.loader import is_spec

    if kind not in RETRIEVER_KINDS and not is_spec(kind) \
            and not kind.startswith(("http://", "https://")):
        raise pytest.UsageError(f"--ragcov-retriever must be one of "
                                f"{', '.join(RETRIEVER_KINDS)}, module:attr (your factory) or an "
                                f"http(s) URL, got {kind!r}")
    return kind


def _device(config: pytest.Config, configured: str | None = None) -> str:
    """As ``ragcov run --device``: the option, the ini value, the config file, else auto;
    a misspelt device is a usage error before any test runs."""
    from ragcov.errors import RagcovError
    from ragcov.retrievers.hardware import check_device

    device = (config.getoption("ragcov_device") or config.getini("ragcov_device") or configured
              or "auto")
    try:
        return check_device(device)
    except RagcovError as exc:
        raise pytest.UsageError(f"ragcov: {exc}") from None


def _fail_under(config: pytest.Config, configured: float | None = None) -> float | None:
    fail_under: float | None = config.getoption("ragcov_fail_under")
    if fail_under is None:
        fail_under = configured
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise pytest.UsageError(f"--ragcov-fail-under must be a percentage (0-100), "
                                f"got {fail_under:g}")
    return fail_under


def _reports(config: pytest.Config, root: Path) -> list[tuple[str, Path | None]]:
    """Each ``--ragcov-report KIND[:DEST]`` as (kind, destination or None)."""
    reports: list[tuple[str, Path | None]] = []
    for spec in config.getoption("ragcov_report") or ["term"]:
        kind, _, dest = spec.partition(":")
        if kind in ("term", "term-missing") and dest == "skip-covered":
            reports.append((spec, None))  # pytest-cov's term-missing:skip-covered
            continue
        if kind not in REPORT_KINDS:
            raise pytest.UsageError(f"--ragcov-report must be one of "
                                    f"{', '.join(REPORT_KINDS)}, got {spec!r}")
        if dest and kind in ("term", "term-missing"):
            raise pytest.UsageError(f"--ragcov-report {kind} takes no destination: {spec!r}")
        if dest == "skip-covered":
            raise pytest.UsageError(f"--ragcov-report {spec}: skip-covered is for the term "
                                    "reports; a file report takes a file name after the colon")
        default = DEFAULT_HTML_DIR if kind == "html" else (
            REPORTERS[kind].default_file if kind in REPORTERS else None)
        reports.append((kind, root / (dest or default) if default else None))
    return reports


def check_report_files(reports: list[tuple[str, Path | None]], data_file: Path,
                       corpus: Path | str | None) -> None:
    """The CLI's refusal, before any test runs: no report over the corpus, the data file,
    a config file, a test module or another report of the session."""
    from ragcov.errors import RagcovError
    from ragcov.overwrite import check_outputs

    files = [dest for kind, dest in reports if dest is not None and kind != "html"]
    try:
        check_outputs(files, [data_file, corpus])
        for kind, dest in reports:
            if kind == "html" and dest is not None and dest.is_file():
                raise RagcovError(f"{dest}: is a file; --ragcov-report html takes a folder")
    except RagcovError as exc:
        raise pytest.UsageError(f"--ragcov-report: {exc}") from None
