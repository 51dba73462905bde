"""Ctrl-C reaches the main thread, whatever threads the libraries start.

The kernel hands a process's SIGINT to any one of its threads that does not block it.
Python runs its handler in the main thread only, and only once that thread next runs
Python code: if the signal lands on another thread (OpenBLAS starts one when numpy
loads; rich starts one per progress bar) while the main thread waits in a system call
(a sleep, an HTTP read, a module that takes a minute to import), nothing wakes it and
Ctrl-C seems ignored until the wait ends. A thread inherits the signal mask of the
thread that starts it, so threads started inside :func:`threads_leave_sigint` block
SIGINT for good, and the kernel has only the main thread left to deliver it to.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def threads_leave_sigint() -> Iterator[None]:
    """Threads started in this block never take SIGINT; one that arrives meanwhile waits
    and is delivered to the main thread as the block ends."""
    if (not hasattr(signal, "pthread_sigmask")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)

