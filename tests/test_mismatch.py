"""A retriever whose ids the corpus does not hold is stopped after its first queries, with the cause.

The app here is a real LangChain one: the bundled pages split by LangChain's own
splitter into a real in-memory vector store embedded with MiniLM, while ragcov is
given the same pages with ``--split`` (its own chunking). Its embedding class counts
the queries it embeds, which is how many queries ragcov sent before it stopped.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import cli

pytest.importorskip("langchain_core.vectorstores")
pytest.importorskip("langchain_text_splitters")

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
N_PAGES = 6

APP = textwrap.dedent('''
    import json
    import os

    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from sentence_transformers import SentenceTransformer

    QUERIES = []  # every query the app embedded


    class MiniLM(Embeddings):
        def __init__(self):
            self.model = SentenceTransformer(os.environ["MINILM"], device="cpu")

        def embed_documents(self, texts):
            return self.model.encode(list(texts), normalize_embeddings=True).tolist()

        def embed_query(self, text):
            QUERIES.append(text)
            log = os.environ.get("QUERY_LOG")
            if log:
                with open(log, "a") as fh:
                    fh.write(text + "\\n")
            return self.embed_documents([text])[0]


    def _chunks():
        splitter = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=30)
        with open(os.environ["PAGES"]) as fh:
            pages = [json.loads(line) for line in fh]
        return [(page["doc_id"], n, piece) for page in pages
                for n, piece in enumerate(splitter.split_text(page["text"]))]


    def store_ids():
        """Ids left to the store: LangChain gives every document a UUID."""
        store = InMemoryVectorStore(MiniLM())
        store.add_documents([Document(page_content=t, metadata={"doc_id": d})
                             for d, _, t in _chunks()])
        return store.as_retriever()


    def own_ids():
        """The app's own ids, in ragcov's scheme, over another chunking."""
        store = InMemoryVectorStore(MiniLM())
        store.add_documents([Document(page_content=t, id=f"{d}#{n}", metadata={"doc_id": d})
                             for d, n, t in _chunks()])
        return store.as_retriever()
''')


@pytest.fixture
def app(tmp_path: Path, monkeypatch, minilm_path: str) -> Path:
    pages = [line for line in (SAMPLE / "finqa_pages.jsonl").read_text().splitlines() if line]
    (tmp_path / "pages.jsonl").write_text("\n".join(pages[:N_PAGES]) + "\n")
    docs = {json.loads(p)["doc_id"] for p in pages[:N_PAGES]}
    questions = [json.loads(line) for line in
                 (SAMPLE / "finqa_questions.jsonl").read_text().splitlines() if line]
    chosen = [q for q in questions if q["doc_id"] in docs][:10]
    chosen += [q for q in questions if q not in chosen][:30 - len(chosen)]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in chosen))
    (tmp_path / "lc_app_mismatch.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MINILM", minilm_path)
    monkeypatch.setenv("PAGES", str(tmp_path / "pages.jsonl"))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("lc_app_mismatch", None)
    return tmp_path


def _run(capsys, factory: str) -> tuple[int, str]:
    code, _, err = cli(capsys, "run", "--corpus", "pages.jsonl", "--split", "--queries",
                       "q.jsonl", "--retriever", f"lc_app_mismatch:{factory}", "--k", "3", "-q")
    return code, err


@pytest.mark.slow
def test_store_generated_ids_stop_the_run_at_the_first_query(app: Path, capsys) -> None:
    code, err = _run(capsys, "store_ids")
    import lc_app_mismatch

    assert code == 1
    assert len(lc_app_mismatch.QUERIES) == 1  # of 30: it stopped at the first query
    assert "not in the corpus" in err and "in the first 1 query" in err
    assert "generated (UUIDs)" in err and "ids=" in err
    # One line from ragcov (the app's model loader draws its own bar before it).
    ours = [line for line in err.splitlines() if line.startswith("ragcov:")]
    assert len(ours) == 1 and ours[0].startswith("ragcov: error:") and "Traceback" not in err
    assert not (app / ".ragcov").exists()


@pytest.mark.slow
def test_another_splitter_is_named_as_the_likely_cause(app: Path, capsys) -> None:
    code, err = _run(capsys, "own_ids")
    import lc_app_mismatch

    assert code == 1
    assert 1 <= len(lc_app_mismatch.QUERIES) <= 8  # the probe, not the 30 queries
    assert "another splitter, chunk size or overlap" in err
    assert "--chunk-size" in err


@pytest.mark.slow
def test_dask_shards_stop_early_too(app: Path, capsys, tmp_path: Path) -> None:
    """The Dask path: the workers' retrievers stop after their first queries as well."""
    log = tmp_path / "queries.log"
    os.environ["QUERY_LOG"] = str(log)  # the worker processes inherit it
    # The workers import the app and its dependencies from the same folder.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(app), *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        code, _, err = cli(capsys, "run", "--corpus", "pages.jsonl", "--split", "--queries",
                           "q.jsonl", "--retriever", "lc_app_mismatch:store_ids", "--k", "3",
                           "-q", "--engine", "dask", "--partitions", "1")
    finally:
        del os.environ["QUERY_LOG"]
    assert code == 1, err
    assert "not in the corpus" in err and "generated (UUIDs)" in err
    assert 1 <= len(log.read_text().splitlines()) < 30


def test_probe_rules_on_a_hand_made_corpus(city_corpus) -> None:
    """The rules without a model: all-unknown stops at once; a partial miss by the 8th query."""
    from ragcov.errors import RagcovError
    from ragcov.retrieval import PROBE_QUERIES, IdCheck

    known = city_corpus.ids[0]
    check = IdCheck(city_corpus)
    for _ in range(PROBE_QUERIES - 1):
        check.see([(known, None), ("nowhere#9", None)])
    with pytest.raises(RagcovError, match=f"in the first {PROBE_QUERIES} queries"):
        check.see([(known, None)])
    with pytest.raises(RagcovError, match="in the first 1 query"):
        IdCheck(city_corpus).see([("nowhere#9", None)])
    fine = IdCheck(city_corpus)
    for _ in range(20):
        fine.see([(known, None)])


def test_imported_traces_from_another_splitter_name_the_cause_and_the_fix(capsys, tmp_path: Path):
    """Traces recorded over another chunking of the same documents: the import error says
    so and says what to do, as a run's does (ids are DOC#N of documents the corpus holds)."""
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"report.pdf#{n}", "doc_id": "report.pdf",
                                          "text": f"part {n}"}) + "\n" for n in range(3)))
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"query_id": "q", "query": "revenue",
                                  "retrieved": ["report.pdf#7", "report.pdf#9"]}) + "\n")
    code, _, err = cli(capsys, "import", str(traces), "--format", "jsonl", "--corpus", str(corpus),
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "another splitter" in err and "--chunk-size" in err and "--ignore-unknown" in err
