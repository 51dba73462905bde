"""The options every report command shares: which documents it covers and what it excludes.

Declared once so ``report``, ``json``, ``html``, ``xml``, ``lcov`` and ``badge``
read the same flags, and the same ``[tool.ragcov]`` keys (``include``, ``omit``,
``exclude``, ``exclude_docs``, ``min_chunk_chars``, ``reachable``): a flat key applies to every
report, as coverage.py's ``[report]`` section does.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ragcov.report.scope import ReportScope

Include = Annotated[list[str] | None, typer.Option(
    "--include", help="Report only documents whose id matches this glob (repeatable).")]
Omit = Annotated[list[str] | None, typer.Option(
    "--omit", help="Leave out documents whose id matches this glob (repeatable).")]
Exclude = Annotated[list[str] | None, typer.Option(
    "--exclude", help="Exclude chunks whose text matches this regular expression "
    "(repeatable; like coverage.py's exclude_lines).")]
ExcludeDocs = Annotated[list[str] | None, typer.Option(
    "--exclude-docs", help="Exclude every chunk of documents whose id matches this glob "
    "(repeatable); they are listed as excluded.")]
MinChunkChars = Annotated[int, typer.Option(
    "--min-chunk-chars", help="Exclude chunks with fewer characters than this.")]
Reachable = Annotated[bool, typer.Option(
    "--reachable", help="Count only chunks a test can reach: those `ragcov probe` found "
    "unreachable leave the denominator and are listed as excluded.")]


def scope_of(include: list[str] | None, omit: list[str] | None, exclude: list[str] | None,
             exclude_docs: list[str] | None, min_chunk_chars: int,
             reachable: bool = False) -> ReportScope:
    return ReportScope(include=tuple(include or ()), omit=tuple(omit or ()),
                       exclude=tuple(exclude or ()), exclude_docs=tuple(exclude_docs or ()),
                       min_chunk_chars=min_chunk_chars, reachable=reachable)
