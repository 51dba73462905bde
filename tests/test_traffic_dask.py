"""Production traffic on a real Dask LocalCluster (two worker processes): ``ragcov import
--engine dask`` of a folder of shards writes the data file a single-process import
writes, and ``ragcov gap --engine dask`` gives the local gap."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")

sys.path.insert(0, str(Path(__file__).resolve().parent / "traces"))
from trace_samples import CITIES, traffic_lines, write  # noqa: E402

from helpers import cli  # noqa: E402
from ragcov.api import record_traces, traffic_gap  # noqa: E402
from ragcov.compare import gap as gap_module  # noqa: E402
from ragcov.compare.jsondoc import gap_document  # noqa: E402
from ragcov.errors import InputFormatError  # noqa: E402
from ragcov.traces import parallel  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:openinference trace results carry no corpus")

@pytest.fixture(scope="module")
def scheduler(cluster_address: str) -> str:
    return cluster_address


def rows(path: Path) -> list[tuple]:
    """Every query and hit of a data file, by plain SQL, in recording order."""
    con = sqlite3.connect(path)
    queries = con.execute("SELECT idx, id, text FROM queries ORDER BY idx").fetchall()
    hits = con.execute("SELECT q.id, c.id, h.rank, h.score FROM hits h JOIN queries q ON "
                       "q.idx = h.query_idx JOIN chunks c ON c.idx = h.chunk_idx "
                       "ORDER BY h.query_idx, h.rank").fetchall()
    k = con.execute("SELECT value FROM meta WHERE key = 'k'").fetchone()
    con.close()
    return [queries, hits, k]


def span_shards(tmp_path: Path, n: int = 8) -> tuple[Path, Path]:
    """``n`` OpenInference shards (spans copied across shards, nesting across them) and the
    same lines in one file, in the shards' name order."""
    lines = traffic_lines(300, seed=3)
    folder = tmp_path / "shards"
    folder.mkdir()
    for s in range(n):
        write(folder / f"spans-{s:02d}.jsonl", "\n".join(lines[s::n]) + "\n")
    whole = write(tmp_path / "whole.jsonl", "".join(
        (folder / f"spans-{s:02d}.jsonl").read_text() for s in range(n)))
    return folder, whole


def test_dask_import_of_8_shards_is_the_single_process_import(tmp_path, city_corpus,
                                                              scheduler, monkeypatch):
    folder, whole = span_shards(tmp_path)
    one = record_traces(whole, "openinference", city_corpus, tmp_path / "one.ragcov",
                        workers=1)
    dask = record_traces(folder, "auto", city_corpus, tmp_path / "dask.ragcov",
                         engine="dask", scheduler=scheduler)
    assert rows(tmp_path / "dask.ragcov") == rows(tmp_path / "one.ragcov")
    assert dask.result.duplicate_spans == one.result.duplicate_spans > 0
    assert dask.result.merged_spans == one.result.merged_spans > 0
    assert dask.added == one.added == one.result.traces
    # One large JSON-lines file on Dask: cut between lines, the parts read on the workers.
    monkeypatch.setattr(parallel, "PART_BYTES", 8192)
    assert len(parallel.file_parts(str(whole))) > 8
    record_traces(whole, "openinference", city_corpus, tmp_path / "parts.ragcov",
                  engine="dask", scheduler=scheduler)
    assert rows(tmp_path / "parts.ragcov") == rows(tmp_path / "one.ragcov")


def test_the_cli_starts_its_own_two_worker_cluster(capsys, tmp_path, city_corpus_file,
                                                   city_corpus):
    folder, whole = span_shards(tmp_path)
    record_traces(whole, "openinference", city_corpus, tmp_path / "one.ragcov", workers=1)
    code, out, err = cli(capsys, "import", f"{folder}/spans-*.jsonl", "--corpus",
                         str(city_corpus_file), "--data-file", str(tmp_path / "dask.ragcov"),
                         "--engine", "dask", "--workers", "2")
    assert code == 0, err
    assert "ragcov: detected format: openinference" in err
    assert rows(tmp_path / "dask.ragcov") == rows(tmp_path / "one.ragcov")


def phoenix_shard(path: Path, first: int, n: int) -> None:
    """Rows ``first`` to ``first + n - 1``; row i is the same in every shard holding it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for i in range(first, first + n):
        rng = random.Random(i)
        docs = [{"document.id": c, "document.score": round(rng.random(), 3)}
                for c in rng.sample(CITIES, 3)]
        out.append({"context.span_id": f"s{i}", "context.trace_id": f"t{i // 2}",
                    "parent_id": None, "name": "retrieve", "span_kind": "RETRIEVER",
                    "start_time": datetime(2026, 1, 1, tzinfo=timezone.utc).replace(
                        second=rng.randrange(60)),
                    "attributes.input.value": f"question {i}",
                    "attributes.retrieval.documents": docs})
    pq.write_table(pa.Table.from_pylist(out), path)


def test_phoenix_and_trec_shards_on_dask(tmp_path, city_corpus, scheduler):
    pytest.importorskip("pyarrow")
    px = tmp_path / "phoenix"
    px.mkdir()
    for s in range(4):
        phoenix_shard(px / f"spans-{s}.parquet", 30 * s, 40)  # rows overlap: copies
    local = record_traces(px, "auto", city_corpus, tmp_path / "px-local.ragcov")
    dask = record_traces(px, "auto", city_corpus, tmp_path / "px-dask.ragcov", engine="dask",
                         scheduler=scheduler)
    assert local.result.format == "phoenix" and local.result.duplicate_spans == 30
    assert rows(tmp_path / "px-dask.ragcov") == rows(tmp_path / "px-local.ragcov")
    assert dask.result.duplicate_spans == 30

    trec = tmp_path / "trec"
    trec.mkdir()
    lines = [f"q{q} Q0 {c} {r + 1} {1 - r / 10:.2f} run" for q in range(64)
             for r, c in enumerate(random.Random(q).sample(CITIES, 4))]
    for s in range(8):  # eight queries a shard
        write(trec / f"run-{s}.trec", "\n".join(lines[s * 32:(s + 1) * 32]) + "\n")
    whole = write(tmp_path / "run.trec", "\n".join(lines) + "\n")
    record_traces(whole, "trec", city_corpus, tmp_path / "trec-one.ragcov")
    record_traces(trec, "trec", city_corpus, tmp_path / "trec-dask.ragcov", engine="dask",
                  scheduler=scheduler)
    assert rows(tmp_path / "trec-dask.ragcov") == rows(tmp_path / "trec-one.ragcov")
    # A query's lines in two shards is refused, naming both, not read as two queries.
    write(trec / "run-8.trec", "q3 Q0 tokyo 9 0.01 run\n")
    with pytest.raises(InputFormatError, match=r"run-8\.trec:1: query id 'q3' already "
                                               r"appeared in .*run-0\.trec"):
        record_traces(trec, "trec", city_corpus, tmp_path / "trec-dask.ragcov", engine="dask",
                      scheduler=scheduler)


def test_a_malformed_line_in_one_shard_is_reported_with_its_file_and_line(tmp_path,
                                                                         city_corpus,
                                                                         scheduler):
    folder, _whole = span_shards(tmp_path)
    bad = folder / "spans-05.jsonl"
    lines = bad.read_text().splitlines()
    export = json.loads(lines[3])
    export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = ["not", "an id"]
    lines[3] = json.dumps(export)
    write(bad, "\n".join(lines) + "\n")
    with pytest.raises(InputFormatError) as info:
        record_traces(folder, "openinference", city_corpus, tmp_path / "dask.ragcov",
                      engine="dask", scheduler=scheduler)
    assert info.value.path == str(bad) and info.value.line == 4
    assert str(info.value).startswith(f"{bad}:4: traceId: ")
    assert not (tmp_path / "dask.ragcov").exists()


def test_dask_gap_is_the_local_gap(capsys, tmp_path, city_corpus, scheduler, monkeypatch):
    folder, whole = span_shards(tmp_path)
    traffic = tmp_path / "traffic.ragcov"
    record_traces(whole, "openinference", city_corpus, traffic)
    tests = tmp_path / "tests.ragcov"
    trec = write(tmp_path / "tests.trec", "t1 Q0 paris 1 0.9 run\nt2 Q0 tokyo 1 0.8 run\n"
                 "t2 Q0 berlin 2 0.7 run\n")
    record_traces(trec, "trec", city_corpus, tests, k=3)
    # Ranges of 50 hits: the traffic's hits are counted by many tasks, on both workers.
    monkeypatch.setattr(gap_module, "ROWS_PER_TASK", 50)
    local = gap_document(traffic_gap(tests, traffic, top=None, allow_different_k=True))
    dask = gap_document(traffic_gap(tests, traffic, top=None, allow_different_k=True,
                                    engine="dask", scheduler=scheduler))
    assert dask == local
    # Something to find on both sides: tested and untested traffic, with examples.
    assert 0 < local["tested_hits"] < local["traffic"]["hits"] == len(rows(traffic)[1])
    assert local["untested"] and local["untested"][0]["example_queries"]
    code, out, err = cli(capsys, "gap", "--tests", str(tests), "--traffic", str(traffic),
                         "--format", "json", "--allow-different-k", "--engine", "dask",
                         "--scheduler", scheduler)
    assert code == 0, err
    assert json.loads(out) == local


def test_every_worker_lost_mid_import_changes_no_row(tmp_path, city_corpus, monkeypatch):
    """Every worker killed (SIGKILL) once the first shard is back: the data file is still
    the single-process import's. (Here Dask itself recomputes the shards lost in flight,
    so this holds the outcome, not the resend of ``distributed.in_order_again``, which
    the run, probe, drift and topics tests drive through ``_completed``'s twin loop.)"""
    from helpers import cluster_losing_workers, kill_after_first_result
    from ragcov import distributed_traffic

    folder, whole = span_shards(tmp_path)
    record_traces(whole, "openinference", city_corpus, tmp_path / "one.ragcov", workers=1)
    with cluster_losing_workers("every worker") as (address, kill_now, killed):
        kill_after_first_result(monkeypatch, distributed_traffic, "in_order_again", kill_now)
        record_traces(folder, "auto", city_corpus, tmp_path / "lost.ragcov", engine="dask",
                      scheduler=address)
    assert killed
    assert rows(tmp_path / "lost.ragcov") == rows(tmp_path / "one.ragcov")
