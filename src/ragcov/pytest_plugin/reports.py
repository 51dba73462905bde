"""The session's reports, written by the reporters ``ragcov report``, ``json`` and ``html`` use.

Each ``--ragcov-report`` kind maps to one reporter call; every call returns the line
the terminal summary prints for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragcov.data import CoverageData
    from ragcov.matrix import CoverageMatrix
    from ragcov.summary import CoverageSummary

Reporter = Callable[["CoverageData", "CoverageMatrix", "CoverageSummary", "Path | None"], str]


def _table(show_missing: bool, skip_covered: bool = False) -> Reporter:
    def table(data: CoverageData, m: CoverageMatrix, summary: CoverageSummary,
              dest: Path | None) -> str:
        from ragcov.report.table import render_table

        return render_table(summary, "text", show_missing=show_missing,
                            skip_covered=skip_covered)

    return table


def _html(data: CoverageData, m: CoverageMatrix, summary: CoverageSummary,
          dest: Path | None) -> str:
    from ragcov.report.html import html_report

    assert dest is not None
    return f"ragcov HTML report written to {html_report(m, data.chunk_texts(), dest)}"


def _json(data: CoverageData, m: CoverageMatrix, summary: CoverageSummary,
          dest: Path | None) -> str:
    from ragcov.files import write_json_atomic
    from ragcov.report.jsonreport import json_report

    assert dest is not None
    write_json_atomic(dest, json_report(m))
    return f"ragcov JSON report written to {dest}"


REPORTERS: dict[str, Reporter] = {
    "term": _table(show_missing=False), "term-missing": _table(show_missing=True),
    # pytest-cov's suffix: leave out fully covered documents.
    "term:skip-covered": _table(show_missing=False, skip_covered=True),
    "term-missing:skip-covered": _table(show_missing=True, skip_covered=True),
    "html": _html, "json": _json,
}


def write_reports(data: CoverageData, reports: Sequence[tuple[str, Path | None]]
                  ) -> tuple[CoverageSummary, list[str]]:
    """Every requested report of ``data``, then the headline: the summary and the lines."""
    from ragcov.report.table import render_headline
    from ragcov.summary import summarize

    m = data.matrix()
    summary = summarize(m, jaccard=False)
    lines = [REPORTERS[kind](data, m, summary, dest) for kind, dest in reports]
    lines.append(render_headline(summary).splitlines()[0])
    return summary, lines


def fail_under_line(coverage: float, fail_under: float) -> tuple[bool, str]:
    """Whether ``coverage`` misses ``--ragcov-fail-under`` (as pytest-cov words it), and the line.

    The same gate as ``ragcov report --fail-under``; only the words are pytest-cov's.
    """
    from ragcov.summary import GATE_PRECISION, display_percent, fail_under_failure

    shown = display_percent(coverage, GATE_PRECISION)
    if fail_under_failure(coverage, fail_under) is not None:
        return True, (f"FAIL Required chunk coverage of {fail_under:g}% not reached. "
                      f"Total chunk coverage: {shown}%")
    return False, (f"Required chunk coverage of {fail_under:g}% reached. "
                   f"Total chunk coverage: {shown}%")
