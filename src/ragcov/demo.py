"""``ragcov demo``: measure, report and find redundancy on the bundled FinQA sample.

The sample is 218 annual-report pages and 300 questions from FinQA (MIT licence,
notice beside the files in ``ragcov/data_sample``). Everything runs offline.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console

from ragcov import api
from ragcov.metrics import redundant_tests
from ragcov.reporters.table import render_headline, render_table
from ragcov.summary import summarize


def sample_path(name: str) -> Path:
    return Path(str(resources.files("ragcov") / "data_sample" / name))


def run_demo(directory: Path, retriever: str = "dense", k: int = 5,
             console: Console | None = None) -> None:
    console = console or Console(emoji=False)
    directory.mkdir(parents=True, exist_ok=True)
    data_file = directory / api.DEFAULT_DATA_FILE
    corpus = api.load_corpus(sample_path("finqa_pages.jsonl"), split=True)
    suite = api.load_suite(sample_path("finqa_questions.jsonl"))
    console.rule("ragcov demo: FinQA sample")
    console.print(f"Corpus: {len(corpus.documents())} report pages -> {len(corpus)} chunks; "
                  f"suite: {len(suite)} questions; retriever: {retriever}, k={k}")
    r = api.make_retriever(retriever, corpus)
    m = api.measure(corpus, suite, r, k=k, data_file=data_file)
    summary = summarize(m)
    console.print()
    console.print(render_table(summary, sort="cover", precision=1), markup=False)
    console.print()
    console.print(render_headline(summary))
    redundant = redundant_tests(m)
    never = sum(1 for d in summary.documents if d.covered == 0)
    console.print(f"Documents never retrieved: {never} of {len(summary.documents)}")
    console.print(f"Redundant tests (no unique chunk, or Jaccard >= 0.8 with another): "
                  f"{len(redundant)} of {m.n_queries}")
    console.print()
    console.print(f"Data file: {data_file}. Next: ragcov report --data-file {data_file} "
                  f"--show-missing, ragcov json --data-file {data_file}")
