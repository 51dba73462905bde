"""The pool and its probes, recorded once into the cache and read back the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from research.common import ExperimentSetup, prepare
from research.rq3.probes import cache_path, prepare_with_probes


def test_probes_are_recorded_once_and_read_back(pool: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from ragcov.data.datafile import CoverageData
    from ragcov.data.probes import read_probes

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    setup = ExperimentSetup(str(pool), None, "bm25", None, 2, progress=False)
    prep, occ = prepare_with_probes(setup)
    path = cache_path(setup, prep.corpus.hash)
    assert path.is_file() and path.parent == tmp_path / "cache" / "research"
    # The same matrix the uncached harness builds, and one k-occurrence per chunk that
    # counts the recorded probes' top-k lists (two probes per chunk, k = 2 each).
    plain = prepare(setup).matrix
    assert prep.matrix.query_ids == plain.query_ids
    assert (prep.matrix.hits != plain.hits).nnz == 0
    probes = read_probes(CoverageData(path), len(prep.corpus))
    assert occ.shape == (len(prep.corpus),)
    assert occ.sum() == probes.ranks.nnz and probes.n_probes >= len(prep.corpus)
    # A second run reads the file back: nothing is retrieved, the same numbers come out.
    stamp = path.stat().st_mtime_ns
    again, occ2 = prepare_with_probes(setup)
    assert path.stat().st_mtime_ns == stamp
    assert np.array_equal(occ, occ2) and (again.matrix.hits != prep.matrix.hits).nnz == 0
    # Another k is another file.
    other = ExperimentSetup(str(pool), None, "bm25", None, 3, progress=False)
    assert cache_path(other, prep.corpus.hash) != path
