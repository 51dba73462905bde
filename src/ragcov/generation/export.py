"""The generated suite in the shapes other evaluation tools load.

RAGAS test sets are lists of samples with ``user_input`` and the contexts the
question was written from (``reference_contexts``, with their ids alongside);
DeepEval goldens carry ``input`` and ``context``. The target chunks are the
reference: they are what the question was written to be answered by.
"""

from __future__ import annotations

import os
from typing import Any

from ragcov.corpus import Corpus
from ragcov.files import write_json_atomic

PROVENANCE = ("id", "targets", "strategy", "generator", "model", "template_hash", "attempt",
              "hit_target", "gain", "cc_after")


def _contexts(record: dict[str, Any], corpus: Corpus) -> tuple[list[str], list[str]]:
    ids = [cid for cid in record.get("targets", []) if cid in corpus]
    return ids, [corpus.get(cid).text for cid in ids]


def ragas_records(records: list[dict[str, Any]], corpus: Corpus) -> list[dict[str, Any]]:
    out = []
    for r in records:
        ids, texts = _contexts(r, corpus)
        out.append({"user_input": r["text"], "reference_contexts": texts,
                    "reference_context_ids": ids})
    return out


def deepeval_records(records: list[dict[str, Any]], corpus: Corpus) -> list[dict[str, Any]]:
    out = []
    for r in records:
        _ids, texts = _contexts(r, corpus)
        out.append({"input": r["text"], "context": texts,
                    "additional_metadata": {k: r.get(k) for k in PROVENANCE}})
    return out


def write_ragas(path: str | os.PathLike[str], records: list[dict[str, Any]],
                corpus: Corpus) -> None:
    write_json_atomic(path, ragas_records(records, corpus))


def write_deepeval(path: str | os.PathLike[str], records: list[dict[str, Any]],
                   corpus: Corpus) -> None:
    write_json_atomic(path, deepeval_records(records, corpus))
