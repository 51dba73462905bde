"""The smaller promises: a GPU asked of a retriever that embeds nothing, a URL echoed as
given, Ctrl-C naming drift, a gate on a relation that did not run, drift rates of an
earlier suite, and the device a run embedded on in the data file's JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import cli
from ragcov.cli.entry import INTERRUPTED
from ragcov.retrievers.bm25 import BM25Retriever


@pytest.fixture
def city(tmp_path: Path, city_corpus_file: Path, monkeypatch) -> dict[str, Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": i, "question": t}) + "\n" for i, t in (
        ("tokyo", "Tokyo Japan capital"), ("plants", "photosynthesis sunlight"),
        ("board", "dividends board share"))))
    return {"corpus": city_corpus_file, "queries": queries}


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_a_gpu_asked_of_bm25_is_refused_in_one_line(capsys, city, tmp_path: Path, device: str) -> None:
    code, _, err = cli(capsys, "run", "--corpus", str(city["corpus"]), "--queries",
                       str(city["queries"]), "--retriever", "bm25", "--device", device)
    assert code == 1 and err.strip().splitlines() == [
        f"ragcov: error: --device {device} is where the dense retriever or a store's query encoder "
        "embeds; --retriever bm25 embeds nothing (leave --device out, or auto)"]
    assert not (tmp_path / ".ragcov").exists()
    for fine in ("auto", "cpu"):
        code, _, err = cli(capsys, "run", "--corpus", str(city["corpus"]), "--queries",
                           str(city["queries"]), "--retriever", "bm25", "--device", fine, "-q")
        assert code == 0, err


def test_a_distractors_url_is_echoed_as_given(capsys, city) -> None:
    code, _, err = cli(capsys, "drift", "--corpus", str(city["corpus"]), "--queries",
                       str(city["queries"]), "--retriever", "bm25", "--relation", "distractors",
                       "--distractors", "http://example.com/d.jsonl", "-q")
    assert code == 1 and "http://example.com/d.jsonl" in err and "http:/example" not in err


class StopsOnACopy:
    """BM25 on the corpus it is given; on a copy with added chunks, a Ctrl-C (as a user's
    would arrive while the copy is searched)."""

    def __init__(self, corpus) -> None:
        self.inner = BM25Retriever(corpus, progress=False)
        self.grown = any(c.id.startswith("drift-distractor:") for c in corpus)

    def retrieve(self, texts, k):
        if self.grown:
            raise KeyboardInterrupt
        return self.inner.retrieve(texts, k)

    def fingerprint(self):
        return {"kind": "test_small_honesty:StopsOnACopy"}


def test_ctrl_c_in_drift_names_drift_and_the_rerun_resumes(capsys, city, tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    args = ["drift", "--corpus", str(city["corpus"]), "--queries", str(city["queries"]),
            "--retriever", "test_small_honesty:StopsOnACopy", "--relation", "identity,distractors",
            "-q"]
    code, _, err = cli(capsys, *args)
    assert code == 130 and err.strip().splitlines()[-1] == INTERRUPTED
    assert "probe, generate and drift commit as they go" in INTERRUPTED
    # The same command again: the copy judged before the interrupt is kept, not redone.
    code, _, err = cli(capsys, *args[:-1])
    assert "resuming the drift run in .ragcov: 1 of 2 copies already recorded" in err
    assert code == 130


def test_a_gate_on_a_relation_that_does_not_run_is_refused(capsys, city, tmp_path: Path) -> None:
    base = ["drift", "--corpus", str(city["corpus"]), "--queries", str(city["queries"]),
            "--retriever", "bm25", "-q"]
    code, _, err = cli(capsys, *base, "--relation", "identity", "--max-violation-rate", "noise=0.0")
    assert code == 1 and err.strip().splitlines() == [
        "ragcov: error: --max-violation-rate noise=0: the noise relation is not run "
        "(--relation identity); add it to --relation or drop the limit"]
    assert not (tmp_path / ".ragcov").exists()
    # By default, format on a corpus with no table runs its text forms only: a limit on a
    # table form gates nothing, and says so (status 2) rather than passing in silence.
    code, _, err = cli(capsys, *base, "--max-violation-rate", "format:rows=0.0")
    assert code == 2 and ("drift: --max-violation-rate format:rows=0: the format:rows relation "
                          "did not run") in err


def test_diff_says_drift_rates_are_of_an_earlier_suite(capsys, city, tmp_path: Path) -> None:
    base = tmp_path / "base.ragcov"
    code, _, err = cli(capsys, "drift", "--corpus", str(city["corpus"]), "--queries",
                       str(city["queries"]), "--retriever", "bm25", "--relation", "identity",
                       "--data-file", str(base), "-q")
    assert code == 0, err
    head = tmp_path / "head.ragcov"
    shutil.copy(base, head)
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"id": "berlin", "question": "Germany capital Berlin"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(city["corpus"]), "--queries", str(more),
                       "--retriever", "bm25", "--data-file", str(head), "--append", "-q")
    assert code == 0, err
    code, out, _ = cli(capsys, "diff", str(base), str(head))
    assert ("Note: HEAD: the drift rates are of an earlier suite: 3 tests judged, the file holds "
            "4 now (run --append since)") in out
    assert "BASE: the drift rates" not in out
    code, out, _ = cli(capsys, "diff", str(base), str(head), "--format", "json")
    assert json.loads(out)["drift_notes"][0].startswith("HEAD: the drift rates are of an earlier")
    code, out, _ = cli(capsys, "report", "--data-file", str(head))
    assert "(Note: the drift rates are of an earlier suite: 3 tests judged" in out


def test_the_resolved_device_is_in_the_data_files_json(capsys, city, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    code, _, err = cli(capsys, "run", "--corpus", str(city["corpus"]), "--queries",
                       str(city["queries"]), "--device", "cpu", "-q")
    assert code == 0, err
    code, out, _ = cli(capsys, "json", "-o", "-")
    retriever = json.loads(out)["meta"]["retriever"]
    assert retriever["kind"] == "dense" and retriever["device"] == "cpu"
    assert retriever["devices"] == ["cpu"]
    # A retriever that embeds nothing has no device to say.
    code, _, _ = cli(capsys, "run", "--corpus", str(city["corpus"]), "--queries",
                     str(city["queries"]), "--retriever", "bm25", "--data-file", "b.ragcov", "-q")
    code, out, _ = cli(capsys, "json", "--data-file", "b.ragcov", "-o", "-")
    assert "device" not in json.loads(out)["meta"]["retriever"]
