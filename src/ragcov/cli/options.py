"""Option types and small helpers shared by several commands.

An option that means the same thing in several commands is declared once here, so
its flag, help text and default cannot drift between commands.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from ragcov.data import DEFAULT_DATA_FILE
from ragcov.errors import RagcovError

# Reusable option types -------------------------------------------------------
#: The data file's environment variable, as coverage.py's COVERAGE_FILE: a flag wins over
#: it, and it wins over the config file.
DATA_FILE_ENV = "RAGCOV_FILE"
# readable=False: click's own access check raced other processes erasing the file; the
# data file's readers say what is wrong with it, once, in ragcov's words.
DataFile = Annotated[Path, typer.Option(
    "--data-file", envvar=DATA_FILE_ENV, readable=False, help="The coverage data file.")]
DEFAULT_DATA_PATH = Path(DEFAULT_DATA_FILE)
CorpusPath = Annotated[str, typer.Option(
    "--corpus", metavar="PATH|URL",
    help="Chunks (.jsonl, BEIR folder), a folder of .txt/.md documents, or a vector store URL "
    "(chroma:///PATH?collection=NAME, qdrant://, lancedb://, milvus://, faiss://, llamaindex://, "
    "postgresql://USER@HOST/DB?table=T).")]
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
Backend = Annotated[str | None, typer.Option(
    help="Encoder of the dense retriever and a store's queries: torch, onnx (the same top-k, "
    "faster; exported once into the cache) or onnx-int8 (faster again; other embeddings, "
    "recorded in the data file). Default: onnx where ONNX Runtime can serve the model, else torch.")]
Index = Annotated[str, typer.Option(help="Dense index: flat (exact) or hnsw (approximate).")]
Support = Annotated[str, typer.Option(help="retrieved or corpus.")]
ShowIds = Annotated[bool, typer.Option(
    "--show-ids", help="Name chunks by their ids instead of DOC#N (N counts from 1, as "
    "Cobertura and lcov lines do).")]
FailUnder = Annotated[float | None, typer.Option(
    "--fail-under", help="Exit with status 2 when total chunk coverage (percent), rounded as "
    "`ragcov report --format total` prints it, is below this.")]


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


def gate(coverage: float, fail_under: float | None, precision: int | None = None,
         what: str = "total") -> None:
    """``--fail-under`` for every command, run after its report is written (as coverage.py).

    One check and one message (:func:`ragcov.summary.fail_under_failure`), so ``report``,
    ``json``, ``xml``, ``lcov``, ``html``, ``badge`` and ``gap`` can never disagree.
    """
    from ragcov.cli.console import err
    from ragcov.summary import fail_under_failure

    message = fail_under_failure(coverage, fail_under, precision, what)
    if message is not None:
        err.print(message, markup=False)
        raise typer.Exit(2)


def to_stdout(output: Path | None) -> bool:
    return output is None or str(output) == "-"


def check_outputs(outputs: Iterable[Path | None], inputs: Iterable[Path | str | None]) -> None:
    """Refuse, before any work, an output that would overwrite something the command reads.

    Every command that writes files passes its outputs and inputs here. An output is
    refused when it resolves (symlinks followed, hard links by inode) to an input, to
    the corpus a data-file input recorded (a file, or a file inside a corpus folder),
    or to any existing ragcov data file; a directory, a file that cannot be changed
    and a folder that cannot be written are refused by the name given.
    ``-`` (stdout) and devices or FIFOs (written through, never replaced) are fine.
    """
    from ragcov.destinations import is_special_file, unwritable_reason, written_path

    protected: list[tuple[Path, str]] = []
    for given in inputs:
        if given is None or str(given) in ("", "-") or "://" in str(given):
            continue
        protected.append((written_path(given), f"an input of this command ({given})"))
        # Only a regular file is opened: a FIFO input (``--qrels <(...)``) is read once.
        corpus = _recorded_corpus(Path(given)) if os.path.isfile(given) else None
        if corpus is not None:
            protected.append((Path(corpus), f"the corpus {given} was recorded from"))
    taken: dict[Path, Path] = {}
    for output in outputs:
        if to_stdout(output):
            continue
        assert output is not None
        real = written_path(output)
        if real.is_dir():
            raise RagcovError(f"{output}: is a directory; give a file path")
        if is_special_file(output):  # the kernel follows /dev/stdout where realpath cannot
            continue
        for path, what in protected:
            inside = path.is_dir() and real.exists() and real.is_relative_to(path)
            if real == path or inside or _same_file(real, path):
                whose = f"a file of {what} ({path})" if inside and real != path else what
                raise RagcovError(f"{output}: is {whose}; refusing to overwrite it (choose "
                                  "another output path)")
        if real in taken:
            raise RagcovError(f"{output}: given for two outputs (also as {taken[real]})")
        taken[real] = output
        if _is_data_file(real):
            raise RagcovError(f"{output}: is a ragcov data file; refusing to overwrite it with "
                              "a report (choose another output path)")
        reason = unwritable_reason(real)
        if reason is not None:
            raise RagcovError(f"{output}: {reason}; refusing to change it (choose another "
                              "output path)")
        folder = next(p for p in (real.parent, *real.parents) if p.exists())
        if not os.access(folder, os.W_OK | os.X_OK):
            raise RagcovError(f"{output}: cannot write in {folder} (permission denied)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_SQLITE_HEADER = b"SQLite format 3\x00"


def _is_data_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                return False
    except OSError:
        return False
    from ragcov.data import CoverageData

    try:
        CoverageData(path).meta()
    except RagcovError:
        return False
    return True


def _recorded_corpus(path: Path) -> str | None:
    """The corpus path a data file recorded; None for anything else (its reader reports it)."""
    if not _is_data_file(path):
        return None
    from ragcov.data import CoverageData
    from ragcov.data.datafile import CORPUS_SOURCE

    try:
        source = CoverageData(path).annotation(CORPUS_SOURCE)
    except RagcovError:
        return None
    return source if isinstance(source, str) else None


def emit(text: str, output: Path | None, what: str) -> None:
    """A report to stdout (``None`` or ``-``) or atomically to ``output``.

    Not through rich: chunk ids, query texts and XML are written exactly as they are.
    A device or FIFO (``-o /dev/null``) is written to, never replaced.
    """
    if not text.endswith("\n"):
        text += "\n"
    if write_output(text, output):
        from ragcov.cli.console import out

        out.print(f"Wrote {what} to {output}", markup=False)


def write_output(text: str, output: Path | None) -> bool:
    """``text`` to stdout (``None`` or ``-``) or to ``output``; True when it went to a file."""
    if to_stdout(output):
        sys.stdout.write(text)
        return False
    from ragcov.files import write_text_atomic

    assert output is not None
    write_text_atomic(output, text)
    return True
