"""The options every report command shares: which documents it covers and what it excludes.

Declared once, by :func:`scoped`, so ``report``, ``json``, ``html``, ``xml``, ``lcov``
and ``badge`` read the same flags, and the same ``[tool.ragcov]`` keys (``include``,
``omit``, ``exclude``, ``exclude_docs``, ``min_chunk_chars``, ``reachable``): a flat
key applies to every report, as coverage.py's ``[report]`` section does.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from ragcov import api
from ragcov.api import ReportScope, cli_support
from ragcov.api.cli_support import ceiling_warning, check_outputs
from ragcov.cli.options import check_fail_under, check_precision, check_text_gate, emit, gate, text_gate
from ragcov.collector import cyclic_gc_paused
from ragcov.user_warnings import RetrievalWarning, warn

Include = Annotated[list[str] | None, typer.Option(
    "--include", help="Report only documents whose id matches this glob (repeatable, or comma-separated).")]
Omit = Annotated[list[str] | None, typer.Option(
    "--omit", help="Leave out documents whose id matches this glob (repeatable, or comma-separated).")]
Exclude = Annotated[list[str] | None, typer.Option(
    "--exclude", help="Exclude chunks whose text matches this regular expression "
    "(repeatable; like coverage.py's exclude_lines).")]
ExcludeDocs = Annotated[list[str] | None, typer.Option(
    "--exclude-docs", help="Exclude every chunk of documents whose id matches this glob "
    "(repeatable, or comma-separated); they are listed as excluded.")]
MinChunkChars = Annotated[int, typer.Option(
    "--min-chunk-chars", help="Exclude chunks with fewer characters than this.")]
Reachable = Annotated[bool, typer.Option(
    "--reachable", help="Count only chunks a test can reach: those `ragcov probe` found "
    "unreachable leave the denominator and are listed as excluded.")]

IncludeGenerated = Annotated[bool, typer.Option(
    "--include-generated", help="Count the questions `ragcov generate` wrote that no suite "
    "has accepted yet (left out by default: review them, add them to your suite and run it).")]

# (name, type, default), in the order --help lists them.
_SCOPE_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("include", Include, None), ("omit", Omit, None), ("exclude", Exclude, None),
    ("exclude_docs", ExcludeDocs, None), ("min_chunk_chars", MinChunkChars, 0),
    ("reachable", Reachable, False), ("include_generated", IncludeGenerated, False),
)


def scoped(command: Callable[..., None]) -> Callable[..., None]:
    """Give a report command the scope options in place of its ``scope`` parameter.

    The command declares ``scope: ReportScope`` where the options belong in ``--help``;
    typer sees the six options there (so they show in ``--help`` and are known to the
    config-key check) and the command receives one :class:`ReportScope`.
    """
    hints = get_type_hints(command, include_extras=True)
    params: list[inspect.Parameter] = []
    for p in inspect.signature(command).parameters.values():
        if p.name == "scope":
            params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                         default=default, annotation=kind)
                       for name, kind, default in _SCOPE_OPTIONS]
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY,
                                    annotation=hints.get(p.name, p.annotation)))

    @functools.wraps(command)
    def wrapper(**options: Any) -> None:
        values = {name: options.pop(name) for name, _, _ in _SCOPE_OPTIONS}
        # A report builds millions of objects that hold no cycles (ids, rows, lines): at a
        # million chunks the cycle collector's passes over them were a quarter of the command.
        with cyclic_gc_paused():
            command(**options,
                    scope=scope_of(**values, reachable_from_config=_from_config("reachable")))

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # typer must read the new signature, not the command's
    return wrapper


def scope_of(include: list[str] | None = None, omit: list[str] | None = None,
             exclude: list[str] | None = None, exclude_docs: list[str] | None = None,
             min_chunk_chars: int = 0, reachable: bool = False,
             include_generated: bool = False, reachable_from_config: bool = False) -> ReportScope:
    return ReportScope(include=tuple(include or ()), omit=tuple(omit or ()),
                       exclude=tuple(exclude or ()), exclude_docs=tuple(exclude_docs or ()),
                       min_chunk_chars=min_chunk_chars, reachable=reachable,
                       reachable_if_probed=reachable and reachable_from_config,
                       include_generated=include_generated)


def _from_config(name: str) -> bool:
    """Whether the option ``name`` of the running command came from a config file."""
    try:  # typer's own copy of click runs the commands (see ragcov.cli.entry)
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover
        from click.globals import get_current_context

    ctx = get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return getattr(source, "name", None) == "DEFAULT_MAP"


def write_total(data_file: Path, scope: ReportScope, output: Path, fail_under: float | None,
                render: Callable[[float], str], what: str, precision: int | None = None,
                format: str = "text") -> bool:
    """:func:`write_scoped` for an output of the total alone (the badge), read from the totals
    the data file keeps; False, having written nothing, where they cannot answer the scope
    (the caller then reads the rows, which give the same number)."""
    check_fail_under(fail_under)
    if precision is not None:
        check_precision(precision)
    with cli_support.one_read(data_file):
        check_outputs([output], [data_file])
        total = cli_support.gate_total(data_file, scope)
    if total is None:
        return False
    if warning := cli_support.workload_warning(total.queries, total.k, total.chunks, fail_under):
        warn(warning, RetrievalWarning)
    emit(render(total.coverage), output, what, format)
    gate(total.coverage, fail_under, precision)
    return True


def write_scoped(data_file: Path, scope: ReportScope, output: Path, fail_under: float | None,
                 render: Callable[[Any], str], what: str, precision: int | None = None,
                 format: str = "text", fail_under_text: float | None = None) -> None:
    """The body the file-writing reports share: check, read the scoped data file, write the
    rendering to ``output`` (or stdout), then run the ``--fail-under`` gate."""
    check_fail_under(fail_under)
    if precision is not None:
        check_precision(precision)
    with cli_support.one_read(data_file):  # the output checks and the report: one snapshot
        check_outputs([output], [data_file])
        scoped = api.report(data_file, scope)
    check_text_gate(scoped.text, fail_under_text)
    summary = scoped.summary(jaccard=False)
    if warning := ceiling_warning(summary, fail_under):  # said at once, before the output
        warn(warning, RetrievalWarning)
    emit(render(scoped), output, what, format)
    gate(summary.coverage, fail_under, precision)
    text_gate(scoped.text, fail_under_text, precision)
