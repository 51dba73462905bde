"""Benchmark: ``ragcov run --append`` with one new query vs the full first run.

Corpus and suite: the bundled FinQA sample (218 pages chunked by the default
chunker; its 300 questions), dense retriever, k = 5, a fresh embedding cache.
The first run embeds the corpus and retrieves all queries; the append run gets
the same suite plus one new question, finds the corpus embeddings in the cache
and retrieves only the new query. Measured two ways: as a user runs it (the
``ragcov`` command in a subprocess, so interpreter start-up and model loading
count on both sides) and in-process through the API with the model already
loaded (the work ragcov itself does). Aim (issue 7): >= 50x faster.

Run alone: ``.venv/bin/python benchmarks/bench_append.py [--quick|--tiny]``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import row  # noqa: E402

NEW_QUESTION = "what was the change in total operating revenue between the two years?"


def _write_inputs(tmp: Path, n_pages: int | None, n_questions: int | None) -> tuple[Path, Path,
                                                                                    Path]:
    from ragcov.demo import sample_path

    pages = sample_path("finqa_pages.jsonl").read_text(encoding="utf-8").splitlines()
    questions = sample_path("finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    if n_pages:
        pages = pages[:n_pages]
    if n_questions:
        questions = questions[:n_questions]
    corpus, suite, more = tmp / "pages.jsonl", tmp / "questions.jsonl", tmp / "questions+1.jsonl"
    corpus.write_text("\n".join(pages) + "\n", encoding="utf-8")
    suite.write_text("\n".join(questions) + "\n", encoding="utf-8")
    more.write_text("\n".join(questions) + "\n" +
                    json.dumps({"id": "new-1", "question": NEW_QUESTION}) + "\n",
                    encoding="utf-8")
    return corpus, suite, more


def _cli(tmp: Path, corpus: Path, suite: Path, more: Path) -> tuple[float, float]:
    ragcov = str(Path(sys.executable).with_name("ragcov"))
    env = dict(os.environ, RAGCOV_CACHE_DIR=str(tmp / "cache-cli"), HF_HUB_OFFLINE="1")
    base = [ragcov, "run", "--corpus", str(corpus), "--split", "--k", "5", "-q",
            "--data-file", str(tmp / "cli.ragcov")]
    t = time.perf_counter()
    subprocess.run([*base, "--queries", str(suite)], check=True, env=env)
    first = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([*base, "--queries", str(more), "--append"], check=True, env=env)
    return first, time.perf_counter() - t


def _api(tmp: Path, corpus_path: Path, suite_path: Path, more_path: Path) -> tuple[float, float]:
    os.environ["RAGCOV_CACHE_DIR"] = str(tmp / "cache-api")
    from ragcov.api import measure
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrievers.dense import DenseRetriever, load_encoder, resolve_model
    from ragcov.retrievers.hardware import resolve_placement
    from ragcov.suite import load_suite

    source = resolve_model(None)[1]
    # Loaded once, outside both timings, where the retriever will run (--device auto).
    load_encoder(source, placement=resolve_placement("auto", "auto", None, source))
    data = tmp / "api.ragcov"
    t = time.perf_counter()
    corpus = load_corpus(corpus_path, split=True)
    measure(corpus, load_suite(suite_path), DenseRetriever(corpus, progress=False), k=5,
            data_file=data, progress=False)
    first = time.perf_counter() - t
    t = time.perf_counter()
    corpus = load_corpus(corpus_path, split=True)
    r = DenseRetriever(corpus, progress=False)
    measure(corpus, load_suite(more_path), r, k=5, data_file=data, append=True, progress=False)
    again = time.perf_counter() - t
    assert r.chunks_embedded == 0 and r.queries_embedded == 1
    assert "new-1" in CoverageData(data).query_texts()
    return first, again


MODES = ("tiny", "quick", "full")  # tiny is quick: the smallest slice that loads the model


def main(mode: str = "full") -> list[dict]:
    quick = mode != "full"
    n_pages, n_questions = (24, 20) if quick else (None, None)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus, suite, more = _write_inputs(tmp, n_pages, n_questions)
        cli_first, cli_append = _cli(tmp, corpus, suite, more)
        api_first, api_append = _api(tmp, corpus, suite, more)
    what = (f"{'24 pages, 20' if quick else '218 pages, 300'} questions + 1 new, dense, k=5")
    aim = ">= 50x" if not quick else ""
    return [
        row(f"append one query vs full first run, `ragcov run` CLI ({what})", cli_append,
            cli_first, aim=aim, met=(cli_first / cli_append >= 50) if not quick else None,
            note="wall time of each command incl. interpreter start-up and model load"),
        row(f"append one query vs full first run, API in-process ({what})", api_append,
            api_first, aim=aim, met=(api_first / api_append >= 50) if not quick else None,
            note="model already loaded; corpus load + cache hit + 1 query + data file write"),
    ]


if __name__ == "__main__":
    for r in main(sys.argv[1].lstrip("-") if len(sys.argv) > 1 else "full"):
        print(r)
