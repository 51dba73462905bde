"""Relevance labels: every field ragcov reads is read, at the level it names, and a field it
does not read is refused rather than ignored (a label left out changes the hit rate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.errors import InputFormatError
from ragcov.failures import label_correctness
from ragcov.matrix import CoverageMatrix
from ragcov.qrels import load_qrels


def _write(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# Two documents of two chunks each; q0 retrieves c0 (document A), q1 retrieves c2 (B).
MATRIX = CoverageMatrix.from_sets([[0], [2]], 4, doc_ids=["A", "A", "B", "B"])


def test_chunk_ids_list_is_read_at_chunk_level(tmp_path: Path) -> None:
    p = _write(tmp_path / "q.jsonl", {"query_id": "q0", "chunk_ids": ["c1", "c0"]},
               {"query_id": "q1", "chunk_ids": ["c3"]})
    q = load_qrels(p)
    assert q.level == "chunk" and q.relevant == {"q0": {"c0", "c1"}, "q1": {"c3"}}
    # Hand-worked: q0 finds c0 (1 of its 2 relevant chunks), q1 misses c3.
    right = label_correctness(MATRIX, q)
    assert right.hit_rate == 0.5 and right.recall_at_k == pytest.approx(0.25)
    assert right.level == "chunk" and right.as_dict()["level"] == "chunk"


def test_doc_ids_list_is_read_at_document_level(tmp_path: Path) -> None:
    q = load_qrels(_write(tmp_path / "q.jsonl", {"query_id": "q0", "doc_ids": ["A", "B"]}))
    assert q.level == "doc" and q.relevant == {"q0": {"A", "B"}}


@pytest.mark.parametrize("row, message", [
    # the case that was read at document level with its chunk_ids silently dropped
    ({"query_id": "q0", "doc_id": "A", "chunk_ids": ["c1"]}, "carries both 'doc_id' and 'chunk_ids'"),
    ({"query_id": "q0", "doc_id": "A", "chunk_id": "c1"}, "carries both 'doc_id' and 'chunk_id'"),
    ({"query_id": "q0", "chunk_id": "c1", "chunk_ids": ["c1"]}, "carries both 'chunk_id' and 'chunk_ids'"),
    ({"query_id": "q0", "doc_id": "A", "document_id": "B"}, "'doc_id' and 'document_id' disagree"),
    ({"query_id": "q0", "doc_id": "A", "relevance": 1, "score": 0}, "'relevance' and 'score' disagree"),
    ({"query_id": "q0", "doc_id": "A", "passage_id": "p7"}, "field 'passage_id' looks like a label"),
    ({"query_id": "q0", "relevant_chunks": ["c1"]}, "field 'relevant_chunks' looks like a label"),
    ({"query_id": "q0", "chunk_ids": "c1"}, "'chunk_ids' must be a non-empty list of ids"),
    ({"query_id": "q0", "chunk_ids": []}, "'chunk_ids' must be a non-empty list of ids"),
    ({"query_id": "q0", "question": "what?"}, "no label (expected one of 'doc_id'"),
])
def test_a_line_whose_fields_conflict_or_are_not_read_is_refused_with_its_line(
        tmp_path: Path, row: dict, message: str) -> None:
    p = _write(tmp_path / "qrels.jsonl", {"query_id": "q1", "doc_id": "B"}, row)
    with pytest.raises(InputFormatError, match=r"qrels\.jsonl:2: ") as exc:
        load_qrels(p)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_fields_that_are_not_labels_still_pass(tmp_path: Path) -> None:
    p = _write(tmp_path / "q.jsonl", {"query_id": "q0", "doc_id": "A", "question": "what?",
                                      "relevance": 2, "score": 2, "note": "checked"})
    assert load_qrels(p).relevant == {"q0": {"A"}}


def test_report_says_the_level_of_the_labels_it_counts(capsys, tmp_path: Path) -> None:
    corpus = _write(tmp_path / "corpus.jsonl",
                    {"id": "A#0", "doc_id": "A", "text": "apples grow in orchards"},
                    {"id": "A#1", "doc_id": "A", "text": "pears ripen in autumn"},
                    {"id": "B#0", "doc_id": "B", "text": "rivers carry sediment"},
                    {"id": "B#1", "doc_id": "B", "text": "deltas form at river mouths"})
    queries = _write(tmp_path / "queries.jsonl", {"id": "q0", "question": "apples orchards"},
                     {"id": "q1", "question": "rivers sediment"})
    data = tmp_path / ".ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                       "--retriever", "bm25", "--k", "1", "--data-file", str(data), "-q")
    assert code == 0, err
    docs = _write(tmp_path / "docs.jsonl", {"query_id": "q0", "doc_id": "A"},
                  {"query_id": "q1", "doc_id": "A"})
    chunks = _write(tmp_path / "chunks.jsonl", {"query_id": "q0", "chunk_ids": ["A#1"]},
                    {"query_id": "q1", "chunk_ids": ["B#0"]})
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--qrels", str(docs))
    assert code == 0
    assert ("Correctness (document-level labels): hit rate 50.0% of 2 labelled queries retrieve a "
            "chunk of a relevant document; mean recall@1 0.500 (of relevant documents)") in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--qrels", str(chunks))
    assert code == 0
    assert ("Correctness (chunk-level labels): hit rate 50.0% of 2 labelled queries retrieve a "
            "relevant chunk; mean recall@1 0.500") in out
    code, out, _ = cli(capsys, "report", "--data-file", str(data), "--qrels", str(chunks),
                       "--format", "json")
    assert json.loads(out)["correctness"]["level"] == "chunk"
