"""Option types and small helpers shared by several commands.

An option that means the same thing in several commands is declared once here, so
its flag, help text and default cannot drift between commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ragcov.api import DEFAULT_DATA_FILE
from ragcov.api.cli_support import to_stdout
from ragcov.config import MAX_PRECISION
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
IdKey = Annotated[str | None, typer.Option(
    "--id-key", help="Metadata key holding the app's chunk id in a store (default: chunk_id when "
    "the store's rows have it, else the store's own ids; 'store' keeps the store's ids).")]
ChunkSize = Annotated[int, typer.Option(help="Characters per chunk when ragcov does the chunking.")]
ChunkOverlap = Annotated[int, typer.Option(help="Characters of overlap between chunks.")]
ChunkIds = Annotated[str | None, typer.Option(
    "--chunk-ids", metavar="position|content", help="How ragcov names the chunks it splits: "
    "position (DOC#N, the default) or content (DOC@START-STOP:HASH8: the same text at the same "
    "span keeps its id across runs and re-chunks). Recorded in the data file; --append and "
    "probe use the file's own.")]
Split = Annotated[bool, typer.Option(
    "--split/--no-split", help="Read a .jsonl corpus as whole documents and chunk them.")]
Documents = Annotated[Path | None, typer.Option(
    "--documents", help="Whole documents (JSONL, the keys --split reads) of a corpus chunked "
    "elsewhere: each chunk is located in its document's text, for text coverage.")]
K = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved per query (top-k).")]
RetrieverName = Annotated[str | None, typer.Option(
    help="dense, bm25, store (the --corpus store's own search), module:attr (your own "
    "retriever) or an http(s) URL. Default: store when --corpus is a store URL, else dense.")]


Model = Annotated[str | None, typer.Option(
    help="Embedding model for the dense retriever and for a store's queries: a "
    "sentence-transformers name or path. Over a store it is checked against the stored vectors.")]
Backend = Annotated[str | None, typer.Option(
    help="Encoder of the dense retriever and a store's queries: torch, onnx (the same top-k, "
    "faster; exported once into the cache) or onnx-int8 (faster again; other embeddings, "
    "recorded in the data file). Default: onnx where ONNX Runtime can serve the model, else torch.")]
Index = Annotated[str, typer.Option(help="Dense index: flat (exact) or hnsw (approximate).")]
Device = Annotated[str, typer.Option(
    help="Where the dense retriever and a store's query encoder embed: auto (a CUDA GPU when "
    "PyTorch sees one, then Apple's MPS, then the CPU), cpu, cuda (every visible GPU for a "
    "large corpus), cuda:N or mps. Retrievers that embed nothing ignore it.")]
# Not --precision: that is the report commands' digits, and a config file's flat
# `precision` reaches every command with an option of that name.
Dtype = Annotated[str, typer.Option(
    help="Precision of the dense retriever on a GPU: auto (fp32), fp32, fp16 or bf16. fp16 "
    "and bf16 need CUDA; their vectors differ from fp32's, so they are cached apart and "
    "recorded in the data file.")]
Support = Annotated[str, typer.Option(help="retrieved or corpus.")]
HnswM = Annotated[int | None, typer.Option(
    "--hnsw-m", help="With --index hnsw: neighbours per node of the graph (default 32; the graph "
    "is rebuilt).")]
HnswEfSearch = Annotated[int | None, typer.Option(
    "--hnsw-ef-search", help="With --index hnsw: candidates a search keeps (default 128).")]
Rerank = Annotated[str | None, typer.Option(
    "--rerank", metavar="MODEL|module:attr", help="Rerank the first stage's candidates: a "
    "sentence-transformers CrossEncoder name or path, or your own function (query, candidates) "
    "-> candidates in their new order. Needs --rerank-depth.")]
RerankDepth = Annotated[int | None, typer.Option(
    "--rerank-depth", help="Candidates the first stage retrieves for the reranker (at least k).")]
MinIndexRecall = Annotated[float | None, typer.Option(
    "--min-index-recall", help="Exit with status 2 when the index's recall@k against exact "
    "search (percent; of the tests, and of the probes) is below this.")]
MaxIndexHidden = Annotated[int | None, typer.Option(
    "--max-index-hidden", help="Exit with status 2 when more chunks than this are hidden by the "
    "index (exact search reaches them, the index does not).")]
ShowIds = Annotated[bool, typer.Option(
    "--show-ids", help="List chunks by their ids instead of DOC:N ranges (N counts from 1, as "
    "Cobertura and lcov lines do). A single chunk is always named by its id.")]
# Declared once, for every command that takes them.
Scheduler = Annotated[str | None, typer.Option(
    help="Dask scheduler address; default: a LocalCluster on 127.0.0.1.")]
DaskWorkers = Annotated[int | None, typer.Option(
    help="Worker processes of the LocalCluster for --engine dask (default: one per core).")]
LLMModel = Annotated[str | None, typer.Option(
    "--llm-model", help="The LLM: openai, the served model's name; llama-cpp, a GGUF file "
    "(default: Gemma 3 270M).")]
# generate's --model meant its LLM; everywhere else --model is the embedding model.
OldLLMModel = Annotated[str | None, typer.Option(
    "--model", hidden=True, help="The LLM's old spelling in generate: use --llm-model.")]
OldGeneratorModel = Annotated[str | None, typer.Option(
    "--generator-model", hidden=True, help="The LLM's old spelling in probe: use --llm-model.")]
BaseURL = Annotated[str | None, typer.Option(
    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")]
ApiKeyEnv = Annotated[str, typer.Option(
    help="Name of the environment variable holding the API key.")]
LLMTimeout = Annotated[float, typer.Option(
    help="Seconds each HTTP request to the LLM may take in all (a deadline).")]


def llm_model(given: str | None, old: str | None, old_flag: str) -> str | None:
    """The LLM named by --llm-model, or by its old spelling with one deprecation line."""
    if old is None:
        return given
    if given is not None and given != old:
        raise RagcovError(f"--llm-model {given!r} and {old_flag} {old!r} name two LLMs; give "
                          "--llm-model only")
    from ragcov.cli.console import err

    err.print(f"ragcov: warning: {old_flag} is deprecated for the LLM and goes in the next "
              "release: use --llm-model (--model is the embedding model, as in run and probe)",
              markup=False)
    return old


FailUnder = Annotated[float | None, typer.Option(
    "--fail-under", help="Exit with status 2 when total chunk coverage (percent), rounded as "
    "`ragcov report --format total` prints it, is below this.")]
FailUnderText = Annotated[float | None, typer.Option(
    "--fail-under-text", help="Exit with status 2 when text coverage (percent of the documents' "
    "characters in retrieved chunks; needs a corpus ragcov split, or --documents) is below this.")]


def load_corpus_opts(corpus: str | Path, chunk_size: int, chunk_overlap: int, split: bool,
                     doc_key: str | None = None, documents: Path | None = None,
                     id_key: str | None = None, chunk_ids: str | None = None):
    from ragcov.api import load_corpus

    return load_corpus(corpus, chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split,
                       doc_key=doc_key, documents=documents, id_key=id_key, chunk_ids=chunk_ids)


# json, xml and lcov print no total, but gate one: a flat ``precision`` setting reaches
# their gate as it reaches report's, so one config gives one answer (coverage.py's
# [report] precision drives every command's fail_under).
GatePrecision = Annotated[int | None, typer.Option(
    "--precision", help="Digits after the decimal point --fail-under compares the total at "
    "(default 2, as `report --format total` prints it).")]


def check_precision(precision: int) -> None:
    if not 0 <= precision <= MAX_PRECISION:
        raise RagcovError(f"--precision must be from 0 to {MAX_PRECISION}, got {precision}")


def check_fail_under(fail_under: float | None) -> None:
    """coverage.py refuses a gate outside 0-100: one above always fails, one below never."""
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise RagcovError(f"--fail-under must be a percentage from 0 to 100, got {fail_under:g}")


def gate(coverage: float, fail_under: float | None, precision: int | None = None,
         what: str = "total", shown_precision: int | None = None, flag: str = "fail-under") -> None:
    """``--fail-under`` for every command, run after its report is written (as coverage.py).

    One check and one message (:func:`ragcov.summary.fail_under_failure`), so ``report``,
    ``json``, ``xml``, ``lcov``, ``html``, ``badge`` and ``gap`` can never disagree.
    """
    from ragcov.api.cli_support import fail_under_message

    fail(fail_under_message(coverage, fail_under, precision, what, shown_precision, flag))


def text_gate(text: Any, fail_under_text: float | None, precision: int | None = None) -> None:
    """``--fail-under-text``: the same gate and message as ``--fail-under``, on text coverage."""
    if fail_under_text is None:
        return
    gate(text.coverage, fail_under_text, precision, what="text coverage", flag="fail-under-text")


def check_text_gate(text: Any, fail_under_text: float | None) -> None:
    """Refuse ``--fail-under-text`` on a file that does not know where its chunks lie,
    before anything is printed: a gate with no figure must not pass."""
    if fail_under_text is None:
        return
    if not 0 <= fail_under_text <= 100:
        raise RagcovError(f"--fail-under-text must be a percentage from 0 to 100, got {fail_under_text:g}")
    if text is None:
        raise RagcovError("--fail-under-text: this data file does not know where its chunks lie in "
                          "their documents (chunks given without them); record it with --split, "
                          "or with --documents DOCS.jsonl beside the chunks")


def fail(message: str | None) -> None:
    """Exit with status 2 after the report when a gate failed, as every ``--fail-under`` does."""
    if message is not None:
        from ragcov.cli.console import err

        err.print(message, markup=False)
        raise typer.Exit(2)


def emit(text: str, output: Path | None, what: str, format: str = "text") -> None:
    """A report in ``format`` to stdout (``None`` or ``-``) or atomically to ``output``.

    Not through rich: XML, JSON and ids in them are written exactly as they are. A
    report for people (text, Markdown) has its control characters escaped on the way out
    (:func:`ragcov.controls.shown`). A device or FIFO (``-o /dev/null``) is written to,
    never replaced.
    """
    if not text.endswith("\n"):
        text += "\n"
    if write_output(text, output, format):
        from ragcov.cli.console import out

        out.print(f"Wrote {what} to {output}", markup=False)


def write_output(text: str, output: Path | None, format: str = "text") -> bool:
    """``text`` in ``format`` to stdout (``None`` or ``-``) or to ``output``; True when it
    went to a file. The one sink of rendered reports: a format that is not data
    (:data:`ragcov.controls.DATA_FORMATS`) is escaped here, whatever its renderer did."""
    from ragcov.controls import shown

    text = shown(text, format)
    if to_stdout(output):
        sys.stdout.write(text)
        return False
    from ragcov.files import write_text_atomic

    assert output is not None
    write_text_atomic(output, text)
    return True
