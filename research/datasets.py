"""Dataset loaders for the experiments (and for scripts/make_sample.py, which rebuilds the demo sample).

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
from ragcov.files import load_json
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


def _convfinqa_table(table: Any) -> str:
    """ConvFinQA tables are ``{column: {row: value}}``; render rows x columns."""
    if isinstance(table, list):
        return table_to_markdown(table)
    if not isinstance(table, dict) or not table:
        return ""
    columns = list(table)
    row_names: list[str] = []
    for col in columns:
        for row in table[col] or {}:
            if row not in row_names:
                row_names.append(row)
    rows = [["", *columns]]
    rows += [[r, *[("" if table[c].get(r) is None else table[c].get(r)) for c in columns]]
             for r in row_names]
    return table_to_markdown(rows)


def load_convfinqa(path: str | os.PathLike[str]) -> Dataset:
    """ConvFinQA: the first question of each dialogue, its page as the relevant document.

    Record ids look like ``Single_TICKER/YEAR/page_N.pdf-k`` or ``Double_...pdf``;
    the page (document) id is the part between the type prefix and the ``-k``.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "convfinqa_dataset.json"
    data = load_json(p)
    records = data.get("dev", data) if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise RagcovError(f"{p}: expected a list of ConvFinQA records (or {{'dev': [...]}})")
    documents: dict[str, str] = {}
    queries: list[Query] = []
    relevant: dict[str, set[str]] = {}
    for i, rec in enumerate(records):
        try:
            rid = str(rec["id"])
            doc_id = rid.split("_", 1)[1] if rid.startswith(("Single_", "Double_")) else rid
            if ".pdf-" in doc_id:
                doc_id = doc_id.rsplit("-", 1)[0]
            doc = rec["doc"]
            if doc_id not in documents:
                documents[doc_id] = render_page(doc.get("pre_text", ""),
                                                _convfinqa_table(doc.get("table")),
                                                doc.get("post_text", ""))
            question = rec["dialogue"]["conv_questions"][0].strip()
        except (KeyError, TypeError, IndexError) as exc:
            raise RagcovError(f"{p}: record {i} is not a ConvFinQA record ({exc!r})") from exc
        queries.append(Query(rid, question, {"doc_id": doc_id}))
        relevant[rid] = {doc_id}
    return Dataset("convfinqa", documents, queries, relevant_docs=relevant)


def load_pubmedqa(path: str | os.PathLike[str]) -> Dataset:
    """PubMedQA PQA-L: each abstract section is a chunk (``PMID#n``), the abstract its document.

    The human questions come along as a held-back pool (one relevant abstract
    each); generation experiments ignore them.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "ori_pqal.json"
    data = load_json(p)
    if not isinstance(data, dict):
        raise RagcovError(f"{p}: expected PubMedQA's {{PMID: record}} object")
    from ragcov.corpus import Chunk

    chunks: list[Chunk] = []
    documents: dict[str, str] = {}
    queries: list[Query] = []
    relevant: dict[str, set[str]] = {}
    for pmid, rec in data.items():
        try:
            contexts = rec["CONTEXTS"]
            labels = rec.get("LABELS") or [None] * len(contexts)
            question = rec["QUESTION"]
        except (KeyError, TypeError) as exc:
            raise RagcovError(f"{p}: record {pmid} is not a PubMedQA record ({exc!r})") from exc
        documents[pmid] = "\n\n".join(contexts)
        for n, (text, label) in enumerate(zip(contexts, labels)):
            chunks.append(Chunk(id=f"{pmid}#{n}", text=text, doc_id=pmid, position=n,
                                metadata={"section": label} if label else {}))
        queries.append(Query(f"pqa-{pmid}", question.strip(), {"doc_id": pmid}))
        relevant[f"pqa-{pmid}"] = {pmid}
    corpus = Corpus(chunks, chunking={"method": "given", "unit": "abstract section"},
                    source=str(p))
    return Dataset("pubmedqa", documents, queries, relevant_docs=relevant, chunks=corpus)


# BEIR-style folders and qrels --------------------------------------------------------
NAMED = ("finqa", "convfinqa", "pubmedqa")
QRELS_CANDIDATES = ("qrels.jsonl", "qrels.tsv", "qrels.txt", "qrels.trec", "qrels/test.tsv",
                    "qrels/dev.tsv", "qrels/train.tsv")


def read_qrels(path: str | os.PathLike[str], corpus: Corpus,
               query_ids: set[str] | None = None) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Relevance labels as ``(relevant_docs, relevant_chunks)``, checked against the corpus.

    Accepted shapes: JSONL lines ``{"query_id", "doc_id"}`` or ``{"query_id", "chunk_id"}``
    (an optional ``relevance``/``score`` of 0 or less means not relevant); TREC lines
    ``QID ITER ID REL``; BEIR TSV ``query-id corpus-id score`` (a header line is skipped).
    In the column formats an id is a chunk id when the corpus has such a chunk (BEIR
    corpus ids are the retrievable passages) and a document id otherwise; a relevant
    chunk also makes its document relevant. Ids that match nothing are an error, so a
    qrels file for another corpus is never silently half-used.
    """
    from ragcov.errors import InputFormatError
    from ragcov.qrels import iter_judgements

    p = Path(path)
    doc_ids = {c.doc_id for c in corpus}
    docs: dict[str, set[str]] = {}
    chunks: dict[str, set[str]] = {}
    for lineno, qid, item, rel, level in iter_judgements(p):
        if query_ids is not None and qid not in query_ids:
            raise InputFormatError(p, lineno, f"unknown query id {qid!r}")
        if rel <= 0:
            # Judged, but not relevant: the query is labelled (with nothing relevant),
            # as ragcov.qrels.load_qrels has it, not unlabelled.
            docs.setdefault(qid, set())
            continue
        if level == "chunk" or (level is None and item in corpus):
            if item not in corpus:
                raise InputFormatError(p, lineno, f"unknown chunk id {item!r}")
            chunks.setdefault(qid, set()).add(item)
            docs.setdefault(qid, set()).add(corpus.get(item).doc_id)
        elif item in doc_ids:
            docs.setdefault(qid, set()).add(item)
        else:
            raise InputFormatError(p, lineno, f"unknown document id {item!r}")
    return docs, chunks


def find_qrels(folder: Path) -> Path | None:
    for name in QRELS_CANDIDATES:
        if (folder / name).is_file():
            return folder / name
    return None


def load_beir(path: str | os.PathLike[str], qrels: str | os.PathLike[str] | None = None) -> Dataset:
    """A BEIR-style folder: ``corpus.jsonl`` (the chunks), ``queries.jsonl``, optional qrels.

    Corpus lines are chunks as given (``_id``/``id``, ``text``, optional ``title`` and
    ``doc_id``); they are not re-chunked. Qrels are looked for as ``qrels.jsonl``,
    ``qrels.tsv``, ``qrels.txt``, ``qrels.trec`` or BEIR's ``qrels/test.tsv`` unless
    ``qrels`` names a file.
    """
    from ragcov.corpus import read_chunks_jsonl
    from ragcov.suite import load_suite

    folder = Path(path)
    if not folder.is_dir():
        raise RagcovError(f"{folder}: not a folder (a BEIR folder holds corpus.jsonl and "
                          "queries.jsonl)")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise RagcovError(f"{folder}: no {name} (a BEIR folder holds corpus.jsonl and "
                              "queries.jsonl)")
    corpus = read_chunks_jsonl(folder / "corpus.jsonl")
    if len(corpus) == 0:
        raise RagcovError(f"{folder / 'corpus.jsonl'}: the corpus is empty")
    suite = load_suite(folder / "queries.jsonl")
    documents: dict[str, str] = {}
    for c in corpus:
        documents[c.doc_id] = (documents[c.doc_id] + "\n\n" + c.text) if c.doc_id in documents \
            else c.text
    qrels_path = Path(qrels) if qrels is not None else find_qrels(folder)
    docs: dict[str, set[str]] = {}
    chunks: dict[str, set[str]] = {}
    if qrels_path is not None:
        docs, chunks = read_qrels(qrels_path, corpus, set(suite.ids))
    return Dataset(folder.name or "beir", documents, list(suite), relevant_docs=docs,
                   relevant_chunks=chunks, chunks=corpus)


def load_dataset(spec: str | os.PathLike[str], data: str | os.PathLike[str] | None = None) -> Dataset:
    """``finqa``/``convfinqa``/``pubmedqa`` read from ``data``, or a BEIR folder path."""
    name = str(spec)
    loaders = {"finqa": load_finqa, "convfinqa": load_convfinqa, "pubmedqa": load_pubmedqa}
    if name in loaders:
        if data is None:
            raise RagcovError(f"--dataset {name} needs --data: where its files are "
                              f"(e.g. a folder holding the {name} files)")
        if not Path(data).exists():
            raise RagcovError(f"{data}: no such file or directory")
        return loaders[name](data)
    p = Path(name)
    if p.is_dir():
        return load_beir(p)
    raise RagcovError(f"unknown dataset {name!r}: expected {', '.join(NAMED)} or the path of a "
                      "BEIR-style folder (corpus.jsonl, queries.jsonl)")
