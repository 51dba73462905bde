"""The data file keeps every committed query and reports bad files in one line.

Races between writers of one data file, crafted and damaged files, an empty file,
a locked file, a combine killed halfway, and a corpus whose document ids changed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from datafile_race import RUN, race, recorded, workers, write_corpus, write_queries
from helpers import cli

HERE = Path(__file__).resolve().parent


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


# ---------------------------------------------------------------- crafted files
def _recorded_file(capsys, folder: Path, name: str = ".ragcov") -> Path:
    corpus = write_corpus(folder)
    write_queries(folder / "q.jsonl", ["q0", "q1", "q2"])
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(folder / "q.jsonl"),
                       *RUN, "--data-file", str(folder / name))
    assert code == 0, err
    return folder / name


CRAFTED = {
    "chunk 99999": "UPDATE hits SET chunk_idx = 99999 WHERE query_idx = 1 AND rank = 2",
    "chunk -1": "UPDATE hits SET chunk_idx = -1 WHERE query_idx = 0 AND rank = 1",
    "text score": "UPDATE hits SET score = 'high' WHERE query_idx = 2 AND rank = 1",
    "blob query id": "UPDATE queries SET id = X'00ff' WHERE idx = 1",
    "unknown query": "UPDATE hits SET query_idx = 42 WHERE query_idx = 2 AND rank = 3",
    # a hit ranked below k was never in the top k: counting it raises the total
    "rank past k": "UPDATE hits SET rank = 99 WHERE query_idx = 0 AND rank = 1",
    # with no hit to be ranked past it, k = 0 or -3 used to be reported as "k=0" everywhere
    "k below 1": "UPDATE meta SET value = '-3' WHERE key = 'k'; DELETE FROM hits",
    "k zero": "UPDATE meta SET value = '0' WHERE key = 'k'; DELETE FROM hits",
    # int() raised a ValueError traceback on these, or read ' 3' and '３' as format 3
    **{f"format {raw!r}": f"UPDATE meta SET value = '{raw}' WHERE key = 'format'"
       for raw in ("3abc", "", "3.0", "1e1", " 3", "\uff13")},
    "k 5.0": "UPDATE meta SET value = '5.0' WHERE key = 'k'",
    # valid JSON, not an object: an AttributeError traceback in every reader
    "retriever []": "UPDATE meta SET value = '[]' WHERE key = 'retriever'",
    "retriever null": "UPDATE meta SET value = 'null' WHERE key = 'retriever'",
}


@pytest.mark.parametrize("change", list(CRAFTED), ids=list(CRAFTED))
def test_crafted_rows_are_one_line_errors_in_every_reader(capsys, tmp_path: Path, change: str) -> None:
    good = _recorded_file(capsys, tmp_path, "good.ragcov")
    bad = _recorded_file(capsys, tmp_path, "bad.ragcov")
    con = sqlite3.connect(bad)
    con.executescript(CRAFTED[change])
    con.commit()
    con.close()
    for args in (["report", "--data-file", str(bad)], ["json", "--data-file", str(bad), "-o", "-"],
                 ["combine", str(good), str(bad), "-o", str(tmp_path / "all.ragcov")],
                 # diff reads no score: a text score does not change what it compares
                 *([["diff", str(good), str(bad)]] if "score" not in change else [])):
        code, _, err = cli(capsys, *args)
        assert code == 1, (args, err)
        assert err.startswith("ragcov: error: ") and err.count("\n") == 1, (args, err)
        assert "Traceback" not in err
    assert "damaged data file" in err or "bad.ragcov" in err
    assert not (tmp_path / "all.ragcov").exists()  # nothing out of range copied into a combined file


CRAFTED_PROBES = {
    "text chunk in a probe hit": ("UPDATE probe_hits SET chunk_idx = 'x' WHERE probe_idx = 0 "
                                  "AND rank = 2", "the probe hit at probe row 0, rank 2 has a "
                                  "non-integer probe, chunk or rank"),
    "text rank": ("UPDATE probe_hits SET rank = 'a' WHERE probe_idx = 0 AND rank = 1",
                  "the probe hit at probe row 0, rank 'a' has a non-integer probe, chunk or rank"),
    "rank 0": ("UPDATE probe_hits SET rank = 0 WHERE probe_idx = 1 AND rank = 1",
               "the probe hit at probe row 1, rank 0 has a rank below 1"),
    "text probe chunk": ("UPDATE probes SET chunk_idx = 'y' WHERE idx = 0",
                         "probes row 0 has chunk_idx is text"),
    "blob kind": ("UPDATE probes SET kind = X'00' WHERE idx = 1", "probes row 1 has kind is blob"),
    "text score": ("UPDATE probe_hits SET score = 'high' WHERE probe_idx = 0 AND rank = 1",
                   "the probe hit at probe row 0, rank 1 has a score that is text, not a number"),
}


@pytest.mark.parametrize("change", list(CRAFTED_PROBES), ids=list(CRAFTED_PROBES))
def test_crafted_probe_rows_are_one_line_errors(capsys, tmp_path: Path, change: str) -> None:
    bad = _recorded_file(capsys, tmp_path, "bad.ragcov")
    code, _, err = cli(capsys, "probe", "--corpus", str(tmp_path / "corpus.jsonl"), "-q",
                       "--retriever", "datafile_race:FixedRetriever", "--data-file", str(bad))
    assert code == 0, err
    sql, problem = CRAFTED_PROBES[change]
    con = sqlite3.connect(bad)
    assert con.execute(sql).rowcount == 1
    con.commit()
    con.close()
    line = (f"ragcov: error: {bad}: damaged probe tables: {problem}; run `ragcov probe` again "
            "on a new recording\n")
    readers = [["combine", str(bad), "-o", str(tmp_path / "all.ragcov")]]
    if change != "text score":  # reports read no probe score; combine would copy it on
        readers += [["report", "--data-file", str(bad)], ["json", "--data-file", str(bad), "-o", "-"],
                    ["html", "--data-file", str(bad), "-d", str(tmp_path / "html")]]
    for args in readers:
        code, _, err = cli(capsys, *args)
        assert (code, err) == (1, line), args
    assert not (tmp_path / "all.ragcov").exists()


def test_combine_copies_no_probe_hit_of_an_unknown_chunk(capsys, tmp_path: Path) -> None:
    bad = _recorded_file(capsys, tmp_path, "bad.ragcov")
    code, _, err = cli(capsys, "probe", "--corpus", str(tmp_path / "corpus.jsonl"), "-q",
                       "--retriever", "datafile_race:FixedRetriever", "--data-file", str(bad))
    assert code == 0, err
    con = sqlite3.connect(bad)
    con.execute("UPDATE probe_hits SET chunk_idx = 99999 WHERE probe_idx = 0 AND rank = 2")
    con.commit()
    con.close()
    code, _, err = cli(capsys, "combine", str(bad), "-o", str(tmp_path / "all.ragcov"))
    assert (code, err) == (1, f"ragcov: error: {bad}: damaged probe tables: the probe hit at probe "
                           "row 0, rank 2 names chunk row 99999, which the file does not hold; "
                           "run `ragcov probe` again on a new recording\n")
    assert not (tmp_path / "all.ragcov").exists()


def test_combine_names_the_out_of_range_hit(capsys, tmp_path: Path) -> None:
    good = _recorded_file(capsys, tmp_path, "good.ragcov")
    bad = _recorded_file(capsys, tmp_path, "bad.ragcov")
    con = sqlite3.connect(bad)
    con.execute(CRAFTED["chunk 99999"])
    con.commit()
    con.close()
    code, _, err = cli(capsys, "combine", str(good), str(bad), "-o", str(tmp_path / "all.ragcov"))
    assert code == 1
    assert err.strip() == (f"ragcov: error: {bad}: damaged data file: the hit at query row 1, rank 2 "
                           "names chunk row 99999, which the file does not hold; rerun to record it "
                           "again")


# ---------------------------------------------------------------- a locked file
HOLD = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(60)
"""


def test_a_locked_data_file_is_reported_as_locked_by_its_holder(capsys, tmp_path: Path,
                                                                  monkeypatch) -> None:
    import ragcov.data.schema

    data = _recorded_file(capsys, tmp_path)
    before = data.read_bytes()
    monkeypatch.setattr(ragcov.data.schema, "BUSY_TIMEOUT_S", 0.3)  # instead of 60 s
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(data)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        name = Path(f"/proc/{holder.pid}/comm").read_text().strip()
        run = ["run", "--corpus", str(tmp_path / "corpus.jsonl"), "--queries",
               str(tmp_path / "q.jsonl"), *RUN, "--data-file", str(data)]
        for args in (run, [*run, "--append"], ["report", "--data-file", str(data)]):
            code, _, err = cli(capsys, *args)
            assert code == 1, (args, err)
            assert err == (f"ragcov: error: {data}: locked by process {holder.pid} ({name}) for "
                           "over 0.3 s (the file is intact); retry when it has finished\n"), args
    finally:
        holder.kill()
        holder.wait()
    assert data.read_bytes() == before


# ---------------------------------------------------------------- an empty file, a report beside it
def _run_args(folder: Path, *more: str) -> list[str]:
    return ["run", "--corpus", str(folder / "corpus.jsonl"), "--queries", str(folder / "q.jsonl"),
            *RUN, *more]


def test_an_empty_data_file_is_no_data(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path)
    write_queries(tmp_path / "q.jsonl", ["q0", "q1", "q2"])
    data = tmp_path / ".ragcov"
    data.touch()
    for reader in (["report"], ["select", "--budget", "2"], ["json", "-o", "-"]):  # one wording
        code, _, err = cli(capsys, *reader)
        assert (code, err) == (1, "ragcov: error: .ragcov: an empty file, no data recorded yet "
                                  "(run 'ragcov run' first)\n"), reader
    for args in (_run_args(tmp_path, "--append"), _run_args(tmp_path)):
        data.write_bytes(b"")
        code, _, err = cli(capsys, *args)
        assert code == 0, (args, err)
        assert recorded(data) == {"q0", "q1", "q2"}
    code, _, err = cli(capsys, *_run_args(tmp_path, "--parallel-mode"))
    assert code == 0, err
    data.write_bytes(b"")
    code, _, err = cli(capsys, "combine", "--append")
    assert code == 0, err
    assert recorded(data) == {"q0", "q1", "q2"}
    data.write_bytes(b"")
    code, _, err = cli(capsys, "erase")
    assert (code, err) == (0, "")
    assert not data.exists()


def test_a_report_beside_the_data_file_blocks_nothing(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path)
    write_queries(tmp_path / "q.jsonl", ["q0", "q1", "q2"])
    code, _, err = cli(capsys, *_run_args(tmp_path))
    assert code == 0, err
    code, _, err = cli(capsys, "json", "-o", ".ragcov.json")
    assert code == 0, err
    report = (tmp_path / ".ragcov.json").read_bytes()
    code, _, err = cli(capsys, *_run_args(tmp_path, "--parallel-mode"))
    assert code == 0, err
    code, _, err = cli(capsys, "combine")
    assert code == 0, err
    assert recorded(tmp_path / ".ragcov") == {"q0", "q1", "q2"}
    code, _, err = cli(capsys, *_run_args(tmp_path, "--append"))
    assert code == 0, err
    code, out, err = cli(capsys, "erase")
    assert code == 0
    assert err == "ragcov: warning: not erasing .ragcov.json: not a ragcov data file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ragcov.json", "corpus.jsonl", "q.jsonl"]
    assert (tmp_path / ".ragcov.json").read_bytes() == report


# ---------------------------------------------------------------- a killed combine, rerun
def _fault_child(kill_at: int, args: list[str], cwd: Path, count_file: Path | None = None
                 ) -> subprocess.CompletedProcess:
    """``ragcov ARGS`` in a child that SIGKILLs itself at its N-th write point (tests/fault_child.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    if count_file is not None:
        env["RAGCOV_FAULT_COUNT"] = str(count_file)
    return subprocess.run([sys.executable, str(HERE / "fault_child.py"), str(kill_at), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_combine_killed_between_deleting_its_shards_is_finished_by_a_rerun(
        capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path)
    for name in ("a", "b"):
        write_queries(tmp_path / f"{name}.jsonl", [f"{name}0", f"{name}1"])
        code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", f"{name}.jsonl",
                           *RUN, "--parallel-mode")
        assert code == 0, err
    saved = tmp_path / "saved"
    saved.mkdir()
    shards = sorted(tmp_path.glob(".ragcov.*"))
    for shard in shards:
        shutil.copy2(shard, saved / shard.name)
    counted = _fault_child(0, ["combine"], tmp_path, tmp_path / "points")
    assert counted.returncode == 0, counted.stderr
    total = int((tmp_path / "points").read_text())
    # The last write points are the two deletions: kill at each until one shard is left.
    for kill_at in range(total, total - 5, -1):
        (tmp_path / ".ragcov").unlink(missing_ok=True)
        for shard in shards:
            shutil.copy2(saved / shard.name, shard)
        killed = _fault_child(kill_at, ["combine"], tmp_path)
        assert killed.returncode == -9
        if sum(s.exists() for s in shards) == 1:
            break
    else:
        pytest.fail("no kill point left exactly one of the two shards")
    assert recorded(tmp_path / ".ragcov") == {"a0", "a1", "b0", "b1"}
    code, _, err = cli(capsys, "combine")
    assert code == 0, err
    assert recorded(tmp_path / ".ragcov") == {"a0", "a1", "b0", "b1"}
    assert not any(s.exists() for s in shards)


# ---------------------------------------------------------------- document ids in the corpus hash
def _moved_corpus(folder: Path) -> Path:
    """The race corpus with one chunk moved to another document, nothing else changed."""
    moved = folder / "moved.jsonl"
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    rows[0]["doc_id"] = "elsewhere"
    moved.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return moved


def test_the_corpus_hash_covers_document_ids(tmp_path: Path) -> None:
    from ragcov.corpus import load_corpus

    write_corpus(tmp_path)
    assert load_corpus(tmp_path / "corpus.jsonl").hash != load_corpus(_moved_corpus(tmp_path)).hash


def test_append_combine_and_diff_see_a_change_of_document_ids(capsys, tmp_path: Path) -> None:
    base = _recorded_file(capsys, tmp_path, "base.ragcov")
    moved = _moved_corpus(tmp_path)
    head = tmp_path / "head.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(moved), "--queries", str(tmp_path / "q.jsonl"),
                       *RUN, "--data-file", str(head))
    assert code == 0, err
    before = base.read_bytes()
    code, _, err = cli(capsys, "run", "--corpus", str(moved), "--queries", str(tmp_path / "q.jsonl"),
                       *RUN, "--data-file", str(base), "--append")
    assert code == 1 and err.count("\n") == 1
    assert ("only document ids changed (chunk 'c0': document 'd0' recorded, 'elsewhere' now); "
            "per-document reports would mix the two mappings, so record again without --append") in err
    assert base.read_bytes() == before
    code, _, err = cli(capsys, "combine", str(base), str(head), "-o", str(tmp_path / "all.ragcov"))
    assert code == 1 and (f"only document ids changed (chunk 'c0': document 'd0' in {base}, "
                          f"'elsewhere' in {head})") in err
    code, out, err = cli(capsys, "diff", str(base), str(head), "--format", "json")
    assert code == 0, err
    assert "elsewhere" in out  # the head's documents are the head's own mapping


def _as_format_1(path: Path) -> None:
    """Rewrite a file's meta as ragcov wrote format 1: a corpus hash of ids and contents only."""
    import hashlib

    con = sqlite3.connect(path)
    h = hashlib.sha256()
    for cid, content in con.execute("SELECT id, hash FROM chunks ORDER BY idx"):
        h.update(cid.encode("utf-8") + b"\0" + content.encode("ascii") + b"\n")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    con.execute("UPDATE meta SET value = ? WHERE key = 'corpus_hash'", (h.hexdigest()[:24],))
    con.commit()
    con.close()


def test_a_format_1_file_is_read_combined_and_appended_to(capsys, tmp_path: Path) -> None:
    old = _recorded_file(capsys, tmp_path, "old.ragcov")
    new = _recorded_file(capsys, tmp_path, "new.ragcov")
    _as_format_1(old)
    for args in (["report", "--data-file", str(old)], ["json", "--data-file", str(old), "-o", "-"],
                 ["diff", str(old), str(new)],
                 ["combine", str(old), str(new), "-o", str(tmp_path / "all.ragcov")]):
        code, _, err = cli(capsys, *args)
        assert code == 0, (args, err)
    write_queries(tmp_path / "more.jsonl", ["m0"])
    code, _, err = cli(capsys, "run", "--corpus", str(tmp_path / "corpus.jsonl"), "--queries",
                       str(tmp_path / "more.jsonl"), *RUN, "--data-file", str(old), "--append")
    assert code == 0, err
    assert recorded(old) == {"q0", "q1", "q2", "m0"}
    code, _, err = cli(capsys, "run", "--corpus", str(_moved_corpus(tmp_path)), "--queries",
                       str(tmp_path / "more.jsonl"), *RUN, "--data-file", str(old), "--append")
    assert code == 1 and "only document ids changed (chunk 'c0'" in err


def _as_format_2(path: Path) -> None:
    """Rebuild a file's hit tables as ragcov wrote format 2: rowid tables, whose key is a
    second b-tree holding a copy of every hit."""
    con = sqlite3.connect(path)
    for table, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                                  "('hits', 'probe_hits')").fetchall():
        assert sql.endswith(") WITHOUT ROWID")
        con.execute(f"ALTER TABLE {table} RENAME TO old_table")
        con.execute(sql.removesuffix(" WITHOUT ROWID"))
        con.execute(f"INSERT INTO {table} SELECT * FROM old_table")
        con.execute("DROP TABLE old_table")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'format'")
    con.commit()
    con.close()


def _layout(path: Path) -> dict[str, object]:
    """The file's format, and which hit tables have no rowid."""
    con = sqlite3.connect(path)
    tables = {name: sql.endswith("WITHOUT ROWID") for name, sql in con.execute(
        "SELECT name, sql FROM sqlite_master WHERE name IN ('hits', 'probe_hits')")}
    fmt = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]
    con.close()
    return {"format": int(fmt), **tables}


def test_a_format_2_file_is_read_gapped_combined_and_appended_to(capsys, tmp_path: Path,
                                                               monkeypatch) -> None:
    from ragcov.compare import gap as gap_module
    from ragcov.compare.gap import traffic_gap
    from ragcov.compare.jsondoc import gap_document

    new = _recorded_file(capsys, tmp_path, "new.ragcov")
    code, _, err = cli(capsys, "probe", "--corpus", str(tmp_path / "corpus.jsonl"), "-q",
                       "--retriever", "datafile_race:FixedRetriever", "--data-file", str(new))
    assert code == 0, err
    old = tmp_path / "old.ragcov"
    shutil.copy(new, old)
    _as_format_2(old)
    assert _layout(new) == {"format": 3, "hits": True, "probe_hits": True}
    assert _layout(old) == {"format": 2, "hits": False, "probe_hits": False}
    # Every reader gives the same answer from either layout.
    for args in (["report", "--show-missing"], ["json", "-o", "-"], ["xml", "-o", "-"],
                 ["lcov", "-o", "-"], ["report", "--format", "markdown"]):
        outs = [cli(capsys, *args, "--data-file", str(path)) for path in (old, new)]
        assert [o[0] for o in outs] == [0, 0], (args, outs)
        if args[0] == "json":
            outs = [{k: v for k, v in json.loads(o[1]).items() if k != "meta"} for o in outs]
        elif args[0] == "xml":
            outs = [o[1].split("timestamp=")[0] for o in outs]
        assert outs[0] == outs[1], args
    assert "unreachable_chunks" in json.loads(cli(capsys, "json", "-o", "-", "--data-file",
                                                  str(old))[1])["totals"]
    # The gap counted by ranges of queries (as on a cluster) matches the one read whole.
    monkeypatch.setattr(gap_module, "ROWS_PER_TASK", 4)
    def counted(doc: dict) -> dict:
        return {**doc, "traffic": {k: v for k, v in doc["traffic"].items() if k != "data_file"}}

    here = counted(gap_document(traffic_gap(new, new, top=None)))
    assert here["tested_hits"] == here["traffic"]["hits"] == 9
    for traffic in (old, new):
        tasks: list[tuple] = []

        def serial(fn, args, tasks=tasks):
            tasks.extend(args)
            return [fn(*a) for a in args]

        assert counted(gap_document(traffic_gap(new, traffic, top=None, map_rows=serial))) == here
        assert len(tasks) == 3  # 3 queries, one a task (4 hits a task at k = 3)
    code, _, err = cli(capsys, "combine", str(old), str(new), "-o", str(tmp_path / "all.ragcov"))
    assert code == 0, err
    assert _layout(tmp_path / "all.ragcov") == {"format": 3, "hits": True, "probe_hits": True}
    write_queries(tmp_path / "more.jsonl", ["m0"])
    code, _, err = cli(capsys, "run", "--corpus", str(tmp_path / "corpus.jsonl"), "--queries",
                       str(tmp_path / "more.jsonl"), *RUN, "--data-file", str(old), "--append")
    assert code == 0, err
    assert recorded(old) == {"q0", "q1", "q2", "m0"}
    assert _layout(old) == {"format": 2, "hits": False, "probe_hits": False}


# ---------------------------------------------------------------- a damaged page
def test_a_damaged_page_is_one_line(capsys, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    queries = write_queries(tmp_path / "q.jsonl", [f"q{i}" for i in range(400)])
    data = tmp_path / ".ragcov"
    args = ["run", "--corpus", str(corpus), "--queries", str(queries), *RUN, "--data-file", str(data)]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    page = sqlite3.connect(data).execute("PRAGMA page_size").fetchone()[0]
    damaged = bytearray(data.read_bytes())
    assert len(damaged) > 15 * page
    for n in (5, 9, 14):  # cell pointers of three b-tree pages overwritten
        damaged[page * n + 8:page * n + 40] = b"\x7f" * 32
    data.write_bytes(bytes(damaged))
    code, _, err = cli(capsys, *args, "--append")
    assert code == 1
    assert err.startswith(f"ragcov: error: {data}: database disk image is damaged (On tree page ")
    assert err.endswith(" more); rerun without --append to record it again\n") and err.count("\n") == 1
