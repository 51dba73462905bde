"""Retriever adapters: plain callables, LangChain, LlamaIndex, and ``module:attr`` loading.

Fast tests use real LangChain and LlamaIndex objects that need no model (a
LangChain ``BaseRetriever`` subclass, as users write them; LlamaIndex nodes). The
slow tests run a real LangChain InMemoryVectorStore and a real LlamaIndex
VectorStoreIndex over the local MiniLM model, and check the issue's promise: the
same retrievals give the same CC whether they come from LangChain, LlamaIndex, a
TREC run file or an OpenInference span export.
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from helpers import cli, langchain_embeddings, llamaindex_embedding
from ragcov.api import measure
from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.metrics import chunk_coverage
from ragcov.retrievers import (
    AdapterWarning,
    CallableRetriever,
    LangChainRetriever,
    LlamaIndexRetriever,
    load_retriever,
    make_retriever,
    wrap,
)
from ragcov.suite import Suite

lc_docs = pytest.importorskip("langchain_core.documents")
lc_retrievers = pytest.importorskip("langchain_core.retrievers")
li_schema = pytest.importorskip("llama_index.core.schema")


def words(text: str) -> set[str]:
    return {w.strip("?.,'$").lower() for w in text.split()} - {""}


def overlap_rank(corpus, query: str, k: int) -> list[tuple[str, float]]:
    """A tiny lexical search used by the fast tests' retrievers."""
    q = words(query)
    scored = [(c.id, float(len(q & words(c.text)))) for c in corpus]
    scored = [s for s in scored if s[1] > 0]
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:k]


# ---------------------------------------------------------------- callable
def test_callable_accepts_ids_pairs_dicts_and_objects(city_corpus):
    class Hit:
        def __init__(self, chunk_id: str, score: float) -> None:
            self.chunk_id, self.score = chunk_id, score

    node = li_schema.NodeWithScore(node=li_schema.TextNode(id_="tokyo", text="x"), score=0.3)
    doc = lc_docs.Document(page_content="y", id="madrid")
    returns = {
        "ids": ["paris", "berlin"],
        "pairs": [("paris", 0.9), ["berlin", 0.5]],
        "dicts": [{"id": "paris", "score": 0.9}, {"chunk_id": "berlin"}],
        "objects": [Hit("paris", 0.9), node, doc],
    }
    for kind, value in returns.items():
        r = CallableRetriever(lambda q, k, v=value: v, city_corpus, name=kind)
        ranked = r.retrieve(["q"], 3)[0]
        assert [cid for cid, _ in ranked] == [x for x in ["paris", "berlin", "tokyo", "madrid"]
                                              if x in {cid for cid, _ in ranked}]
    assert CallableRetriever(lambda q, k: returns["objects"], city_corpus).retrieve(["q"], 3)[0] \
        == [("paris", 0.9), ("tokyo", 0.3), ("madrid", None)]
    assert CallableRetriever(lambda q, k: returns["pairs"]).retrieve(["q"], 1) == \
        [[("paris", 0.9)]]


def test_callable_receives_query_and_k_and_runs_through_measure(city_corpus):
    seen: list[tuple[str, int]] = []

    def search(query: str, k: int) -> list[str]:
        seen.append((query, k))
        return [cid for cid, _ in overlap_rank(city_corpus, query, k)]

    suite = Suite.from_texts(["capital of Japan", "chemical energy in a cell"])
    m = measure(city_corpus, suite, wrap(search, city_corpus), k=2, progress=False)
    assert seen == [("capital of Japan", 2), ("chemical energy in a cell", 2)]
    assert m.meta["retriever"]["kind"] == "callable"
    expected = {cid for q in suite.texts for cid, _ in overlap_rank(city_corpus, q, 2)}
    assert chunk_coverage(m) == pytest.approx(len(expected) / len(city_corpus))


@pytest.mark.parametrize("returned, message", [
    ("paris", "returned str"),
    (None, "returned NoneType"),
    (42, "returned int; expected a list of ids"),
    (3.5, "returned float; expected a list of ids"),
    ([("paris", 1, 2)], "a pair must be"),
    ([object()], "carry no chunk id"),
    ([("paris", "high")], "not a number"),
])
def test_callable_bad_returns_are_clear(city_corpus, returned, message):
    r = CallableRetriever(lambda q, k: returned, city_corpus, name="search")
    with pytest.raises(RagcovError, match=message):
        r.retrieve(["q"], 2)


class _Hit:
    """An object carrying its id and score as attributes."""

    def __init__(self, chunk_id, score=None) -> None:
        self.chunk_id, self.score = chunk_id, score

    def __repr__(self) -> str:
        return f"Hit({self.chunk_id!r}, {self.score!r})"


# Each item used to be recorded as something else ("None", 0.9, 1.0, nan) or as an id
# that matches nothing ("['paris']", "True", "  "); now each is refused, as the HTTP
# retriever and the trace readers refuse them.
UNUSABLE_ITEMS = [
    ((None, 0.5), "None is not an id"),
    (("paris", "0.9"), r"score '0\.9' is a string, not a number"),
    (("paris", True), "score True is not a number"),
    (("paris", False), "score False is not a number"),
    (("paris", float("nan")), "score nan is not a finite number"),
    (("paris", float("inf")), "score inf is not a finite number"),
    (("paris", float("-inf")), "score -inf is not a finite number"),
    ((["paris"], 0.5), r"\['paris'\] is not an id"),
    (({"id": "paris"}, 0.5), r"\{'id': 'paris'\} is not an id"),
    ((True, 0.5), "True is not an id"),
    (("   ", 0.5), "the id is blank"),
    ((1.5, 0.5), "1.5 is not an id"),
    ("", "the id is blank"),
    (None, "None is not an id"),
    (True, "True is not an id"),
    ({"id": ["paris"], "score": 0.9}, r"\['paris'\] is not an id"),
    ({"chunk_id": False}, "False is not an id"),
    ({"id": "paris", "score": "0.9"}, "is a string, not a number"),
    ({"id": "paris", "score": float("nan")}, "not a finite number"),
    (_Hit(["paris"], 0.9), r"\['paris'\] is not an id"),
    (_Hit("paris", "high"), "is a string, not a number"),
    (_Hit("paris", float("inf")), "not a finite number"),
]


@pytest.mark.parametrize(("item", "message"), UNUSABLE_ITEMS,
                         ids=[repr(item)[:30] for item, _ in UNUSABLE_ITEMS])
def test_callable_unusable_items_are_one_line_errors_naming_retriever_and_item(
        city_corpus, item, message):
    r = CallableRetriever(lambda q, k: [("berlin", 0.9), item], city_corpus,
                          name="my_app.rag:search")
    with pytest.raises(RagcovError, match=message) as info:
        r.retrieve(["capital of France"], 2)
    text = str(info.value)
    assert "\n" not in text
    assert "'my_app.rag:search'" in text
    assert "result 2 for query 'capital of France'" in text
    assert repr(item) in text


def test_callable_framework_objects_with_unusable_scores_are_refused(city_corpus):
    doc = lc_docs.Document(page_content="y", id="madrid", metadata={"score": "0.9"})
    node = li_schema.NodeWithScore(node=li_schema.TextNode(id_="tokyo", text="x"),
                                   score=float("nan"))
    for item, message in [(doc, "is a string"), (node, "not a finite number")]:
        r = CallableRetriever(lambda q, k, item=item: [item], city_corpus, name="search")
        with pytest.raises(RagcovError, match=message) as info:
            r.retrieve(["q"], 1)
        assert "'search': result 1 for query 'q'" in str(info.value)
        assert "\n" not in str(info.value)


def test_callable_items_past_k_are_not_read(city_corpus):
    # Only the top k are recorded, so a bad item below them is no error.
    r = CallableRetriever(lambda q, k: [("paris", 0.9), (None, "junk")], city_corpus)
    assert r.retrieve(["q"], 1) == [[("paris", 0.9)]]


def test_callable_dicts_use_the_shared_keys_and_fall_back_to_content(city_corpus, recwarn):
    paris = city_corpus.get("paris")
    returns = [
        {"_id": "berlin", "_score": 0.5},
        # A document id is no chunk id: the text finds the chunk.
        {"doc_id": "europe", "text": paris.text, "similarity": 0.25},
    ]
    r = CallableRetriever(lambda q, k: returns, city_corpus)
    assert r.retrieve(["q"], 2) == [[("berlin", 0.5), ("paris", 0.25)]]
    assert r.resolver.fallbacks == {"content hash": 1}


def test_module_attr_retriever_with_bad_ids_is_one_line_cli_error(
        user_module, city_corpus_file, tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "question": "anything"}\n', encoding="utf-8")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
                       "--retriever", f"{user_module}:none_ids", "--k", "2", "-q",
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 1
    err = err.strip()
    assert err.count("\n") == 0, err
    assert f"'{user_module}:none_ids'" in err and "(None, 0.5)" in err
    assert "None is not an id" in err
    assert not (tmp_path / "d.ragcov").exists()


# --------------------------------------------------- LangChain, no model
def keyword_retriever_class():
    """A LangChain retriever as users write one: subclass BaseRetriever."""

    class KeywordRetriever(lc_retrievers.BaseRetriever):
        documents: list
        k: int = 4

        def _get_relevant_documents(self, query, *, run_manager, **kwargs):
            k = kwargs.get("k", self.k)
            q = words(query)
            scored = sorted(((len(q & words(d.page_content)), n) for n, d in
                             enumerate(self.documents)), key=lambda s: (-s[0], s[1]))
            return [self.documents[n] for score, n in scored if score > 0][:k]

    return KeywordRetriever


def lc_documents(corpus, how: str) -> list:
    docs = []
    for c in corpus:
        if how == "id":
            docs.append(lc_docs.Document(page_content=c.text, id=c.id))
        elif how == "metadata-id":
            docs.append(lc_docs.Document(page_content=c.text, metadata={"id": c.id}))
        elif how == "chunk_id":
            docs.append(lc_docs.Document(page_content=c.text, id=f"uuid-{c.id}",
                                         metadata={"chunk_id": c.id}))
        elif how == "content":
            docs.append(lc_docs.Document(page_content=c.text + "\n", metadata={"source": "x"}))
    return docs


@pytest.mark.parametrize("how, fallback", [
    ("id", None),
    ("metadata-id", "metadata['id']"),
    ("chunk_id", "metadata['chunk_id']"),
    ("content", "content hash"),
])
def test_langchain_ids_and_fallbacks(city_corpus, how, fallback, recwarn):
    retriever = keyword_retriever_class()(documents=lc_documents(city_corpus, how))
    r = wrap(retriever, city_corpus)
    assert isinstance(r, LangChainRetriever)
    ranked = r.retrieve(["Which capital is on the Seine?", "sugar from sunlight"], 1)
    assert ranked == [[("paris", None)], [("photosynthesis", None)]]
    messages = [str(w.message) for w in recwarn if issubclass(w.category, AdapterWarning)]
    if fallback is None:
        assert messages == []
    else:
        assert len(messages) == 1 and fallback in messages[0]  # once, not per document
        assert r.resolver.fallbacks == {fallback: 2}


def test_langchain_k_is_passed_to_invoke(city_corpus):
    retriever = keyword_retriever_class()(documents=lc_documents(city_corpus, "id"), k=1)
    ranked = wrap(retriever, city_corpus).retrieve(["capital of France Germany Spain"], 3)[0]
    assert len(ranked) == 3


def test_langchain_document_matching_nothing_is_an_error(city_corpus):
    stray = [lc_docs.Document(page_content="A chunk that is in no corpus capital")]
    r = wrap(keyword_retriever_class()(documents=stray), city_corpus)
    with pytest.raises(RagcovError, match="LangChain result has no chunk id"):
        r.retrieve(["capital"], 1)


def test_langchain_unknown_ids_fail_when_recorded(city_corpus, tmp_path):
    docs = [lc_docs.Document(page_content="Paris capital", id="not-in-corpus")]
    r = wrap(keyword_retriever_class()(documents=docs), city_corpus)
    # Stopped at the first query, before the rest of the suite (and before any write).
    with pytest.raises(RagcovError, match=r"not in the corpus: 1 unknown id in the first 1 "
                                          r"query \('not-in-corpus'\)"):
        measure(city_corpus, Suite.from_texts(["capital"]), r, k=1,
                data_file=tmp_path / "d.ragcov", progress=False)
    assert not (tmp_path / "d.ragcov").exists()


class FixedStore:
    """A LangChain-like vector store (no invoke) returning fixed (Document, score) pairs."""

    def __init__(self, pairs) -> None:
        self.pairs = pairs

    def similarity_search(self, query, k=4):
        return [d for d, _ in self.pairs][:k]

    def similarity_search_with_score(self, query, k=4):
        return self.pairs[:k]


@pytest.mark.parametrize(("make", "message"), [
    (lambda c: keyword_retriever_class()(documents=[
        lc_docs.Document(page_content=c.get("paris").text, id="paris",
                         metadata={"score": "0.9"})]), "is a string, not a number"),
    (lambda c: keyword_retriever_class()(documents=[
        lc_docs.Document(page_content=c.get("paris").text, id="paris",
                         metadata={"score": True})]), "score True is not a number"),
    (lambda c: FixedStore([(lc_docs.Document(page_content="x", id="paris"), float("nan"))]),
     "score nan is not a finite number"),
    (lambda c: FixedStore([(lc_docs.Document(page_content="no such text",
                                             metadata={"id": ["paris"]}), 0.5)]),
     r"metadata\['id'\]: \['paris'\] is not an id"),
])
def test_langchain_unusable_scores_and_ids_are_one_line_errors(city_corpus, make, message):
    r = wrap(make(city_corpus), city_corpus)
    assert isinstance(r, LangChainRetriever)
    with pytest.raises(RagcovError, match=message) as info:
        r.retrieve(["Seine capital Paris"], 1)
    text = str(info.value)
    assert "\n" not in text
    assert f"'{r.name}': result 1 for query 'Seine capital Paris'" in text
    assert "Document(" in text


def test_langchain_unusable_metadata_id_falls_back_to_content(city_corpus, recwarn):
    doc = lc_docs.Document(page_content=city_corpus.get("paris").text,
                           metadata={"id": ["paris"]})
    r = wrap(FixedStore([(doc, 0.5)]), city_corpus)
    assert r.retrieve(["q"], 1) == [[("paris", 0.5)]]
    assert r.resolver.fallbacks == {"content hash": 1}


# -------------------------------------------------- LlamaIndex, no model
def test_llamaindex_like_retriever_gets_k_and_node_ids(city_corpus):
    from llama_index.core.base.base_retriever import BaseRetriever

    class KeywordNodes(BaseRetriever):
        def __init__(self, corpus, similarity_top_k: int = 2) -> None:
            super().__init__()
            self.corpus = corpus
            self.similarity_top_k = similarity_top_k

        def _retrieve(self, query_bundle):
            return [li_schema.NodeWithScore(node=li_schema.TextNode(id_=cid, text="t"), score=s)
                    for cid, s in overlap_rank(self.corpus, query_bundle.query_str,
                                               self.similarity_top_k)]

    r = wrap(KeywordNodes(city_corpus), city_corpus)
    assert isinstance(r, LlamaIndexRetriever)
    ranked = r.retrieve(["the capital of France and Germany"], 3)[0]
    assert [cid for cid, _ in ranked] == [c for c, _ in overlap_rank(
        city_corpus, "the capital of France and Germany", 3)]
    assert ranked[0][1] is not None
    assert r.fingerprint()["kind"] == "llamaindex"


class FixedNodes:
    """A LlamaIndex-like retriever (retrieve(query) -> NodeWithScore list)."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes

    def retrieve(self, query):
        return self.nodes


@pytest.mark.parametrize(("score", "message"), [
    (float("nan"), "score nan is not a finite number"),
    (float("-inf"), "score -inf is not a finite number"),
])
def test_llamaindex_unusable_scores_are_one_line_errors(city_corpus, score, message):
    node = li_schema.NodeWithScore(node=li_schema.TextNode(id_="paris", text="t"), score=score)
    r = wrap(FixedNodes([node]), city_corpus)
    assert isinstance(r, LlamaIndexRetriever)
    with pytest.raises(RagcovError, match=message) as info:
        r.retrieve(["q"], 1)
    assert "\n" not in str(info.value)
    assert f"'{r.name}': result 1 for query 'q'" in str(info.value)


def test_llamaindex_unusable_metadata_id_without_content_match_is_an_error(city_corpus):
    node = li_schema.NodeWithScore(
        node=li_schema.TextNode(id_="", text="in no corpus", metadata={"chunk_id": True}),
        score=0.5)
    with pytest.raises(RagcovError, match=r"metadata\['chunk_id'\]: True is not an id"):
        wrap(FixedNodes([node]), city_corpus).retrieve(["q"], 1)


# ------------------------------------------------------------ module:attr
MODULE = '''
from ragcov.corpus import Corpus

calls = []

def search(query, k):
    return [("paris", 1.0), ("berlin", 0.5)][:k]

def make(corpus):
    calls.append(len(corpus))
    return lambda query, k: corpus.ids[:k]

def make_plain():
    return search

class Store:
    def __init__(self, corpus):
        self.corpus = corpus
    def __call__(self, query, k):
        return self.corpus.ids[-k:]

class Nested:
    inner = staticmethod(search)

def broken(corpus):
    raise ValueError("index missing")

not_a_retriever = 42

def none_ids(query, k):
    return [(None, 0.5)]
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    name = f"user_rag_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test
    monkeypatch.chdir(tmp_path)  # found through the working directory, as the CLI does
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize("attr, expected", [
    ("search", ["paris", "berlin"]),           # the retriever itself (query, k)
    ("make", ["paris", "berlin"]),             # a factory taking the corpus
    ("make_plain", ["paris", "berlin"]),       # a factory taking nothing
    ("Store", ["interest", "dividends"]),      # a class taking the corpus
    ("Nested.inner", ["paris", "berlin"]),     # a dotted attribute
])
def test_load_retriever_objects_and_factories(user_module, city_corpus, attr, expected):
    r = load_retriever(f"{user_module}:{attr}", city_corpus)
    assert [cid for cid, _ in r.retrieve(["q"], 2)[0]] == expected
    assert r.fingerprint()["name"] == f"{user_module}:{attr}"
    if attr == "make":
        assert sys.modules[user_module].calls == [len(city_corpus)]


@pytest.mark.parametrize("spec, message", [
    ("no_colon_here", "expected module:attr"),
    ("surely_missing_module_xyz:search", "cannot import 'surely_missing_module_xyz'"),
    ("{mod}:nothing", "has no attribute 'nothing'"),
    ("{mod}:broken", "the factory failed: ValueError: index missing"),
    ("{mod}:not_a_retriever", "cannot use int as a retriever"),
])
def test_load_retriever_errors(user_module, city_corpus, spec, message):
    with pytest.raises(RagcovError, match=message):
        load_retriever(spec.format(mod=user_module), city_corpus)


def test_cli_run_with_module_attr(user_module, city_corpus_file, tmp_path, capsys):
    from ragcov.data import CoverageData

    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "question": "anything"}\n', encoding="utf-8")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
                       "--retriever", f"{user_module}:search", "--k", "2", "-q",
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 0, err
    m = CoverageData(tmp_path / "d.ragcov").matrix()
    assert [m.chunk_ids[c] for c in m.retrieved(0)] == ["paris", "berlin"]
    assert m.meta["retriever"] == {"kind": "callable", "name": f"{user_module}:search"}


def test_make_retriever_dispatches_module_attr(user_module, city_corpus):
    r = make_retriever(f"{user_module}:search", city_corpus)
    assert isinstance(r, CallableRetriever)


def test_wrap_rejects_classes_and_returns_ragcov_retrievers_as_is(city_corpus):
    r = CallableRetriever(lambda q, k: [], city_corpus)
    assert wrap(r) is r
    with pytest.raises(RagcovError, match="is a class"):
        wrap(CallableRetriever)


# ============================================================ with MiniLM
@pytest.fixture(scope="module")
def encoder(minilm_path):
    from ragcov.retrievers.dense import load_encoder

    return load_encoder(minilm_path)


@pytest.fixture(scope="module")
def finqa_corpus_and_suite():
    """A few real FinQA pages, chunked, and their questions."""
    from ragcov.corpus import Corpus
    from ragcov.files import iter_jsonl

    sample = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
    pages = [obj for _n, obj in iter_jsonl(sample / "finqa_pages.jsonl")][:12]
    corpus = Corpus.from_documents([(p["doc_id"], p["text"]) for p in pages], chunk_size=500,
                                   chunk_overlap=0)
    wanted = {p["doc_id"] for p in pages}
    questions = [obj for _n, obj in iter_jsonl(sample / "finqa_questions.jsonl")
                 if obj["doc_id"] in wanted]
    suite = Suite.from_texts([q["question"] for q in questions])
    return corpus, suite


@pytest.mark.slow
def test_langchain_in_memory_store_with_minilm(encoder, city_corpus):
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(langchain_embeddings(encoder))
    # No ids given: the store invents UUIDs, so the chunk id must come from metadata.
    store.add_documents([lc_docs.Document(page_content=c.text, metadata={"chunk_id": c.id})
                         for c in city_corpus])
    with pytest.warns(AdapterWarning, match=r"metadata\['chunk_id'\]"):
        ranked = wrap(store.as_retriever(), city_corpus).retrieve(
            ["What is the capital of Japan?", "How do plants make food?"], 1)
    assert ranked == [[("tokyo", None)], [("photosynthesis", None)]]
    # The store itself is searched with scores.
    with pytest.warns(AdapterWarning):
        scored = wrap(store, city_corpus).retrieve(["Germany's largest city"], 2)[0]
    assert scored[0][0] == "berlin" and scored[0][1] > scored[1][1]


@pytest.mark.slow
def test_llamaindex_vector_index_with_minilm(encoder, city_corpus):
    from llama_index.core import Settings, VectorStoreIndex

    Settings.llm = None
    nodes = [li_schema.TextNode(id_=c.id, text=c.text) for c in city_corpus]
    index = VectorStoreIndex(nodes, embed_model=llamaindex_embedding(encoder))
    r = wrap(index, city_corpus)  # an index: ragcov asks it for a top-k retriever
    assert [cid for cid, _ in r.retrieve(["capital of Japan"], 1)[0]] == ["tokyo"]
    retriever = index.as_retriever(similarity_top_k=1)
    ranked = wrap(retriever, city_corpus).retrieve(["capital of Spain"], 3)[0]
    assert len(ranked) == 3 and ranked[0][0] == "madrid"  # similarity_top_k set to k


def write_trec(run, path: Path) -> None:
    lines = [f"{qid} Q0 {cid} {r} {len(ranked) - r + 1} langchain"
             for qid, ranked in run.results.items() for r, (cid, _s) in enumerate(ranked, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_openinference(run, path: Path) -> None:
    """One OTLP export line per query, as an OpenInference-instrumented app records it:
    a RETRIEVER span with the query and retrieval.documents.N.document.id."""
    lines = []
    for n, (qid, ranked) in enumerate(run.results.items()):
        attrs = [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                 {"key": "input.value", "value": {"stringValue": run.queries[qid]}}]
        for i, (cid, _s) in enumerate(ranked):
            attrs.append({"key": f"retrieval.documents.{i}.document.id",
                          "value": {"stringValue": cid}})
        span = {"traceId": f"{n:032x}", "spanId": f"{n:016x}", "name": "retrieve",
                "startTimeUnixNano": str(1_700_000_000_000_000_000 + n), "attributes": attrs}
        lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_same_cc_from_langchain_llamaindex_trec_and_openinference(
        encoder, finqa_corpus_and_suite, tmp_path):
    """The issue's done-when: one set of retrievals, four ways in, one CC."""
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import Settings, VectorStoreIndex

    from ragcov.retrieval import run_retriever
    from ragcov.traces import import_traces

    corpus, suite = finqa_corpus_and_suite
    k = 3
    queries = [(q.id, q.text) for q in suite]

    store = InMemoryVectorStore(langchain_embeddings(encoder))
    store.add_documents([lc_docs.Document(page_content=c.text, id=c.id) for c in corpus])
    lc_run = run_retriever(wrap(store.as_retriever(), corpus), queries, k, progress=False)

    Settings.llm = None
    index = VectorStoreIndex([li_schema.TextNode(id_=c.id, text=c.text) for c in corpus],
                             embed_model=llamaindex_embedding(encoder))
    li_run = run_retriever(wrap(index.as_retriever(similarity_top_k=k), corpus), queries, k,
                           progress=False)

    write_trec(lc_run, tmp_path / "run.trec")
    write_openinference(lc_run, tmp_path / "spans.jsonl")
    trec_run = import_traces(tmp_path / "run.trec", "trec", corpus).run
    oi_run = import_traces(tmp_path / "spans.jsonl", "openinference", corpus).run

    def sets(run, ids):
        return [frozenset(cid for cid, _ in run.results[qid]) for qid in ids]

    lc_sets = sets(lc_run, [q for q, _ in queries])
    assert sets(li_run, [q for q, _ in queries]) == lc_sets
    assert sets(trec_run, [q for q, _ in queries]) == lc_sets
    oi_ids = list(oi_run.results)  # trace ids, in the same order as the queries
    assert [frozenset(cid for cid, _ in oi_run.results[t]) for t in oi_ids] == lc_sets

    ccs = {name: chunk_coverage(CoverageMatrix.from_run(run, corpus)) for name, run in
           [("langchain", lc_run), ("llamaindex", li_run), ("trec", trec_run),
            ("openinference", oi_run)]}
    union = set().union(*lc_sets)
    assert 0 < len(union) < len(corpus)  # a real, partial coverage, not a degenerate one
    for name, cc in ccs.items():
        assert cc == pytest.approx(len(union) / len(corpus)), name
