"""``ragcov generate``: write new test questions aimed at chunks nobody retrieves yet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragcov import api
from ragcov.cli.console import err, out
from ragcov.cli.options import (
    DEFAULT_DATA_PATH,
    ApiKeyEnv,
    Backend,
    BaseURL,
    ChunkOverlap,
    ChunkSize,
    CorpusPath,
    DataFile,
    Device,
    Dtype,
    Index,
    K,
    LLMModel,
    LLMTimeout,
    OldLLMModel,
    RetrieverName,
    Split,
)
from ragcov.cli.options import llm_model as llm_model_of
from ragcov.errors import RagcovError


def generate(
    corpus: CorpusPath,
    generator: Annotated[str, typer.Option(
        help="openai (any OpenAI-compatible endpoint), llama-cpp (a local GGUF, run in a child process) or "
        "extractive (no LLM).")] = "extractive",
    budget: Annotated[int, typer.Option(help="Questions to add to the suite.")] = 20,
    queries: Annotated[Path | None, typer.Option(
        help="A seed suite whose coverage generation starts from.")] = None,
    data_file: DataFile = DEFAULT_DATA_PATH,
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="The generated suite with provenance (JSON lines); rerun the "
        "same command to resume.")] = Path("generated.jsonl"),
    llm_model: LLMModel = None,
    model: OldLLMModel = None,
    base_url: BaseURL = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    mode: Annotated[str | None, typer.Option(
        help="chat or completion (default: chat for openai, completion for llama-cpp).")] = None,
    prompt: Annotated[Path | None, typer.Option(
        help="Your own Jinja2 prompt template (sees {{ passage }} and {{ passages }}).")] = None,
    target: Annotated[float | None, typer.Option(
        help="Stop once chunk coverage reaches this percentage.")] = None,
    targets: Annotated[Path | None, typer.Option(
        "--targets", help="Aim at the untested chunks of a `ragcov gap --format json` file, "
        "most production traffic first.")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="ID|LABEL", help="Aim at the untested chunks of one topic of the "
        "data file (`ragcov topics`): its number, label, or a word of its label.")] = None,
    strategy: Annotated[str, typer.Option(
        help="coverage (aim at uncovered chunks), random (any chunk) or overlap (covered "
        "chunks).")] = "coverage",
    policy: Annotated[str, typer.Option(
        help="Which uncovered chunk next: isolated (least similar to anything covered; "
        "measured best), order (corpus order) or random.")] = "isolated",
    targets_per_call: Annotated[int, typer.Option(help="Target chunks per question.")] = 1,
    patience: Annotated[int, typer.Option(
        help="Stop after this many attempts in a row without coverage gain (0: never).")] = 10,
    max_attempts: Annotated[int, typer.Option(
        help="Attempts at one uncovered chunk before giving it up.")] = 2,
    max_calls: Annotated[int | None, typer.Option(
        help="Questions asked at most, accepted or rejected (default: 5 x budget).")] = None,
    retriever: RetrieverName = None,
    embedding_model: Annotated[str | None, typer.Option(
        help="Embedding model for the dense retriever.")] = None,
    backend: Backend = None,
    k: K = 5,
    index: Index = "flat",
    chunk_size: ChunkSize = 1000,
    chunk_overlap: ChunkOverlap = 100,
    split: Split = False,
    seed: Annotated[int, typer.Option(help="Seed for target draws and LLM sampling.")] = 0,
    temperature: Annotated[float, typer.Option(help="LLM sampling temperature.")] = 0.7,
    max_tokens: Annotated[int, typer.Option(help="Tokens per LLM answer at most.")] = 48,
    timeout: LLMTimeout = 60.0,
    retries: Annotated[int, typer.Option(
        help="Retries of a failed HTTP request (timeouts, 429, 5xx, malformed replies).")] = 4,
    ragas: Annotated[Path | None, typer.Option(
        help="Also write the suite as a RAGAS test set (JSON).")] = None,
    deepeval: Annotated[Path | None, typer.Option(
        help="Also write the suite as DeepEval goldens (JSON).")] = None,
    include_unreachable: Annotated[bool, typer.Option(
        "--include-unreachable", help="Also aim at chunks `ragcov probe` found no self-query "
        "reaches (skipped by default: their questions always fail the retrieval check).")]
    = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary.")] = False,
    device: Device = "auto",
    dtype: Dtype = "auto",
) -> None:
    """Generate questions aimed at uncovered chunks; each is checked against the retriever."""
    if str(output) == "-":
        raise RagcovError("-o -: generate resumes from its output file, so it needs a file path")

    def show(rec: dict[str, Any]) -> None:
        if "reason" in rec:
            out.print(f"  #{rec['seq']:>4} rejected ({rec['reason']})", markup=False)
        else:
            mark = "hit " if rec["hit_target"] else "miss"
            out.print(f"  #{rec['seq']:>4} {mark} +{rec['gain']} CC {rec['cc_after'] * 100:5.1f}%"
                      f"  {rec['text']}", markup=False)

    summary = api.generate_questions(
        corpus, output, data_file, k=k, queries=queries, targets=targets, topic=topic,
        chunking={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "split": split},
        retriever={"retriever": retriever, "model": embedding_model, "index": index,
                   "backend": backend, "device": device, "dtype": dtype},
        generator={"kind": generator, "model": llm_model_of(llm_model, model, "--model"),
                   "base_url": base_url, "api_key_env": api_key_env, "mode": mode,
                   "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
                   "timeout": timeout, "retries": retries},
        loop={"budget": budget, "strategy": strategy, "policy": policy,
              "target_cc": None if target is None else target / 100.0,
              "targets_per_call": targets_per_call, "patience": patience,
              "max_attempts": max_attempts, "seed": seed, "max_calls": max_calls,
              "include_unreachable": include_unreachable},
        ragas=ragas, deepeval=deepeval, progress=not quiet, on_step=None if quiet else show,
        notify=lambda line: err.print(line, markup=False, highlight=False),
        warn=None if quiet else (lambda line: err.print(line, markup=False)))
    _print_summary(summary)
    if targets is not None and summary.new == 0 and summary.stop_reason == "exhausted":
        err.print(f"ragcov: warning: every chunk {targets} aims at is already covered in "
                  f"{summary.data_file}; give --data-file the tests' data file that "
                  f"`ragcov gap --tests` read", markup=False)


def _print_summary(s: Any) -> None:
    rej = sum(s.rejected.values())
    reasons = ", ".join(f"{n} {why}" for why, n in s.rejected.most_common())
    out.print(f"Generated {s.accepted} questions into {s.out} "
              f"({s.resumed} found from an earlier run, {s.new} new); data file {s.data_file}",
              markup=False)
    out.print(f"Generator {s.generator} ({s.model}): {s.calls} calls, "
              f"{s.prompt_tokens + s.completion_tokens} tokens ({s.prompt_tokens} prompt, "
              f"{s.completion_tokens} completion); rejected {rej}"
              + (f" ({reasons})" if reasons else ""), markup=False)
    hit_rate = f"{s.hits / s.accepted * 100:.0f}%" if s.accepted else "-"
    out.print(f"Reached their target: {s.hits}/{s.accepted} ({hit_rate}); chunk coverage "
              f"{s.cc_start * 100:.1f}% -> {s.cc_end * 100:.1f}% of {s.chunks} chunks",
              markup=False)
    if s.accepted:
        out.print(f"The questions are kept apart until reviewed: reports and gates leave them out "
                  f"(--include-generated counts them) until your suite holds them: add the ones "
                  f"you keep from {s.out} to it and run it", markup=False)
    if s.skipped_unreachable:
        shown = ", ".join(s.skipped_unreachable[:5])
        more = " ..." if len(s.skipped_unreachable) > 5 else ""
        out.print(f"Skipped {len(s.skipped_unreachable)} unreachable chunk(s) (no probe retrieves "
                  f"them; --include-unreachable to aim at them): {shown}{more}", markup=False)
    out.print(f"Stopped: {s.stop_reason}; longest stretch without gain: "
              f"{s.longest_no_gain} attempts", markup=False)
    if s.never_reached:
        shown = ", ".join(s.never_reached[:20])
        more = f" (and {len(s.never_reached) - 20} more)" if len(s.never_reached) > 20 else ""
        (err if s.plateau else out).print(
            f"{'Plateau: ' if s.plateau else ''}{len(s.never_reached)} targeted chunk(s) never "
            f"reached: {shown}{more}", markup=False)


__all__ = ["generate", "RagcovError"]
