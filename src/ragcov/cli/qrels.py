"""``ragcov qrels check``: relevance labels made on an old chunking, read against a new one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.cli.console import out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    ChunkIds,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DataFile,
    Documents,
    Split,
    emit,
)
from ragcov.errors import RagcovError
from ragcov.files import json_text

app = typer.Typer(help="Relevance labels across a re-chunk.", no_args_is_help=True,
                  add_completion=False)

SHOWN = 10  # labels listed per kind in the text output


@app.command("check")
def check(
    qrels: Annotated[Path, typer.Argument(
        metavar="QRELS", help="The labels (JSONL, TREC or BEIR TSV) made on the old chunking.")],
    corpus: CorpusPath,
    old_corpus: Annotated[Path | None, typer.Option(
        "--old-corpus", help="The chunks the labels were made on (default: the corpus the data "
        "file recorded).")] = None,
    data_file: DataFile = DEFAULT_DATA_PATH,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    chunk_ids: ChunkIds = None,
    documents: Documents = None,
    qrels_level: Annotated[str | None, typer.Option(
        help="doc or chunk, for TREC and BEIR files (default: chunk where the id is a chunk "
        "of either corpus).")] = None,
    fix: Annotated[bool, typer.Option(
        "--fix", help="Write the sound labels (valid, re-anchorable, merged) under their new "
        "ids to -o; split and orphaned labels are left out, never guessed.")] = False,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Where --fix writes the repaired labels.")] = None,
    format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """Sort each label into valid / re-anchorable / merged / split / orphaned, by text span."""
    if format not in ("text", "json"):
        raise RagcovError(f"--format must be text or json, got {format!r}")
    if fix and output is None:
        raise RagcovError("--fix writes the repaired labels to a file: give -o FILE")
    if output is not None and not fix:
        raise RagcovError("-o is where --fix writes: give --fix too")
    done = api.check_qrels(qrels, corpus, old_corpus, data_file, qrels_level,
                           fix=output if fix else None,
                           chunking={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap,
                                     "split": split, "documents": documents,
                                     "chunk_ids": chunk_ids})
    if format == "json":
        emit(json_text(done.as_dict()), Path("-"), "label check")
        return
    for line in check_lines(done):
        out.print(line, markup=False, highlight=False)


def check_lines(done) -> list[str]:  # type: ignore[no-untyped-def]
    """The check in a reader's words: counts, then the labels that need a person."""
    counts = done.counts()
    total = sum(counts.values())
    lines = [f"Labels of {done.source} against the new corpus (old chunking: {done.old_source}): "
             f"{total} label{'s' if total != 1 else ''}",
             "  " + ", ".join(f"{n} {kind}" for kind, n in counts.items())]
    for kind in ("split", "orphaned", "re-anchorable", "merged"):
        items = [f for f in done.fates if f.kind == kind]
        if not items:
            continue
        lines.append(f"{kind.capitalize()}:")
        for f in items[:SHOWN]:
            to = f" -> {', '.join(f.new_ids)}" if f.new_ids else ""
            lines.append(f"  line {f.line}: {f.query_id} {f.old_id}{to} ({f.why})")
        if len(items) > SHOWN:
            lines.append(f"  ... and {len(items) - SHOWN} more (--format json lists every one)")
    if done.rebuilt:
        lines.append(f"Note: {len(done.rebuilt)} document(s) were rebuilt from their new chunks "
                     "(their text was not given): give --split or --documents for exact spans")
    if done.missing_documents:
        lines.append(f"Documents gone from the new corpus: {len(done.missing_documents)} "
                     f"(first: {done.missing_documents[0]})")
    if done.new_documents:
        lines.append(f"Documents new in the new corpus: {len(done.new_documents)} "
                     f"(first: {done.new_documents[0]})")
    if done.written is not None:
        left = counts["split"] + counts["orphaned"]
        lines.append(f"Wrote {done.written}: {done.kept} label(s); {left} split or orphaned "
                     "label(s) left out for a person to judge")
    return lines
