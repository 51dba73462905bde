"""The coverage-guided generation loop (docs/method.md §5), checkpointed after every question.

One step: pick target chunk(s), ask the generator for a question they answer,
clean it and maybe reject it, run it through the retriever, note whether it
reached its target and how much coverage it added, then commit it: a durable
JSON line first, then one SQLite transaction in the data file. The state of a
run is nothing but those two logs and the data file, so running the same
command again after a crash carries on where it stopped; at most the question
that was in flight is asked again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.generation.cleaning import clean, normalize, rejection
from ragcov.generation.journal import append_record, read_records, rejected_path
from ragcov.generation.loop_types import GenerationSummary, LoopConfig
from ragcov.generation.targets import TargetPicker, chunk_vectors
from ragcov.retrieval import Run, validate_k
from ragcov.suite import Suite

__all__ = ["GenerationSummary", "LoopConfig", "run_generation"]

Record = dict[str, Any]


def run_generation(corpus: Corpus, retriever: Any, generator: Any, k: int, out: Path,
                   data_file: Path, config: LoopConfig, seed_suite: Suite | None = None,
                   vectors: Any = None,
                   on_step: Callable[[Record], None] | None = None) -> GenerationSummary:
    """Generate until the budget, the target CC, a plateau or the call limit; resumable."""
    validate_k(k)
    config.check()
    out, data_file = Path(out), Path(data_file)
    if out.suffix.lower() not in (".jsonl", ".ndjson"):
        raise RagcovError(f"{out}: the generated suite is written as JSON lines (.jsonl)")
    if vectors is None and config.strategy == "coverage" and config.policy == "isolated" \
            and config.priority is None:
        vectors = chunk_vectors(retriever, corpus)
    priority = None if config.priority is None else [corpus.index_of(c) for c in config.priority]
    picker = TargetPicker([c.doc_id for c in corpus], config.strategy,
                          config.policy, config.targets_per_call, config.max_attempts,
                          config.seed, vectors, priority)
    accepted, rejected = _read_journals(out)
    data = CoverageData(data_file)
    _prepare_data_file(data, corpus, retriever, k, seed_suite, accepted)
    loop = _Loop(corpus, retriever, generator, k, config, data, out, accepted, rejected)
    while (targets := loop.next_targets(picker)) is not None:
        record = loop.step(targets)
        if on_step is not None:
            on_step(record)
    return loop.finish()


def _unreachable(data: CoverageData, m: Any) -> list[int]:
    """Corpus positions `ragcov probe` recorded as unreachable in this data file (none
    when it was never probed)."""
    from ragcov.data.probes import read_probes
    from ragcov.reachability.audit import UNREACHABLE, audit

    probes = read_probes(data, m.n_chunks)
    if probes is None:
        return []
    return [int(i) for i in np.flatnonzero(audit(m, probes).status == UNREACHABLE)]


# ---------------------------------------------------------------- resuming
def _read_journals(out: Path) -> tuple[list[Record], list[Record]]:
    """The accepted and rejected records an earlier invocation left, checked as ours."""
    accepted = read_records(out)
    rejected = read_records(rejected_path(out))
    ids = [r.get("id") for r in accepted]
    if len(set(ids)) != len(ids) or any(not isinstance(i, str) for i in ids):
        raise RagcovError(f"{out}: repeated or missing query ids; not a file this command wrote")
    return accepted, rejected


def _prepare_data_file(data: CoverageData, corpus: Corpus, retriever: Any, k: int,
                       seed_suite: Suite | None, accepted: list[Record]) -> None:
    """A data file that accepts this run and holds the seed suite and every accepted question."""
    empty = Run(k=k, retriever=retriever.fingerprint())
    # An empty append checks k, corpus and retriever against an existing file.
    data.write(corpus, empty, append=data.exists())
    if seed_suite is not None:
        _record_missing(data, corpus, retriever, k, [(q.id, q.text) for q in seed_suite])
    _record_missing(data, corpus, retriever, k, [(r["id"], r["text"]) for r in accepted],
                    generated={r["id"]: {"source": r.get("source", ""),
                                         "hit_target": bool(r.get("hit_target"))}
                               for r in accepted})


def _record_missing(data: CoverageData, corpus: Corpus, retriever: Any, k: int,
                    queries: list[tuple[str, str]],
                    generated: dict[str, dict[str, Any]] | None = None) -> None:
    """Retrieve and record queries the data file lacks (seed suite, or a crash window)."""
    todo = data.pending(queries, k, corpus.hash, retriever.fingerprint())
    if not todo:
        return
    from ragcov.retrieval import run_retriever

    run = run_retriever(retriever, todo, k, progress=False)
    data.write(corpus, run, append=True,
               generated={q: generated[q] for q, _ in todo} if generated else None)


def _retrieve(retriever: Any, text: str, k: int) -> list[tuple[str, float | None]]:
    result = retriever.retrieve([text], k)
    if len(result) != 1:
        raise RagcovError(f"the retriever returned {len(result)} result lists for 1 query")
    return list(result[0])


def _trailing_no_gain(events: list[Record]) -> int:
    """How many of the last events added no coverage."""
    no_gain = 0
    for r in reversed(events):
        if r.get("gain", 0) > 0:
            break
        no_gain += 1
    return no_gain


def _longest_no_gain(events: list[Record]) -> int:
    run_len = longest = 0
    for r in events:
        run_len = 0 if r.get("gain", 0) > 0 else run_len + 1
        longest = max(longest, run_len)
    return longest


# ---------------------------------------------------------------- the loop
class _Loop:
    """One invocation: its fixed inputs, the state the steps change, the summary they fill.

    The state is rebuilt from the data file and the journals, so a rerun after a crash
    starts where the last one stopped.
    """

    def __init__(self, corpus: Corpus, retriever: Any, generator: Any, k: int,
                 config: LoopConfig, data: CoverageData, out: Path,
                 accepted: list[Record], rejected: list[Record]) -> None:
        self.corpus, self.retriever, self.generator, self.k = corpus, retriever, generator, k
        self.config, self.data, self.out = config, data, out
        m = data.matrix()
        self.covered = m.covered().copy()
        self.existing = {normalize(t) for t in m.query_texts}
        self.accepted = accepted
        self.events = sorted(accepted + rejected, key=lambda r: r["seq"])
        self.attempts = np.zeros(len(corpus), dtype=np.int64)
        for r in self.events:
            for cid in r.get("targets", []):
                if cid in corpus:
                    self.attempts[corpus.index_of(cid)] += 1
        # Chunks no self-query reaches are a retrieval defect: a question aimed at one
        # always fails the retrieval check, so it is not aimed at unless asked for.
        skipped = [] if config.include_unreachable else _unreachable(data, m)
        self.attempts[skipped] = np.maximum(self.attempts[skipped], config.max_attempts)
        self.no_gain = _trailing_no_gain(self.events)
        self.seq = (self.events[-1]["seq"] + 1) if self.events else 1
        self.summary = self._start_summary(rejected)
        self.summary.skipped_unreachable = [corpus.ids[i] for i in skipped]
        template = getattr(generator, "template", None)
        self.examples = template.example_lines() if template is not None else []
        self.template_hash = template.hash if template is not None else None
        self.max_calls = config.max_calls if config.max_calls is not None else 5 * config.budget
        self.fingerprint = retriever.fingerprint()
        self.rejected_path = rejected_path(out)

    def _start_summary(self, rejected: list[Record]) -> GenerationSummary:
        summary = GenerationSummary(out=self.out, data_file=self.data.path,
                                    strategy=self.config.strategy,
                                    generator=getattr(self.generator, "name", "?"),
                                    model=getattr(self.generator, "model", "?"),
                                    chunks=len(self.corpus))
        summary.resumed = len(self.accepted)
        summary.rejected.update(r.get("reason", "?") for r in rejected)
        for r in self.events:
            summary.calls += int(r.get("calls", 0))
            summary.prompt_tokens += int(r.get("tokens", {}).get("prompt", 0))
            summary.completion_tokens += int(r.get("tokens", {}).get("completion", 0))
        summary.hits = sum(1 for r in self.accepted if r.get("hit_target"))
        summary.cc_start = self._cc()
        return summary

    def _cc(self) -> float:
        return float(self.covered.mean()) if len(self.corpus) else 0.0

    def _stop_reason(self) -> str | None:
        """Why the loop stops before another generator call, or None to carry on."""
        config = self.config
        if len(self.accepted) >= config.budget:
            return "budget"
        if config.target_cc is not None and self._cc() >= config.target_cc - 1e-12:
            return "target"
        if len(self.corpus) and self.covered.all():
            return "complete"
        if config.patience and self.no_gain >= config.patience:
            return "plateau"
        if len(self.events) >= self.max_calls:
            return "call limit"
        return None

    def next_targets(self, picker: TargetPicker) -> list[int] | None:
        """The chunk rows the next question aims at; None (and the stop reason noted) to stop."""
        reason = self._stop_reason()
        targets = None if reason else picker.pick(self.covered, self.attempts, self.seq)
        if targets is None:
            self.summary.stop_reason = reason or "exhausted"
        return targets

    def step(self, targets: list[int]) -> Record:
        """Ask for one question aimed at ``targets``; reject it or accept it, durably."""
        corpus, config, summary = self.corpus, self.config, self.summary
        attempt = int(self.attempts[targets[0]]) + 1
        gen = self.generator.generate([corpus[t].text for t in targets], attempt=attempt,
                                      seed=config.seed * 1_000_003 + self.seq)
        self.attempts[targets] += 1
        text = clean(gen.raw)
        reason = rejection(text, self.existing, self.examples)
        base = {"seq": self.seq, "attempt": attempt, "targets": [corpus[t].id for t in targets],
                "strategy": config.strategy, "policy": config.policy if
                config.strategy == "coverage" else None,
                "generator": summary.generator, "model": summary.model,
                "template_hash": self.template_hash,
                "tokens": {"prompt": gen.prompt_tokens, "completion": gen.completion_tokens,
                           "total": gen.prompt_tokens + gen.completion_tokens},
                "calls": gen.calls}
        summary.calls += gen.calls
        summary.prompt_tokens += gen.prompt_tokens
        summary.completion_tokens += gen.completion_tokens
        if reason is not None:
            record = self._reject(base, reason, gen.raw)
        else:
            record = self._accept(base, targets, text)
        self.events.append(record)
        self.no_gain = 0 if record["gain"] > 0 else self.no_gain + 1
        self.seq += 1
        return record

    def _reject(self, base: Record, reason: str, raw: str) -> Record:
        record = {**base, "reason": reason, "output": raw[:500], "gain": 0}
        append_record(self.rejected_path, record)
        self.summary.rejected[reason] += 1
        return record

    def _accept(self, base: Record, targets: list[int], text: str) -> Record:
        """Retrieve the question, note what it reached, and commit it: journal, then data file."""
        corpus, k = self.corpus, self.k
        qid = f"{self.out.stem}-{self.seq:05d}"
        run = Run(k=k, retriever=self.fingerprint)
        run.add(qid, text, _retrieve(self.retriever, text, k))
        unknown = corpus.unknown(run.chunk_ids())
        if unknown:
            from ragcov.retrieval import mismatch_hint

            raise RagcovError(f"the retriever returned chunk ids that are not in the corpus "
                              f"({', '.join(unknown[:3])}). {mismatch_hint(unknown, corpus)}")
        cols = [corpus.index_of(cid) for cid, _ in run.results[qid]]
        gained = [c for c in cols if not self.covered[c]]
        self.covered[gained] = True
        ranks = {c: r for r, c in enumerate(cols, start=1)}
        record = {"id": qid, "text": text, **base,
                  "hit_target": any(t in ranks for t in targets),
                  "hit_targets": [corpus[t].id for t in targets if t in ranks],
                  "target_ranks": [ranks.get(t) for t in targets],
                  "gain": len(gained), "cc_after": float(self.covered.mean()), "k": k}
        append_record(self.out, record)          # durable first ...
        self.data.write(corpus, run, append=True,  # ... then one transaction
                        generated={qid: {"source": self.out.name,
                                         "hit_target": record["hit_target"]}})
        self.existing.add(normalize(text))
        self.accepted.append(record)
        self.summary.new += 1
        self.summary.hits += int(record["hit_target"])
        return record

    def finish(self) -> GenerationSummary:
        summary, corpus = self.summary, self.corpus
        summary.accepted = len(self.accepted)
        summary.records = self.accepted
        summary.cc_end = self._cc()
        summary.longest_no_gain = _longest_no_gain(self.events)
        aimed = {cid for r in self.events for cid in r.get("targets", [])}
        summary.never_reached = [cid for cid in corpus.ids
                                 if cid in aimed and not self.covered[corpus.index_of(cid)]]
        return summary
