"""``ragcov probe``: can the retriever reach each chunk at all? Self-queries, no LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov import api
from ragcov.api import cli_support
from ragcov.api.cli_support import check_outputs
from ragcov.cli.console import err
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    ApiKeyEnv,
    Backend,
    BaseURL,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DaskWorkers,
    DataFile,
    Device,
    DocKey,
    Dtype,
    HnswEfSearch,
    HnswM,
    IdKey,
    Index,
    LLMModel,
    LLMTimeout,
    MaxIndexHidden,
    MinIndexRecall,
    Model,
    OldGeneratorModel,
    Rerank,
    RerankDepth,
    RetrieverName,
    Scheduler,
    ShowIds,
    Split,
    emit,
    fail,
    to_stdout,
    write_output,
)
from ragcov.cli.options import llm_model as llm_model_of
from ragcov.errors import RagcovError
from ragcov.files import json_text, jsonl_text
from ragcov.reporters.reachability import (
    draft_suite,
    lost_gold_text,
    reachability_json,
    reachability_text,
)


def probe(
    corpus: CorpusPath,
    retriever: RetrieverName = None,
    model: Model = None,
    backend: Backend = None,
    index: Index = "flat",
    data_file: DataFile = DEFAULT_DATA_PATH,
    sample: Annotated[int | None, typer.Option(
        help="Probe a seeded random sample of this many chunks (default: every chunk).")] = None,
    include: Annotated[list[str] | None, typer.Option(
        help="Probe only documents whose id matches this glob (repeatable).")] = None,
    omit: Annotated[list[str] | None, typer.Option(
        help="Skip documents whose id matches this glob (repeatable).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    generator: Annotated[str | None, typer.Option(
        help="Also ask an LLM for one question per chunk: openai, llama-cpp or extractive "
        "(as `ragcov generate`).")] = None,
    llm_model: LLMModel = None,
    generator_model: OldGeneratorModel = None,
    base_url: BaseURL = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    timeout: LLMTimeout = 60.0,
    qrels: Annotated[Path | None, typer.Option(
        help="Relevance labels: list the relevant chunks no test retrieves (lost gold), "
        "and those no probe retrieves either.")] = None,
    qrels_level: Annotated[str | None, typer.Option(help="doc or chunk (default: detected).")]
    = None,
    format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the report here (default: stdout).")] = None,
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    doc_key: DocKey = None,
    id_key: IdKey = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or report.")] = False,
    show_ids: ShowIds = False,
    drafts_out: Annotated[Path | None, typer.Option(
        "--drafts-out", help="Write a draft test for each untested chunk (the probe question "
        "that reached it, with the chunk it should retrieve) as a JSONL suite to review and "
        "add; - for stdout.")] = None,
    device: Device = "auto",
    dtype: Dtype = "auto",
    rerank: Rerank = None,
    rerank_depth: RerankDepth = None,
    hnsw_m: HnswM = None,
    hnsw_ef_search: HnswEfSearch = None,
    exact: Annotated[bool, typer.Option(
        "--exact/--no-exact", help="Also search every probe and test exactly over the vectors "
        "the index holds, to tell a chunk lost to the index from one lost to the embedding "
        "(retrievers with vectors: dense, vector stores).")] = True,
    engine: Annotated[str, typer.Option(
        help="local (this process) or dask (the self-queries retrieved on a Dask cluster, each "
        "worker building the retriever once; recorded here as they come back).")] = "local",
    scheduler: Scheduler = None,
    workers: DaskWorkers = None,
    min_index_recall: MinIndexRecall = None,
    max_index_hidden: MaxIndexHidden = None,
    ctx: typer.Context = None,  # type: ignore[assignment]
) -> None:
    """Probe every chunk with its own words and say which uncovered chunks no test could reach.

    Each chunk's most distinctive terms and sentence go through the recorded run's
    retriever, k and corpus; probes are kept apart, so the suite's coverage never changes.
    Rerun to resume an interrupted probe.
    """
    if format not in ("text", "json"):
        raise RagcovError(f"unknown --format {format!r}: expected text or json")
    check_outputs([output, drafts_out], [data_file, qrels, corpus])
    settings = api.ProbeSettings.checked(
        corpus, data_file, retriever=retriever, model=model, backend=backend, index=index,
        hnsw_m=hnsw_m, hnsw_ef_search=hnsw_ef_search, device=device, dtype=dtype,
        rerank=rerank, rerank_depth=rerank_depth, qrels=qrels, qrels_level=qrels_level,
        min_index_recall=min_index_recall, max_index_hidden=max_index_hidden,
        generator=generator, generator_options=dict(
            model=llm_model_of(llm_model, generator_model, "--generator-model"),
            base_url=base_url, api_key_env=api_key_env, timeout=timeout),
        include=include or (), omit=omit or (), seed=seed, sample=sample, exact=exact,
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split, doc_key=doc_key, id_key=id_key,
        engine=engine, scheduler=scheduler, workers=workers)
    if settings.from_data_file and not quiet:
        # Said, not assumed: a probe through another retriever than the suite's measures
        # another thing, so the one taken from the data file is named.
        named = (f"{settings.retriever} ({settings.model})" if settings.model
                 else settings.retriever)
        err.print(f"ragcov: probing through the retriever {data_file} was recorded with: {named}",
                  markup=False)
    probed = api.probe_corpus(settings, progress=not quiet, notify=_say(quiet))
    done, gold = probed.run, probed.lost_gold
    if done.wordless and not quiet:
        err.print(f"ragcov: warning: {len(done.wordless)} chunk(s) have no word to build a probe "
                  f"from (first: {done.wordless[0]}); unreachable unless another probe reaches "
                  "them", markup=False)
    view = _as_the_report_counts(ctx, data_file, done.reachability)
    if drafts_out is not None:
        drafts = draft_suite(view)
        write_output(jsonl_text(drafts), drafts_out, "jsonl")
        if not quiet and not to_stdout(drafts_out):
            copied = sum(1 for d in drafts if "question" not in d)
            err.print(f"Wrote {len(drafts)} draft tests to {drafts_out}"
                      + (f" ({copied} copied from a chunk: write each one's question before "
                         "running them)" if copied else ""), markup=False)
    gate = cli_support.index_failure(view, min_index_recall, max_index_hidden)
    if quiet and output is None:
        fail(gate)
        return
    if gold is not None and gold["not_in_corpus"] and not quiet:
        err.print(f"ragcov: warning: {len(gold['not_in_corpus'])} relevant {gold['level']} id(s) in "
                  f"{qrels} name nothing in the corpus (first: {gold['not_in_corpus'][0]}); left "
                  "out of lost gold", markup=False)
    if format == "json":
        text = json_text(reachability_json(view, gold)).rstrip("\n")
    else:

        text = reachability_text(view, show_ids=show_ids)
        if gold is not None:
            text += "\n" + lost_gold_text(gold)
    if not quiet:
        err.print(f"Probed {data_file}: {done.added} new probe(s), {done.already} already "
                  f"recorded", markup=False)
    emit(text, output, "the reachability report", format)
    fail(gate)


def _say(quiet: bool):  # type: ignore[no-untyped-def]
    """Where the api's lines go: stderr, unless ``--quiet``."""
    return None if quiet else (lambda line: err.print(line, markup=False, highlight=False))


def _as_the_report_counts(ctx: typer.Context | None, data_file: Path, whole: object) -> object:
    """The reachability totals over the chunks ``ragcov report`` counts under the config
    file: its include, omit and exclusions leave the same chunks out of both, so probe and
    report never print two numbers under one name (probe's own --include/--omit choose
    what to probe, not what a report counts)."""
    settings = ((ctx.find_root().default_map or {}) if ctx is not None else {}).get("report", {})
    keys = ("include", "omit", "exclude", "exclude_docs", "min_chunk_chars", "reachable")
    given = {key: settings[key] for key in keys if settings.get(key)}
    if not given:
        return whole
    lists = {k: tuple(v) for k, v in given.items() if k not in ("min_chunk_chars", "reachable")}
    scope = api.ReportScope(**lists, min_chunk_chars=given.get("min_chunk_chars", 0),
                            reachable=bool(given.get("reachable", False)))
    return api.audit_reachability(data_file, scope)
