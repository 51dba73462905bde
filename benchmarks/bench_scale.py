"""Benchmark: the commands a team runs at a million chunks (issue 46): ``ragcov run`` with
BM25, then ``ragcov report`` and ``ragcov json`` of a recorded run.

Inputs, made here:

* ``run``: a corpus JSONL of N chunks (10 to a document, 40 words each drawn from the
  bundled sample's vocabulary) and a suite of N/50 six-word questions, recorded with
  ``ragcov run --retriever bm25 -k 10``. Baseline, the floor of any run: reading the
  corpus and the suite with ``json.loads``, line by line, in the same kind of fresh process.
* ``report`` and ``json``: the data file of N chunks and N/50 queries at k = 10 that the
  gate benchmark reads (``_common.synthetic_run``, skewed hits). Baseline, the floor of
  any report that reads rows: the chunks' ids, documents and positions and every hit
  read back with the ``sqlite3`` module alone, nothing computed.

Each command is a fresh ``python -m ragcov`` process (bytecode written by a warm-up run):
median wall and CPU seconds and the peak from ``/usr/bin/time``. Aims at 1M chunks on 2
cores: ``run`` peak <= 2 GB, ``report`` <= 5 s, ``json`` <= 15 s.

Run alone: ``.venv/bin/python benchmarks/bench_scale.py [--tiny|--quick|--full]``
(full: about 4 minutes on 2 cores, most of it the run and writing the inputs).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402
from bench_gate import K, _command, _mib, _write  # noqa: E402

MODES = ("tiny", "quick", "full")
SIZES = {"tiny": 20_000, "quick": 200_000, "full": 1_000_000}
RUNS = {"tiny": 1, "quick": 3, "full": 2}
WORDS_A_CHUNK = 40
AIM_RUN_MIB = 2048
AIM_REPORT_S = 5.0
AIM_JSON_S = 15.0
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample" / "finqa_pages.jsonl"

FLOOR_RUN = """
import json, sys
n = 0
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        for line in f:
            n += len(json.loads(line)["text"]) > 0
print(n)
"""
FLOOR_REPORT = """
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
chunks = con.execute("SELECT id, doc_id, position FROM chunks ORDER BY idx").fetchall()
hits = con.execute("SELECT query_idx, chunk_idx, rank, score FROM hits").fetchall()
print(len(chunks), len(hits))
"""


def write_corpus(folder: Path, n_chunks: int) -> tuple[Path, Path]:
    """A corpus of real financial-report words and a suite of six-word questions."""
    vocab = sorted({w.lower() for line in SAMPLE.read_text(encoding="utf-8").splitlines()
                    for w in json.loads(line)["text"].split() if w.isalpha() and len(w) > 2})
    rnd = random.Random(0)
    corpus, queries = folder / "corpus.jsonl", folder / "questions.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for j in range(n_chunks):
            f.write(json.dumps({"id": f"c{j}", "doc_id": f"d{j // 10}",
                                "text": " ".join(rnd.choices(vocab, k=WORDS_A_CHUNK))}) + "\n")
    with queries.open("w", encoding="utf-8") as f:
        for i in range(n_chunks // 50):
            f.write(json.dumps({"id": f"q{i}", "text": " ".join(rnd.choices(vocab, k=6))}) + "\n")
    return corpus, queries


def main(mode: str = "full") -> list[dict]:
    n = SIZES[mode]
    runs = RUNS[mode]
    label = f"{n:,} chunks, {n // 50:,} queries, k={K}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        corpus, queries = write_corpus(folder, n)
        made = time.perf_counter() - t
        floor = _command(folder, ["-c", FLOOR_RUN, str(corpus), str(queries)], runs=runs,
                         python=True)
        got = _command(folder, ["run", "--corpus", str(corpus), "--queries", str(queries),
                                "--retriever", "bm25", "-k", str(K), "--data-file", "run.ragcov",
                                "-q"], runs=runs)
        rows.append(row(f"scale: `ragcov run --retriever bm25`, {label}", got[0], floor[0],
                        note=f"wall, median; CPU {got[1]:.1f} s; peak {_mib(got[2])} MiB "
                             f"(baseline {_mib(floor[2])} MiB); baseline: the corpus and suite "
                             f"read with json.loads alone; inputs made in {made:.0f} s",
                        aim=f"peak <= {AIM_RUN_MIB} MiB",
                        met=(got[2] <= AIM_RUN_MIB) if got[2] is not None and mode == "full"
                        else None,
                        cpu_s=got[1], peak_mib_command=got[2], baseline_peak_mib_command=floor[2]))
        path = folder / ".ragcov"
        _write(path, n, n // 50)
        floor = _command(folder, ["-c", FLOOR_REPORT, str(path)], runs=runs, python=True)
        for args, aim in ((["report"], AIM_REPORT_S), (["json", "-o", "out.json"], AIM_JSON_S)):
            got = _command(folder, args, runs=runs)
            rows.append(row(f"scale: `ragcov {args[0]}`, {label}", got[0], floor[0],
                            note=f"wall, median; CPU {got[1]:.1f} s; peak {_mib(got[2])} MiB; "
                                 "baseline: the chunk rows and hits read with sqlite3 alone",
                            aim=f"<= {aim:g} s", met=got[0] <= aim if mode == "full" else None,
                            cpu_s=got[1], peak_mib_command=got[2]))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
