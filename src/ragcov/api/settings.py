"""The settings of a recording and of a probe run, checked once where a command enters.

:class:`RunSettings` and :class:`ProbeSettings` are public (``ragcov.api`` exports them);
the rest are the rules they apply, shared by the verbs that add to a data file (probe,
generate, drift, import) and by the CLI's checks made before any work: which retriever,
model and backend a command that adds to a recorded run must use, the id scheme it splits
the corpus with, the reranking stage and the HNSW settings a retriever takes, the seed.

Light at import (the CLI's ``report --format total`` loads this module): the verbs'
modules load inside the functions that need them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.data import DEFAULT_DATA_FILE, CoverageData
from ragcov.data.schema import NoDataFile
from ragcov.errors import RagcovError

if TYPE_CHECKING:
    from ragcov.corpus import Corpus


def check_seed(seed: int) -> int:
    """Seeds are whole numbers from 0, as numpy's generators take them; refused before any
    work, in the user's words, instead of a numpy traceback after the corpus is embedded."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise RagcovError(f"--seed must be a whole number of at least 0, got {seed!r}")
    return seed


def check_engine(engine: str, workers: int | None = None, said: str = "engine") -> None:
    """Where a command runs (``local`` or ``dask``) and its worker count, refused before any
    work; ``said``: how the message names the engine (``--engine`` where the CLI's flag is
    what the user typed)."""
    if engine not in ("local", "dask"):
        raise RagcovError(f"unknown {said} {engine!r}: expected local or dask")
    if workers is not None and workers < 1:
        raise RagcovError(f"--workers must be at least 1, got {workers}")


def check_drift_settings(seed: int, k: int, engine: str, workers: int | None, noise_rate: float,
                         resamples: int, confidence: float) -> None:
    """A drift run's numbers refused before its corpus is read or a model loaded."""
    from ragcov.retrieval import validate_k

    check_seed(seed)
    validate_k(k)
    check_engine(engine, workers, said="--engine")
    if isinstance(noise_rate, bool) or not isinstance(noise_rate, (int, float)) or \
            not 0 <= noise_rate <= 1:
        raise RagcovError(f"--noise-rate must be a rate from 0 to 1, got {noise_rate}")
    if not isinstance(resamples, int) or resamples < 100:
        raise RagcovError(f"--resamples must be a whole number of at least 100, got {resamples}")
    if not 0 < confidence < 1:
        raise RagcovError(f"--confidence must be between 0 and 1, got {confidence}")


RETRIEVER_SOURCE = "retriever_source"


def record_retriever_source(data_file: str | os.PathLike[str], source: str) -> None:
    """Keep the ``module:attr`` that builds the run's retriever beside its fingerprint, so
    every command can build it again (a retriever of ragcov's own protocol fingerprints
    itself, without the name it was loaded by)."""
    CoverageData(data_file).annotate(RETRIEVER_SOURCE, source)


@dataclass(frozen=True)
class RunSettings:
    """The settings of one recording, checked once where the command enters.

    ``ragcov run`` used to hand 18 loose values down through the calls, and k, the
    destination and "is the corpus a store" were each checked several times on the way.
    :meth:`checked` checks everything a run can be refused for, before the corpus is read
    or a model loaded (as scikit-learn validates an estimator's parameters once), and the
    run reads its settings from here. ``kind`` is the retriever resolved (a store URL is
    searched by the store unless another is named); ``destination`` the data file the run
    writes (a new shard's name in parallel mode).
    """

    corpus: str | os.PathLike[str]
    queries: str | os.PathLike[str]
    kind: str
    destination: Path
    model: str | None = None
    backend: str | None = None
    k: int = 5
    index: str = "flat"
    append: bool = False
    chunk_size: int = 1000
    chunk_overlap: int = 100
    split: bool = False
    doc_key: str | None = None
    documents: str | os.PathLike[str] | None = None  # whole documents, to place chunks made elsewhere
    id_key: str | None = None
    chunk_ids: str | None = None  # position or content; an --append: the file's own
    engine: str = "local"
    scheduler: str | None = None
    partitions: int | None = None
    device: str | None = "auto"
    dtype: str | None = "auto"
    # A reranking stage (--rerank, --rerank-depth) and the built-in HNSW's graph settings.
    rerank: str | None = None
    rerank_depth: int | None = None
    hnsw_m: int | None = None
    hnsw_ef_search: int | None = None

    @classmethod
    def checked(cls, corpus: str | os.PathLike[str], queries: str | os.PathLike[str],
                retriever: str | None = None, data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE,
                parallel_mode: bool = False, **options: Any) -> RunSettings:
        """Every setting checked, once; a run that cannot be made is refused here."""
        from ragcov.data.shards import shard_path
        from ragcov.retrieval import validate_k
        from ragcov.retrievers import default_retriever
        from ragcov.retrievers.onnx_encoder import check_backend

        validate_k(options.get("k", 5))
        path = Path(data_file)
        if parallel_mode:
            if options.get("append"):
                raise RagcovError("--append and --parallel-mode do not go together: a shard is new")
            path = shard_path(path)
        engine = options.get("engine", "local")
        check_engine(engine)
        check_backend(options.get("backend"))
        kind = default_retriever(retriever, corpus)
        device, dtype = options.get("device", "auto"), options.get("dtype", "auto")
        # Device and precision (ragcov.retrievers.hardware): refused now, before anything is
        # read or written. Dask workers each resolve their own device: the spelling only here.
        if engine == "local":
            from ragcov.retrievers.dense import check_hardware

            check_hardware(kind, device, dtype, options.get("backend"), options.get("model"))
        else:
            from ragcov.retrievers.hardware import check_settings

            check_settings(kind, device, dtype)
        if engine == "dask" and kind == "store":
            raise RagcovError("--retriever store (the default for a store URL) searches the store "
                              "from this process: use --engine local, or name another --retriever")
        index_options(kind, options.get("index", "flat"), options.get("hnsw_m"),
                      options.get("hnsw_ef_search"))
        check_rerank(options.get("rerank"), options.get("rerank_depth"), options.get("k", 5))
        if engine == "dask" and options.get("rerank") is not None:
            raise RagcovError("--rerank runs the reranker in this process: use --engine local")
        # Before the corpus is embedded: a destination that cannot take the run fails now.
        CoverageData(path).check_destination()
        if options.get("append"):
            options["chunk_ids"] = chunk_ids_of(path, options.get("chunk_ids"), "an --append")
        return cls(corpus=corpus, queries=queries, kind=kind, destination=path, **options)


@dataclass(frozen=True)
class ProbeSettings:
    """The settings of one ``ragcov probe``, checked once where the command enters.

    As :class:`RunSettings` does for a run: the retriever, model, backend, precision and
    reranker not given are taken from the recorded run (probes must go through the
    suite's own pipeline), and everything a probe can be refused for (seed, gates,
    hardware, index and reranker settings, the labels file) is refused here, before the
    corpus is read or a model loaded. ``from_data_file`` says the retriever was taken
    from the data file, so the caller can name it.
    """

    corpus: str | os.PathLike[str]
    data_file: Path
    retriever: str
    from_data_file: bool = False
    model: str | None = None
    backend: str | None = None
    index: str = "flat"
    index_options: tuple[tuple[str, Any], ...] = ()
    device: str | None = "auto"
    dtype: str | None = "auto"
    rerank: str | None = None
    rerank_depth: int | None = None
    chunk_size: int = 1000
    chunk_overlap: int = 100
    split: bool = False
    doc_key: str | None = None
    id_key: str | None = None
    sample: int | None = None
    include: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    seed: int = 0
    exact: bool = True
    generator: str | None = None
    generator_options: tuple[tuple[str, Any], ...] = ()
    labels: Any = None  # the --qrels file's labels, read (and refused if malformed) here
    engine: str = "local"  # or "dask": the self-queries retrieved on a Dask cluster
    scheduler: str | None = None
    workers: int | None = None

    @classmethod
    def checked(cls, corpus: str | os.PathLike[str],
                data_file: str | os.PathLike[str] = DEFAULT_DATA_FILE,
                retriever: str | None = None, model: str | None = None,
                backend: str | None = None, index: str = "flat", hnsw_m: int | None = None,
                hnsw_ef_search: int | None = None, device: str | None = "auto",
                dtype: str | None = "auto", rerank: str | None = None,
                rerank_depth: int | None = None, qrels: str | os.PathLike[str] | None = None,
                qrels_level: str | None = None, min_index_recall: float | None = None,
                max_index_hidden: int | None = None, generator: str | None = None,
                generator_options: dict[str, Any] | None = None, include: Sequence[str] = (),
                omit: Sequence[str] = (), seed: int = 0, **options: Any) -> ProbeSettings:
        """Every setting checked and resolved against the recorded run, once."""
        from ragcov.reachability.stages import check_index_gates
        from ragcov.retrievers.dense import check_hardware

        check_seed(seed)
        check_index_gates(min_index_recall, max_index_hidden)
        check_engine(options.get("engine", "local"), options.get("workers"), said="--engine")
        # The labels are read first: a malformed line stops the command before any probe.
        labels = read_qrels(qrels, qrels_level) if qrels is not None else None
        fp = recorded_retriever(data_file)  # read once: retriever, precision and reranker
        kind, model, backend = probe_settings(data_file, fp, str(corpus), retriever, model,
                                              backend)
        dtype = probe_dtype(fp, dtype)
        check_hardware(kind, device, dtype, backend, model)
        extra = index_options(kind, index, hnsw_m, hnsw_ef_search)
        rerank, rerank_depth = probe_rerank(fp, rerank, rerank_depth)
        check_rerank(rerank, rerank_depth, 1)
        # No recorded run, no probe: said before a dense corpus is embedded for nothing.
        require_recorded_run(CoverageData(data_file))
        return cls(corpus=corpus, data_file=Path(data_file), retriever=kind,
                   from_data_file=retriever is None, model=model, backend=backend, index=index,
                   index_options=tuple(extra.items()), device=device, dtype=dtype,
                   rerank=rerank, rerank_depth=rerank_depth, include=tuple(include),
                   omit=tuple(omit), seed=seed, generator=generator,
                   generator_options=tuple((generator_options or {}).items()), labels=labels,
                   **options)


def require_recorded_run(data: CoverageData) -> None:
    """No recorded run, no probe: probes are measured against one."""
    if not data.exists():
        raise RagcovError(f"{data.path}: no coverage data; probes are measured against a "
                          "recorded run (run `ragcov run` first, with the same retriever)")


def index_options(kind: str, index: str, hnsw_m: int | None, hnsw_ef_search: int | None
                  ) -> dict[str, int]:
    """The dense retriever's HNSW settings, refused where nothing takes them."""
    given = {"hnsw_m": hnsw_m, "ef_search": hnsw_ef_search}
    flags = {"hnsw_m": "--hnsw-m", "ef_search": "--hnsw-ef-search"}
    out = {key: value for key, value in given.items() if value is not None}
    for key, value in out.items():
        if isinstance(value, bool) or value < 1:
            raise RagcovError(f"{flags[key]} must be a whole number of at least 1, got {value}")
    if out and (kind != "dense" or index != "hnsw"):
        raise RagcovError(f"{', '.join(flags[key] for key in out)} shape the dense retriever's "
                          "--index hnsw graph: give --retriever dense --index hnsw")
    return out


def check_rerank(rerank: str | None, depth: int | None, k: int) -> None:
    """``--rerank`` and ``--rerank-depth`` go together, the depth at least k."""
    from ragcov.retrievers.rerank import check_depth

    if (rerank is None) != (depth is None):
        raise RagcovError("--rerank MODEL and --rerank-depth N go together: the reranker orders "
                          "the first N candidates")
    check_depth(depth, k)


def with_reranker(retriever: Any, corpus: Corpus, rerank: str, depth: int | None, k: int,
                  notify: Any = None) -> Any:
    """``retriever`` as the first stage of a reranked pipeline (``--rerank``)."""
    from ragcov.retrievers.rerank import RerankedRetriever, make_reranker

    check_rerank(rerank, depth, k)
    assert depth is not None
    reranker = make_reranker(rerank)
    if notify is not None and not getattr(reranker, "trained_head", True):
        notify(f"ragcov: reranker {rerank}: its checkpoint has no trained classification head; "
               f"one is drawn from seed 0 (the same order every run, not a trained reranker's)")
    return RerankedRetriever(retriever, reranker, depth, corpus)


def probe_rerank(fp: dict[str, Any] | None, rerank: str | None, depth: int | None
                 ) -> tuple[str | None, int | None]:
    """The reranking stage for ``ragcov probe``: what was given, else the recorded run's
    (``fp``, its retriever fingerprint: a CrossEncoder's name or path, a function's
    ``module:attr``, and the depth)."""
    if rerank is not None or depth is not None:
        return rerank, depth
    recorded = (fp or {}).get("rerank") or {}
    name = recorded.get("name") or recorded.get("source") or recorded.get("model")
    if not recorded or not name:
        return None, None
    return str(name), int(recorded.get("depth"))


def probe_dtype(fp: dict[str, Any] | None, dtype: str | None) -> str | None:
    """``--dtype`` for ``ragcov probe``: as given, else the recorded run's precision (its
    fingerprint ``fp`` names fp16 or bf16), so probes embed as the run did."""
    if dtype not in (None, "auto"):
        return dtype
    return (fp or {}).get("precision") or dtype


def read_qrels(qrels: str | os.PathLike[str], level: str | None = None) -> Any:
    """Relevance labels for ``ragcov probe --qrels``, read before any probe runs: a bad
    file is reported at once, not after an hour of retrieval."""

    from ragcov.qrels import load_qrels

    if level is not None and level not in ("doc", "chunk"):
        raise RagcovError(f"--qrels-level must be doc or chunk, got {level!r}")
    return load_qrels(qrels, level)  # type: ignore[arg-type]


def chunk_ids_of(data_file: str | os.PathLike[str], given: str | None, what: str) -> str | None:
    """The id scheme a command that adds to ``data_file`` splits with: the one the file
    recorded (``--chunk-ids`` need not be repeated); another one given is refused, since
    every chunk would be renamed and the corpus no longer the recorded one."""
    from ragcov.corpus import POSITION_IDS, check_chunk_ids
    from ragcov.data.spans import recorded_chunk_ids

    data = CoverageData(data_file)
    if not data.exists():
        return given
    recorded = recorded_chunk_ids(data)
    if given is not None and check_chunk_ids(given) != (recorded or POSITION_IDS):
        raise RagcovError(f"{data_file} names its chunks by {recorded or POSITION_IDS}; {what} "
                          f"uses the same ids (drop --chunk-ids, or give {recorded or POSITION_IDS})")
    return recorded or given


def recorded_retriever(data_file: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The retriever fingerprint a data file recorded; None when there is no data file."""
    data = CoverageData(data_file)
    return data.meta().retriever if data.exists() else None


def recorded_choice(data_file: str | os.PathLike[str], corpus: str | os.PathLike[str],
                    retriever: str | None, model: str | None = None, backend: str | None = None,
                    who: str = "its additions") -> tuple[str, str | None, str | None]:
    """Retriever, model and backend of a command that adds to ``data_file`` (generate,
    drift): what was given, else the run's own, so one recorded run (``ragcov run`` or a
    pytest session) serves every command; a new file takes the default."""
    try:
        fp = recorded_retriever(data_file)
    except NoDataFile:
        fp = None  # an empty file: nothing recorded yet
    return probe_settings(data_file, fp, str(corpus), retriever, model, backend, who)


def probe_settings(data_file: str | os.PathLike[str], fp: dict[str, Any] | None, corpus: str,
                   retriever: str | None, model: str | None, backend: str | None,
                   who: str = "probes") -> tuple[str, str | None, str | None]:
    """Retriever, model and backend for ``ragcov probe``: what was given, else what the
    recorded run used. Probes must go through the run's own retriever (the check in
    :func:`probe` says so if they would not); an int8 dense run's backend is recorded,
    so its probes use int8 embeddings too. ``fp``: the retriever fingerprint
    ``data_file`` recorded (None: no data file)."""
    if fp is None:
        from ragcov.retrievers import default_retriever

        return retriever or default_retriever(None, corpus), model, backend
    kind = fp.get("kind")
    built_in = ("dense", "bm25", "store")
    if kind == "dense" and model is not None and retriever in (None, "dense"):
        from ragcov.retrievers.dense import resolve_model

        # Refused now: the check in :func:`probe` would come after the corpus is embedded.
        if resolve_model(model)[0] != fp.get("model"):
            raise RagcovError(f"{data_file} was recorded with the model {fp.get('model')!r}; "
                              f"{who} must use the same one (drop --model, or give "
                              f"{fp.get('model')!r})")
    if retriever is not None:
        # Refused now, not after embedding a whole corpus for a run that cannot be mixed.
        if retriever in built_in and kind in built_in and retriever != kind:
            raise RagcovError(f"{data_file} was recorded with the {kind} retriever; {who} must "
                              f"go through the same one (drop --retriever, or give {kind})")
        return retriever, model, backend
    if kind in built_in:
        recorded_model = fp.get("model") if kind == "dense" else None
        return kind, model or recorded_model, backend or fp.get("backend")
    from ragcov.retrievers.loader import is_spec

    name = fp.get("name")
    if is_spec(name):  # recorded as `module:attr` (ragcov run, or the plugin told its source)
        return str(name), model, backend
    source = CoverageData(data_file).annotation(RETRIEVER_SOURCE)
    if is_spec(source):  # a retriever of ragcov's protocol, loaded or recorded by that name
        return str(source), model, backend
    what = f"{kind} retriever {name}" if name else f"{kind} retriever"
    raise RagcovError(
        f"{data_file} was recorded with the {what}, which names no module:attr that builds it "
        "again: record the run under the factory's name (ragcov run --retriever module:attr; "
        "under pytest --ragcov-retriever module:attr, or ragcov_recorder(retriever, "
        "source='module:attr')), then every command reuses it")
