"""The ``ragcov`` command line: thin typer commands over :mod:`ragcov.api`.

``app`` registers every command (``commands.py``); ``main`` runs it and turns expected
failures into one line (``entry.py``); one module per command group parses options
and prints, and the options shared by several commands live in ``options.py``.

This package imports none of them until asked: loading the commands takes a good
part of a second, and a Ctrl-C in that time must end the command as a Ctrl-C later
does (one line, exit 130), which only code already running can arrange.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragcov.cli.commands import app

__all__ = ["app", "main"]

INTERRUPTED_AT_START = "ragcov: interrupted (before the command started; nothing was written)"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, as ragcov's own SIGINT handler raises it.

    When a plain KeyboardInterrupt passes through certain frames (module imports run
    by C code), CPython remembers it and, at exit, kills the process with SIGINT
    (status -2) even though the exception was caught and exit 130 was asked for. A
    subclass is not remembered, and every ``except KeyboardInterrupt`` still catches it.
    """


# SIGINTs this process has taken (see _on_sigint).
_interrupts = 0


def _on_sigint(signum: int, frame: Any) -> None:
    """Raise :class:`Interrupted`; at a second Ctrl-C, end the process at once.

    The first one unwinds the command, which cleans up (temporaries, transactions). An
    exception raised while Python runs a finalizer is printed and dropped, so a first
    Ctrl-C can be lost; a user presses Ctrl-C again, and that one must not be lost too.
    Ending without the clean-up loses nothing: every write is atomic, and temporaries
    left by a dead process are removed by the next run (as after a kill -9).
    """
    global _interrupts
    _interrupts += 1
    if _interrupts > 1:
        os.write(2, b"ragcov: interrupted\n")
        os._exit(130)
    raise Interrupted


def main(argv: list[str] | None = None) -> None:
    """The ``ragcov`` command (its console script and ``python -m ragcov``)."""
    previous = _handle_sigint()
    try:
        try:
            from ragcov.sigint import threads_leave_sigint

            # A library loaded here may start a thread (numpy's BLAS did, when the api
            # loaded it at once; it now loads with the verbs' modules, in a block of its
            # own) that must not take the Ctrl-C meant for the main thread (a Ctrl-C
            # meanwhile waits for the block's end).
            with threads_leave_sigint():
                from ragcov.cli.entry import INTERRUPTED
                from ragcov.cli.entry import main as run
        except KeyboardInterrupt:
            sys.stderr.write(INTERRUPTED_AT_START + "\n")
            sys.exit(130)
        try:
            run(argv)
        except KeyboardInterrupt:
            # One that lands outside the command's own handlers (while it sets up or
            # cleans up): the same line and status as any other Ctrl-C.
            sys.stderr.write(INTERRUPTED + "\n")
            sys.exit(130)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _handle_sigint() -> Any:
    """Install :func:`_on_sigint` where Python's own handler is; the one replaced, or None.

    A host that set its own handler (or a call from another thread, where handlers
    cannot be set) keeps what it has.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    global _interrupts
    current = signal.getsignal(signal.SIGINT)
    if current is not signal.default_int_handler:
        return None
    _interrupts = 0  # main() may run again in one process (tests, scripts)
    signal.signal(signal.SIGINT, _on_sigint)
    return current


def __getattr__(name: str) -> Any:
    if name == "app":
        from ragcov.cli.commands import app

        return app
    raise AttributeError(f"module 'ragcov.cli' has no attribute {name!r}")
