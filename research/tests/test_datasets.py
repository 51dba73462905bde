"""Dataset loaders on small slices of the real files, BEIR folders and qrels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcov.errors import InputFormatError, RagcovError
from research.datasets import (
    load_beir,
    load_convfinqa,
    load_dataset,
    load_finqa,
    load_pubmedqa,
    read_qrels,
)


def _slice(src: Path, n: int) -> list:
    return json.loads(src.read_text("utf-8"))[:n]


def test_finqa_slice(datasets_dir: Path, tmp_path: Path):
    records = _slice(datasets_dir / "finqa" / "dev_200.json", 4)
    (tmp_path / "dev.json").write_text(json.dumps(records), "utf-8")
    ds = load_dataset("finqa", tmp_path)
    assert [q.text for q in ds.queries] == [r["qa"]["question"].strip() for r in records]
    assert set(ds.documents) == {r["filename"] for r in records}
    for q, r in zip(ds.queries, records):
        assert ds.relevant_docs[q.id] == {r["filename"]}
        page = ds.documents[r["filename"]]
        assert page.startswith(r["pre_text"][0].strip()[:30])
        assert "| " + str(r["table"][0][0]).strip() in page   # the table, as Markdown
    corpus = ds.corpus()
    assert {c.doc_id for c in corpus} == set(ds.documents)
    assert all(len(c.text) <= 1000 for c in corpus)


def test_convfinqa_slice(datasets_dir: Path, tmp_path: Path):
    data = json.loads((datasets_dir / "convfinqa" / "convfinqa_dataset.json").read_text("utf-8"))
    records = data["dev"][:3]
    f = tmp_path / "convfinqa_dataset.json"
    f.write_text(json.dumps({"dev": records}), "utf-8")
    ds = load_dataset("convfinqa", tmp_path)      # a folder holding the file
    assert [q.text for q in ds.queries] == [r["dialogue"]["conv_questions"][0].strip()
                                            for r in records]
    for q, r in zip(ds.queries, records):
        page = next(iter(ds.relevant_docs[q.id]))
        assert page.endswith(".pdf") and page in r["id"]
    assert load_convfinqa(f).documents == ds.documents


def test_pubmedqa_slice(datasets_dir: Path, tmp_path: Path):
    data = json.loads((datasets_dir / "pubmedqa" / "ori_pqal.json").read_text("utf-8"))
    picked = dict(list(data.items())[:2])
    f = tmp_path / "ori_pqal.json"
    f.write_text(json.dumps(picked), "utf-8")
    ds = load_dataset("pubmedqa", f)
    assert len(ds.corpus()) == sum(len(r["CONTEXTS"]) for r in picked.values())
    assert ds.corpus()[0].id == f"{next(iter(picked))}#0"
    assert load_pubmedqa(f).corpus().ids == ds.corpus().ids


def test_named_dataset_needs_data_and_unknown_names_fail(tmp_path: Path):
    with pytest.raises(RagcovError, match="needs --data"):
        load_dataset("finqa")
    with pytest.raises(RagcovError, match="no such file"):
        load_dataset("finqa", tmp_path / "nope")
    with pytest.raises(RagcovError, match="unknown dataset"):
        load_dataset("tatqa")
    with pytest.raises(RagcovError, match="no FinQA"):
        load_finqa(tmp_path)


# BEIR folders -------------------------------------------------------------------------
def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    folder = tmp_path / "mini"
    folder.mkdir()
    _write_jsonl(folder / "corpus.jsonl", [
        {"_id": "a1", "doc_id": "A", "text": "Alpha one."},
        {"_id": "a2", "doc_id": "A", "text": "Alpha two."},
        {"_id": "b1", "doc_id": "B", "title": "Beta", "text": "Beta one."},
        {"_id": "c1", "text": "Gamma, its own document."},
    ])
    _write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "alpha"},
                                            {"_id": "q2", "text": "beta"},
                                            {"_id": "q3", "text": "gamma"}])
    return folder


def test_beir_folder_without_qrels(beir: Path):
    ds = load_beir(beir)
    assert ds.corpus().ids == ["a1", "a2", "b1", "c1"]     # chunks as given, not re-chunked
    assert ds.documents == {"A": "Alpha one.\n\nAlpha two.", "B": "Beta one.",
                            "c1": "Gamma, its own document."}
    assert [q.id for q in ds.queries] == ["q1", "q2", "q3"]
    assert ds.relevant_docs == {} and ds.relevant_chunks == {}
    assert load_dataset(str(beir)).corpus().ids == ds.corpus().ids


def test_beir_jsonl_qrels_doc_and_chunk(beir: Path):
    _write_jsonl(beir / "qrels.jsonl", [{"query_id": "q1", "doc_id": "A"},
                                        {"query_id": "q2", "chunk_id": "b1"},
                                        {"query_id": "q3", "doc_id": "c1", "relevance": 0}])
    ds = load_beir(beir)
    # q3 is judged (relevance 0): labelled with nothing relevant, not unlabelled.
    assert ds.relevant_docs == {"q1": {"A"}, "q2": {"B"}, "q3": set()}
    assert ds.relevant_chunks == {"q2": {"b1"}}


def test_beir_trec_and_tsv_qrels(beir: Path):
    (beir / "qrels").mkdir()
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\ta2\t1\nq2\tB\t2\nq3\tc1\t0\n", "utf-8")
    ds = load_beir(beir)
    assert ds.relevant_chunks == {"q1": {"a2"}}             # a2 is a chunk id
    assert ds.relevant_docs == {"q1": {"A"}, "q2": {"B"}, "q3": set()}  # B names a document
    trec = beir / "run.qrels"
    trec.write_text("q3 0 c1 1\nq1 0 a1 1\n", "utf-8")
    docs, chunks = read_qrels(trec, ds.corpus(), {"q1", "q2", "q3"})
    assert chunks == {"q3": {"c1"}, "q1": {"a1"}} and docs == {"q3": {"c1"}, "q1": {"A"}}


@pytest.mark.parametrize(("content", "message", "line"), [
    ('{"query_id": "q1", "doc_id": "Z"}\n', "unknown document id 'Z'", 1),
    ('{"query_id": "q1", "doc_id": "A"}\n{"query_id": "q9", "doc_id": "A"}\n',
     "unknown query id 'q9'", 2),
    ('{"query_id": "q1", "chunk_id": "A"}\n', "unknown chunk id 'A'", 1),
    ('{"query_id": "q1", "doc_id": "A", "chunk_id": "a1"}\n', "not both", 1),
    ('{"doc_id": "A"}\n', "no query id", 1),
    ('{"query_id": "q1", "doc_id": "A", "score": "high"}\n', "not a number", 1),
])
def test_bad_jsonl_qrels_name_the_line(beir: Path, content: str, message: str, line: int):
    (beir / "qrels.jsonl").write_text(content, "utf-8")
    with pytest.raises(InputFormatError, match=message) as info:
        load_beir(beir)
    assert info.value.line == line


def test_bad_trec_qrels(beir: Path):
    (beir / "qrels.txt").write_text("q1 0 a1 1\nq1 a1\n", "utf-8")
    with pytest.raises(InputFormatError, match="got 2 fields"):
        load_beir(beir)


def test_not_a_beir_folder(tmp_path: Path):
    with pytest.raises(RagcovError, match="no corpus.jsonl"):
        load_beir(tmp_path)
    (tmp_path / "corpus.jsonl").write_text('{"_id": "x", "text": "x"}\n', "utf-8")
    with pytest.raises(RagcovError, match="no queries.jsonl"):
        load_beir(tmp_path)
