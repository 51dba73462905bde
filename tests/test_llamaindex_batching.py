"""A LlamaIndex vector retriever's queries are embedded in batches by its own model, and
only where that gives each query's own vector: the top-k is the framework's own either way.

Real LlamaIndex (``VectorStoreIndex`` over its default in-memory store) with
``HuggingFaceEmbedding`` over the local all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("llama_index.embeddings.huggingface")

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"


def _app(minilm_path: str, **embedding: object):
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from ragcov.corpus import load_corpus

    Settings.llm = None
    pages = SAMPLE / "finqa_pages.jsonl"
    corpus = load_corpus(pages, split=True)
    corpus = type(corpus)(corpus.chunks[:40], chunking=corpus.chunking)
    nodes = [TextNode(id_=c.id, text=c.text) for c in corpus]
    embed = HuggingFaceEmbedding(model_name=minilm_path, device="cpu", **embedding)
    return corpus, VectorStoreIndex(nodes, embed_model=embed).as_retriever(similarity_top_k=3)


def _questions() -> list[str]:
    rows = [json.loads(line) for line in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    return [r["question"] for r in rows[:12]]


@pytest.mark.parametrize("instruction", [None, "Represent this question for retrieval: "])
def test_batched_queries_give_the_frameworks_own_top_k(minilm_path: str, instruction) -> None:
    from ragcov.retrievers import wrap

    corpus, retriever = _app(minilm_path, query_instruction=instruction)
    questions = _questions()
    own = [[n.node.node_id for n in retriever.retrieve(q)] for q in questions]
    adapter = wrap(retriever, corpus)
    assert adapter.batches_queries
    got = [[cid for cid, _ in r] for r in adapter.retrieve(questions, 3)]
    assert got == own
    # A model that embeds a query apart from a text (a query instruction) is left to do so.
    assert adapter.batch_embedding is (instruction is None)


def test_a_look_alike_is_asked_one_query_at_a_time() -> None:
    from ragcov.corpus import Chunk, Corpus
    from ragcov.retrievers.llamaindex import LlamaIndexRetriever

    class Node:
        def __init__(self, cid: str) -> None:
            self.node_id, self.metadata = cid, {}

        def get_content(self) -> str:
            return ""

    class Scored:
        def __init__(self, cid: str) -> None:
            self.node, self.score = Node(cid), 1.0

    class LookAlike:  # not LlamaIndex's: no model of its own to batch with
        def retrieve(self, query: str) -> list[Scored]:
            return [Scored("a")]

    adapter = LlamaIndexRetriever(LookAlike(), Corpus([Chunk("a", "alpha", "d")]))
    assert not adapter.batches_queries
    assert adapter.retrieve(["x", "y"], 1) == [[("a", 1.0)], [("a", 1.0)]]
