"""Byte identity of every reporter's output on the bundled sample (see sample_outputs.py)."""

from __future__ import annotations

import difflib

import pytest

from sample_outputs import GOLDEN, golden_view, write_outputs


@pytest.mark.slow
def test_outputs_match_the_golden_files(tmp_path):
    got = golden_view(write_outputs(tmp_path))
    want = {str(p.relative_to(GOLDEN)): p.read_bytes() for p in GOLDEN.rglob("*") if p.is_file()}
    assert sorted(got) == sorted(want)
    changed = [name for name in want if got[name] != want[name]]
    detail = "".join(
        "".join(difflib.unified_diff(want[n].decode(errors="replace").splitlines(True)[:400],
                                     got[n].decode(errors="replace").splitlines(True)[:400],
                                     n, n, n=1))[:3000] for n in changed[:3])
    assert not changed, f"outputs changed: {changed}\n{detail}"
