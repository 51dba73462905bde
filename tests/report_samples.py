"""A hand-built data file the report tests share; every expected number is worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.retrieval import Run

TEXTS = {
    "guide#0": "Install the package with pip.",
    "guide#1": "Configure the retriever in pyproject.toml.",
    "guide#2": "Run the suite and read the report.",
    "guide#3": "Table of contents: install, configure, run.",
    "guide#4": "See also.",  # 9 characters
    "guide#5": "Chunk coverage counts retrieved chunks.",
    "guide#6": "Chunk coverage counts retrieved chunks.",  # the same text as guide#5
    "guide#7": "Readers skim the summary first.",
    "legal/terms#0": "All rights reserved.",
    "legal/terms#1": "No warranty is given.",
    "faq#0": "What is a chunk?",
    "faq#1": "What is k?",  # 10 characters: kept by min_chunk_chars = 10
}
# query -> retrieved, best first
RETRIEVALS = {
    "q1": ["guide#0", "guide#1"],
    "q2": ["guide#0"],
    "q3": ["guide#5", "legal/terms#0"],
    "q4": ["guide#1", "guide#0"],
    "q5": ["faq#0", "guide#3"],
}
SCOPE_FLAGS = ["--exclude", "^Table of contents", "--min-chunk-chars", "10",
               "--exclude-docs", "legal/*"]
# With SCOPE_FLAGS: guide#3 (regex), guide#4 (9 < 10), legal/terms#0-1 (glob) are excluded.
EXCLUDED = {
    "guide#3": "exclude: ^Table of contents",
    "guide#4": "min_chunk_chars: 9 < 10",
    "legal/terms#0": "exclude_docs: legal/*",
    "legal/terms#1": "exclude_docs: legal/*",
}
# Left: guide#0,1,2,5,6,7 and faq#0,1 = 8 chunks; covered guide#0,1,5 and faq#0 = 4.
SCOPED_TOTAL = (8, 4)
# Without exclusions: 12 chunks; covered guide#0,1,3,5, legal/terms#0, faq#0 = 6.
FULL_TOTAL = (12, 6)


def write_sample(folder: Path) -> Path:
    corpus_file = folder / "corpus.jsonl"
    lines = []
    for cid, text in TEXTS.items():
        doc, _, pos = cid.rpartition("#")
        lines.append(json.dumps({"id": cid, "doc_id": doc, "position": int(pos), "text": text}))
    corpus_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = load_corpus(corpus_file)
    run = Run(k=2, retriever={"kind": "hand-made", "name": "sample-retriever"})
    for qid, ids in RETRIEVALS.items():
        run.add(qid, f"question {qid}", [(cid, 1.0 / r) for r, cid in enumerate(ids, start=1)])
    path = folder / ".ragcov"
    CoverageData(path).write(corpus, run)
    return path
