"""The data file keeps every committed query and reports bad files in one line.

Races between writers of one data file, crafted and damaged files, an empty file,
a locked file, a combine killed halfway, and a corpus whose document ids changed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from datafile_race import RUN, race, recorded, workers, write_corpus, write_queries


def test_combine_append_racing_run_append_keeps_the_appended_queries(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    base = ["--corpus", str(corpus), *RUN]
    with workers(2) as pool:
        write_queries(tmp_path / "base.jsonl", ["b0", "b1"])
        write_queries(tmp_path / "shard.jsonl", [f"s{i}" for i in range(200)])
        (setup, shard) = race(pool, tmp_path, [
            (["run", *base, "--queries", "base.jsonl"], 0.0),
            (["run", *base, "--queries", "shard.jsonl", "--data-file", "master-shard"], 0.0)])
        assert setup.code == 0 and shard.code == 0, (setup.err, shard.err)
        lost = []
        for trial in range(30):
            shutil.copy(tmp_path / "master-shard", tmp_path / f".ragcov.host.1.{trial:04d}")
            ids = [f"t{trial}-{i}" for i in range(3)]
            write_queries(tmp_path / "new.jsonl", ids)
            offset = (trial % 10) * 0.004
            combined, appended = race(pool, tmp_path, [
                (["combine", "--append", "-q"], 0.0),
                (["run", *base, "--queries", "new.jsonl", "--append"], offset)])
            assert combined.code == 0 and appended.code == 0, (combined.err, appended.err)
            if not set(ids) <= recorded(tmp_path / ".ragcov"):
                lost.append(trial)
    assert lost == []
    assert recorded(tmp_path / ".ragcov") >= {"b0", "b1", *(f"s{i}" for i in range(200))}
