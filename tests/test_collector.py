"""The cycle collector paused for a block is put back as it was, whatever happens in it."""

from __future__ import annotations

import gc

import pytest

from ragcov.collector import cyclic_gc_paused


def test_paused_then_restored_even_after_an_error() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), cyclic_gc_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
