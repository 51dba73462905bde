"""Benchmark: ``ragcov import`` of OpenInference spans (time, peak memory).

Input: an OTLP JSON file as a collector's file exporter writes it (one export of
100 spans per line) of N RETRIEVER spans, each with its query and 5 documents
(id, score, a short content), over a corpus of 10,000 chunks; every 4th trace
also has an LLM span, which the importer reads and skips. The command runs in a
subprocess as a user runs it (``ragcov import FILE --format openinference``, the
data file written), so interpreter start-up, the corpus load and the write
count. Three commands on the same file, in one run:

* the one-process import (``--workers 1``): the baseline;
* the import as it runs by default (spans read by one worker process per core,
  merged in the command's process);
* ``--engine dask`` on a 2-worker LocalCluster over the same spans cut into 8
  shards (a folder), whose data file must equal the one-process one.

Peak memory is sampled every 20 ms over the command's whole process tree (the
command, its workers, the Dask scheduler and nannies), resident sizes summed
(pages shared after fork count once per process: an upper bound); the largest
single process is printed too. A second baseline: plain ``json.loads`` of every
line, nothing else.
Aim (issue 23): at least 50,000 spans/s and peak under 1.5 GiB at 1M retrievals.

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
        base = baseline(spans)
        ragcov = str(Path(sys.executable).with_name("ragcov"))

        def cmd(source: Path, out: str, *extra: str) -> list[str]:
            return [ragcov, "import", str(source), "--format", "openinference", "--corpus",
                    str(corpus), "--data-file", str(tmp / out), "-q", *extra]

        runs = {"one process (--workers 1)": measured(cmd(spans, "one.ragcov", "--workers", "1")),
                "default (a worker per core)": measured(cmd(spans, "par.ragcov"))}
        same = {"default (a worker per core)": same_data(tmp / "one.ragcov", tmp / "par.ragcov")}
        if dask:
            shard(spans, tmp / "shards", SHARDS)
            name = f"--engine dask, 2-worker LocalCluster, {SHARDS} shards"
            runs[name] = measured(cmd(tmp / "shards", "dask.ragcov", "--engine", "dask",
                                      "--workers", "2"))
            same[name] = same_data(tmp / "one.ragcov", tmp / "dask.ragcov")
    full = mode == "full"
    serial = runs["one process (--workers 1)"][0]
    out = []
    for name, (secs, tree, one, cpu) in runs.items():
        rate = count / secs
        new = name != "one process (--workers 1)"
        out.append(row(
            f"import {name}: {n:,} OpenInference retrievals ({count:,} spans, "
            f"{mib_file:,.0f} MiB OTLP JSON)", secs, serial, ratio=serial / secs,
            aim=f">= {AIM_RATE:,} spans/s, < {AIM_MIB} MiB" if new else "",
            met=(rate >= AIM_RATE and tree < AIM_MIB) if full and new else None,
            note=f"{rate:,.0f} spans/s; peak {tree:,.0f} MiB (tree), {one:,.0f} MiB (largest "
                 f"process); {cpu:.1f} CPU s; json.loads of every line: {base:.1f} s"
                 + (f"; data file = one-process file: {same[name]}" if new else ""),
            peak_mib=tree, peak_largest_mib=one, cpu_seconds=cpu, spans_per_s=rate,
            same_as_one_process=same.get(name)))
    return out


if __name__ == "__main__":
    chosen = next((m for m in MODES if f"--{m}" in sys.argv), "full")
    for r in main(chosen, dask="--no-dask" not in sys.argv):
        print(json.dumps(r))
