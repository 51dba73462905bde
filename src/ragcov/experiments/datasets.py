"""Dataset loaders shared by the demo and the experiments.

Each loader reads from a path the caller gives (nothing assumes where the data
lives) and returns a :class:`Dataset`: whole documents (chunked later with the
caller's settings), the query pool, and relevance (query id -> relevant doc ids).
FinQA pages are rendered as T2-RAGBench does: one report page = one document,
its text before the table, the table as Markdown, then the text after it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcov.corpus import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Corpus
from ragcov.errors import RagcovError
from ragcov.io import load_json
from ragcov.suite import Query, Suite


@dataclass
class Dataset:
    name: str
    documents: dict[str, str]                     # doc id -> text, in corpus order
    queries: list[Query]
    relevant_docs: dict[str, set[str]] = field(default_factory=dict)
    relevant_chunks: dict[str, set[str]] = field(default_factory=dict)
    chunks: Corpus | None = None                   # set when the source is already chunked

    def corpus(self, chunk_size: int = DEFAULT_CHUNK_SIZE,
               chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> Corpus:
        if self.chunks is not None:
            return self.chunks
        return Corpus.from_documents(self.documents, chunk_size, chunk_overlap, source=self.name)

    def suite(self) -> Suite:
        return Suite(self.queries, source=self.name)


def table_to_markdown(rows: Sequence[Sequence[Any]]) -> str:
    """A list-of-rows table (first row = header) as a Markdown table."""
    rows = [[str(c).replace("|", "\\|").strip() for c in r] for r in rows if r]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def render_page(pre_text: Sequence[str] | str, table_md: str, post_text: Sequence[str] | str) -> str:
    pre = pre_text if isinstance(pre_text, str) else " ".join(pre_text)
    post = post_text if isinstance(post_text, str) else " ".join(post_text)
    return "\n\n".join(part.strip() for part in (pre, table_md, post) if part and part.strip())


def _finqa_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.json"))
    if not files:
        raise RagcovError(f"{path}: no FinQA .json files found")
    return files


def load_finqa(path: str | os.PathLike[str]) -> Dataset:
    """FinQA JSON files (a file or a folder of them): pages as documents, questions as pool."""
    documents: dict[str, str] = {}
    queries: list[Query] = []
    relevant: dict[str, set[str]] = {}
    for f in _finqa_files(Path(path)):
        records = load_json(f)
        if not isinstance(records, list):
            raise RagcovError(f"{f}: expected a FinQA list of records")
        for i, rec in enumerate(records):
            try:
                doc_id = rec["filename"]
                if doc_id not in documents:
                    documents[doc_id] = render_page(rec["pre_text"], table_to_markdown(rec["table"]),
                                                    rec["post_text"])
                qid = str(rec.get("id") or f"{f.stem}-{i}")
                queries.append(Query(qid, rec["qa"]["question"].strip(), {"doc_id": doc_id}))
                relevant[qid] = {doc_id}
            except (KeyError, TypeError) as exc:
                raise RagcovError(f"{f}: record {i} is not a FinQA record (missing {exc})") from exc
    return Dataset("finqa", documents, queries, relevant_docs=relevant)
