"""``ragcov experiment generation``: coverage-guided vs random and overlap seeding (docs/method.md §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcov.cli import K, Model, RetrieverName, out
from ragcov.commands.experiment import (
    DataPath,
    DatasetSpec,
    ExpChunkOverlap,
    ExpChunkSize,
    OutDir,
    Seed,
    experiment_app,
)


@experiment_app.command("generation")
def generation(
    dataset: DatasetSpec,
    data: DataPath = None,
    generator: Annotated[str, typer.Option(
        help="extractive, llama-cpp or openai (as for 'ragcov generate').")] = "extractive",
    budget: Annotated[int, typer.Option(help="Generated questions per run.")] = 50,
    repeats: Annotated[int, typer.Option(help="Seeded runs per arm.")] = 1,
    arms: Annotated[str, typer.Option(
        help="Comma-separated: coverage, coverage-isolated, coverage-random, random, "
        "overlap.")] = "coverage,random,overlap",
    docs: Annotated[int, typer.Option(
        help="Use the first N documents of the dataset (0: all).")] = 150,
    thresholds: Annotated[str, typer.Option(
        help="Coverage levels (percent) for the tests-to-X% columns.")] = "10,20,30,40,50",
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", help="openai: served model name; llama-cpp: GGUF file.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint.")] = None,
    api_key_env: Annotated[str, typer.Option(
        help="Environment variable holding the API key.")] = "OPENAI_API_KEY",
    mode: Annotated[str | None, typer.Option(help="chat or completion.")] = None,
    temperature: Annotated[float, typer.Option(help="LLM sampling temperature.")] = 0.7,
    max_tokens: Annotated[int, typer.Option(help="Tokens per LLM answer at most.")] = 48,
    retriever: RetrieverName = "dense",
    model: Model = None,
    k: K = 5,
    seed: Seed = 0,
    chunk_size: ExpChunkSize = 1000,
    chunk_overlap: ExpChunkOverlap = 100,
    out_dir: OutDir = None,
) -> None:
    """Generation: does aiming at uncovered chunks beat random and overlap seeding?"""
    from ragcov.commands.experiment import _ints
    from ragcov.experiments.common import ExperimentSetup
    from ragcov.experiments.generation import run_generation_experiment

    setup = ExperimentSetup(dataset, data, retriever, model, k, chunk_size, chunk_overlap)
    options = {"model": llm_model, "base_url": base_url, "api_key_env": api_key_env,
               "mode": mode, "temperature": temperature, "max_tokens": max_tokens}
    if generator == "extractive":
        options = {}
    result = run_generation_experiment(
        setup, generator, budget, repeats=repeats,
        arms=[a.strip() for a in arms.split(",") if a.strip()], docs=docs or None, seed=seed,
        thresholds=[float(t) for t in _ints(thresholds, "--thresholds")],
        generator_options=options, out_dir=Path(out_dir) if out_dir else None, console=out)
    out.print(result.markdown, markup=False)
    out.print("Wrote " + ", ".join(str(p) for p in result.paths), markup=False)
