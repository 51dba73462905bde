"""Coverage-guided generation: cleaning, target policies, the resumable loop, exports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.errors import InputFormatError, RagcovError
from ragcov.generation import ExtractiveGenerator, LoopConfig, TargetPicker, run_generation
from ragcov.generation.cleaning import clean, normalize, rejection
from ragcov.generation.export import deepeval_records, ragas_records, write_deepeval, write_ragas
from ragcov.generation.journal import append_record, read_records, rejected_path
from ragcov.generation.templates import load_template
from ragcov.metrics import chunk_coverage
from ragcov.retrievers.bm25 import BM25Retriever
from ragcov.suite import load_suite

RAGCOV = [sys.executable, "-c", "from ragcov.cli import main; main()"]


# ------------------------------------------------------------------ cleaning
@pytest.mark.parametrize("raw, expected", [
    (" What causes PCD in lace plants?", "What causes PCD in lace plants?"),
    ("1. What is the dose?\n2. Who was treated?", "What is the dose?"),
    ('"Which cells release insulin?"', "Which cells release insulin?"),
    ("Question: Why did revenue grow? It grew because", "Why did revenue grow?"),
    ("\n\n- **How long did follow-up last?**", "How long did follow-up last?"),
    ("Q1: how   many patients\nwere enrolled", "how many patients"),
    ("   \n  ", ""),
])
def test_clean_keeps_one_plain_question(raw: str, expected: str) -> None:
    assert clean(raw) == expected


def test_rejection_reasons() -> None:
    examples = load_template(None, "completion").example_lines()
    assert "What drove the growth in net revenue in 2019?" in examples
    existing = {normalize("What is the median survival?")}
    assert rejection("", existing, examples) == "empty"
    assert rejection("Why?", existing, examples) == "too short"
    assert rejection("Why " + "very " * 70 + "long?", existing, examples) == "too long"
    assert rejection("what is the MEDIAN survival", existing, examples) == "duplicate"
    assert rejection("Which cells release insulin, and what triggers the release?", existing,
                     examples) == "copies a prompt example"
    assert rejection("How many patients were enrolled in the trial?", existing, examples) is None


def test_template_renders_passages_and_has_stable_hash(tmp_path: Path) -> None:
    t = load_template(None, "completion")
    text = t.render(["First {{ not jinja }} passage.", "Second passage."])
    assert text.endswith("Passage: First {{ not jinja }} passage.\n\nSecond passage.\nQuestion:")
    assert t.hash == load_template(None, "completion").hash
    mine = tmp_path / "p.txt"
    mine.write_text("Ask about: {{ passage }}\n", encoding="utf-8")
    assert load_template(mine, "chat").render(["x"]) == "Ask about: x"
    assert load_template(mine, "chat").hash != t.hash
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholder here", encoding="utf-8")
    with pytest.raises(RagcovError, match="passage"):
        load_template(bad, "chat")


# ------------------------------------------------------------------ targets
def test_coverage_order_and_overlap_and_random() -> None:
    docs = ["a", "a", "b", "b", "c"]
    covered = np.array([True, False, False, True, False])
    attempts = np.zeros(5, dtype=int)
    cov = TargetPicker(docs, "coverage", "order")
    assert cov.pick(covered, attempts, 1) == [1]
    attempts[1] = 2                            # given up after max_attempts=2
    assert cov.pick(covered, attempts, 2) == [2]
    ov = TargetPicker(docs, "overlap")
    assert {ov.pick(covered, np.zeros(5, dtype=int), s)[0] for s in range(20)} == {0, 3}
    rnd = TargetPicker(docs, "random")
    tried = np.array([1, 1, 1, 0, 1])
    assert rnd.pick(covered, tried, 7) == [3]   # never a chunk already aimed at
    assert TargetPicker(docs, "coverage").pick(np.ones(5, bool), attempts, 1) is None


def test_isolated_policy_picks_chunk_least_like_covered_ones() -> None:
    # chunk 0 covered; 1 is close to it, 2 is orthogonal, 3 halfway
    v = np.array([[1, 0], [0.99, 0.14], [0, 1], [0.7, 0.7]], dtype=float)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    p = TargetPicker(["d"] * 4, "coverage", "isolated", vectors=v)
    covered = np.array([True, False, False, False])
    assert p.pick(covered, np.zeros(4, dtype=int), 1) == [2]
    covered[2] = True                           # now 3 is closer to covered ground than... 1?
    assert p.pick(covered, np.zeros(4, dtype=int), 2) == [3]


def test_companions_come_from_the_same_document_first() -> None:
    docs = ["a", "a", "a", "b", "b"]
    p = TargetPicker(docs, "coverage", "order", targets_per_call=3)
    assert p.pick(np.zeros(5, bool), np.zeros(5, dtype=int), 1) == [0, 1, 2]
    covered = np.array([False, True, True, False, False])
    assert p.pick(covered, np.zeros(5, dtype=int), 1) == [0, 3, 4]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=30), st.integers(0, 5),
       st.sampled_from(["order", "random"]), st.integers(0, 1000))
def test_coverage_never_aims_at_covered_chunks(cov: list[bool], seed: int, policy: str,
                                               step: int) -> None:
    covered = np.array(cov)
    p = TargetPicker([str(i // 3) for i in range(len(cov))], "coverage", policy, seed=seed)
    picked = p.pick(covered, np.zeros(len(cov), dtype=int), step)
    if covered.all():
        assert picked is None
    else:
        assert picked is not None and not covered[picked[0]]
        again = TargetPicker([str(i // 3) for i in range(len(cov))], "coverage", policy,
                             seed=seed).pick(covered, np.zeros(len(cov), dtype=int), step)
        assert again == picked                  # a resumed run draws the same target


def test_bad_strategy_is_a_clear_error() -> None:
    with pytest.raises(RagcovError, match="unknown strategy"):
        TargetPicker(["a"], "greedy")
    with pytest.raises(RagcovError, match="isolated policy needs"):
        TargetPicker(["a"], "coverage", "isolated")


# ------------------------------------------------------------------ journal
def test_journal_drops_only_an_unfinished_last_line(tmp_path: Path) -> None:
    p = tmp_path / "g.jsonl"
    append_record(p, {"seq": 1, "id": "g-1", "text": "a"})
    append_record(p, {"seq": 2, "id": "g-2", "text": "b"})
    with open(p, "ab") as f:
        f.write(b'{"seq": 3, "id": "g-3", "te')
    assert [r["seq"] for r in read_records(p)] == [1, 2]
    assert p.read_bytes().endswith(b'"b"}\n')
    p.write_text('{"seq": 1}\nnot json\n{"seq": 3}\n', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"g.jsonl:2: invalid JSON"):
        read_records(p)


# ------------------------------------------------------------------ the loop
def _cities(city_corpus: Corpus) -> tuple[Corpus, BM25Retriever, ExtractiveGenerator]:
    return city_corpus, BM25Retriever(city_corpus, progress=False), \
        ExtractiveGenerator(city_corpus.texts)


def test_loop_records_provenance_and_data_file(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    out, data = tmp_path / "gen.jsonl", tmp_path / "cov.ragcov"
    s = run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=5, policy="order"))
    recs = read_records(out)
    assert s.accepted == len(recs) == 5 and s.stop_reason == "budget"
    for key in ("id", "text", "targets", "strategy", "generator", "model", "template_hash",
                "attempt", "hit_target", "gain", "cc_after", "tokens"):
        assert all(key in r for r in recs), key
    # coverage order: targets walk the corpus, each chunk reached by its own question
    assert [r["targets"] for r in recs] == [[c] for c in corpus.ids[:5]]
    assert all(r["hit_target"] for r in recs)
    ccs = [r["cc_after"] for r in recs]
    assert ccs == sorted(ccs)
    m = CoverageData(data).matrix()
    assert m.query_ids == [r["id"] for r in recs]
    assert chunk_coverage(m) == pytest.approx(ccs[-1]) == pytest.approx(s.cc_end)
    assert sum(r["gain"] for r in recs) == int(round(ccs[-1] * len(corpus)))
    assert load_suite(out).texts == [r["text"] for r in recs]


def test_rerun_resumes_and_continues(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    out, data = tmp_path / "gen.jsonl", tmp_path / "cov.ragcov"
    run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=3))
    first = read_records(out)
    again = run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=3))
    assert again.new == 0 and read_records(out) == first
    more = run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=6))
    recs = read_records(out)
    assert more.resumed == 3 and more.new == 3 and recs[:3] == first
    assert [r["seq"] for r in recs] == list(range(1, 7))
    assert len({normalize(r["text"]) for r in recs}) == 6
    assert len(CoverageData(data).query_texts()) == 6


def test_crash_window_between_journal_and_data_file_is_repaired(city_corpus: Corpus,
                                                                tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    out, data = tmp_path / "gen.jsonl", tmp_path / "cov.ragcov"
    run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=2))
    # A third record made durable in the journal but never committed to the data file:
    # the state a kill between the two writes leaves.
    full = tmp_path / "full.jsonl"
    run_generation(corpus, retriever, gen, 1, full, tmp_path / "full.ragcov", LoopConfig(budget=3))
    third = dict(read_records(full)[2], id="gen-00003")
    append_record(out, third)
    assert len(CoverageData(data).query_texts()) == 2
    run_generation(corpus, retriever, gen, 1, out, data, LoopConfig(budget=3))
    assert set(CoverageData(data).query_texts()) == {r["id"] for r in read_records(out)}


def test_seed_suite_coverage_is_the_starting_point(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    from ragcov.suite import Suite

    seed = Suite.from_texts(["capital of France Paris Seine", "capital of Japan Tokyo"])
    s = run_generation(corpus, retriever, gen, 1, tmp_path / "g.jsonl", tmp_path / "d.ragcov",
                       LoopConfig(budget=2), seed_suite=seed)
    assert s.cc_start == pytest.approx(2 / 8)
    recs = read_records(tmp_path / "g.jsonl")
    assert "paris" not in {t for r in recs for t in r["targets"]}
    assert len(CoverageData(tmp_path / "d.ragcov").query_texts()) == 4


def test_unreachable_chunk_is_reported_as_a_plateau(tmp_path: Path) -> None:
    # Two chunks with the same text: the question for the second is a duplicate of
    # the first's, and k=1 BM25 returns only one of them, so it can never be reached.
    text = "Glaciers carve deep valleys into mountain ranges over millennia."
    corpus = Corpus([Chunk("one", text, "d", 0), Chunk("two", text, "d", 1),
                     Chunk("three", "Volcanic eruptions release sulfur dioxide gas.", "e", 0)])
    s = run_generation(corpus, BM25Retriever(corpus, progress=False),
                       ExtractiveGenerator(corpus.texts), 1, tmp_path / "g.jsonl",
                       tmp_path / "d.ragcov", LoopConfig(budget=10, max_attempts=2))
    assert s.stop_reason == "exhausted" and s.plateau
    # BM25 ties the twins; whichever it does not return is the one never reached
    assert len(s.never_reached) == 1 and s.never_reached[0] in ("one", "two")
    lost = s.never_reached[0]
    events = read_records(tmp_path / "g.jsonl") + read_records(rejected_path(tmp_path / "g.jsonl"))
    aimed = sorted((r["attempt"], r.get("reason")) for r in events if r["targets"] == [lost])
    assert [a for a, _ in aimed] == [1, 2]              # given up after max_attempts
    assert aimed[1][1] == "duplicate"                   # the retry repeats a known question
    assert s.rejected["duplicate"] >= 1


def test_patience_stops_a_run_without_gain(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    s = run_generation(corpus, retriever, gen, 1, tmp_path / "g.jsonl", tmp_path / "d.ragcov",
                       LoopConfig(budget=8, strategy="overlap", patience=2, seed=3))
    # overlap aims at covered chunks: after the first question (which covers its own
    # chunk) it can only re-ask about that chunk, which is rejected as a duplicate
    assert s.stop_reason == "plateau"
    assert s.accepted == 1 and s.rejected["duplicate"] == 2 and s.longest_no_gain == 2


def test_target_cc_stops_early(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    s = run_generation(corpus, retriever, gen, 1, tmp_path / "g.jsonl", tmp_path / "d.ragcov",
                       LoopConfig(budget=8, target_cc=0.5))
    assert s.stop_reason == "target" and s.cc_end >= 0.5 and s.accepted == 4


def test_mismatched_data_file_is_refused_before_generating(city_corpus: Corpus,
                                                            tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    data = tmp_path / "d.ragcov"
    run_generation(corpus, retriever, gen, 1, tmp_path / "a.jsonl", data, LoopConfig(budget=1))
    with pytest.raises(RagcovError, match="k differs"):
        run_generation(corpus, retriever, gen, 3, tmp_path / "b.jsonl", data, LoopConfig(budget=1))
    assert not (tmp_path / "b.jsonl").exists()


# ------------------------------------------------------------------ exports
def test_exports_have_ragas_and_deepeval_shapes(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    s = run_generation(corpus, retriever, gen, 1, tmp_path / "g.jsonl", tmp_path / "d.ragcov",
                       LoopConfig(budget=3, targets_per_call=2))
    ragas = ragas_records(s.records, corpus)
    assert set(ragas[0]) == {"user_input", "reference_contexts", "reference_context_ids"}
    assert ragas[0]["reference_context_ids"] == s.records[0]["targets"]
    assert ragas[0]["reference_contexts"] == [corpus.get(c).text for c in s.records[0]["targets"]]
    goldens = deepeval_records(s.records, corpus)
    assert goldens[1]["input"] == s.records[1]["text"]
    assert goldens[1]["context"] == ragas[1]["reference_contexts"]
    write_ragas(tmp_path / "ragas.json", s.records, corpus)
    write_deepeval(tmp_path / "goldens.json", s.records, corpus)
    texts = [r["text"] for r in s.records]
    assert load_suite(tmp_path / "ragas.json").texts == texts
    assert load_suite(tmp_path / "goldens.json").texts == texts


# ------------------------------------------------------------------ CLI
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([*RAGCOV, *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)


def test_cli_generate_and_user_errors(city_corpus_file: Path, tmp_path: Path) -> None:
    res = _cli("generate", "--corpus", str(city_corpus_file), "--retriever", "bm25", "-k", "1",
               "--budget", "3", "-o", "g.jsonl", "--data-file", "d.ragcov", "--ragas", "r.json",
               "--deepeval", "e.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "0 calls, 0 tokens" in res.stdout and "Generated 3 questions" in res.stdout
    assert len(json.loads((tmp_path / "r.json").read_text())) == 3
    res = _cli("generate", "--corpus", str(city_corpus_file), "--retriever", "bm25",
               "--strategy", "greedy", "-o", "x.jsonl", "--data-file", "x.ragcov", cwd=tmp_path)
    assert res.returncode == 1 and "unknown strategy 'greedy'" in res.stderr
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.ragcov").exists()


def _pubmed_slice(datasets_dir: Path, path: Path, docs: int) -> Path:
    from research.datasets import load_pubmedqa

    d = load_pubmedqa(datasets_dir / "pubmedqa")
    keep = set(list(d.documents)[:docs])
    with open(path, "w", encoding="utf-8") as f:
        for c in d.chunks or []:
            if c.doc_id in keep:
                f.write(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text}) + "\n")
    return path


def test_sigkill_midway_then_rerun_loses_nothing(datasets_dir: Path, tmp_path: Path) -> None:
    corpus = _pubmed_slice(datasets_dir, tmp_path / "pqa.jsonl", 120)
    budget = 150
    args = [*RAGCOV, "generate", "--corpus", str(corpus), "--retriever", "bm25", "-k", "3",
            "--budget", str(budget), "--patience", "0", "-o", "g.jsonl", "--data-file",
            "d.ragcov", "-q"]
    out = tmp_path / "g.jsonl"
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 20:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    before = read_records(out)
    assert 20 <= len(before) < budget
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    after = read_records(out)
    assert after[:len(before)] == before                  # nothing committed was lost
    assert len(after) == budget
    assert len({r["id"] for r in after}) == budget        # no duplicates
    assert len({normalize(r["text"]) for r in after}) == budget
    assert [r["seq"] for r in after] == sorted({r["seq"] for r in after})
    assert set(CoverageData(tmp_path / "d.ragcov").query_texts()) == {r["id"] for r in after}


def test_full_coverage_stops_as_complete_not_plateau(city_corpus: Corpus, tmp_path: Path) -> None:
    corpus, retriever, gen = _cities(city_corpus)
    s = run_generation(corpus, retriever, gen, 2, tmp_path / "g.jsonl", tmp_path / "d.ragcov",
                       LoopConfig(budget=20))
    assert s.stop_reason == "complete" and not s.plateau
    assert s.cc_end == 1.0 and s.never_reached == [] and s.accepted < 20
