"""``python -m research rq1|rq2|rq3|generation``: the experiments' command line.

Run from the repository root (the harness is not installed with ragcov). The options
every experiment takes (dataset, retriever, k, seed, chunking, output folder) are
declared once, in :data:`SHARED_FIRST` and :data:`SHARED_LAST`; :func:`experiment`
adds them to each command, which declares only its own options and receives the
shared ones as one :class:`Shared` value. User errors print one line and exit 1.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from research.common import ExperimentSetup

app = typer.Typer(
    name="research",
    help="Reproduce the paper's research questions on a dataset (FinQA, ConvFinQA, PubMedQA, "
    "a BEIR folder). Run from the repository root: python -m research COMMAND --help.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# The shared option block ---------------------------------------------------------------
DatasetSpec = Annotated[str, typer.Option(
    "--dataset", help="finqa, convfinqa, pubmedqa, or the path of a BEIR-style folder "
    "(corpus.jsonl, queries.jsonl, optional qrels).")]
DataPath = Annotated[Path | None, typer.Option(
    "--data", help="Where the named dataset's files are (a file or folder); not needed for a "
    "BEIR folder.")]
RetrieverName = Annotated[str, typer.Option(
    help="dense, bm25, module:attr (your own retriever) or an http(s) URL.")]
Model = Annotated[str | None, typer.Option(
    help="Embedding model for the dense retriever: a sentence-transformers name or path.")]
K = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved per query (top-k).")]
Seed = Annotated[int, typer.Option(help="Seed for every random draw (results are reproducible).")]
ChunkSize = Annotated[int, typer.Option(
    help="Characters per chunk when the dataset gives whole documents (FinQA/ConvFinQA pages).")]
ChunkOverlap = Annotated[int, typer.Option(help="Characters of overlap between chunks.")]
OutDir = Annotated[Path | None, typer.Option(
    "--out", help="Folder for the tables (Markdown, CSV, JSON) and plots (PNG); "
    "default results/<rq>-<dataset>-<retriever>-k<k>.")]

REQUIRED = inspect.Parameter.empty
# (parameter, option type, default); --help lists a command's own options between the two.
SHARED_FIRST: tuple[tuple[str, Any, Any], ...] = (
    ("dataset", DatasetSpec, REQUIRED), ("data", DataPath, None),
    ("retriever", RetrieverName, "dense"), ("model", Model, None), ("k", K, 5))
SHARED_LAST: tuple[tuple[str, Any, Any], ...] = (
    ("seed", Seed, 0), ("chunk_size", ChunkSize, 1000), ("chunk_overlap", ChunkOverlap, 100),
    ("out_dir", OutDir, None))


@dataclass(frozen=True)
class Shared:
    """The shared options, as the runners take them."""
    setup: ExperimentSetup
    seed: int
    out_dir: Path | None


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=default)


def experiment(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``func(shared, **own_options)`` as the command ``name``, shared options added.

    typer reads a command's options from its signature, so the registered function is
    given one: the shared options around ``func``'s own (every one keyword-only).
    """
    def register(func: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(func, eval_str=True).parameters.values())[1:]
        params = ([_parameter(*p) for p in SHARED_FIRST]
                  + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
                  + [_parameter(*p) for p in SHARED_LAST])

        def command(**options: Any) -> None:
            from research.common import ExperimentSetup

            shared = {p[0]: options.pop(p[0]) for p in SHARED_FIRST + SHARED_LAST}
            setup = ExperimentSetup(shared["dataset"], shared["data"], shared["retriever"],
                                    shared["model"], shared["k"], shared["chunk_size"],
                                    shared["chunk_overlap"])
            func(Shared(setup, shared["seed"], shared["out_dir"]), **options)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__doc__ = func.__name__, func.__doc__
        app.command(name)(command)
        return func

    return register


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise RagcovError(f"{what} must be comma-separated whole numbers, got {text!r}") from exc
    if not values or any(v < 1 for v in values):
        raise RagcovError(f"{what} must be whole numbers of at least 1, got {text!r}")
    return values


# The experiments ----------------------------------------------------------------------
@experiment("rq1")
def rq1(
    shared: Shared,
    sizes: Annotated[str, typer.Option(help="Suite sizes, comma-separated.")] = "10,25,50,100",
    suites: Annotated[int, typer.Option(help="Random suites drawn per size.")] = 100,
) -> None:
    """RQ1: does chunk coverage agree with diversity measures (entropy, Gini, Jaccard)?"""
    from research.rq1 import run_rq1

    result = run_rq1(shared.setup, sizes=_ints(sizes, "--sizes"), suites=suites, seed=shared.seed,
                     out_dir=shared.out_dir, console=out)
    out.print(result.markdown, markup=False)


@experiment("rq2")
def rq2(
    shared: Shared,
    repeats: Annotated[int, typer.Option(
        help="Seeded runs of the random and overlap-biased strategies, averaged.")] = 30,
    after_saturation: Annotated[str, typer.Option(
        help="Greedy order once nothing adds coverage: random or reset.")] = "random",
) -> None:
    """RQ2: how many fewer tests does coverage-guided selection need than random and overlap?"""
    from research.rq2 import run_rq2

    result = run_rq2(shared.setup, repeats=repeats, seed=shared.seed,
                     after_saturation=after_saturation, out_dir=shared.out_dir, console=out)
    out.print(result.markdown, markup=False)


@experiment("rq3")
def rq3(
    shared: Shared,
    repeats: Annotated[int, typer.Option(
        help="Seeded runs of each order (random, overlap, coverage tie-breaks).")] = 30,
    taus: Annotated[str, typer.Option(
        help="Jaccard thresholds for grouping failures into faults, comma-separated.")]
    = "0.6,0.7,0.8,0.9",
    metrics: Annotated[str, typer.Option(
        help="Failure definitions from the labels: hit (fails at 0) and/or "
        "context_relevance<X (fails below X), comma-separated.")] = "hit,context_relevance<0.4",
    budgets: Annotated[str, typer.Option(
        help="Budgeted suites as fractions of the pool (NAPFD of the first B tests).")]
    = "0.1,0.25,0.5",
) -> None:
    """RQ3: do coverage-guided orders reveal distinct faults earlier (APFD) than random?"""
    from research.rq3 import parse_failure_defs, parse_floats, run_rq3

    result = run_rq3(shared.setup, repeats=repeats, taus=parse_floats(taus, "--taus", 0.0, 1.0),
                     failure_defs=parse_failure_defs(metrics),
                     budgets=parse_floats(budgets, "--budgets", 0.0, 1.0), seed=shared.seed,
                     out_dir=shared.out_dir, console=out)
    out.print(result.markdown, markup=False)


@app.command("rq3-verdict")
def rq3_verdict(
    folders: Annotated[list[Path], typer.Argument(
        help="Output folders of `python -m research rq3` runs (each holding rq3.json).")],
    out_file: Annotated[Path, typer.Option(
        "--out", help="Where to write the Markdown table.")] = Path("results/rq3-verdict.md"),
    taus: Annotated[str, typer.Option(help="Taus to tabulate, comma-separated.")] = "0.8",
) -> None:
    """RQ3's aim across runs: each order's APFD against random beside its exploration cost."""
    from research.rq3 import parse_floats
    from research.rq3.verdict import write_verdict

    try:
        text = write_verdict(folders, out_file, parse_floats(taus, "--taus", 0.0, 1.0))
    except RagcovError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from None
    out.print(text, markup=False)


@experiment("generation")
def generation(
    shared: Shared,
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
) -> None:
    """Generation: does aiming at uncovered chunks beat random and overlap seeding?"""
    from research.generation import run_generation_experiment

    options = {"model": llm_model, "base_url": base_url, "api_key_env": api_key_env,
               "mode": mode, "temperature": temperature, "max_tokens": max_tokens}
    if generator == "extractive":
        options = {}
    result = run_generation_experiment(
        shared.setup, generator, budget, repeats=repeats,
        arms=[a.strip() for a in arms.split(",") if a.strip()], docs=docs or None,
        seed=shared.seed, thresholds=[float(t) for t in _ints(thresholds, "--thresholds")],
        generator_options=options, out_dir=Path(shared.out_dir) if shared.out_dir else None,
        console=out)
    out.print(result.markdown, markup=False)
    out.print("Wrote " + ", ".join(str(p) for p in result.paths), markup=False)


@experiment("topics")
def topics(
    shared: Shared,
    budget: Annotated[int, typer.Option(
        help="Questions in the shipped (random) and the coverage-selected suite.")] = 100,
    generate_budget: Annotated[int, typer.Option(
        help="Extractive questions `generate --topic` writes for the darkest topic.")] = 10,
) -> None:
    """Coverage by topic: per-topic CC of a shipped and a coverage-selected suite, stability."""
    from research.topics import run_topics

    result = run_topics(shared.setup, budget=budget, seed=shared.seed,
                        generate_budget=generate_budget, out_dir=shared.out_dir, console=out)
    out.print(result.markdown, markup=False)
    out.print("Wrote " + ", ".join(str(p) for p in result.paths), markup=False)


# Entry point --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Run the app; a user error (bad option value, missing file) is one line and exit 1."""
    try:
        app(args=argv, prog_name="python -m research")
    except RagcovError as exc:
        err.print(f"research: error: {exc}", markup=False)
        sys.exit(1)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        err.print(f"research: error: {where}{exc.strerror or exc}", markup=False)
        sys.exit(1)
