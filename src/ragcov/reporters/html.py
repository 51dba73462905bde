"""The HTML report: an htmlcov-style static site over one data file.

An index with the totals and a sortable, filterable table of documents; one page per
document showing every chunk shaded covered or uncovered with the tests that reached
it; a page of queries with what each retrieved; and, when an ordering of the suite is
known, the coverage curve drawn as inline SVG. The site is plain files (no network, no
libraries) so it opens from ``file://`` and can be attached to a CI run.

All corpus and query text goes through Jinja's autoescaping and is never marked safe:
a corpus is user data and may hold markup. What each page shows is built by
:mod:`ragcov.reporters.html_context` and the curves by :mod:`ragcov.reporters.curves`; this
module renders the templates and puts the site in place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ragcov.config import MAX_PRECISION
from ragcov.controls import escape_controls
from ragcov.destinations import written_path
from ragcov.errors import RagcovError
from ragcov.files import check_destination, exchange, remove_stale_temps, temp_prefix
from ragcov.matrix import CoverageMatrix
from ragcov.reporters.curves import (
    Curve,
    curve_from_order,
    curve_from_order_file,
    greedy_curve,
    recorded_curve,
)
from ragcov.reporters.html_actions import add_next_actions
from ragcov.reporters.html_context import document_filename, site_context
from ragcov.reporters.html_extras import add_extras
from ragcov.reporters.html_reachability import add_reachability
from ragcov.reporters.html_topics import add_topics
from ragcov.scope import ReportScope, Scoped, apply_scope

__all__ = ["MARKER", "STATIC_FILES", "Curve", "curve_from_order", "curve_from_order_file",
           "document_filename", "greedy_curve", "html_report", "recorded_curve"]

# A file in every report directory: a directory holding it may be replaced wholesale;
# any other non-empty directory is left alone.
MARKER = ".ragcov-html"
STATIC_FILES = ("style.css", "ragcov.js", "topics.css", "topics.js")


def html_report(m: CoverageMatrix, chunk_texts: Mapping[str, str],
                directory: str | os.PathLike[str], curves: Sequence[Curve] = (),
                precision: int = 0, title: str = "Chunk coverage report",
                scoped: Scoped | None = None, topics: Any = None) -> Path:
    """Write the site into ``directory`` and return the path of its index page.

    The site is built in a temporary directory beside the target and swapped in only
    when complete, so a failed build leaves the previous report untouched. A non-empty
    directory that is not a ragcov report is refused rather than replaced. With
    ``scoped`` the site reports its matrix (``m`` is then ignored) and marks what it
    excluded.
    """
    if not 0 <= precision <= MAX_PRECISION:
        raise RagcovError(f"precision must be from 0 to {MAX_PRECISION}, got {precision}")
    given = Path(directory)
    _check_target(given)
    # A symlinked report folder is written through: the site replaces the link's target
    # and the link stays, as for a symlinked data file.
    target = written_path(given)
    if scoped is None:
        scoped = apply_scope(m, chunk_texts, {}, ReportScope())
    ctx = site_context(scoped.matrix, scoped.summary(), scoped.texts, curves, precision, title)
    add_extras(ctx, scoped)
    add_reachability(ctx, scoped)
    add_next_actions(ctx, scoped)
    add_topics(ctx, scoped, topics, precision)  # a topics page when ``topics`` is given
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(target)  # a build killed earlier: its half site, or the old one aside
        if target != given.absolute():
            remove_stale_temps(given)  # links set aside beside the link by earlier versions
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent))
    except OSError as exc:  # the error names the folder given, never a temporary's
        raise RagcovError(f"{given}: cannot write in {target.parent} "
                          f"({(exc.strerror or str(exc)).lower()})") from exc
    try:
        _render(tmp, ctx)
        os.chmod(tmp, 0o755)
        _swap(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return given / "index.html"


def _check_target(target: Path) -> None:
    check_destination(target)  # a folder linked by another user, or a link in the cache
    if target.exists() and not target.is_dir():
        raise RagcovError(f"{target}: exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).exists():
        raise RagcovError(f"{target}: not empty and not a ragcov HTML report; "
                          "choose another directory")


def environment() -> Any:
    """The templates' environment, for every page ragcov writes (the site, the diff page,
    the drift page): no page is rendered by another (``tests/test_hostile_outputs.py``).

    Autoescape writes ``<`` as ``&lt;``, but a control character is no markup and passed
    raw: U+202E from a document id made ``doc\u202etxt.exe`` display as "docexe.txt", and
    a NUL from chunk text reached the page. Every value a template prints is finalised
    first, so those characters show as ``\u202e`` and ``\x00``, as the terminal shows
    them (line breaks and tabs of chunk text stay). Markup (``tojson``) is left alone:
    JSON already writes them as escapes. What a template writes itself, or a value marked
    safe, is caught last: the rendered page is escaped as a whole, so no template or
    filter can put a raw control character on a page."""
    import jinja2
    from markupsafe import Markup

    def visible(value: Any) -> Any:
        if isinstance(value, str) and not isinstance(value, Markup):
            return escape_controls(value, keep="\n\t")
        return value

    class Page(jinja2.Template):
        def render(self, *args: Any, **kwargs: Any) -> str:
            return escape_controls(super().render(*args, **kwargs), keep="\n\t\r")

    class Pages(jinja2.Environment):
        template_class = Page

    return Pages(
        loader=jinja2.PackageLoader("ragcov", "reporters/templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible,
    )


def _render(site: Path, ctx: dict[str, Any]) -> None:
    """Every page, the static files and the marker, into the empty folder ``site``."""
    env = environment()
    _write(site / "index.html", env.get_template("index.html").render(page="index", **ctx))
    _write(site / "queries.html", env.get_template("queries.html").render(page="queries", **ctx))
    if ctx.get("topics"):
        _write(site / "topics.html", env.get_template("topics.html").render(page="topics", **ctx))
    doc_tpl = env.get_template("document.html")
    for p in ctx["pages"]:
        _write(site / p["doc"]["file"], doc_tpl.render(page="document", p=p, **ctx))
    templates = resources.files("ragcov") / "reporters" / "templates"
    for name in STATIC_FILES:
        (site / name).write_bytes((templates / name).read_bytes())
    (site / MARKER).write_text("This directory is a ragcov HTML report; "
                               "ragcov html replaces it whole.\n", encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _swap(new: Path, target: Path) -> None:
    """Put ``new`` in place of ``target`` in one step where the system can (the old site
    then sits at ``new``'s name and is deleted), else rename the old one aside first, then
    the new one in, then delete the old (a kill between the renames leaves the old one
    aside, put back by the next writer)."""
    if target.is_dir() and not target.is_symlink() and exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)
        return
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=temp_prefix(target), suffix=".old", dir=target.parent))
        old.rmdir()
        os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
