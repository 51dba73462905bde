"""Benchmark: ``ragcov import`` of OpenInference spans (time, peak memory).

Input: an OTLP JSON file as a collector's file exporter writes it (one export of
100 spans per line) of N RETRIEVER spans, each with its query and 5 documents
(id, score, a short content), over a corpus of 10,000 chunks; every 4th trace
also has an LLM span, which the importer reads and skips. The command runs in a
subprocess as a user runs it (``ragcov import FILE --format openinference``, the
data file written), so interpreter start-up, the corpus load and the write
count. Its peak resident memory is the child's (getrusage). Baseline, in the
same run: plain ``json.loads`` of every line of the same file, nothing else.
Aim (issue 12): at least 20,000 spans/s and peak memory under 2 GiB at 1M spans.

Run alone: ``.venv/bin/python benchmarks/bench_import.py [--quick|--tiny]``
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
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
AIM_RATE = 20_000
AIM_MIB = 2048


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


def main(mode: str = "full") -> list[dict]:
    n = SIZES[mode]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus, spans, count = write_inputs(tmp, n)
        mib_file = spans.stat().st_size / 2**20
        base = baseline(spans)
        ragcov = str(Path(sys.executable).with_name("ragcov"))
        cmd = [ragcov, "import", str(spans), "--format", "openinference", "--corpus",
               str(corpus), "--data-file", str(tmp / "prod.ragcov"), "-q"]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
        secs = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    rate = count / secs
    full = mode == "full"
    return [row(f"import: {n:,} OpenInference retrievals ({count:,} spans, {mib_file:,.0f} MiB "
                "OTLP JSON)", secs, base, ratio=base / secs,
                aim=f">= {AIM_RATE:,} spans/s, < {AIM_MIB} MiB",
                met=(rate >= AIM_RATE and peak < AIM_MIB) if full else None,
                note=f"{rate:,.0f} spans/s; baseline: json.loads of every line; peak is the "
                     "ragcov import process's", peak_mib=peak, spans_per_s=rate)]


if __name__ == "__main__":
    chosen = next((m for m in MODES if f"--{m}" in sys.argv), "full")
    for r in main(chosen):
        print(json.dumps(r))
