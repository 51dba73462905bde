"""Option types and small helpers shared by several commands.

An option that means the same thing in several commands is declared once here, so
its flag, help text and default cannot drift between commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ragcov.data import DEFAULT_DATA_FILE
from ragcov.errors import RagcovError

# Reusable option types -------------------------------------------------------
DataFile = Annotated[Path, typer.Option("--data-file", help="The coverage data file.")]
DEFAULT_DATA_PATH = Path(DEFAULT_DATA_FILE)
CorpusPath = Annotated[str, typer.Option(
    "--corpus", metavar="PATH|URL",
    help="Chunks (.jsonl, BEIR folder), a folder of .txt/.md documents, or a vector store URL "
    "(chroma:///PATH?collection=NAME, qdrant://, lancedb://, milvus://, faiss://, llamaindex://).")]
DocKey = Annotated[str | None, typer.Option(
    "--doc-key", help="Metadata key naming a store chunk's document (default: doc_id, "
    "document_id, ref_doc_id, source, file_path, file_name).")]
ChunkSize = Annotated[int, typer.Option(help="Characters per chunk when ragcov does the chunking.")]
ChunkOverlap = Annotated[int, typer.Option(help="Characters of overlap between chunks.")]
Split = Annotated[bool, typer.Option(
    "--split/--no-split", help="Read a .jsonl corpus as whole documents and chunk them.")]
K = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved per query (top-k).")]
RetrieverName = Annotated[str | None, typer.Option(
    help="dense, bm25, store (the --corpus store's own search), module:attr (your own "
    "retriever) or an http(s) URL. Default: store when --corpus is a store URL, else dense.")]


def default_retriever(retriever: str | None, corpus: str | Path) -> str:
    """A store URL is searched by the store unless another retriever is asked for by name.

    Defaulting to ``dense`` there re-embedded the whole store with a model nobody chose
    and measured a retriever production never runs.
    """
    if retriever is not None:
        return retriever
    from ragcov.stores import is_store_url

    return "store" if is_store_url(corpus) else "dense"
Model = Annotated[str | None, typer.Option(
    help="Embedding model for the dense retriever and for a store's queries: a "
    "sentence-transformers name or path. Over a store it is checked against the stored vectors.")]
Index = Annotated[str, typer.Option(help="Dense index: flat (exact) or hnsw (approximate).")]
Support = Annotated[str, typer.Option(help="retrieved or corpus.")]


def load_corpus_opts(corpus: str | Path, chunk_size: int, chunk_overlap: int, split: bool,
                     doc_key: str | None = None):
    from ragcov.corpus import load_corpus

    return load_corpus(corpus, chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split,
                       doc_key=doc_key)


def approximate_note(data_file: Path) -> str | None:
    from ragcov.api import INDEX_RECALL
    from ragcov.data import CoverageData
    from ragcov.report.table import approximate_index_note

    data = CoverageData(data_file)
    return approximate_index_note(data.meta().retriever, data.annotation(INDEX_RECALL))


def check_precision(precision: int) -> None:
    if precision < 0:
        raise RagcovError(f"--precision must be 0 or more, got {precision}")


def check_fail_under(fail_under: float | None) -> None:
    """coverage.py refuses a gate outside 0-100: one above always fails, one below never."""
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise RagcovError(f"--fail-under must be a percentage from 0 to 100, got {fail_under:g}")


def emit(text: str, output: Path | None, what: str) -> None:
    """A report to stdout (``None`` or ``-``) or atomically to ``output``.

    Not through rich: chunk ids, query texts and XML are written exactly as they are.
    """
    if not text.endswith("\n"):
        text += "\n"
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        return
    from ragcov.cli.console import out
    from ragcov.files import write_text_atomic

    write_text_atomic(output, text)
    out.print(f"Wrote {what} to {output}", markup=False)
