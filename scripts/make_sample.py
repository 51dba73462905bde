"""Rebuild the demo sample bundled in src/ragcov/data_sample from the FinQA files.

    PYTHONPATH=. python scripts/make_sample.py PATH/TO/finqa   # the folder with dev_200.json, train_100.json

Writes the report pages as documents (JSONL) and the questions as the suite, with
the FinQA MIT licence notice beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from research.datasets import load_finqa

OUT = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"


def main(src: str) -> None:
    ds = load_finqa(src)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "finqa_pages.jsonl", "w", encoding="utf-8") as fh:
        for doc_id, text in ds.documents.items():
            fh.write(json.dumps({"doc_id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    with open(OUT / "finqa_questions.jsonl", "w", encoding="utf-8") as fh:
        for q in ds.queries:
            fh.write(json.dumps({"id": q.id, "question": q.text, "doc_id": q.metadata["doc_id"]},
                                ensure_ascii=False) + "\n")
    print(f"{len(ds.documents)} pages, {len(ds.queries)} questions -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
