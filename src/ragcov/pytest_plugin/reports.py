"""The session's reports, written by the reporters ``ragcov report``, ``json`` and ``html`` use.

Each ``--ragcov-report`` kind maps to one reporter call on the data file as
:func:`ragcov.api.report` scopes it, with the ``[tool.ragcov]`` include, omit and
exclusions the matching command applies: the plugin's totals are ``ragcov report``'s.
Every call returns the line the terminal summary prints for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragcov import api
from ragcov.files import write_text_atomic
from ragcov.reporters.registry import REPORTERS as FORMATS
from ragcov.reporters.table import render_headline, render_table
from ragcov.summary import GATE_PRECISION, CoverageSummary, display_percent, fail_under_failure

Reporter = Callable[[Any, "Path | None"], str]


def _table(show_missing: bool, skip_covered: bool = False) -> Reporter:
    def table(scoped: Any, dest: Path | None) -> str:
        return render_table(scoped.summary(jaccard=False), "text", show_missing=show_missing,
                            skip_covered=skip_covered)

    return table


def _html(scoped: Any, dest: Path | None) -> str:
    """The site ``ragcov html`` writes, through the same api verb: its coverage curves too."""
    assert dest is not None
    return f"ragcov HTML report written to {api.write_html(scoped, dest)}"


def _file(name: str) -> Reporter:
    """A file reporter of the one registry (json, xml, lcov): what ``ragcov NAME`` writes."""
    def write(scoped: Any, dest: Path | None) -> str:
        assert dest is not None
        write_text_atomic(dest, FORMATS[name].render(scoped, {}))
        return f"ragcov {name} report written to {dest}"

    return write


REPORTERS: dict[str, Reporter] = {
    "term": _table(show_missing=False), "term-missing": _table(show_missing=True),
    # pytest-cov's suffix: leave out fully covered documents.
    "term:skip-covered": _table(show_missing=False, skip_covered=True),
    "term-missing:skip-covered": _table(show_missing=True, skip_covered=True),
    "html": _html,
    **{name: _file(name) for name, r in FORMATS.items() if r.default_file},
}


def _command(kind: str) -> str:
    """The ragcov command whose config table a report kind reads."""
    return kind if kind in ("html", "json", "xml", "lcov") else "report"


def write_reports(data_file: Path, reports: Sequence[tuple[str, Path | None]],
                  root: Path | None = None) -> tuple[CoverageSummary, list[str]]:
    """Every requested report of ``data_file``, then the headline: the summary and the lines."""
    scoped: dict[str, Any] = {}

    def of(command: str) -> Any:
        if command not in scoped:
            scoped[command] = api.report(data_file, api.configured_scope(command, root))
        return scoped[command]

    lines = [REPORTERS[kind](of(_command(kind)), dest) for kind, dest in reports]
    summary = of("report").summary(jaccard=False)
    lines.append(render_headline(summary).splitlines()[0])
    return summary, lines


def fail_under_line(coverage: float, fail_under: float,
                    precision: int | None = None) -> tuple[bool, str]:
    """Whether ``coverage`` misses ``--ragcov-fail-under`` (as pytest-cov words it), and the line.

    The same gate as ``ragcov report --fail-under`` (at the config file's ``precision``
    when it sets one); only the words are pytest-cov's.
    """
    shown = display_percent(coverage, GATE_PRECISION if precision is None else precision)
    if fail_under_failure(coverage, fail_under, precision) is not None:
        return True, (f"FAIL Required chunk coverage of {fail_under:g}% not reached. "
                      f"Total chunk coverage: {shown}%")
    return False, (f"Required chunk coverage of {fail_under:g}% reached. "
                   f"Total chunk coverage: {shown}%")
