"""Steps the verbs of :mod:`ragcov.api` are made of, apart so the verbs read as a page.

Each is a part of one verb or two (what ``measure`` and ``record_traces`` keep of a
reranker's first stage, an append committed in parts, an LLM-written probe, probes
retrieved on Dask, the lines a run prints about the corpus's languages, drift's refusal
in its own words, the selected questions as their files hold them, lost gold); none is
public. Loaded with the verbs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.data import CoverageData
from ragcov.data.schema import check_compatible
from ragcov.errors import RagcovError
from ragcov.progress import progress_bar
from ragcov.retrieval import Run, run_retriever

if TYPE_CHECKING:
    from ragcov.compare.diff import CoverageDiff
    from ragcov.corpus import Corpus
    from ragcov.suite import Suite


CHECKPOINT = 256


def append_in_parts(data: CoverageData, corpus: Corpus, suite: Suite, retriever: Any,
                     todo: list[tuple[str, str]], k: int, batch_size: int, progress: bool,
                     run: Run) -> None:
    """Retrieve and commit ``todo`` in parts of :data:`CHECKPOINT` queries (one transaction
    each), under one progress bar; ``run`` collects every part (the depth warning's)."""
    from ragcov.retrieval import warn_if_short

    with progress_bar("Retrieving", total=len(todo), enabled=progress) as advance:
        for start in range(0, len(todo), CHECKPOINT):
            part = todo[start:start + CHECKPOINT]
            piece = Run(k=k, retriever=run.retriever, source=run.source)
            run_retriever(retriever, part, k, batch_size=batch_size, progress=False, run=piece,
                          corpus=corpus, warn_short=False)
            data.write(corpus, piece, append=True,
                       accept=[q.id for q in suite] if start == 0 else ())
            for qid in piece.queries:
                run.add(qid, piece.queries[qid], piece.results.get(qid, []))
            advance(len(part))
    warn_if_short(run, [qid for qid, _ in todo], len(corpus))


def first_stage_recorder(retriever: Any, corpus: Corpus, k: int) -> Any:
    """With a reranking stage, the retriever that also keeps each test's first-stage
    candidates (what the reranker was given); None without one."""
    from ragcov.reachability.exact_check import CheckSettings, StageRecorder
    from ragcov.retrievers.exact import first_stage

    if first_stage(retriever) is retriever:
        return None
    depth = int(getattr(retriever, "depth", k))
    return StageRecorder(retriever, corpus, CheckSettings(None, depth, k, lexical=True))


def record_first_stage(data: CoverageData, staged: Any, ids: list[str], corpus: Corpus, k: int,
                        fingerprint: dict[str, Any]) -> None:
    from ragcov.data.schema import read_meta
    from ragcov.data.stages import TEST, record_rows

    def same_run(con: Any) -> None:
        check_compatible(read_meta(con, data.path), k, corpus.hash, fingerprint, str(data.path),
                         "this run")

    record_rows(data, TEST, staged.take(ids), same_run)
    record_rerank(data, fingerprint)


def record_traced_first_stage(data: CoverageData, path: str | os.PathLike[str], fmt: str,
                               corpus: Corpus, result: Any) -> None:
    """The first stage of traced queries that went through a reranker (their RERANKER
    spans' input documents), kept beside the final lists: per test, first-stage coverage
    beside final coverage, and the chunks the reranker drops."""
    from ragcov.data.schema import read_meta
    from ragcov.data.stages import TEST, StageRow, record_rows, write_meta
    from ragcov.traces.importer import first_stage_lists

    lists = first_stage_lists(path, result.format or fmt.lower(), corpus)
    if not lists:
        return
    where = corpus.positions
    rows = [StageRow(qid, [(where[c], s) for c, s in ranked])
            for qid, ranked in lists.items() if qid in result.run.results]
    meta = data.meta()

    def same_file(con: Any) -> None:
        check_compatible(read_meta(con, data.path), meta.k, corpus.hash, meta.retriever,
                         str(data.path), "this import")

    record_rows(data, TEST, rows, same_file)
    write_meta(data, "rerank", {"reranker": "traces", "name": f"{Path(path).name} (RERANKER spans)",
                                "depth": max((len(r) for r in lists.values()), default=0)})


def record_rerank(data: CoverageData, fingerprint: dict[str, Any]) -> None:
    """The reranking stage of a run or probe run, as its fingerprint names it."""
    from ragcov.data.stages import write_meta

    if fingerprint.get("rerank"):
        write_meta(data, "rerank", fingerprint["rerank"])


def llm_probe(generator: Any, texts: Sequence[str], ids: Sequence[str], row: int,
               seed: int) -> Any:
    """One question written for the chunk at ``row``; kept (empty) when the writer gives
    nothing usable, so a rerun does not ask again."""
    from ragcov.data.probes import ProbeRow
    from ragcov.generation.cleaning import clean
    from ragcov.reachability.selfquery import LLM, probe_id

    gen = generator.generate([texts[row]], attempt=1, seed=seed * 1_000_003 + row)
    return ProbeRow(probe_id(ids[row], LLM), row, LLM, clean(gen.raw))


def probe_on_dask(data: CoverageData, corpus: Corpus, fingerprint: dict[str, Any], todo: list[Any],
                  k: int, batch_size: int, dask: dict[str, Any], progress: bool) -> int:
    """``probe --engine dask``: the self-queries ``todo`` retrieved on a Dask cluster, each
    worker building the retriever ``dask`` names once, and recorded here batch by batch as
    results come back; returns the probes recorded."""
    from ragcov.data.probes import append_probes
    from ragcov.distributed import probe_dask

    added = 0
    batches = [todo[start:start + batch_size] for start in range(0, len(todo), batch_size)]

    def recorded(i: int, results: dict[str, Any]) -> None:
        nonlocal added
        added += append_probes(data, corpus, k, fingerprint, batches[i],
                               [results.get(p.id, []) for p in batches[i]])

    spec = {"kind": dask["retriever"], "model": dask.get("model"),
            "index": dask.get("index", "flat"), "batch_size": 64, "threads": 1}
    probe_dask(corpus, spec, fingerprint,
               [[(p.id, p.text) for p in b if p.text] for b in batches], k, recorded,
               scheduler=dask.get("scheduler"), workers=dask.get("workers"),
               progress=progress)
    return added


def say_languages(corpus: Corpus, retriever: Any, say: Any) -> None:
    """The corpus's scripts where any is not Latin, and one warning where an English-only
    embedding model embeds a corpus that is mostly not English."""
    from ragcov.analyzer import script_shares
    from ragcov.retrievers.languages import english_model_warning, scripts_line, stemmer_line
    from ragcov.user_warnings import RetrievalWarning, warn

    shares = script_shares(corpus.texts)  # read once, for the line and the warning
    if line := scripts_line(shares):
        say(line)
    fp = retriever.fingerprint()
    if line := stemmer_line(fp):
        say(line)
    if fp.get("kind") in ("dense", "store") and (
            line := english_model_warning(fp.get("model"), corpus.texts, shares)):
        warn(line, RetrievalWarning)


def drift_mix(step: Any, *args: Any, **kwargs: Any) -> Any:
    """``step`` with a data file that holds another run refused in drift's words."""
    try:
        return step(*args, **kwargs)
    except RagcovError as exc:
        if not str(exc).startswith("cannot mix coverage data"):
            raise
        raise RagcovError(f"{exc}; drift records the suite's run in the data file it reports "
                          "into: give the recorded run's settings, or another --data-file"
                          ) from None


def diff_topics(d: CoverageDiff) -> Any:
    """Per-topic change, from HEAD's topics (else BASE's) when they are of its own corpus."""
    from ragcov.data.topics import read_topics
    from ragcov.topics.coverage import topic_diff

    for side, rec in (("head", d.head), ("base", d.base)):
        stored = read_topics(CoverageData(rec.path))
        if stored is not None and stored.corpus_hash == rec.meta.corpus_hash:
            return topic_diff(d, stored, side)
    return None


def selected_records(data_file: str | os.PathLike[str], m: Any, order: Sequence[str],
                     unread: list[str] | None = None) -> list[dict[str, Any]]:
    """The selected questions as the files they were recorded from hold them: every field
    (gold labels such as ``doc_id``, the file's own key names). A question no recorded
    file still holds with the same text (recorded by the pytest plugin, generated, a file
    moved or edited since) is written as ``{"id", "text"}``, with ``test`` when a pytest
    test asked it. Recorded files that cannot be read again are added to ``unread``, so
    the caller can say whose fields were not kept."""
    from ragcov.data.datafile import QUERY_SOURCES
    from ragcov.suite import load_suite

    texts = dict(zip(m.query_ids, m.query_texts))
    tests = dict(zip(m.query_ids, m.query_context))
    originals: dict[str, dict[str, Any]] = {}
    for source in CoverageData(data_file).annotation(QUERY_SOURCES) or []:
        try:
            suite = load_suite(source)
        except (RagcovError, OSError):
            # Moved or broken since: its questions fall back to id and text, said by the caller.
            if unread is not None:
                unread.append(str(source))
            continue
        for q in suite:
            if q.record is not None and texts.get(q.id) == q.text:
                originals.setdefault(q.id, q.record)
    out = []
    for qid in order:
        record = dict(originals.get(qid) or {"id": qid, "text": texts[qid]})
        if tests.get(qid) and "test" not in record:
            record["test"] = tests[qid]
        out.append(record)
    return out


def lost_gold_of(r: Any, labels: Any) -> dict[str, Any]:
    """Lost gold (``ragcov probe --qrels``): relevant chunks or documents no test retrieves,
    and those no probe retrieves either. Labels naming no chunk or document of the corpus
    are counted in ``not_in_corpus``, never dropped silently."""
    from ragcov.reachability.audit import lost_gold

    relevant = {i for items in labels.relevant.values() for i in items}
    if labels.level == "chunk":
        position = {cid: i for i, cid in enumerate(r.chunk_ids)}
        out = lost_gold(r, relevant_chunks={position[c] for c in relevant if c in position})
        known = set(position)
    else:
        out = lost_gold(r, relevant_docs=relevant)
        known = {str(d) for d in r.doc_ids}
    out["level"] = labels.level
    out["not_in_corpus"] = sorted(relevant - known)
    return out


def recorded_suite(data_file: str | os.PathLike[str]) -> Suite:
    """The questions a run recorded (``ragcov run``, a pytest session) as a suite, so a
    command that reruns them (drift) needs no queries file of its own."""
    data = CoverageData(data_file)
    texts = data.query_texts() if data.exists() else {}
    if texts:  # the suite: questions ``generate`` wrote and no suite accepted are not in it
        kept = set(data.suite_matrix().query_ids)
        texts = {qid: text for qid, text in texts.items() if qid in kept}
    if not texts:
        raise RagcovError(f"{data_file} holds no recorded queries: give --queries, or record "
                          "the suite first (ragcov run, or pytest --ragcov)")
    from ragcov.suite import Query, Suite

    return Suite([Query(qid, text) for qid, text in texts.items()],
                 source=f"{data_file} (its recorded queries)")
