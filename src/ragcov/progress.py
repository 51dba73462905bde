"""One progress-bar helper so embedding and retrieval look the same everywhere.

Bars and spinners go to stderr, and only to a terminal: a CI log or a pipe gets
nothing, so output stays the same whether or not someone is watching.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ragcov.controls import escape_controls
from ragcov.sigint import threads_leave_sigint


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def _eta_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class EtaColumn(ProgressColumn):
        """Time left at the average rate so far: known from the first item on.

        rich's own column estimates from a window of samples and shows ``-:--:--``
        until it has two, which a bar that moves a few times never gets.
        """

        def render(self, task: Any) -> Text:
            done, total, elapsed = task.completed, task.total, task.elapsed
            if not done or not total or elapsed is None:
                return Text("ETA -:--:--", style="progress.remaining")
            left = max(0.0, elapsed * (total - done) / done)
            h, rest = divmod(int(round(left)), 3600)
            m, s = divmod(rest, 60)
            return Text(f"ETA {h}:{m:02d}:{s:02d}", style="progress.remaining")

    return EtaColumn()


def _rate_column(unit: str) -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items a second at the average rate so far (how fast the hardware goes)."""

        def render(self, task: Any) -> Text:
            if not task.completed or not task.elapsed:
                return Text(f"- {unit}/s", style="progress.data.speed")
            return Text(f"{task.completed / task.elapsed:,.0f} {unit}/s", style="progress.data.speed")

    return RateColumn()


@contextlib.contextmanager
def progress_bar(label: str, total: int, enabled: bool = True,
                 unit: str | None = None) -> Iterator[Callable[[int], None]]:
    """Yield an ``advance(n)`` callable; draws a rich bar on a terminal only, with the
    rate in ``unit``s a second when ``unit`` is given."""
    if not enabled or total <= 0 or not _on_terminal():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console(stderr=True, emoji=False)
    rate = [_rate_column(unit)] if unit else []
    with contextlib.ExitStack() as stack:
        with threads_leave_sigint():  # rich's refresh thread starts here
            bar = stack.enter_context(Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                *rate, TimeElapsedColumn(), _eta_column(), console=console, transient=True))
        task = bar.add_task(escape_controls(label), total=total)
        yield lambda n: bar.advance(task, n)


@contextlib.contextmanager
def status(label: str, enabled: bool = True) -> Iterator[None]:
    """A spinner with ``label`` and the seconds so far, on a terminal only (e.g. a store being built)."""
    if not enabled or not _on_terminal():
        yield
        return
    from rich.console import Console

    console = Console(stderr=True, emoji=False)
    label = escape_controls(label)  # "Building retriever NAME": a name the user gave
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        with threads_leave_sigint():  # rich's refresh thread and ours start here
            spinner = stack.enter_context(console.status(label))
            stack.enter_context(
                _ticking(lambda: spinner.update(f"{label} ({time.monotonic() - start:.0f}s)")))
        yield  # shown on stderr while the work runs; cleared when it ends


@contextlib.contextmanager
def _ticking(update: Callable[[], None], every: float = 1.0) -> Iterator[None]:
    import threading

    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            update()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def per_batch(encoder: Any, advance: Callable[[int], None]) -> Iterator[Callable[[int], None]]:
    """Advance the bar after every batch a torch encoder runs, not per slice of texts.

    A forward hook on the model sees each batch go through; the slices and batches
    themselves stay as they are, so the embeddings keep their bits. Yields
    ``settle(n)``, called after each slice of ``n`` texts: it advances whatever the
    hook did not see (all of it for an encoder that is not a torch module).
    """
    seen = [0]

    def on_batch(module: Any, args: Any, output: Any) -> None:
        features = args[0] if args else None
        ids = features.get("input_ids") if hasattr(features, "get") else None
        if ids is not None and hasattr(ids, "shape"):
            seen[0] += int(ids.shape[0])
            advance(int(ids.shape[0]))

    def settle(n: int) -> None:
        if n > seen[0]:
            advance(n - seen[0])
        seen[0] = 0

    hook = getattr(encoder, "register_forward_hook", None)
    handle = hook(on_batch) if hook is not None else None
    try:
        yield settle
    finally:
        if handle is not None:
            handle.remove()
