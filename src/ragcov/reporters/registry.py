"""Every reporter, registered once: its name, what it renders and where it goes.

``ragcov report --format NAME`` renders any of them to the terminal (or ``-o``), the file
commands (``ragcov json``, ``xml``, ``lcov``) write theirs to their default file, and
``pytest --ragcov --ragcov-report NAME[:FILE]`` writes the same files from a test session:
one table drives the three, so a reporter added here is a ``--format``, a
``--ragcov-report`` kind and a line of ``--help`` at once (docs/extending.md).

A reporter renders what :func:`ragcov.api.report` returned (a :class:`~ragcov.scope.Scoped`:
the matrix of the chunks that count, the exclusions, the reachability view) and the
options of the command, to the text it writes. Each imports its own module when it
renders: this table is read by the pytest plugin at every start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Render = Callable[[Any, dict[str, Any]], str]


@dataclass(frozen=True)
class Reporter:
    """One output format of a coverage report."""

    name: str
    help: str            # one line for --help
    render: Render       # (what api.report returned, the command's options) -> the text
    suffix: str = ""     # the file it writes ("" : the terminal's, nothing by default)
    default_file: str = ""
    options: tuple[str, ...] = field(default=())  # the options its render reads


def _table(fmt: str) -> Render:
    def render(scoped: Any, options: dict[str, Any]) -> str:
        from ragcov.reporters.table import MARKDOWN_ROWS, render_table

        top = options.get("top")
        if top is None and fmt == "markdown":  # a pull-request comment: the worst documents
            top = MARKDOWN_ROWS
        return render_table(scoped.summary(jaccard=False), fmt,
                            options.get("show_missing", False), options.get("skip_covered", False),
                            options.get("sort"), options.get("precision", 0 if fmt != "total" else 2),
                            options.get("show_ids", False), top)

    return render


def _json(scoped: Any, options: dict[str, Any]) -> str:
    from ragcov.files import json_text
    from ragcov.reporters.jsonreport import json_report

    doc = json_report(scoped.matrix, options.get("entropy_support", "retrieved"),
                      options.get("gini_over", "retrieved"), scoped=scoped)
    if getattr(scoped, "drift", None) is not None:  # a drift run recorded in the file
        from ragcov.reporters.drift import drift_json

        doc["drift"] = drift_json(scoped.drift)
    if options.get("correctness") is not None:  # report --qrels: the labels' hit rate
        doc["correctness"] = options["correctness"].as_dict()
    # "chunks" holds ids, counts and query ids only: written by orjson (json_text says why).
    return json_text(doc, indent=2 if options.get("pretty", True) else None, plain=("chunks",))


def _cobertura(scoped: Any, options: dict[str, Any]) -> str:
    from ragcov.reporters.ci_lines import file_lines
    from ragcov.reporters.cobertura import cobertura_xml
    from ragcov.version import __version__

    return cobertura_xml(file_lines(scoped), __version__)


def _lcov(scoped: Any, options: dict[str, Any]) -> str:
    from ragcov.reporters.ci_lines import file_lines
    from ragcov.reporters.lcov import lcov_tracefile

    return lcov_tracefile(file_lines(scoped))


REPORTERS: dict[str, Reporter] = {r.name: r for r in (
    Reporter("text", "the per-document table (as `coverage report`)", _table("text"),
             options=("show_missing", "skip_covered", "sort", "precision", "show_ids", "top")),
    Reporter("markdown", "the same table in Markdown, for a pull request: the 25 documents "
             "with the lowest coverage and one row for the rest", _table("markdown"),
             options=("show_missing", "skip_covered", "sort", "precision", "show_ids", "top")),
    Reporter("total", "the total alone, for scripts and ratchets", _table("total"),
             options=("precision",)),
    Reporter("json", "the versioned JSON report", _json, ".json", "ragcov.json",
             options=("entropy_support", "gini_over", "pretty", "correctness")),
    Reporter("xml", "Cobertura XML (documents as files, chunks as lines)", _cobertura, ".xml",
             "ragcov.xml"),
    Reporter("lcov", "an lcov tracefile (documents as SF records, chunks as DA lines)", _lcov,
             ".lcov", "ragcov.lcov"),
)}


def reporter(name: str) -> Reporter:
    """The reporter called ``name``, or a one-line error listing every one."""
    try:
        return REPORTERS[name]
    except KeyError:
        from ragcov.errors import RagcovError

        raise RagcovError(f"unknown format {name!r}: expected one of {', '.join(REPORTERS)}") from None


def names_help() -> str:
    """The formats as ``--help`` lists them."""
    return "; ".join(f"{r.name} ({r.help})" for r in REPORTERS.values())
