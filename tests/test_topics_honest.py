"""The topic table says what it counts: fewer topics than asked, tests that reach no topic,
chunks never probed apart from untested ones, and no library notice on stderr."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import ragcov.api as api
from helpers import cli

pytest.importorskip("sklearn")

TEXTS = ["apples and pears ripen in the orchard", "rivers carry sediment to the delta",
         "stocks and bonds pay dividends"]


def _record(folder: Path, n_chunks: int, questions: list[str]) -> Path:
    corpus = folder / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "doc_id": f"d{i // 4}",
                                          "text": TEXTS[i % len(TEXTS)]}) + "\n"
                              for i in range(n_chunks)))
    queries = folder / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{n}", "question": q}) + "\n"
                               for n, q in enumerate(questions)))
    data = folder / ".ragcov"
    api.run(corpus, queries, retriever="bm25", k=3, data_file=data, progress=False)
    return data


def test_fewer_topics_than_asked_are_said_in_text_and_markdown(capsys, tmp_path: Path) -> None:
    data = _record(tmp_path, 24, ["apples orchard", "river delta sediment"])
    for fmt in ("text", "markdown"):
        code, out, err = cli(capsys, "topics", "--data-file", str(data), "--topics", "10",
                             "--format", fmt, "-q")
        assert code == 0, err
        assert ("10 topics were asked for (--topics 10); the chunks make 3: only 3 distinct groups "
                "of vectors (identical chunks share one)") in out
    code, out, _ = cli(capsys, "topics", "--data-file", str(data), "--topics", "3", "-q")
    assert "were asked for" not in out


def test_the_total_counts_only_tests_that_retrieve_something(capsys, tmp_path: Path) -> None:
    data = _record(tmp_path, 24, ["apples orchard", "river delta sediment", "zzyzx qwertyuiop"])
    code, out, err = cli(capsys, "topics", "--data-file", str(data), "--topics", "3", "-q")
    assert code == 0, err
    total = next(line for line in out.splitlines() if line.startswith("TOTAL")).split()
    assert total[-1] == "2"  # the third test retrieves nothing and reaches no topic
    assert "1 of the 3 tests retrieve no chunk in scope and reach no topic." in out
    doc = json.loads(cli(capsys, "topics", "--data-file", str(data), "--format", "json", "-q")[1])
    assert doc["total"]["tests"] == 2 and doc["total"]["queries"] == 3


def test_chunks_never_probed_are_not_counted_untested(capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    data = _record(tmp_path, 60, ["apples orchard", "river delta sediment"])
    code, _, err = cli(capsys, "probe", "--corpus", str(corpus), "--data-file", str(data),
                       "--sample", "6", "-q")
    assert code == 0, err
    doc = json.loads(cli(capsys, "topics", "--data-file", str(data), "--topics", "3",
                         "--format", "json", "-q")[1])
    status = api.audit_reachability(data).status.tolist()
    assert sum(t["untested"] for t in doc["topics"]) == status.count("untested")
    assert sum(t["not_probed"] for t in doc["topics"]) == doc["total"]["not_probed"] == \
        status.count(None) > 0
    for t in doc["topics"]:
        assert t["chunks"] == t["covered"] + t["untested"] + t["not_probed"] + t["unreachable"]
    code, out, _ = cli(capsys, "topics", "--data-file", str(data), "--topics", "3", "-q")
    header = out.splitlines()[0].split("  ")
    assert [h.strip() for h in header if h.strip()][:6] == [
        "Topic", "Chunks", "Covered", "Untested", "Not probed", "Unreachable"]


def test_identical_chunks_cluster_without_a_library_notice(tmp_path: Path) -> None:
    data = _record(tmp_path, 12, ["apples orchard"])
    corpus = tmp_path / "same.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"s{i}", "text": TEXTS[0]}) + "\n"
                              for i in range(12)))
    same = tmp_path / "same.ragcov"
    api.run(corpus, tmp_path / "q.jsonl", retriever="bm25", k=3, data_file=same, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "invalid value encountered in divide" leaked here
        assert api.fit_topics(same, n_topics=2, vectors="tfidf").made
        assert api.fit_topics(data, n_topics=3, vectors="tfidf").made
