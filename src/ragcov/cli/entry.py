"""``ragcov``'s entry point: run the app, turn every expected failure into one line.

Habits follow coverage.py: user errors print one line and exit 1, without a
traceback; ``--fail-under`` exits 2; Ctrl-C exits 130 and says so.
"""

from __future__ import annotations

import sys
import warnings

import typer

try:  # typer vendors its own click from 0.2x on; its errors are that copy's classes
    from typer._click import exceptions as click
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover
    from click import exceptions as click
    from click.globals import get_current_context

from ragcov.cli.commands import app_for, blame_config
from ragcov.cli.console import err
from ragcov.controls import escape_controls
from ragcov.errors import RagcovError
from ragcov.sigint import threads_leave_sigint


def _os_error(exc: OSError) -> str:
    """An OSError as the line a user can act on: the file, then what went wrong."""
    where = exc.filename if exc.filename is not None else None
    what = exc.strerror or str(exc)
    return f"{where}: {what}" if where is not None else what


INTERRUPTED = ("ragcov: interrupted (the data file keeps what was committed: run --append, "
               "import --append, probe, generate and drift commit as they go; rerun the same "
               "command to resume)")


def _usage_line(exc: click.ClickException) -> str:
    """A click error as one line, naming the command's help (typer draws a 5-line box)."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and isinstance(exc, click.UsageError):
        message = f"{message.rstrip('.')} (see '{ctx.command_path} --help')"
    return f"ragcov: error: {message}"


def _fail(message: str) -> None:
    """The one line a failure prints: control characters escaped (an id in it could
    otherwise retitle or clear the terminal, or break the line in two)."""
    err.print(f"ragcov: error: {escape_controls(message)}", markup=False)
    sys.exit(1)


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, line: str | None = None, issuer: str | None = None) -> str:
    """Warnings for users, not developers: one line, no source line.

    ragcov's own warnings speak for ragcov; any other library's (dask's "port in use")
    is labelled with that library, so nobody reads it as ragcov's verdict.
    """
    text = escape_controls(" ".join(str(message).split()))
    label = _library(category, filename, issuer)
    return f"ragcov: warning: {text}\n" if label is None else \
        f"ragcov: warning: ({label}) {text}\n"


def _library(category: type[Warning], filename: str, issuer: str | None) -> str | None:
    """Whose warning it is (None: ragcov's own), never the file it was attributed to.

    A library's ``stacklevel`` points the warning at its caller (ragcov, or the user's
    app.py), so the file says who called, not who warned: the warning's own class
    names its library, else the module that called ``warnings.warn`` does.
    """
    owner = category.__module__.split(".")[0]
    if owner == "ragcov":
        return None
    if owner not in ("builtins", "warnings"):
        return owner
    if issuer is not None:
        top = issuer.split(".")[0]
        # ragcov relays (Dask workers) or called C code that warned: the kind, not ragcov.
        return category.__name__ if top == "ragcov" else top
    return _origin(filename)


def _origin(filename: str) -> str:
    parts = filename.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return parts[-1].removesuffix(".py") or "python"


class _Warnings:
    """``warnings.showwarning`` while a command runs: each warning once, and ``-q`` honoured."""

    def __init__(self) -> None:
        self.shown: set[str] = set()

    def __call__(self, message: Warning | str, category: type[Warning], filename: str,
                 lineno: int, file: object = None, line: str | None = None) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") == "warnings":
            frame = frame.f_back  # type: ignore[assignment]
        issuer = frame.f_globals.get("__name__") if frame is not None else None
        text = _one_line_warning(message, category, filename, lineno, line, issuer)
        if text in self.shown or (_quiet() and _library(category, filename, issuer)):
            return
        self.shown.add(text)
        sys.stderr.write(text)


def _quiet() -> bool:
    """``-q``/``--quiet`` of the running command: other libraries' warnings are noise then."""
    ctx = get_current_context(silent=True)
    return bool(ctx is not None and ctx.params.get("quiet"))


def _rcfile_first(argv: list[str]) -> list[str]:
    """``ragcov report --rcfile X`` as coverage.py users write it: moved before the command.

    ``--rcfile`` is the app's option (config is read before any command parses its
    own options, so it can supply their defaults).
    """
    args, moved, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            args += argv[i:]
            break
        if arg == "--rcfile" and i + 1 < len(argv):
            moved += argv[i:i + 2]
            i += 2
            continue
        if arg.startswith("--rcfile="):
            moved.append(arg)
        else:
            args.append(arg)
        i += 1
    return moved + args


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def main(argv: list[str] | None = None) -> None:
    import sqlite3

    previous_format, previous_show = warnings.formatwarning, warnings.showwarning
    warnings.formatwarning = _one_line_warning
    warnings.showwarning = _Warnings()
    args: list[str] = []
    try:
        # Not standalone: click's errors come here, to be printed as one line.
        args = _rcfile_first(sys.argv[1:] if argv is None else list(argv))
        # Building the command imports its modules, numpy among them, whose BLAS starts
        # threads that must not take the Ctrl-C meant for this one (ragcov.sigint).
        with threads_leave_sigint():
            app = app_for(args)
        code = app(args=args, prog_name="ragcov", standalone_mode=False)
    except click.NoArgsIsHelpError:
        sys.exit(1)  # the help is already printed
    except click.ClickException as exc:
        err.print(escape_controls(_usage_line(exc)), markup=False)
        # As coverage.py: 1 for a usage error, 2 only for coverage under --fail-under,
        # so CI can tell "the gate failed" from "the command was wrong".
        sys.exit(1)
    except typer.Abort:
        err.print(INTERRUPTED, markup=False)
        sys.exit(130)
    except RagcovError as exc:
        _fail(blame_config(str(exc), args))
    except KeyboardInterrupt:
        err.print(INTERRUPTED, markup=False)
        sys.exit(130)
    except SystemError as exc:
        # A Ctrl-C that lands while compiled code (numba's BM25 kernel) returns surfaces as
        # "returned a result with an exception set", the KeyboardInterrupt as its cause.
        if not _caused_by_interrupt(exc):
            raise
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
        warnings.formatwarning, warnings.showwarning = previous_format, previous_show
    if code == 130:  # typer turns Ctrl-C into Exit(130)
        err.print(INTERRUPTED, markup=False)
    sys.exit(code if isinstance(code, int) else 0)
