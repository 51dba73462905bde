"""Python's cycle collector paused while ragcov builds millions of small objects.

An import's spans, a store's rows turned into chunks: millions of objects that hold no
reference cycles, which the collector would walk again at every full collection
(about a third of an import's time at a million spans, and half of reading 100,000
LanceDB rows, measured). Reference counting still frees everything as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cycle collector for the block; restored afterwards (if it was on)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
