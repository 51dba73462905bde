"""The session with ``--ragcov``: configure, record per test, write and report at the end.

The corpus is loaded at configure time, so a bad corpus is one usage error (file and
line) before any test runs, not one error per test that retrieves. Under xdist each
worker writes its own data file and the controller combines them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ragcov.controls import escape_controls
from ragcov.pytest_plugin.options import Settings
from ragcov.pytest_plugin.recorder import Recorder, activate, deactivate
from ragcov.pytest_plugin.reports import fail_under_line, write_reports

NOTHING_RECORDED = ("ragcov: no retrievals were recorded (use the ragcov_retriever "
                    "fixture or wrap a retriever with ragcov.pytest_plugin.record)")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("ragcov", default=False):
        return
    settings = Settings(config)
    if settings.corpus is None:
        raise pytest.UsageError("--ragcov needs --ragcov-corpus PATH "
                                "(or ragcov_corpus in the ini file)")
    if isinstance(settings.corpus, Path) and not settings.corpus.exists():  # a URL: opened below
        raise pytest.UsageError(f"--ragcov-corpus: {settings.corpus}: no such file or folder")
    plugin = _Session(config, settings)
    from ragcov.errors import RagcovError

    try:
        plugin.recorder.corpus()  # at the start: one usage error, not one per test
    except (RagcovError, OSError) as exc:
        raise pytest.UsageError(f"--ragcov-corpus: {exc}") from None
    config.pluginmanager.register(plugin, "ragcov-session")
    activate(plugin.recorder)


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.pluginmanager.get_plugin("ragcov-session")
    if plugin is not None:
        deactivate(plugin.recorder)


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
        # Each test's outcome, kept with its questions: what a failing test retrieved is
        # then in the report, and `ragcov faults` needs no separate labels.
        self.outcomes: dict[str, str] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        self.recorder.nodeid = item.nodeid
        try:
            return (yield)
        finally:
            self.recorder.nodeid = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test failed if any phase failed; passed or skipped by its call (or setup skip)."""
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.when == "call" or (report.when == "setup" and report.skipped):
            self.outcomes.setdefault(report.nodeid, report.outcome)

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
            self._finish_worker()
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

    def _finish_worker(self) -> None:
        """On an xdist worker: write this worker's file and tell the controller about it."""
        from ragcov.errors import RagcovError

        data_file = self.settings.data_file
        path = data_file.with_name(f"{data_file.name}.{self.worker_id}.{os.getpid()}")
        output = self.config.workeroutput  # type: ignore[attr-defined]
        try:
            if self.recorder.write(path):
                output["ragcov_data_file"] = str(path)
        except RagcovError as exc:
            output["ragcov_error"] = str(exc)

    def _finish(self) -> None:
        from ragcov import api

        s = self.settings
        if self.worker_files:
            api.combine(sorted(self.worker_files), s.data_file)
        elif not self.recorder.write(s.data_file):
            self._nothing_recorded()
            return
        if self.outcomes:
            api.record_outcomes(s.data_file, self.outcomes, self.recorder.askers)
        self.summary, lines = write_reports(s.data_file, s.reports, s.root)
        self.lines += lines
        depth = self.summary.depth.note() if self.summary.depth is not None else None
        if depth:  # a k = 5 number measured at depth 3 says so, as `ragcov report` does
            self.lines.append(f"ragcov: {depth}: coverage is measured at that depth")
        twins = self.recorder.matching().line()
        if twins:
            self.lines.append(f"ragcov: {twins}")
        self.lines.append(f"ragcov data written to {s.data_file}")
        if s.fail_under is not None:
            from ragcov.summary import ceiling_warning

            if warning := ceiling_warning(self.summary, s.fail_under):
                self.lines.append(f"ragcov: warning: {warning}")
            self.failed_under, line = fail_under_line(self.summary.coverage, s.fail_under,
                                                      s.precision)
            self.lines.append(line)

    def _nothing_recorded(self) -> None:
        s = self.settings
        self.lines.append(NOTHING_RECORDED)
        if s.data_file.exists():  # a report read later must not pass it off as this session's
            self.lines.append(f"ragcov: {s.data_file} is left as an earlier session wrote it; "
                              "it does not measure this one")
        if s.fail_under is not None and s.fail_under > 0:
            self.failed_under = True
            self.lines.append(f"FAIL Required chunk coverage of {s.fail_under:g}% not "
                              "reached: nothing was recorded")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker_id is not None:
            return
        terminalreporter.write_sep("-", "ragcov: chunk coverage")
        for line in self.lines:
            red = line.startswith("FAIL")
            # The table names documents and chunks from the user's data.
            terminalreporter.write_line(escape_controls(line, keep="\n"), red=red, bold=red)
        if self.error:
            terminalreporter.write_line(escape_controls(self.error), red=True, bold=True)
