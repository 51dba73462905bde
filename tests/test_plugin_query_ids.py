"""Queries recorded under pytest keep the app's ids, so relevance labels keyed by them join.

A nested pytest (pytester) over a toy app: ``record(retriever, query_id=...)`` names a
question as the team's labels do; without one, a question is named by the test's node id.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

# Imported here, before pytester snapshots sys.modules: it drops, at teardown, every module
# imported during a test, and numpy's and scipy's extensions cannot be loaded twice.
import ragcov.api
import ragcov.reporters.jsonreport
import ragcov.reporters.table
import ragcov.retrievers.bm25  # noqa: F401
from conftest import CITY_CHUNKS
from ragcov.cli import main

pytest_plugins = ["pytester"]

APP = '''
import pytest

from ragcov.pytest_plugin import record

CHUNKS = {c["id"]: c["text"] for c in CITY_CHUNKS}


def search(query, k):
    words = set(query.lower().replace("?", "").split())
    scored = sorted(CHUNKS, key=lambda cid: -len(words & set(CHUNKS[cid].lower().split())))
    return [(cid, 1.0) for cid in scored[:k]]


DATASET = {"fq-1": "What is the capital of Japan?", "fq-2": "Which board declared dividends?"}


@pytest.mark.parametrize("qid", sorted(DATASET))
def test_labelled(qid):
    retriever = record(search, query_id=qid)
    assert retriever(DATASET[qid], 1)


def test_unlabelled():
    retriever = record(search)
    assert retriever("Where does photosynthesis happen in plants?", 1)
    assert retriever("What powers a cell, mitochondria?", 1)
'''.replace("CITY_CHUNKS", json.dumps(CITY_CHUNKS))


def recorded(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as con:
        return dict(con.execute("SELECT id, text FROM queries ORDER BY idx").fetchall())


def test_query_ids_from_record_and_node_ids_and_labels_join(pytester: pytest.Pytester, capsys) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_app=APP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "1")
    result.assert_outcomes(passed=3)
    data = pytester.path / ".ragcov"
    assert recorded(data) == {
        "fq-1": "What is the capital of Japan?",
        "fq-2": "Which board declared dividends?",
        "test_app.py::test_unlabelled": "Where does photosynthesis happen in plants?",
        "test_app.py::test_unlabelled#2": "What powers a cell, mitochondria?",
    }
    # The team's labels, keyed by their question ids, join the pytest run.
    qrels = pytester.path / "qrels.jsonl"
    qrels.write_text(json.dumps({"query_id": "fq-1", "chunk_id": "tokyo"}) + "\n"
                     + json.dumps({"query_id": "fq-2", "chunk_id": "interest"}) + "\n")
    with pytest.raises(SystemExit) as done:
        main(["report", "--data-file", str(data), "--qrels", str(qrels)])
    assert (done.value.code or 0) == 0
    out = capsys.readouterr().out
    assert "Correctness (chunk-level labels): hit rate 50.0% of 2 labelled queries" in out


def test_one_query_id_for_two_questions_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_app=APP + '''

def test_reuses_an_id():
    record(search, query_id="fq-1")("Where is Berlin?", 1)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "1")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*query id 'fq-1' names two questions: 'What is the capital of Japan?' "
                                 "and 'Where is Berlin?'*"])


def test_a_threshold_above_the_workload_ceiling_is_said_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_app=APP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "1", "--ragcov-fail-under", "80")
    # 4 questions at k=1 over 8 chunks cover at most half of them.
    result.stdout.fnmatch_lines(["ragcov: warning: --fail-under 80 is above the workload ceiling 50.00% "
                                 "(4 queries x k=1 of 8 chunks): no retriever can pass it*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
