"""Benchmark: ``ragcov import`` of OpenInference spans (time, peak memory).

Input: an OTLP JSON file as a collector's file exporter writes it (one export of
100 spans per line) of N RETRIEVER spans, each with its query and 5 documents
(id, score, a short content), over a corpus of 10,000 chunks; every 4th trace
also has an LLM span, which the importer reads and skips. The command runs in a
subprocess as a user runs it (``ragcov import FILE --format openinference``, the
data file written), so interpreter start-up, the corpus load and the write
count. Commands on the same file, in one run:

* the one-process import (``--workers 1``), which reads the export as Arrow
  columns (``ragcov.traces.columnar``);
* the same with the general reader (``importer.COLUMNAR = False``: the path every
  import took before), the baseline of the ratios, and whose data file must
  equal the columnar one;
* the import as it runs by default (a worker process per core for a large file,
  when the columnar reader hands it back);
* ``--engine dask`` on a 2-worker LocalCluster over the same spans cut into 8
  shards (a folder), whose data file must equal the one-process one;
* the same spans as a Phoenix spans parquet file (one row per span, the documents
  a list column), imported with ``--format phoenix`` by the columnar reader and by
  the general reader; its own baseline is ``pyarrow.parquet.read_table`` of the file.

Peak memory is sampled every 20 ms over the command's whole process tree (the
command, its workers, the Dask scheduler and nannies), resident sizes summed
(pages shared after fork count once per process: an upper bound); the largest
single process is printed too. Baselines of the parser alone: ``json.loads`` and
``orjson.loads`` of every line, nothing else.
Aims: at least 50,000 spans/s and peak under 1.5 GiB at 1M retrievals (issues 23
and 46); a Phoenix parquet file at 200,000 spans/s (issue 46).

Run alone: ``.venv/bin/python benchmarks/bench_import.py [--quick|--tiny] [--no-dask]``
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 5_000, "quick": 100_000, "full": 1_000_000}
N_CHUNKS = 10_000
K = 5
PER_LINE = 100
AIM_RATE = 50_000
AIM_PHOENIX = 200_000
GENERAL = ("import sys; import ragcov.traces.importer as m; m.COLUMNAR = False; "
           "from ragcov.cli import main; sys.exit(main())")
AIM_MIB = 1536
SHARDS = 8


def _attr(key: str, value: object) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _spans(n: int, seed: int = 0):
    """N RETRIEVER spans (and an LLM span every 4th trace), popularity-skewed ids."""
    rng = random.Random(seed)
    base = 1_700_000_000_000_000_000
    for i in range(n):
        trace = f"{i:032x}"
        attrs = [_attr("openinference.span.kind", "RETRIEVER"),
                 _attr("input.value", f"question number {i} about topic {i % 997}")]
        ids = set()
        while len(ids) < K:
            ids.add(int(rng.random() ** 3 * N_CHUNKS))
        for r, c in enumerate(sorted(ids)):
            attrs += [_attr(f"retrieval.documents.{r}.document.id", f"c{c}"),
                      _attr(f"retrieval.documents.{r}.document.score", round(1 - r / 10, 3)),
                      _attr(f"retrieval.documents.{r}.document.content",
                            f"Chunk {c} of the corpus, some text a reader would see.")]
        yield {"traceId": trace, "spanId": f"{2 * i:016x}", "name": "retrieve",
               "startTimeUnixNano": str(base + 10 * i), "attributes": attrs}
        if i % 4 == 0:
            yield {"traceId": trace, "spanId": f"{2 * i + 1:016x}", "parentSpanId": "",
                   "name": "llm", "startTimeUnixNano": str(base + 10 * i + 5),
                   "attributes": [_attr("openinference.span.kind", "LLM"),
                                  _attr("input.value", "Answer from the context.")]}


def write_inputs(tmp: Path, n: int) -> tuple[Path, Path, int]:
    corpus = tmp / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for c in range(N_CHUNKS):
            f.write(json.dumps({"id": f"c{c}", "doc_id": f"d{c // 10}",
                                "text": f"Chunk {c} of the corpus, some text a reader would see."})
                    + "\n")
    spans = tmp / "spans.jsonl"
    count = 0
    with spans.open("w", encoding="utf-8") as f:
        batch: list[dict] = []
        for s in _spans(n):
            batch.append(s)
            count += 1
            if len(batch) == PER_LINE:
                f.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + "\n")
                batch = []
        if batch:
            f.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + "\n")
    return corpus, spans, count


def baseline(spans: Path) -> float:
    t = time.perf_counter()
    with spans.open(encoding="utf-8") as f:
        for line in f:
            json.loads(line)
    return time.perf_counter() - t


def baseline_orjson(spans: Path) -> float:
    import orjson

    t = time.perf_counter()
    with spans.open("rb") as f:
        for line in f:
            orjson.loads(line)
    return time.perf_counter() - t


def write_phoenix(spans: Path, out: Path) -> None:
    """The spans as Phoenix's spans dataframe saves them: a row per span, the documents
    one list column (``attributes.retrieval.documents``), written a batch at a time."""
    from datetime import datetime, timezone

    import pyarrow as pa
    import pyarrow.parquet as pq

    doc = pa.struct([("document.id", pa.string()), ("document.score", pa.float64()),
                     ("document.content", pa.string())])
    schema = pa.schema([("context.span_id", pa.string()), ("context.trace_id", pa.string()),
                        ("parent_id", pa.string()), ("name", pa.string()),
                        ("span_kind", pa.string()), ("start_time", pa.timestamp("ns", tz="UTC")),
                        ("attributes.input.value", pa.string()),
                        ("attributes.retrieval.documents", pa.list_(doc))])
    with pq.ParquetWriter(out, schema) as writer:
        rows: list[dict] = []
        with spans.open(encoding="utf-8") as f:
            for line in f:
                for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]:
                    a = {x["key"]: next(iter(x["value"].values())) for x in s["attributes"]}
                    docs = [{"document.id": a[f"retrieval.documents.{r}.document.id"],
                             "document.score": a[f"retrieval.documents.{r}.document.score"],
                             "document.content": a[f"retrieval.documents.{r}.document.content"]}
                            for r in range(K) if f"retrieval.documents.{r}.document.id" in a]
                    rows.append({"context.span_id": s["spanId"], "context.trace_id": s["traceId"],
                                 "parent_id": s.get("parentSpanId") or None, "name": s["name"],
                                 "span_kind": a["openinference.span.kind"],
                                 "start_time": datetime.fromtimestamp(
                                     int(s["startTimeUnixNano"]) // 1000 / 1e6, tz=timezone.utc),
                                 "attributes.input.value": a.get("input.value"),
                                 "attributes.retrieval.documents": docs or None})
                if len(rows) >= 100_000:
                    writer.write_table(pa.Table.from_pylist(rows, schema))
                    rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema))


def baseline_parquet(path: Path) -> float:
    import pyarrow.parquet as pq

    t = time.perf_counter()
    pq.read_table(path)
    return time.perf_counter() - t


def measured(cmd: list[str]) -> tuple[float, float, float, float]:
    """Wall seconds, peak MiB of the process tree (summed) and of its largest process, and
    the CPU seconds of the processes it waited for (user + system)."""
    import resource

    import psutil

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    before = cpu()
    t = time.perf_counter()
    proc = psutil.Popen(cmd, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    tree_peak = one_peak = 0
    while proc.poll() is None:
        try:
            rss = [p.memory_info().rss for p in [proc, *proc.children(recursive=True)]]
        except psutil.Error:
            rss = []
        tree_peak, one_peak = max(tree_peak, sum(rss)), max([one_peak, *rss])
        time.sleep(0.02)
    secs = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return secs, tree_peak / 2**20, one_peak / 2**20, cpu() - before


def shard(spans: Path, folder: Path, n: int) -> None:
    """The file cut into ``n`` shards of consecutive lines, as a collector rotates its
    files: read in name order they are the file again."""
    folder.mkdir()
    with spans.open(encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    per = -(-lines // n)
    with spans.open(encoding="utf-8") as f:
        for i in range(n):
            with (folder / f"spans-{i:02d}.jsonl").open("w", encoding="utf-8") as out:
                for _ in range(per):
                    line = f.readline()
                    if not line:
                        break
                    out.write(line)


def same_data(a: Path, b: Path) -> bool:
    import sqlite3

    def rows(p: Path) -> list:
        con = sqlite3.connect(p)
        out = [con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
               for t in ("queries", "hits")]
        con.close()
        return out

    return rows(a) == rows(b)


def main(mode: str = "full", dask: bool = True) -> list[dict]:
    n = SIZES[mode]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus, spans, count = write_inputs(tmp, n)
        mib_file = spans.stat().st_size / 2**20
        base, base_or = baseline(spans), baseline_orjson(spans)
        ragcov = str(Path(sys.executable).with_name("ragcov"))
        general = [sys.executable, "-c", GENERAL]

        def cmd(source: Path, out: str, *extra: str, fmt: str = "openinference",
                how: list[str] | None = None) -> list[str]:
            return [*(how or [ragcov]), "import", str(source), "--format", fmt, "--corpus",
                    str(corpus), "--data-file", str(tmp / out), "-q", *extra]

        one = "columnar, one process (--workers 1)"
        gen = "general reader, one process (--workers 1, COLUMNAR = False)"
        runs = {gen: measured(cmd(spans, "gen.ragcov", "--workers", "1", how=general)),
                one: measured(cmd(spans, "one.ragcov", "--workers", "1")),
                "default (a worker per core)": measured(cmd(spans, "par.ragcov"))}
        same = {one: same_data(tmp / "gen.ragcov", tmp / "one.ragcov"),
                "default (a worker per core)": same_data(tmp / "gen.ragcov", tmp / "par.ragcov")}
        if dask:
            shard(spans, tmp / "shards", SHARDS)
            name = f"--engine dask, 2-worker LocalCluster, {SHARDS} shards"
            runs[name] = measured(cmd(tmp / "shards", "dask.ragcov", "--engine", "dask",
                                      "--workers", "2"))
            same[name] = same_data(tmp / "gen.ragcov", tmp / "dask.ragcov")
        parquet = tmp / "spans.parquet"
        write_phoenix(spans, parquet)
        mib_parquet = parquet.stat().st_size / 2**20
        base_pq = baseline_parquet(parquet)
        px_gen = "Phoenix parquet, general reader (COLUMNAR = False)"
        px_one = "Phoenix parquet, columnar"
        phoenix = {px_gen: measured(cmd(parquet, "pxg.ragcov", fmt="phoenix", how=general)),
                   px_one: measured(cmd(parquet, "px.ragcov", fmt="phoenix"))}
        same[px_one] = same_data(tmp / "pxg.ragcov", tmp / "px.ragcov")
        same[px_gen] = same_data(tmp / "gen.ragcov", tmp / "pxg.ragcov")
    full = mode == "full"
    serial = runs[gen][0]
    load = os.getloadavg()
    out = []
    for name, (secs, tree, one_mib, cpu) in runs.items():
        rate = count / secs
        new = name != gen
        out.append(row(
            f"import {name}: {n:,} OpenInference retrievals ({count:,} spans, "
            f"{mib_file:,.0f} MiB OTLP JSON)", secs, serial, ratio=serial / secs,
            aim=f">= {AIM_RATE:,} spans/s, < {AIM_MIB} MiB" if new else "",
            met=(rate >= AIM_RATE and tree < AIM_MIB) if full and new else None,
            note=f"{rate:,.0f} spans/s; peak {tree:,.0f} MiB (tree), {one_mib:,.0f} MiB (largest "
                 f"process); {cpu:.1f} CPU s; json.loads of every line: {base:.1f} s "
                 f"({secs / base:.2f}x of it), orjson.loads: {base_or:.1f} s"
                 + (f"; data file = the general reader's: {same[name]}" if new else "")
                 + f"; load average {load[0]:.1f}",
            peak_mib=tree, peak_largest_mib=one_mib, cpu_seconds=cpu, spans_per_s=rate,
            json_loads_seconds=base, orjson_loads_seconds=base_or,
            same_as_general=same.get(name)))
    px_serial = phoenix[px_gen][0]
    for name, (secs, tree, _one, cpu) in phoenix.items():
        rate = count / secs
        new = name == px_one
        out.append(row(
            f"import {name}: {count:,} spans ({mib_parquet:,.0f} MiB)", secs, px_serial,
            ratio=px_serial / secs, aim=f">= {AIM_PHOENIX:,} spans/s" if new else "",
            met=(rate >= AIM_PHOENIX) if full and new else None,
            note=f"{rate:,.0f} spans/s; peak {tree:,.0f} MiB; {cpu:.1f} CPU s; "
                 f"pyarrow.parquet.read_table of the file: {base_pq:.2f} s "
                 f"({secs / base_pq:.1f}x of it); data file = "
                 + ("the general reader's" if new else "the OTLP JSON import's")
                 + f": {same[name]}; load average {load[0]:.1f}",
            peak_mib=tree, cpu_seconds=cpu, spans_per_s=rate, read_table_seconds=base_pq,
            same_as_general=same[name]))
    return out


if __name__ == "__main__":
    chosen = next((m for m in MODES if f"--{m}" in sys.argv), "full")
    for r in main(chosen, dask="--no-dask" not in sys.argv):
        print(json.dumps(r))
