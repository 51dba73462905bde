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

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.corpus import Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.generation.cleaning import clean, normalize, rejection
from ragcov.generation.journal import append_record, read_records, rejected_path
from ragcov.generation.targets import TargetPicker, chunk_vectors
from ragcov.run import Run, validate_k
from ragcov.suite import Suite

STOP_REASONS = ("budget", "target", "complete", "plateau", "exhausted", "call limit")


@dataclass
class LoopConfig:
    budget: int
    strategy: str = "coverage"
    policy: str = "isolated"
    target_cc: float | None = None          # a fraction in (0, 1]
    targets_per_call: int = 1
    patience: int = 0                       # 0: never stop for a plateau
    max_attempts: int = 2                   # per target chunk (coverage strategy)
    seed: int = 0
    max_calls: int | None = None            # generator calls; default 5 x budget

    def check(self) -> None:
        if self.budget < 1:
            raise RagcovError("--budget must be at least 1")
        if self.target_cc is not None and not 0 < self.target_cc <= 1:
            raise RagcovError("--target must be a percentage in (0, 100]")
        if self.patience < 0:
            raise RagcovError("--patience must be 0 (off) or more")


@dataclass
class GenerationSummary:
    out: Path
    data_file: Path
    strategy: str
    generator: str
    model: str
    chunks: int
    accepted: int = 0
    resumed: int = 0                        # accepted records found on start
    new: int = 0                            # accepted in this invocation
    rejected: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    hits: int = 0
    cc_start: float = 0.0
    cc_end: float = 0.0
    stop_reason: str = ""
    longest_no_gain: int = 0
    never_reached: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def plateau(self) -> bool:
        return self.stop_reason in ("plateau", "exhausted", "call limit")

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out), "data_file": str(self.data_file), "strategy": self.strategy,
            "generator": self.generator, "model": self.model, "chunks": self.chunks,
            "accepted": self.accepted, "resumed": self.resumed, "new": self.new,
            "rejected": dict(self.rejected), "calls": self.calls,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "hits": self.hits, "cc_start": self.cc_start, "cc_end": self.cc_end,
            "stop_reason": self.stop_reason, "longest_no_gain": self.longest_no_gain,
            "never_reached": self.never_reached,
        }


def _retrieve(retriever: Any, text: str, k: int) -> list[tuple[str, float | None]]:
    result = retriever.retrieve([text], k)
    if len(result) != 1:
        raise RagcovError(f"the retriever returned {len(result)} result lists for 1 query")
    return list(result[0])


def _ensure_data_file(data: CoverageData, corpus: Corpus, retriever: Any, k: int) -> None:
    empty = Run(k=k, retriever=retriever.fingerprint())
    # An empty append checks k, corpus and retriever against an existing file.
    data.write(corpus, empty, append=data.exists())


def _record_missing(data: CoverageData, corpus: Corpus, retriever: Any, k: int,
                    queries: list[tuple[str, str]]) -> None:
    """Retrieve and record queries the data file lacks (seed suite, or a crash window)."""
    todo = data.pending(queries, k, corpus.hash, retriever.fingerprint())
    if not todo:
        return
    from ragcov.run import run_retriever

    run = run_retriever(retriever, todo, k, progress=False)
    data.write(corpus, run, append=True)


def run_generation(corpus: Corpus, retriever: Any, generator: Any, k: int, out: Path,
                   data_file: Path, config: LoopConfig, seed_suite: Suite | None = None,
                   vectors: Any = None,
                   on_step: Callable[[dict[str, Any]], None] | None = None) -> GenerationSummary:
    """Generate until the budget, the target CC, a plateau or the call limit; resumable."""
    validate_k(k)
    config.check()
    out, data_file = Path(out), Path(data_file)
    if out.suffix.lower() not in (".jsonl", ".ndjson"):
        raise RagcovError(f"{out}: the generated suite is written as JSON lines (.jsonl)")
    if vectors is None and config.strategy == "coverage" and config.policy == "isolated":
        vectors = chunk_vectors(retriever, corpus)
    picker = TargetPicker([c.doc_id for c in corpus], config.strategy,
                          config.policy, config.targets_per_call, config.max_attempts,
                          config.seed, vectors)
    rej_path = rejected_path(out)
    accepted = read_records(out)
    rejected = read_records(rej_path)
    ids = [r.get("id") for r in accepted]
    if len(set(ids)) != len(ids) or any(not isinstance(i, str) for i in ids):
        raise RagcovError(f"{out}: repeated or missing query ids; not a file this command wrote")

    data = CoverageData(data_file)
    _ensure_data_file(data, corpus, retriever, k)
    if seed_suite is not None:
        _record_missing(data, corpus, retriever, k, [(q.id, q.text) for q in seed_suite])
    _record_missing(data, corpus, retriever, k, [(r["id"], r["text"]) for r in accepted])

    m = data.matrix()
    covered = m.covered().copy()
    n = len(corpus)
    existing = {normalize(t) for t in m.query_texts}
    attempts = np.zeros(n, dtype=np.int64)
    events = sorted(accepted + rejected, key=lambda r: r["seq"])
    for r in events:
        for cid in r.get("targets", []):
            if cid in corpus:
                attempts[corpus.index_of(cid)] += 1
    no_gain = 0
    for r in reversed(events):
        if r.get("gain", 0) > 0:
            break
        no_gain += 1
    seq = (events[-1]["seq"] + 1) if events else 1

    summary = GenerationSummary(out=out, data_file=data_file, strategy=config.strategy,
                                generator=getattr(generator, "name", "?"),
                                model=getattr(generator, "model", "?"), chunks=n)
    summary.resumed = len(accepted)
    summary.rejected.update(r.get("reason", "?") for r in rejected)
    for r in events:
        summary.calls += int(r.get("calls", 0))
        summary.prompt_tokens += int(r.get("tokens", {}).get("prompt", 0))
        summary.completion_tokens += int(r.get("tokens", {}).get("completion", 0))
    summary.hits = sum(1 for r in accepted if r.get("hit_target"))
    summary.cc_start = float(covered.mean()) if n else 0.0
    template = getattr(generator, "template", None)
    examples = template.example_lines() if template is not None else []
    template_hash = template.hash if template is not None else None
    max_calls = config.max_calls if config.max_calls is not None else 5 * config.budget
    fingerprint = retriever.fingerprint()
    prefix = out.stem

    while True:
        cc = float(covered.mean()) if n else 0.0
        if len(accepted) >= config.budget:
            summary.stop_reason = "budget"
            break
        if config.target_cc is not None and cc >= config.target_cc - 1e-12:
            summary.stop_reason = "target"
            break
        if n and covered.all():
            summary.stop_reason = "complete"
            break
        if config.patience and no_gain >= config.patience:
            summary.stop_reason = "plateau"
            break
        if len(events) >= max_calls:
            summary.stop_reason = "call limit"
            break
        targets = picker.pick(covered, attempts, seq)
        if targets is None:
            summary.stop_reason = "exhausted"
            break
        target_ids = [corpus[t].id for t in targets]
        attempt = int(attempts[targets[0]]) + 1
        gen = generator.generate([corpus[t].text for t in targets], attempt=attempt,
                                 seed=config.seed * 1_000_003 + seq)
        attempts[targets] += 1
        text = clean(gen.raw)
        reason = rejection(text, existing, examples)
        base = {"seq": seq, "attempt": attempt, "targets": target_ids,
                "strategy": config.strategy, "policy": config.policy if
                config.strategy == "coverage" else None,
                "generator": summary.generator, "model": summary.model,
                "template_hash": template_hash,
                "tokens": {"prompt": gen.prompt_tokens, "completion": gen.completion_tokens,
                           "total": gen.prompt_tokens + gen.completion_tokens},
                "calls": gen.calls}
        summary.calls += gen.calls
        summary.prompt_tokens += gen.prompt_tokens
        summary.completion_tokens += gen.completion_tokens
        if reason is not None:
            record = {**base, "reason": reason, "output": gen.raw[:500], "gain": 0}
            append_record(rej_path, record)
            summary.rejected[reason] += 1
        else:
            qid = f"{prefix}-{seq:05d}"
            ranked = _retrieve(retriever, text, k)
            run = Run(k=k, retriever=fingerprint)
            run.add(qid, text, ranked)
            if corpus.unknown(run.chunk_ids()):
                raise RagcovError("the retriever returned chunk ids that are not in the corpus")
            cols = [corpus.index_of(cid) for cid, _ in run.results[qid]]
            gained = [c for c in cols if not covered[c]]
            covered[gained] = True
            ranks = {c: r for r, c in enumerate(cols, start=1)}
            record = {"id": qid, "text": text, **base,
                      "hit_target": any(t in ranks for t in targets),
                      "hit_targets": [corpus[t].id for t in targets if t in ranks],
                      "target_ranks": [ranks.get(t) for t in targets],
                      "gain": len(gained), "cc_after": float(covered.mean()), "k": k}
            append_record(out, record)          # durable first ...
            data.write(corpus, run, append=True)  # ... then one transaction
            existing.add(normalize(text))
            accepted.append(record)
            summary.new += 1
            summary.hits += int(record["hit_target"])
        events.append(record)
        no_gain = 0 if record["gain"] > 0 else no_gain + 1
        seq += 1
        if on_step is not None:
            on_step(record)

    summary.accepted = len(accepted)
    summary.records = accepted
    summary.cc_end = float(covered.mean()) if n else 0.0
    run_len = longest = 0
    for r in events:
        run_len = 0 if r.get("gain", 0) > 0 else run_len + 1
        longest = max(longest, run_len)
    summary.longest_no_gain = longest
    aimed = {cid for r in events for cid in r.get("targets", [])}
    summary.never_reached = [cid for cid in corpus.ids
                             if cid in aimed and not covered[corpus.index_of(cid)]]
    return summary
