"""A reranking stage: the first stage retrieves ``depth`` candidates, a reranker orders them,
the top k are what the pipeline returns (``--rerank MODEL --rerank-depth N``).

Most production pipelines work so. A chunk the first stage finds and the reranker always
drops below k is lost at a third stage, after the embedding and the index; to say so,
ragcov records the first stage's candidates beside the final lists
(:mod:`ragcov.reachability.stages`).

Two kinds of reranker: a sentence-transformers ``CrossEncoder`` by name or path, and the
team's own as ``module:attr``, a function ``(query, candidates) -> candidates`` in their
new order (each candidate a dict with ``id``, ``text`` and ``score``; it may return the
dicts, ids, or ``(id, score)`` pairs, and may return fewer).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragcov.errors import RagcovError
from ragcov.fields import FieldError, parse_id, parse_score

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.fields import Ranked

# The seed a cross-encoder's head is drawn from when its checkpoint has none (a bi-encoder
# such as all-MiniLM-L6-v2 loaded as a CrossEncoder): the same order in run and probe.
HEAD_SEED = 0
PREDICT_BATCH = 64


def check_depth(depth: int | None, k: int | None = None) -> None:
    if depth is not None and (isinstance(depth, bool) or depth < 1):
        raise RagcovError(f"--rerank-depth must be a whole number of at least 1, got {depth}")
    if depth is not None and k is not None and depth < k:
        raise RagcovError(f"--rerank-depth {depth} is below k={k}: the reranker must get at least "
                          "the k candidates it returns")


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, scoring every (query, candidate) pair at once."""

    def __init__(self, model: str, device: str = "cpu") -> None:
        from ragcov.retrievers.dense import resolve_model
        from ragcov.retrievers.model_identity import identify_model

        self.name, source = resolve_model(model)
        self.identity = identify_model(self.name, source)
        self.model = _load_cross_encoder(source, device, self.identity.cache_key)
        architectures = getattr(getattr(self.model, "config", None), "architectures", None) or []
        # A checkpoint without a classification head gets one drawn from HEAD_SEED.
        self.trained_head = any("ForSequenceClassification" in a for a in architectures)

    def describe(self) -> dict[str, Any]:
        # Known by its content; where its folder is (model_path) is no part of a pipeline.
        fp = {key: v for key, v in self.identity.fingerprint().items() if key != "model_path"}
        return {"reranker": "cross-encoder", **fp,
                **({} if self.trained_head else {"head": f"untrained, seed {HEAD_SEED}"})}

    def rerank(self, queries: Sequence[str], candidates: Sequence[list[dict[str, Any]]]
               ) -> list[Ranked]:
        pairs = [(q, c["text"]) for q, cands in zip(queries, candidates) for c in cands]
        scores = (self.model.predict(pairs, batch_size=PREDICT_BATCH, show_progress_bar=False)
                  if pairs else [])
        out: list[Ranked] = []
        at = 0
        for cands in candidates:
            mine = [float(s) for s in scores[at:at + len(cands)]]
            at += len(cands)
            # Best first; ties keep the first stage's order.
            order = sorted(range(len(cands)), key=lambda i: -mine[i])
            out.append([(cands[i]["id"], mine[i]) for i in order])
        return out


@functools.lru_cache(maxsize=2)
def _load_cross_encoder(source: str, device: str, content: str) -> Any:
    """Loaded once per process and model content; a missing head is drawn from
    :data:`HEAD_SEED` without touching the caller's random state."""
    try:
        import torch
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        raise RagcovError("--rerank MODEL needs sentence-transformers: pip install "
                          "'ragcov[dense]'") from exc
    from pathlib import Path

    if Path(source).exists():
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(HEAD_SEED)
        try:
            return CrossEncoder(source, device=device)
        except OSError as exc:
            raise RagcovError(f"cannot load reranker model {source!r}: {exc}") from exc


class FunctionReranker:
    """The team's own reranker, ``module:attr``: ``(query, candidates) -> candidates``."""

    def __init__(self, spec: str, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise RagcovError(f"reranker {spec!r} is not callable")
        self.spec = spec
        self.fn = fn

    def describe(self) -> dict[str, Any]:
        return {"reranker": "function", "name": self.spec}

    def rerank(self, queries: Sequence[str], candidates: Sequence[list[dict[str, Any]]]
               ) -> list[Ranked]:
        return [self._one(q, cands) for q, cands in zip(queries, candidates)]

    def _one(self, query: str, cands: list[dict[str, Any]]) -> Ranked:
        given = {c["id"]: c for c in cands}
        reply = self.fn(query, [dict(c) for c in cands])
        if reply is None or isinstance(reply, (str, bytes, dict)):
            raise RagcovError(f"reranker {self.spec} returned {type(reply).__name__}; expected "
                              "the candidates (or their ids) in their new order")
        out: Ranked = []
        seen: set[str] = set()
        for item in reply:
            try:
                cid, score = _item(item)
            except FieldError as exc:
                raise RagcovError(f"reranker {self.spec}: {exc}") from None
            if cid not in given:
                raise RagcovError(f"reranker {self.spec} returned {cid!r}, which is not one of the "
                                  f"{len(cands)} candidates it was given for {query[:60]!r}")
            if cid not in seen:
                seen.add(cid)
                out.append((cid, score))
        return out


def _item(item: Any) -> tuple[str, float | None]:
    if isinstance(item, dict):
        return parse_id(item.get("id")), parse_score(item.get("score"))
    if isinstance(item, (tuple, list)):
        if len(item) != 2:
            raise FieldError("a pair must be (chunk id, score)")
        return parse_id(item[0]), parse_score(item[1])
    return parse_id(item), None


def make_reranker(spec: str, device: str = "cpu") -> Any:
    """``module:attr`` (a function) or a CrossEncoder name or path."""
    from pathlib import Path

    if ":" in spec and not Path(spec).exists():
        from ragcov.retrievers.loader import resolve_object

        return FunctionReranker(spec, resolve_object(spec, "reranker"))
    return CrossEncoderReranker(spec, device)


class RerankedRetriever:
    """A first stage searched to ``depth``, reordered by ``reranker``, cut to k.

    ``first_stage`` is any retriever; the fingerprint is its own with the reranker and
    the depth added, so a run and its probes go through one pipeline or are refused.
    """

    def __init__(self, first_stage: Any, reranker: Any, depth: int, corpus: Corpus) -> None:
        check_depth(depth)
        self.first_stage = first_stage
        self.reranker = reranker
        self.depth = depth
        self.corpus = corpus
        self._texts = corpus.texts
        self.batches_queries = getattr(first_stage, "batches_queries", True)

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        return self.rerank_lists(texts, self.first_stage.retrieve(texts, max(k, self.depth)), k)

    def rerank_lists(self, texts: Sequence[str], lists: Sequence[Ranked], k: int) -> list[Ranked]:
        """The first stage's lists (as retrieved) reordered and cut to k. A candidate the
        corpus does not hold is passed on as it is (the run's id check reports it)."""
        position = self.corpus.positions
        candidates = [[{"id": cid, "text": self._texts[position[cid]] if cid in position else "",
                        "score": score} for cid, score in dict(ranked).items()]
                      for ranked in lists]
        return [ranked[:k] for ranked in self.reranker.rerank(texts, candidates)]

    def fingerprint(self) -> dict[str, Any]:
        fp = dict(self.first_stage.fingerprint())
        fp["rerank"] = {**self.reranker.describe(), "depth": self.depth}
        return fp

    def __getattr__(self, name: str) -> Any:
        # What a run asks of its retriever beyond the protocol (measured recall, the
        # store's model, id matching counts) is the first stage's.
        if name in ("first_stage", "reranker", "depth", "corpus", "_texts"):
            raise AttributeError(name)
        return getattr(self.first_stage, name)
