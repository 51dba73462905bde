"""``ragcov``'s entry point: run the app, turn every expected failure into one line.

Habits follow coverage.py: user errors print one line and exit 1, without a
traceback; ``--fail-under`` exits 2; Ctrl-C exits 130 and says so.
"""

from __future__ import annotations

import sys
import warnings

import typer

from ragcov.cli.commands import app
from ragcov.cli.console import err
from ragcov.controls import escape_controls
from ragcov.errors import RagcovError


def _os_error(exc: OSError) -> str:
    """An OSError as the line a user can act on: the file, then what went wrong."""
    where = exc.filename if exc.filename is not None else None
    what = exc.strerror or str(exc)
    return f"{where}: {what}" if where is not None else what


INTERRUPTED = "ragcov: interrupted (the data file keeps what was committed; rerun to resume)"


def _fail(message: str) -> None:
    """The one line a failure prints: control characters escaped (an id in it could
    otherwise retitle or clear the terminal, or break the line in two)."""
    err.print(f"ragcov: error: {escape_controls(message)}", markup=False)
    sys.exit(1)


def _usage_error(exc: SystemExit) -> bool:
    """A usage error (a misspelt option, a bad value): typer exits 2 for it, as for fail-under."""
    inner = exc.__context__
    return exc.code == 2 and inner is not None and any(
        cls.__name__ == "UsageError" for cls in type(inner).__mro__)


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, line: str | None = None) -> str:
    """Warnings for users, not developers: one line, no source line.

    ragcov's own warnings speak for ragcov; any other library's (dask's "port in use")
    is labelled with where it came from, so nobody reads it as ragcov's verdict.
    """
    text = escape_controls(" ".join(str(message).split()))
    if category.__module__.split(".")[0] == "ragcov":
        return f"ragcov: warning: {text}\n"
    return f"ragcov: warning: ({_origin(filename)}) {text}\n"


def _origin(filename: str) -> str:
    parts = filename.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return parts[-1] or "python"


def _interrupted(exc: SystemExit) -> bool:
    """typer turns Ctrl-C into a silent exit 130; find the KeyboardInterrupt behind it."""
    inner = exc.__context__
    return isinstance(inner, typer.Exit) and isinstance(inner.__cause__, KeyboardInterrupt)


def main(argv: list[str] | None = None) -> None:
    import sqlite3

    previous_format = warnings.formatwarning
    warnings.formatwarning = _one_line_warning
    try:
        app(args=argv, prog_name="ragcov")
    except SystemExit as exc:
        if _interrupted(exc):
            err.print(INTERRUPTED, markup=False)
        if _usage_error(exc):
            # As coverage.py: 1 for a usage error, 2 only for coverage under --fail-under,
            # so CI can tell "the gate failed" from "the command was wrong".
            sys.exit(1)
        raise
    except RagcovError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print(INTERRUPTED, markup=False)
        sys.exit(130)
    except sqlite3.Error as exc:  # a data file damaged in a way the readers did not foresee
        _fail(f"data file: {exc}")
    except OSError as exc:
        _fail(_os_error(exc))
    except RecursionError:
        _fail("input nested too deeply to read")
    finally:
        # main() is also called in-process (tests, scripts): leave the host's format as it was.
        warnings.formatwarning = previous_format
