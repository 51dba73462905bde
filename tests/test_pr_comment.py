"""A report sized for a pull request: the worst documents and one row for the rest.

A corpus of 60 documents (180 chunks) recorded with BM25: the Markdown table lists the 25
documents with the lowest coverage and sums the other 35 in one row, whose numbers are
recounted here from ``ragcov json``; the TOTAL is the full table's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import cli

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"]


def _word(n: int) -> str:
    """A word of its own for every n: two letters of the alphabet above, spelled out."""
    return f"{WORDS[n % 26]}{WORDS[(n // 26) % 26]}"


@pytest.fixture
def many(tmp_path: Path, capsys, monkeypatch) -> Path:
    """60 documents of 3 chunks; the tests ask for chunks of the first 40 in varying numbers."""
    corpus = tmp_path / "chunks.jsonl"
    queries = tmp_path / "q.jsonl"
    with corpus.open("w") as c, queries.open("w") as q:
        for d in range(60):
            doc = f"reports/{2010 + d % 3}/doc{d:02d}.pdf"
            for j in range(3):
                n = d * 3 + j
                c.write(json.dumps({"id": f"{doc}#{j}", "doc_id": doc,
                                    "text": f"{_word(n)} {_word(n)} filler words about it"}) + "\n")
                if d < 40 and j <= d % 3:
                    q.write(json.dumps({"id": f"q{n}", "question": _word(n)}) + "\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--retriever", "bm25", "-k", "1",
                       "--queries", str(queries), "-q")
    assert code == 0, err
    return tmp_path / ".ragcov"


def _table_rows(out: str) -> list[list[str]]:
    """The Markdown table's body rows (no header, no alignment row), as cells."""
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]


def _json(capsys, data: Path) -> dict:
    code, out, err = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code == 0, err
    return json.loads(out)


def test_markdown_lists_the_25_worst_and_sums_the_rest(many: Path, capsys) -> None:
    doc = _json(capsys, many)
    docs = doc["documents"]
    assert len(docs) == 60
    code, out, err = cli(capsys, "report", "--format", "markdown", "--data-file", str(many))
    assert code == 0, err
    rows = _table_rows(out)
    assert len(rows) == 25 + 1 + 1  # the worst 25, the rest, TOTAL
    listed, rest, total = rows[:25], rows[25], rows[26]
    # The 25 with the lowest coverage (ties: most missing, then by name), lowest first.
    worst = sorted(docs, key=lambda d: (docs[d]["chunk_coverage"], -(docs[d]["chunks"]
                   - docs[d]["covered_chunks"]), d))[:25]
    assert [r[0] for r in listed] == worst
    others = [d for d in docs if d not in worst]
    chunks = sum(docs[d]["chunks"] for d in others)
    covered = sum(docs[d]["covered_chunks"] for d in others)
    assert rest[:4] == [f"... and {len(others)} more documents", str(chunks), str(covered),
                        str(chunks - covered)]
    assert rest[4] == f"{round(covered / chunks * 100)}%"
    # The TOTAL is the whole corpus's, as the full table's.
    assert total[:3] == ["**TOTAL**", f"**{doc['totals']['chunks']}**",
                         f"**{doc['totals']['covered_chunks']}**"]
    assert f"25 of 60 documents listed, those with the lowest coverage; the other 35 ({chunks:,} " \
        "chunks) are summed in one row" in out
    # --top 0 lists every document, with the same TOTAL and no row for a rest.
    code, whole, _ = cli(capsys, "report", "--format", "markdown", "--top", "0", "--data-file",
                         str(many))
    assert len(_table_rows(whole)) == 61 and _table_rows(whole)[-1] == total
    assert "more documents" not in whole


def test_top_applies_to_text_and_keeps_skip_covered_and_sort(many: Path, capsys) -> None:
    code, text, _ = cli(capsys, "report", "--data-file", str(many))
    assert code == 0 and "more documents" not in text  # the terminal's table stays whole
    assert sum(1 for line in text.splitlines() if line.startswith("reports/")) == 60
    code, out, _ = cli(capsys, "report", "--top", "4", "--sort", "name", "--skip-covered",
                       "--data-file", str(many))
    assert code == 0
    names = [line.split()[0] for line in out.splitlines() if line.startswith("reports/")]
    assert len(names) == 4 and names == sorted(names)
    uncovered = [line for line in out.splitlines() if line.startswith("... and ")]
    # --skip-covered leaves the fully covered out first; --top sums what is left over 4.
    skipped = int(re.search(r"(\d+) documents? skipped due to complete coverage", out).group(1))
    assert uncovered == [uncovered[0]] and f"... and {60 - skipped - 4} more documents" in uncovered[0]
    code, _, err = cli(capsys, "report", "--top", "-1", "--data-file", str(many))
    assert code == 1 and "--top must be 0 (every document) or more, got -1" in err
