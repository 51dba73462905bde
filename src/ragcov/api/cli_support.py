"""What the command line needs besides the verbs: its checks, gates and output helpers.

Not the public API (that is :mod:`ragcov.api`, docs/api.md): these serve ``ragcov``'s own
commands, which may import nothing that does work but the door
(``tests/test_architecture.py``). Each gate's rule lives in the module of what it checks
(``summary``, ``reachability.stages``, ``topics.coverage``, ``drift.summary``,
``compare.diff``); here it is reached without loading that module until it is asked.

* refused before any work: :func:`check_seed`, :func:`check_index_gates`,
  :func:`check_min_topic_coverage`, :func:`drift_limits`, :func:`chunk_ids_of`;
* judged on what a verb returned: :func:`fail_under_message`, :func:`index_failure`,
  :func:`min_topic_failure`, :func:`drift_gate`, :func:`diff_gate_failures`;
* the fast path of ``report --format total`` and its gate: :func:`gate_total`, in
  :func:`one_read` with the output checks (no numpy: ``tests/test_gate_totals.py``);
* formatting and output guards re-exported from the floor and the model
  (``display_percent``, ``check_outputs`` ...), and, loaded on first use, the selection
  strategies' names and the redundancy readers of ``report --redundant``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragcov.api.settings import check_seed as check_seed
from ragcov.api.settings import chunk_ids_of as chunk_ids_of
from ragcov.data import DEFAULT_DATA_FILE, CoverageData
from ragcov.data.datafile import one_read as one_read
from ragcov.overwrite import check_outputs as check_outputs
from ragcov.overwrite import to_stdout as to_stdout
from ragcov.scope import ReportScope
from ragcov.sigint import threads_leave_sigint
from ragcov.summary import ceiling_text as ceiling_text
from ragcov.summary import ceiling_warning as ceiling_warning
from ragcov.summary import display_percent as display_percent
from ragcov.summary import fail_under_failure
from ragcov.summary import summarize as summarize
from ragcov.summary import workload_warning as workload_warning

if TYPE_CHECKING:
    with threads_leave_sigint():  # numpy may load here
        from ragcov.compare.diff import CoverageDiff

# Loaded when first taken (numpy under them): ``from ragcov.api.cli_support import X``.
# Where numpy may load first (here, or in a check made before any verb), it loads inside
# threads_leave_sigint, as the door loads it: its BLAS threads leave Ctrl-C to the main
# thread (ragcov.sigint).
_ON_USE = {
    "ALL_STRATEGIES": "ragcov.selection", "DEFAULT_AFTER_SATURATION": "ragcov.selection",
    "redundant_tests": "ragcov.metrics",
}


def __getattr__(name: str) -> Any:
    if name in _ON_USE:
        with threads_leave_sigint():
            return getattr(importlib.import_module(_ON_USE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def gate_total(data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE, scope: Any = None) -> Any:
    """The total a gate compares (``report --format total``, ``--fail-under``) from the
    totals the data file keeps, without reading its rows back: a
    :class:`ragcov.data.totals.Totals`, or None where they cannot answer (a scope that
    leaves chunks out, no data file): the caller reads the rows (:func:`ragcov.api.report`), which
    gives the same number."""
    scope = scope if scope is not None else ReportScope()
    data = CoverageData(data_file)
    if not scope.whole or not data.exists():
        return None
    return data.totals(scope.include_generated)


def fail_under_message(coverage: float, fail_under: float | None, precision: int | None = None,
                       what: str = "total", shown_precision: int | None = None,
                       flag: str = "fail-under") -> str | None:
    """The one ``--fail-under`` gate: None when it passes, else the message to print."""
    return fail_under_failure(coverage, fail_under, precision, what, shown_precision, flag)


def diff_gate_failures(d: CoverageDiff, max_gini_rise: float | None,
                       min_query_overlap: float | None) -> list[str]:
    """``ragcov diff``'s ``--max-gini-rise`` and ``--min-query-overlap``: the messages of
    those that fail (retrieval-fairness's two diff gates)."""
    with threads_leave_sigint():  # numpy may load here
        from ragcov.compare.diff import gate_failures

    return gate_failures(d, max_gini_rise, min_query_overlap)


def check_index_gates(min_recall: float | None, max_hidden: int | None) -> None:
    """``--min-index-recall`` and ``--max-index-hidden`` refused before any work when out of range."""
    if min_recall is None and max_hidden is None:
        return  # nothing asked: no module (nor numpy) loaded for it
    with threads_leave_sigint():  # numpy may load here
        from ragcov.reachability.stages import check_index_gates as check

    check(min_recall, max_hidden)


def index_failure(reachability: Any, min_recall: float | None, max_hidden: int | None
                  ) -> str | None:
    """``--min-index-recall`` / ``--max-index-hidden`` over a reachability view: None when
    they pass (or are not asked), else the message; an error when no exact check was done."""
    with threads_leave_sigint():  # numpy may load here
        from ragcov.reachability.stages import index_failure as failure

    return failure(None if reachability is None else reachability.stages, min_recall, max_hidden)


def check_min_topic_coverage(minimum: float | None) -> None:
    """``--min-topic-coverage`` refused before any work when it is not a percentage."""
    if minimum is None:
        return  # nothing asked: no module (nor numpy) loaded for it
    with threads_leave_sigint():  # numpy may load here
        from ragcov.topics.coverage import check_min_topic_coverage as check

    check(minimum)


def min_topic_failure(report: Any, minimum: float | None, precision: int | None = None
                      ) -> str | None:
    """The ``--min-topic-coverage`` gate: None when every topic is at least that covered."""
    with threads_leave_sigint():  # numpy may load here
        from ragcov.topics.coverage import min_topic_failure as failure

    return failure(report, minimum, precision)


def drift_limits(values: Sequence[str], relations: Sequence[str] | None = None) -> dict[str, float]:
    """``--max-violation-rate`` values as relation -> highest rate, checked before any work:
    with ``relations`` (``--relation``; None: the default ones) a limit on a relation that
    will not run is refused."""
    with threads_leave_sigint():  # numpy may load here
        from ragcov.drift.relations import DEFAULT_RELATIONS, expand_relations
    with threads_leave_sigint():  # numpy may load here
        from ragcov.drift.summary import check_limits_run, parse_limits

    limits = parse_limits(values)
    check_limits_run(limits, expand_relations(relations if relations is not None
                                              else DEFAULT_RELATIONS))
    return limits


def drift_gate(summary: Any, limits: dict[str, float]) -> list[str]:
    """The ``--max-violation-rate`` gate: one line per relation above its limit."""
    with threads_leave_sigint():  # numpy may load here
        from ragcov.drift.summary import gate_failures

    return gate_failures(summary, limits)
