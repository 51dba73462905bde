"""A reranker and a retriever given to ragcov as ``module:attr`` by the stage tests.

Imported by name from the command line (``--rerank rerankers:reverse``), as a team's own
would be.
"""

from __future__ import annotations

import re

WORD = re.compile(r"[a-z0-9]+")


def by_id(query, candidates):
    """The candidates by id, last first, whatever the query: chunks whose ids sort early
    reach the top k only among few candidates, so the reranker loses them."""
    ranked = sorted(candidates, key=lambda c: c["id"], reverse=True)
    return [{"id": c["id"], "score": float(len(ranked) - i)} for i, c in enumerate(ranked)]


def stranger(query, candidates):
    """A reranker that answers with a chunk it was not given."""
    return ["not-a-candidate", *(c["id"] for c in candidates)]


def overlap(corpus):
    """A retriever with no vectors: chunks ranked by the words they share with the query."""
    words = [set(WORD.findall(c.text.lower())) for c in corpus]
    ids = corpus.ids

    def retrieve(query, k):
        q = set(WORD.findall(query.lower()))
        ranked = sorted(range(len(ids)), key=lambda j: (-len(q & words[j]), j))
        return [(ids[j], float(len(q & words[j]))) for j in ranked[:k]]

    return retrieve
