"""Crashes, hangs and escapes found by trying to break ragcov: each is now one line or a warning.

The command line runs in a child ``python -m ragcov`` where what reaches the terminal
(warnings, the error line, the exit status) is what is tested; pytest's own warning
capture would hide those lines in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.retrievers.bm25 import BM25Retriever
from ragcov.user_warnings import RetrievalWarning

SRC = str(Path(__file__).resolve().parents[1] / "src")


def ragcov(*args: str, cwd: Path, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m ragcov ARGS`` in a child, this checkout's source first on the path."""
    environ = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "120", **(env or {})}
    return subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def assert_one_line_error(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), proc.stderr
    assert words in lines[0], lines[0]


# ------------------------------------------------ BM25: nothing to match on
WORDLESS = ["Is it?", "the", "!!!"]


def test_bm25_queries_with_no_word_to_match_are_recorded_with_a_warning(tmp_path,
                                                                          city_corpus_file):
    queries = [{"id": f"w{i}", "question": q} for i, q in enumerate(WORDLESS)]
    queries.append({"id": "fr", "question": "What is the capital of France?"})
    write_jsonl(tmp_path / "queries.jsonl", queries)
    proc = ragcov("run", "--corpus", str(city_corpus_file), "--queries", "queries.jsonl",
                  "--retriever", "bm25", "--k", "2", "--data-file", "cov.ragcov", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "no word to match" in line]
    assert len(warning) == 1 and warning[0].startswith("ragcov: warning: bm25: 3 queries")
    assert all(repr(q) in warning[0] for q in WORDLESS), warning
    matrix = CoverageData(tmp_path / "cov.ragcov").matrix()
    assert sorted(matrix.query_ids) == ["fr", "w0", "w1", "w2"]
    hits = {q: {matrix.chunk_ids[j] for j in matrix.retrieved(row)}
            for q, row in matrix.row_of().items()}
    assert hits["w0"] == hits["w1"] == hits["w2"] == set() and "paris" in hits["fr"]


def test_bm25_wordless_query_in_process_retrieves_nothing_and_warns():
    corpus = Corpus([Chunk(id="a", text="alpha beta", doc_id="d"),
                     Chunk(id="b", text="gamma", doc_id="d")])
    with pytest.warns(RetrievalWarning, match=r"1 query has no word to match .*'!!!'"):
        ranked = BM25Retriever(corpus).retrieve(["alpha", "!!!"], 2)
    assert ranked == [[("a", pytest.approx(ranked[0][0][1]))], []]


def test_bm25_corpus_with_no_word_to_index_is_a_one_line_error(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "doc_id": "d", "text": "the"},
                                             {"id": "b", "doc_id": "d", "text": "!!!"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"id": "q", "question": "anything"}])
    proc = ragcov("run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                  "--retriever", "bm25", "--data-file", "cov.ragcov", cwd=tmp_path)
    assert_one_line_error(proc, "the bm25 retriever found no word to index in the corpus (2 chunks)")
    assert not (tmp_path / "cov.ragcov").exists()
    with pytest.raises(RagcovError, match="no word to index"):
        BM25Retriever(Corpus([Chunk(id="a", text="", doc_id="d")]))
