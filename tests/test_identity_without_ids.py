"""Results without ids: hits are matched by text, metadata and their list, never merged.

Three filings end with the same footer, each copy a chunk of its own. A retriever
whose results carry no ids (LangChain's Chroma gives ``Document.id = None``; logs
write ``"id": null``) is matched to the corpus by text. Two hits of one list with the
same text are two chunks; metadata (source, document, position, any stored key)
says which twin a hit is; what nothing tells apart goes to the first free twin in
corpus order and is counted, in the command's summary and in the JSON report.
No model is loaded: the retrievers are plain functions, the frameworks' own base
classes, and BM25.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.retrievers import CallableRetriever, LangChainRetriever, LlamaIndexRetriever

FOOTER = ("Forward-looking statements involve risks and uncertainties; actual results may "
          "differ materially.")
FILINGS = [
    {"id": "acme#0", "doc_id": "acme", "text": "Acme's revenue grew 12% on higher volumes."},
    {"id": "acme#1", "doc_id": "acme", "text": FOOTER,
     "metadata": {"source": "acme-10k.pdf", "page": 7}},
    {"id": "globex#0", "doc_id": "globex", "text": "Globex closed two plants in 2020."},
    {"id": "globex#1", "doc_id": "globex", "text": FOOTER,
     "metadata": {"source": "globex-10k.pdf", "page": 3}},
    {"id": "initech#0", "doc_id": "initech", "text": "Initech's margins narrowed on costs."},
    {"id": "initech#1", "doc_id": "initech", "text": FOOTER,
     "metadata": {"source": "initech-10k.pdf", "page": 9}},
    {"id": "initech#2", "doc_id": "initech", "text": "Initech raised its dividend to $0.30."},
]
TWINS = ["acme#1", "globex#1", "initech#1"]
TEXT = {c["id"]: c["text"] for c in FILINGS}
K = 3


@pytest.fixture(autouse=True)
def _quiet_fallback_warnings():
    """Matching by content warns once per adapter; these tests are about the matching."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def filings_file(tmp_path: Path) -> Path:
    p = tmp_path / "filings.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in FILINGS), encoding="utf-8")
    return p


@pytest.fixture
def filings(filings_file: Path):
    return load_corpus(filings_file)


def by_text(items):
    """A plain retriever that returns the same items for every query."""
    return lambda query, k: items[:k]


# ------------------------------------------------ twins in one list are distinct chunks
def test_twins_in_one_list_map_to_distinct_chunks(filings):
    r = CallableRetriever(by_text([{"text": FOOTER}] * 3), filings)
    [ranked] = r.retrieve(["risk factors"], K)
    assert [cid for cid, _ in ranked] == TWINS  # not acme#1 three times
    assert r.resolver.matching.shared_text == 3


def test_passages_returned_as_plain_texts_are_distinct_chunks(filings):
    r = CallableRetriever(by_text([FOOTER, TEXT["globex#0"], FOOTER]), filings)
    [ranked] = r.retrieve(["plants"], K)
    assert [cid for cid, _ in ranked] == ["acme#1", "globex#0", "globex#1"]


def test_a_hit_naming_its_chunk_keeps_it_whatever_its_rank(filings):
    # The id-less first hit may not take acme#1: the third names it.
    r = CallableRetriever(by_text([{"text": FOOTER}, {"text": FOOTER},
                                   {"id": "acme#1", "text": FOOTER}]), filings)
    [ranked] = r.retrieve(["q"], K)
    assert [cid for cid, _ in ranked] == ["globex#1", "initech#1", "acme#1"]


def test_langchain_documents_without_ids(filings):
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Footers(BaseRetriever):  # the framework's own invoke(), Documents with id=None
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(page_content=FOOTER, metadata={"page": 9}),
                    Document(page_content=FOOTER), Document(page_content=FOOTER)]

    r = LangChainRetriever(Footers(), filings)
    [ranked] = r.retrieve(["q"], K)
    assert [cid for cid, _ in ranked] == ["initech#1", "acme#1", "globex#1"]


def test_llamaindex_nodes_with_their_own_ids(filings):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Footers(BaseRetriever):  # node ids are LlamaIndex's own UUIDs, not the corpus's
        def _retrieve(self, query_bundle):
            return [NodeWithScore(node=TextNode(text=FOOTER), score=0.9),
                    NodeWithScore(node=TextNode(text=FOOTER, metadata={"source": "acme-10k.pdf"}),
                                  score=0.9)]

    r = LlamaIndexRetriever(Footers(), filings)
    [ranked] = r.retrieve(["q"], K)
    assert ranked == [("globex#1", 0.9), ("acme#1", 0.9)]


# ------------------------------------------------ metadata picks the twin
@pytest.mark.parametrize("metadata, twin", [
    ({"source": "globex-10k.pdf"}, "globex#1"),   # a stored key, same value
    ({"page": 9}, "initech#1"),                   # any stored key rules the others out
    ({"doc_id": "globex"}, "globex#1"),           # the chunk's document
    ({"document_id": "initech", "position": 1}, "initech#1"),
])
def test_metadata_picks_the_right_twin(filings, metadata, twin):
    r = CallableRetriever(by_text([{"text": FOOTER, "metadata": metadata}]), filings)
    [ranked] = r.retrieve(["q"], K)
    assert [cid for cid, _ in ranked] == [twin]
    assert r.resolver.matching.by_metadata == 1 and r.resolver.matching.ambiguous == 0


def test_metadata_wins_over_rank_within_a_list(filings):
    # The first hit could be any twin; the second names acme's: the first gets another.
    r = CallableRetriever(by_text([{"text": FOOTER},
                                   {"text": FOOTER, "metadata": {"source": "acme-10k.pdf"}}]),
                          filings)
    [ranked] = r.retrieve(["q"], K)
    assert [cid for cid, _ in ranked] == ["globex#1", "acme#1"]
    assert (r.resolver.matching.by_metadata, r.resolver.matching.ambiguous) == (1, 1)


def test_metadata_matching_no_twin_is_not_used(filings):
    r = CallableRetriever(by_text([{"text": FOOTER, "metadata": {"source": "other.pdf"}}]),
                          filings)
    [ranked] = r.retrieve(["q"], K)
    assert [cid for cid, _ in ranked] == ["acme#1"]
    assert r.resolver.matching.ambiguous == 1


# ------------------------------------------------ imported traces: counted, nothing lost
def _traces(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _otlp(trace: str, attrs: dict) -> dict:
    return {"traceId": trace, "spanId": trace + "1", "name": "retrieve",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def test_span_formats_without_document_ids(tmp_path, filings):
    """OpenInference RETRIEVER spans with no ``document.id`` (as the LangChain instrumentor
    records Chroma's Documents) and OTel GenAI documents with ``"id": null``."""
    from ragcov.traces import import_traces

    acme = json.dumps({"source": "acme-10k.pdf"})
    oi = {"openinference.span.kind": "RETRIEVER", "input.value": "risks",
          "retrieval.documents.0.document.content": FOOTER,
          "retrieval.documents.1.document.content": FOOTER,
          "retrieval.documents.1.document.metadata": acme,
          "retrieval.documents.2.document.content": FOOTER}
    otel = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "risks",
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": None, "content": FOOTER},
                 {"id": None, "content": FOOTER, "metadata": {"source": "acme-10k.pdf"}}])}
    for fmt, attrs, expected in [("openinference", oi, ["globex#1", "acme#1", "initech#1"]),
                                 ("otel", otel, ["globex#1", "acme#1"])]:
        path = tmp_path / f"{fmt}.json"
        path.write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
            {"scope": {}, "spans": [_otlp("T", attrs)]}]}]}), encoding="utf-8")
        result = import_traces(path, fmt, filings)
        assert [cid for cid, _ in result.run.results["T"]] == expected, fmt
        assert result.matching.by_metadata == 1


def test_ambiguity_counted_in_import_summary_and_json_report(capsys, tmp_path, filings_file):
    traces = _traces(tmp_path / "traces.jsonl", [
        # Three hits with the footer's text and nothing else: which is which is unknowable.
        {"query_id": "q1", "query": "risks", "retrieved": [
            {"id": None, "text": FOOTER}, {"id": None, "text": FOOTER},
            {"id": None, "text": FOOTER}]},
        # One told apart by its source, one the only twin left, one unique text.
        {"query_id": "q2", "query": "plants", "retrieved": [
            {"id": None, "text": FOOTER, "metadata": {"source": "globex-10k.pdf"}},
            {"id": None, "text": TEXT["globex#0"]}]},
    ])
    data = tmp_path / "run.ragcov"
    code, out, err = cli(capsys, "import", str(traces), "--corpus", str(filings_file),
                         "-k", str(K), "--data-file", str(data))
    assert code == 0, err
    # q1: the first two could each be two or three twins, the last was the one left.
    assert ("4 of 5 hit(s) matched by content share their text with other corpus chunks: "
            "1 told apart by metadata; 1 the only twin left in their list; 2 ambiguous, "
            "placed by corpus order") in err
    code, report, err = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code == 0, err
    doc = json.loads(report)
    assert doc["meta"]["format"] == 1
    assert doc["meta"]["id_matching"] == {
        "by_content": 5, "shared_text": 4, "by_metadata": 1, "ambiguous": 2,
        "ambiguous_resolved_by": "corpus order: the first twin not already taken by the same "
                                 "result list"}
    assert doc["queries"]["q1"]["retrieved"] == TWINS
    assert doc["queries"]["q2"]["retrieved"] == ["globex#1", "globex#0"]


def test_counts_add_up_over_appends(capsys, tmp_path, filings_file):
    data = tmp_path / "run.ragcov"
    for n in (1, 2):
        traces = _traces(tmp_path / f"t{n}.jsonl", [{"query_id": f"q{n}", "query": f"q{n}",
                         "retrieved": [{"id": None, "text": FOOTER}] * 2}])
        code, _, err = cli(capsys, "import", str(traces), "--corpus", str(filings_file),
                           "-k", str(K), "--data-file", str(data), "--append")
        assert code == 0, err
    # Each import: two footer hits, each with two or three free twins to choose from.
    counts = CoverageData(data).annotation("id_matching")
    assert (counts["by_content"], counts["ambiguous"]) == (4, 4)


def test_ids_present_leave_no_matching_record(capsys, tmp_path, filings_file):
    traces = _traces(tmp_path / "t.jsonl", [{"query_id": "q", "query": "q",
                                             "retrieved": ["acme#1", "globex#1"]}])
    data = tmp_path / "run.ragcov"
    code, _, err = cli(capsys, "import", str(traces), "--corpus", str(filings_file),
                       "--data-file", str(data))
    assert code == 0 and "share their text" not in err, err
    assert "id_matching" not in json.loads(cli(capsys, "json", "--data-file", str(data),
                                               "-o", "-")[1])["meta"]


def test_no_hit_vanishes_bm25_run_and_its_traces_without_ids(capsys, tmp_path, filings_file):
    """BM25's own run (ids) and the same retrievals logged with ``"id": null`` plus their
    source: every query keeps its k hits and the covered sets are one."""
    suite = tmp_path / "suite.jsonl"
    questions = ["forward-looking statements risks", "actual results may differ",
                 "Initech dividend", "Globex plants"]
    suite.write_text("".join(json.dumps({"id": f"q{n}", "query": q}) + "\n"
                             for n, q in enumerate(questions)), encoding="utf-8")
    code, _, err = cli(capsys, "run", "--corpus", str(filings_file), "--queries", str(suite),
                       "--retriever", "bm25", "-k", str(K), "--data-file",
                       str(tmp_path / "bm25.ragcov"), "--quiet")
    assert code == 0, err
    m = CoverageData(tmp_path / "bm25.ragcov").matrix()
    logged = []
    assert [[m.chunk_ids[j] for j in m.retrieved(i)] for i in (0, 1)] == [TWINS, TWINS]
    for i, qid in enumerate(m.query_ids):
        hits = [m.chunk_ids[j] for j in m.retrieved(i)]
        source = {c["id"]: (c.get("metadata") or {}).get("source") for c in FILINGS}
        logged.append({"query_id": qid, "query": m.query_texts[i], "retrieved": [
            {"id": None, "text": TEXT[cid], "metadata": {"source": source[cid]}}
            for cid in hits]})
    code, _, err = cli(capsys, "import", str(_traces(tmp_path / "log.jsonl", logged)),
                       "--corpus", str(filings_file), "-k", str(K),
                       "--data-file", str(tmp_path / "log.ragcov"))
    assert code == 0, err
    imported = CoverageData(tmp_path / "log.ragcov").matrix()
    assert [len(imported.retrieved(i)) for i in range(m.n_queries)] == \
        [len(m.retrieved(i)) for i in range(m.n_queries)]
    assert list(imported.covered()) == list(m.covered())
    assert {qid: [imported.chunk_ids[j] for j in imported.retrieved(i)]
            for i, qid in enumerate(imported.query_ids)} == \
        {qid: [m.chunk_ids[j] for j in m.retrieved(i)] for i, qid in enumerate(m.query_ids)}


def test_run_with_a_function_returning_texts_says_how_twins_were_placed(
        capsys, tmp_path, filings_file, monkeypatch):
    (tmp_path / "passages.py").write_text(
        f"FOOTER = {FOOTER!r}\n\n"
        "def search(query, k):\n"
        "    return [FOOTER, {'text': FOOTER, 'metadata': {'source': 'initech-10k.pdf'}}][:k]\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"id": "q", "query": "risks"}) + "\n", encoding="utf-8")
    data = tmp_path / "run.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(filings_file), "--queries", str(suite),
                       "--retriever", "passages:search", "-k", str(K), "--data-file", str(data),
                       "--quiet")
    assert code == 0, err
    assert ("2 of 2 hit(s) matched by content share their text with other corpus chunks: "
            "1 told apart by metadata; 1 ambiguous") in err
    doc = json.loads(cli(capsys, "json", "--data-file", str(data), "-o", "-")[1])
    assert doc["queries"]["q"]["retrieved"] == ["acme#1", "initech#1"]
    assert doc["meta"]["id_matching"]["ambiguous"] == 1


def test_the_pytest_plugin_counts_a_repeated_question_once(pytester: pytest.Pytester):
    pytester.makefile(".jsonl", filings="\n".join(json.dumps(c) for c in FILINGS))
    pytester.makepyfile(test_app=f"""
from ragcov.pytest_plugin import record

FOOTER = {FOOTER!r}
retriever = record(lambda query, k: [{{"text": FOOTER}}] * k)


def test_one():
    assert len(retriever("risks", 3)) == 3


def test_two():
    assert len(retriever("risks", 3)) == 3
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov",
                                           "--ragcov-corpus", "filings.jsonl", "--ragcov-k", "3",
                                           "--ragcov-report", "json:cov.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*3 of 3 hit(s) matched by content share their text*"
                                 "2 ambiguous*"])
    doc = json.loads((pytester.path / "cov.json").read_text(encoding="utf-8"))
    assert doc["queries"][next(iter(doc["queries"]))]["retrieved"] == TWINS
    assert doc["meta"]["id_matching"]["ambiguous"] == 2


pytest_plugins = ["pytester"]
