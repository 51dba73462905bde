"""combine, run --append, import --append and erase raced against one data file.

Each trial starts from a data file holding some queries (or none) and one
parallel-mode shard, then starts ``combine --append``, two ``run --append``, an
``import --append`` and, in most trials, ``erase``, each after a random delay of
up to 30 ms, in forked worker processes that run ragcov in process
(tests/datafile_race.py).

What "committed" means here: a command's queries are committed when the command
exits 0; the setup's queries in the data file are committed before every command;
the shard's queries count as combine's (combine moves them into the data file, and
an erase that looked before combine published may miss them there). The final
data file must pass ``integrity_check`` and:

* hold every committed query, unless an erase may have run after the commit, that
  is an erase that ended after the command started (the setup's queries: any erase);
* hold none that an erase surely removed: committed by a command that ended before
  an erase started (every id is recorded by one command only), nor the setup's
  queries once an erase succeeded, nor the shard's when combine failed;
* hold nothing that no command recorded, and leave no temporary or lock file.

A command may fail only when an erase ran before or while it ran, and then with a one-line "no
data file", "No data to combine" or "No such file" error (its file or its input was
erased); never with a traceback, and never without an erase.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from datafile_race import RUN, Outcome, race, recorded, workers, write_corpus, write_queries, write_traces

pytestmark = pytest.mark.slow

TRIALS = 200
SHARD_IDS = {"shard0", "shard1", "shard2"}
# The errors of a command whose file or input an overlapping erase removed.
VANISHED = ("no data file", "No data to combine", "No such file or directory")
SEED = 20261202
PROBE = ["--retriever", "datafile_race:FixedRetriever", "-q"]  # k: the recorded run's


def _erased_before_end(outcome: Outcome, erases: list[Outcome]) -> bool:
    """An erase ran before or while the command ran (it may have removed its file or input)."""
    return any(e.start < outcome.end for e in erases)


def test_writers_raced_against_one_data_file_lose_no_committed_query(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    corpus = write_corpus(tmp_path)
    base = ["--corpus", str(corpus)]
    with workers(5) as pool:
        write_queries(tmp_path / "setup.jsonl", ["base0", "base1"])
        write_queries(tmp_path / "shard.jsonl", sorted(SHARD_IDS))
        made = race(pool, tmp_path, [
            (["run", *base, *RUN, "--queries", "setup.jsonl", "--data-file", "setup.ragcov"], 0.0),
            (["run", *base, *RUN, "--queries", "shard.jsonl", "--data-file", "setup-shard"], 0.0)])
        assert all(o.code == 0 for o in made), [o.err for o in made]
        erased_trials = 0
        for trial in range(TRIALS):
            folder = tmp_path / f"t{trial}"
            folder.mkdir()
            start_with_data = rng.random() < 0.7
            if start_with_data:
                shutil.copy(tmp_path / "setup.ragcov", folder / ".ragcov")
            shutil.copy(tmp_path / "setup-shard", folder / ".ragcov.race.1.shard")
            write_queries(folder / "r1.jsonl", ["r1-0", "r1-1"])
            write_queries(folder / "r2.jsonl", ["r2-0", "r2-1"])
            write_traces(folder / "traces.jsonl", ["i0", "i1"])
            commands: list[tuple[list[str], set[str]]] = [
                (["combine", "--append", "-q"], SHARD_IDS),
                (["run", *base, *RUN, "--queries", "r1.jsonl", "--append"], {"r1-0", "r1-1"}),
                (["run", *base, *RUN, "--queries", "r2.jsonl", "--append"], {"r2-0", "r2-1"}),
                (["import", "traces.jsonl", *base, "--name", "race", "--append", "-q"], {"i0", "i1"}),
            ]
            with_erase = rng.random() < 0.75
            if with_erase:
                commands.append((["erase"], set()))
            outcomes = race(pool, folder, [(args, rng.uniform(0, 0.03)) for args, _ in commands])
            erases = [o for o in outcomes if o.args == ("erase",)]
            erased_trials += bool(erases)
            context = f"trial {trial}: " + "; ".join(
                f"{' '.join(o.args[:1])} rc={o.code} {o.start:.4f}-{o.end:.4f} {o.err.strip()}"
                for o in outcomes)
            assert all(e.code == 0 for e in erases), context
            final = recorded(folder / ".ragcov")
            setup_ids = {"base0", "base1"} if start_with_data else set()
            if not erases:
                assert setup_ids <= final, context
            else:  # committed before every command, so before the erase
                assert not setup_ids & final, context
            if outcomes[0].code != 0:  # only combine moves the shard's queries in
                assert not SHARD_IDS & final, context
            everyone: set[str] = set(setup_ids)
            for (_, ids), outcome in zip(commands, outcomes):
                everyone |= ids
                if outcome.code != 0:
                    assert "Traceback" not in outcome.err and outcome.err.count("\n") == 1, context
                    assert _erased_before_end(outcome, erases), context
                    assert any(m in outcome.err for m in VANISHED), context
                    continue
                if not any(e.end > outcome.start for e in erases):
                    assert ids <= final, context
                if any(e.start > outcome.end for e in erases):
                    assert not ids & final, context
            assert final <= everyone, context
            assert not [p.name for p in folder.glob(".*")
                        if p.suffix in (".tmp", ".old") or p.name.endswith("-lock")], context
            shutil.rmtree(folder)
    assert erased_trials > TRIALS // 2


def _probe_count(path: Path) -> int:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return con.execute("SELECT COUNT(*) FROM probes").fetchone()[0]
    finally:
        con.close()


def test_probe_raced_against_combine_keeps_both(tmp_path: Path) -> None:
    """probe takes the writers' turn as --append does: a combine replacing the file waits for
    its batch, and neither fails with "readonly database" nor loses the other's records."""
    rng = random.Random(SEED + 1)
    corpus = write_corpus(tmp_path)
    base = ["--corpus", str(corpus)]
    with workers(2) as pool:
        write_queries(tmp_path / "setup.jsonl", ["base0", "base1"])
        write_queries(tmp_path / "shard.jsonl", sorted(SHARD_IDS))
        made = race(pool, tmp_path, [
            (["run", *base, *RUN, "--queries", "setup.jsonl", "--data-file", "setup.ragcov"], 0.0),
            (["run", *base, *RUN, "--queries", "shard.jsonl", "--data-file", "setup-shard"], 0.0)])
        assert all(o.code == 0 for o in made), [o.err for o in made]
        alone = tmp_path / "alone"
        alone.mkdir()
        shutil.copy(tmp_path / "setup.ragcov", alone / ".ragcov")
        (probed,) = race(pool, alone, [(["probe", *base, *PROBE], 0.0)])
        assert probed.code == 0, probed.err
        n_probes = _probe_count(alone / ".ragcov")
        assert n_probes > 0
        for trial in range(40):
            folder = tmp_path / f"t{trial}"
            folder.mkdir()
            shutil.copy(tmp_path / "setup.ragcov", folder / ".ragcov")
            shutil.copy(tmp_path / "setup-shard", folder / ".ragcov.race.1.shard")
            outcomes = race(pool, folder, [(["combine", "--append", "-q"], rng.uniform(0, 0.02)),
                                           (["probe", *base, *PROBE], rng.uniform(0, 0.02))])
            context = f"trial {trial}: " + "; ".join(f"{o.args[0]} rc={o.code} {o.err.strip()}"
                                                    for o in outcomes)
            assert all(o.code == 0 for o in outcomes), context
            assert recorded(folder / ".ragcov") == {"base0", "base1"} | SHARD_IDS, context
            assert _probe_count(folder / ".ragcov") == n_probes, context
            assert not [p.name for p in folder.glob(".*")
                        if p.suffix in (".tmp", ".old") or p.name.endswith("-lock")], context
            shutil.rmtree(folder)


@pytest.mark.parametrize("command", [["report"], ["report", "-m", "--redundant"],
                                     ["json", "-o", "r.json"], ["xml", "-o", "r.xml"],
                                     ["lcov", "-o", "r.lcov"], ["badge", "-o", "b.svg"],
                                     ["html", "-d", "site"]])
def test_a_report_reads_its_data_file_in_one_transaction(tmp_path: Path, monkeypatch, capsys,
                                                         command: list[str]) -> None:
    """report opened 8 read transactions: an append between two of them made one report of
    two states of the file (a matrix of one, probes or texts of the other). Every read of a
    report command now goes through one snapshot; the append waits for it or lands before."""
    import ragcov.data.datafile as datafile
    from helpers import cli

    corpus = write_corpus(tmp_path)
    write_queries(tmp_path / "q.jsonl", ["q0", "q1", "q2"])
    data = tmp_path / ".ragcov"
    base = ["--corpus", str(corpus), "--retriever", "datafile_race:FixedRetriever"]
    assert cli(capsys, "run", *base, "--queries", str(tmp_path / "q.jsonl"), "-k", "2",
               "--data-file", str(data), "-q")[0] == 0
    assert cli(capsys, "probe", *base, "--data-file", str(data), "-q")[0] == 0
    monkeypatch.chdir(tmp_path)
    opened: list[Path] = []
    real = datafile.open_for_reading
    write_queries(tmp_path / "more.jsonl", ["m0", "m1"])

    def counting(path: Path):
        opened.append(path)
        con = real(path)
        if len(opened) == 1:
            # A writer appends while the first read transaction is open: it must wait
            # for the snapshot, and whatever the report shows is one state.
            appended.append(threading.Thread(target=append, daemon=True))
            appended[-1].start()
            appended[-1].join(0.5)
        return con

    def append() -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
        subprocess.run([sys.executable, "-m", "ragcov", "run", *base, "--queries",
                        str(tmp_path / "more.jsonl"), "-k", "2", "--data-file", str(data),
                        "--append", "-q"], check=True, timeout=120, cwd=tmp_path, env=env)

    appended: list[threading.Thread] = []
    monkeypatch.setattr(datafile, "open_for_reading", counting)
    code, _, err = cli(capsys, *command, "--data-file", str(data))
    assert code == 0, err
    assert len(opened) == 1, f"{len(opened)} read transactions"
    appended[0].join(120)
    monkeypatch.setattr(datafile, "open_for_reading", real)
    if command[0] == "json":  # the report is the state before the append, whole
        assert sorted(json.loads((tmp_path / "r.json").read_text())["queries"]) == ["q0", "q1", "q2"]
    code, out, _ = cli(capsys, "report", "--format", "total", "--data-file", str(data))
    assert code == 0
    assert set(json.loads(cli(capsys, "json", "-o", "-", "--data-file", str(data))[1])["queries"]) \
        == {"q0", "q1", "q2", "m0", "m1"}
