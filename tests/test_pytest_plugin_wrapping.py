"""record() around real LangChain and LlamaIndex retrievers: their own methods, recorded.

Each nested suite builds a real retriever (a subclass of the framework's own
BaseRetriever, so invoke/ainvoke/batch/abatch and retrieve/aretrieve are the
framework's code), calls it through ``record(...)`` and checks it gets exactly what
the unwrapped retriever returns. It runs once with ``--ragcov`` (the data file must
hold every query with the ids the retriever returned, read back with sqlite3) and
once without (nothing written).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import CITY_CHUNKS

pytest_plugins = ["pytester"]

# The nested retrievers return, best first, the chunks whose id is a word of the query.
HELPERS = '''
import asyncio

CHUNKS = {c["id"]: c["text"] for c in CITY_CHUNKS}

def hits(query):
    return [w for w in query.lower().split() if w in CHUNKS]
'''.replace("CITY_CHUNKS", json.dumps(CITY_CHUNKS))

LANGCHAIN_TESTS = HELPERS + '''
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from ragcov.pytest_plugin import record


class Keywords(BaseRetriever):
    top: int = 3

    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(id=cid, page_content=CHUNKS[cid], metadata={"score": 1 / rank})
                for rank, cid in enumerate(hits(query)[: self.top], start=1)]


plain = Keywords()
wrapped = record(plain)


def test_invoke():
    assert wrapped.invoke("paris") == plain.invoke("paris")
    assert [d.id for d in wrapped.invoke("paris")] == ["paris"]


def test_ainvoke():
    got = asyncio.run(wrapped.ainvoke("tokyo madrid"))
    assert got == plain.invoke("tokyo madrid") and [d.id for d in got] == ["tokyo", "madrid"]


def test_batch():
    queries = ["berlin", "dividends interest paris"]
    assert wrapped.batch(queries) == plain.batch(queries)


def test_abatch():
    assert asyncio.run(wrapped.abatch(["mitochondria"])) == plain.batch(["mitochondria"])


def test_other_attributes_pass_through():
    assert wrapped.top == 3
    assert wrapped.get_name() == plain.get_name()
'''

LLAMAINDEX_TESTS = HELPERS + '''
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ragcov.pytest_plugin import record


class Keywords(BaseRetriever):
    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=TextNode(id_=cid, text=CHUNKS[cid]), score=1 / rank)
                for rank, cid in enumerate(hits(query_bundle.query_str), start=1)]


plain = Keywords()
wrapped = record(plain)


def test_retrieve():
    got = wrapped.retrieve("paris berlin")
    assert got == plain.retrieve("paris berlin")
    assert [n.node.node_id for n in got] == ["paris", "berlin"]


def test_retrieve_a_query_bundle():
    assert wrapped.retrieve(QueryBundle("photosynthesis")) == plain.retrieve("photosynthesis")


def test_aretrieve():
    got = asyncio.run(wrapped.aretrieve("tokyo interest"))
    assert got == plain.retrieve("tokyo interest")


def test_other_attributes_pass_through():
    assert wrapped.callback_manager is plain.callback_manager
'''

# What the data file must hold, recounted by hand: each query's ids, best first, cut at k=2.
LANGCHAIN_RECORDED = {
    "paris": ["paris"], "tokyo madrid": ["tokyo", "madrid"], "berlin": ["berlin"],
    "dividends interest paris": ["dividends", "interest"], "mitochondria": ["mitochondria"],
}
LLAMAINDEX_RECORDED = {
    "paris berlin": ["paris", "berlin"], "photosynthesis": ["photosynthesis"],
    "tokyo interest": ["tokyo", "interest"],
}


def hits_by_query(path: Path) -> dict[str, list[str]]:
    with sqlite3.connect(path) as con:
        rows = con.execute(
            "SELECT q.text, c.id FROM queries q LEFT JOIN hits h ON h.query_idx = q.idx "
            "LEFT JOIN chunks c ON c.idx = h.chunk_idx ORDER BY q.idx, h.rank").fetchall()
    out: dict[str, list[str]] = {}
    for text, cid in rows:
        out.setdefault(text, [])
        if cid is not None:
            out[text].append(cid)
    return out


def run_both_ways(pytester: pytest.Pytester, name: str, source: str, passed: int,
                  recorded: dict[str, list[str]]) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(**{name: source})
    off = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"{name}.py")
    off.assert_outcomes(passed=passed)
    assert not (pytester.path / ".ragcov").exists()
    off.stdout.no_fnmatch_line("*chunk coverage*")

    on = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"{name}.py", "--ragcov",
                                       "--ragcov-corpus", "corpus.jsonl", "--ragcov-k", "2")
    on.assert_outcomes(passed=passed)
    assert on.ret == pytest.ExitCode.OK
    assert hits_by_query(pytester.path / ".ragcov") == recorded
    covered = {cid for ids in recorded.values() for cid in ids}
    on.stdout.fnmatch_lines([f"Chunk coverage: * ({len(covered)} of 8 chunks, "
                             f"{len(recorded)} queries); workload ceiling *"])


def test_a_langchain_retriever_keeps_invoke_and_batch(pytester: pytest.Pytester):
    pytest.importorskip("langchain_core.retrievers")
    run_both_ways(pytester, "test_lc", LANGCHAIN_TESTS, 5, LANGCHAIN_RECORDED)


def test_a_llamaindex_retriever_keeps_retrieve(pytester: pytest.Pytester):
    pytest.importorskip("llama_index.core.retrievers")
    run_both_ways(pytester, "test_li", LLAMAINDEX_TESTS, 4, LLAMAINDEX_RECORDED)


def test_the_langchain_fingerprint_is_the_adapters(pytester: pytest.Pytester):
    pytest.importorskip("langchain_core.retrievers")
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_lc=LANGCHAIN_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_lc.py", "-k", "invoke",
                                           "--ragcov", "--ragcov-corpus", "corpus.jsonl",
                                           "--ragcov-report", "json")
    result.assert_outcomes(passed=2, deselected=3)
    report = json.loads((pytester.path / "ragcov.json").read_text(encoding="utf-8"))
    assert report["meta"]["retriever"] == {"kind": "langchain", "name": "test_lc.Keywords"}


VECTORSTORE_TESTS = '''
import json

from langchain_core.embeddings import Embeddings
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from ragcov.pytest_plugin import record
from ragcov.retrievers.dense import load_encoder

encoder = load_encoder(MINILM)


class MiniLM(Embeddings):
    def embed_documents(self, texts):
        return encoder.encode(list(texts), normalize_embeddings=True).tolist()

    def embed_query(self, text):
        return self.embed_documents([text])[0]


store = InMemoryVectorStore(MiniLM())
store.add_documents([Document(id=c["id"], page_content=c["text"]) for c in CHUNKS],
                    ids=[c["id"] for c in CHUNKS])
plain = store.as_retriever(search_kwargs={"k": 2})
wrapped = record(plain)
QUESTIONS = ["What is the capital of Japan?", "How do plants make food?",
             "Which organelle powers the cell?"]


def test_invoke_and_batch():
    assert wrapped.invoke(QUESTIONS[0]) == plain.invoke(QUESTIONS[0])
    assert wrapped.batch(QUESTIONS[1:]) == plain.batch(QUESTIONS[1:])
    expected = {q: [d.id for d in plain.invoke(q)] for q in QUESTIONS}
    with open("expected.json", "w") as f:
        json.dump(expected, f)
'''


@pytest.mark.slow  # loads MiniLM in two nested pytest processes
def test_a_langchain_vector_store_retriever_over_minilm(pytester: pytest.Pytester,
                                                        minilm_path: str):
    pytest.importorskip("langchain_core.vectorstores")
    source = (f"CHUNKS = {CITY_CHUNKS!r}\nMINILM = {str(minilm_path)!r}\n"
              + VECTORSTORE_TESTS)
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_store=source)
    off = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    off.assert_outcomes(passed=1)
    assert not (pytester.path / ".ragcov").exists()
    on = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                       "corpus.jsonl", "--ragcov-k", "2")
    on.assert_outcomes(passed=1)
    expected = json.loads((pytester.path / "expected.json").read_text(encoding="utf-8"))
    assert expected["What is the capital of Japan?"][0] == "tokyo"
    assert hits_by_query(pytester.path / ".ragcov") == expected
