"""Coverage by topic: clustering, labels, the per-topic table, storage, gates and every view.

The end-to-end tests run BM25 over forty pages of the bundled FinQA sample (219
chunks), the questions about them split in two (the suite, and "production"
traffic); every per-topic figure is recounted here from the data file with plain
loops. The formulas are checked on hand-worked tables and on random partitions.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov import api
from ragcov.data import CoverageData
from ragcov.data.topics import read_topics
from ragcov.errors import RagcovError
from ragcov.topics import fit as topic_fit
from ragcov.topics.coverage import find_topic, min_topic_failure

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
PAGES = 40


def _slice(folder: Path) -> tuple[Path, Path, Path]:
    """Forty pages, the questions about them: odd ones the suite, even ones the traffic."""
    lines = (SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:PAGES]
    pages = folder / "pages.jsonl"
    pages.write_text("".join(lines))
    docs = {json.loads(line)["doc_id"] for line in lines}
    questions = [q for q in map(json.loads, (SAMPLE / "finqa_questions.jsonl").read_text()
                                .splitlines()) if q["doc_id"] in docs]
    suite, traffic = folder / "suite.jsonl", folder / "traffic.jsonl"
    suite.write_text("".join(json.dumps(q) + "\n" for q in questions[0::2]))
    traffic.write_text("".join(json.dumps(q) + "\n" for q in questions[1::2]))
    return pages, suite, traffic


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The suite and the traffic recorded with BM25, and the suite's file clustered."""
    d = tmp_path_factory.mktemp("topics")
    pages, suite, traffic = _slice(d)
    for name, queries in (("tests", suite), ("traffic", traffic)):
        api.run(pages, queries, retriever="bm25", k=3, data_file=d / f"{name}.ragcov",
                split=True, progress=False)
    built = api.fit_topics(d / "tests.ragcov", seed=0)
    assert built.made
    return {"dir": d, "pages": pages, "suite": suite, "tests": d / "tests.ragcov",
            "traffic": d / "traffic.ragcov"}


def _copy(recorded: dict[str, Path], tmp_path: Path) -> Path:
    out = tmp_path / "tests.ragcov"
    shutil.copy(recorded["tests"], out)
    return out


def _topics_json(capsys, data: Path, *extra: str) -> dict:
    code, out, err = cli(capsys, "topics", "--data-file", str(data), "--format", "json", "-q",
                         *extra)
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------------- formulas
def test_class_tfidf_weights_a_hand_worked_table() -> None:
    # Two topics over the terms (alpha, beta, gamma). Counts: topic 1 (4, 0, 4), topic 2
    # (1, 6, 1). A = 16 / 2 = 8 words per topic; f = (5, 6, 5).
    # W(t, c) = tf / |c| * log(1 + A / f):
    #   topic 1: alpha .5 * ln(2.6) = .478, gamma the same; beta absent.
    #   topic 2: beta .75 * ln(1 + 8/6) = .635, alpha = gamma = .125 * ln(2.6) = .119.
    counts = np.array([[4, 0, 4], [1, 6, 1]], dtype=float)
    vocab = np.array(["alpha", "beta", "gamma"])
    assert topic_fit.weighted_terms(counts, vocab) == [["alpha", "gamma"],
                                                        ["beta", "alpha", "gamma"]]
    # A term every topic uses evenly weighs less than one only this topic uses, even
    # when it is the more frequent word inside the topic.
    counts = np.array([[5, 3, 0], [5, 0, 3]], dtype=float)
    assert topic_fit.weighted_terms(counts, np.array(["the", "x", "y"]))[0][0] == "x"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=60))
def test_topics_are_numbered_by_size_and_keep_the_partition(raw: list[int]) -> None:
    raw_a = np.array(raw)
    numbered, order = topic_fit._number_by_size(raw_a)
    sizes = np.bincount(numbered)[1:]
    assert sorted(set(numbered.tolist())) == list(range(1, len(set(raw)) + 1))
    assert list(sizes) == sorted(sizes, reverse=True)
    # Same size: the topic whose first chunk comes first has the smaller number.
    first = {t: int(np.flatnonzero(numbered == t)[0]) for t in set(numbered.tolist())}
    for a in first:
        for b in first:
            if a < b and sizes[a - 1] == sizes[b - 1]:
                assert first[a] < first[b]
    # Two chunks share a topic exactly when they shared a cluster.
    assert ((raw_a[:, None] == raw_a[None, :]) == (numbered[:, None] == numbered[None, :])).all()


def _blobs(seed: int = 0) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Three well-apart groups of 30 vectors, each with words of its own."""
    rng = np.random.default_rng(seed)
    centres = np.eye(3, 16) * 5
    truth = np.repeat(np.arange(3), 30)
    v = centres[truth] + rng.normal(scale=0.3, size=(90, 16))
    words = [("pension plan retirement", "lawsuit court claims", "fuel aircraft airline")[t]
             for t in truth]
    texts = [f"{w} report item{i % 7}" for i, w in enumerate(words)]
    return v, texts, truth


def test_fit_finds_well_apart_groups_and_names_them() -> None:
    v, texts, truth = _blobs()
    f = topic_fit.fit(v, texts, n_topics=None, seed=0)
    assert f.n_topics == 3  # chosen: the silhouette peaks at the true number
    assert max(f.candidates, key=lambda n: (f.candidates[n], -n)) == 3
    pairs = Counter(zip(truth.tolist(), f.assignment.tolist()))
    assert len(pairs) == 3  # each group is one topic, whole
    for t, terms in enumerate(f.terms, start=1):
        group = next(g for g, tt in pairs if tt == t)
        own = ("pension plan retirement", "lawsuit court claims", "fuel aircraft airline")[group]
        assert set(terms[:3]) == set(own.split())  # the shared words never lead a label
        assert f.assignment[f.central[t - 1]] == t
    assert f.xy.shape == (90, 2) and (f.xy >= 0).all() and (f.xy <= 1).all()
    # Each topic's chunks sit nearer their own topic's chunks than any other's.
    centre = np.array([f.xy[f.assignment == t].mean(axis=0) for t in (1, 2, 3)])
    nearest = np.argmin(((f.xy[:, None, :] - centre[None]) ** 2).sum(axis=2), axis=1) + 1
    assert (nearest == f.assignment).all()


def test_fit_is_deterministic_by_seed() -> None:
    v, texts, _ = _blobs(1)
    v = v + np.random.default_rng(5).normal(scale=2.0, size=v.shape)  # overlapping groups
    a, b = (topic_fit.fit(v, texts, 5, seed=3) for _ in range(2))
    assert (a.assignment == b.assignment).all() and a.terms == b.terms
    assert a.central == b.central and np.array_equal(a.xy, b.xy)


def test_impossible_topic_counts_are_one_line() -> None:
    with pytest.raises(RagcovError, match="more topics than the 4 chunk"):
        topic_fit.check_topic_count(5, 4, "x.ragcov")
    with pytest.raises(RagcovError, match="at least 1"):
        topic_fit.check_topic_count(0, 4, "x.ragcov")
    with pytest.raises(RagcovError, match="no chunks; there is nothing to cluster"):
        topic_fit.fit(np.zeros((0, 3)), [], None)
    with pytest.raises(RagcovError, match="no chunk holds a word"):
        topic_fit.tfidf_vectors(["123 456", "--", "7"])


# ------------------------------------------------------------------ the topic table
def _recount(data: Path) -> dict[int, dict]:
    """Per topic, recounted with plain loops from the data file's rows."""
    m = CoverageData(data).matrix()
    stored = read_topics(CoverageData(data))
    topic_of = dict(zip(stored.chunk_ids, stored.assignment.tolist()))
    covered = {m.chunk_ids[j] for j in m.indices.tolist()}
    out: dict[int, dict] = {}
    for cid in m.chunk_ids:
        row = out.setdefault(topic_of[cid], {"chunks": 0, "covered": 0, "queries": set()})
        row["chunks"] += 1
        row["covered"] += cid in covered
    for q in range(m.n_queries):
        for j in m.retrieved(q):
            out[topic_of[m.chunk_ids[j]]]["queries"].add(q)
    return out


def test_the_table_recounts_and_puts_the_darkest_topic_first(capsys, recorded) -> None:
    doc = _topics_json(capsys, recorded["tests"])
    truth = _recount(recorded["tests"])
    assert {t["topic"] for t in doc["topics"]} == set(truth)
    for t in doc["topics"]:
        want = truth[t["topic"]]
        assert (t["chunks"], t["covered"], t["tests"]) == (want["chunks"], want["covered"],
                                                          len(want["queries"]))
        assert t["untested"] == t["chunks"] - t["covered"] and t["unreachable"] is None
        assert len(t["untested_chunks"]) == t["untested"] and len(t["test_ids"]) <= 5
        assert t["label"] == ", ".join(t["terms"][:3])
    assert sum(t["chunks"] for t in doc["topics"]) == doc["total"]["chunks"] == 219
    shares = [t["untested"] / t["chunks"] for t in doc["topics"]]
    assert shares == sorted(shares, reverse=True) and doc["sorted_by"] == "untested share"
    made = doc["made"]
    assert made["vectors"] == "tfidf" and made["requested"] == "auto" and made["seed"] == 0
    assert made["topics"] == len(doc["topics"]) and str(made["topics"]) in made["candidates"]
    assert made["corpus_hash"] == CoverageData(recorded["tests"]).meta().corpus_hash


def test_report_by_topic_prints_the_topics_table(capsys, recorded) -> None:
    code, table, _ = cli(capsys, "topics", "--data-file", str(recorded["tests"]), "-q")
    assert code == 0
    code, report, _ = cli(capsys, "report", "--data-file", str(recorded["tests"]), "--by", "topic")
    assert code == 0 and report == table
    first = report.splitlines()[2]  # header, rule, then the topic to test first
    doc = _topics_json(capsys, recorded["tests"])
    assert first.startswith(f"{doc['topics'][0]['topic']} {doc['topics'][0]['label']}")
    code, md, _ = cli(capsys, "report", "--data-file", str(recorded["tests"]), "--by", "topic",
                      "--format", "markdown")
    assert md.startswith("| Topic | Chunks | Covered | Untested | Cover | Tests | Central chunk |")


def test_min_topic_coverage_gates_on_the_least_covered_topic(capsys, recorded) -> None:
    doc = _topics_json(capsys, recorded["tests"])
    worst = min(doc["topics"], key=lambda t: t["coverage"])
    pct = round(worst["coverage"] * 100, 2)
    code, _, err = cli(capsys, "topics", "--data-file", str(recorded["tests"]), "-q",
                       "--min-topic-coverage", str(pct + 0.01))
    assert code == 2
    assert f"topic {worst['topic']} ({worst['label']}) is {pct:.2f}% covered" in err
    for command in (("topics", "-q"), ("report", "--by", "topic")):
        code, _, err = cli(capsys, *command, "--data-file", str(recorded["tests"]),
                           "--min-topic-coverage", str(pct))
        assert code == 0, err
    code, _, err = cli(capsys, "report", "--data-file", str(recorded["tests"]),
                       "--min-topic-coverage", "10")
    assert code == 1 and "give it with --by topic" in err
    code, _, err = cli(capsys, "topics", "--data-file", str(recorded["tests"]),
                       "--min-topic-coverage", "101")
    assert code == 1 and "percentage from 0 to 100" in err


def test_traffic_share_per_topic_and_the_order_it_sets(capsys, recorded) -> None:
    doc = _topics_json(capsys, recorded["tests"], "--traffic", str(recorded["traffic"]))
    assert doc["sorted_by"] == "untested traffic"
    m_t, m_p = CoverageData(recorded["tests"]).matrix(), CoverageData(recorded["traffic"]).matrix()
    stored = read_topics(CoverageData(recorded["tests"]))
    topic_of = dict(zip(stored.chunk_ids, stored.assignment.tolist()))
    covered = {m_t.chunk_ids[j] for j in m_t.indices.tolist()}
    hits: Counter[int] = Counter()
    untested_hits: Counter[int] = Counter()
    for j in m_p.indices.tolist():
        cid = m_p.chunk_ids[j]
        hits[topic_of[cid]] += 1
        untested_hits[topic_of[cid]] += cid not in covered
    total = m_p.nnz
    assert doc["total"]["traffic_hits"] == total
    for t in doc["topics"]:
        assert t["traffic_hits"] == hits[t["topic"]]
        assert t["untested_traffic_hits"] == untested_hits[t["topic"]]
        assert t["traffic_share"] == pytest.approx(hits[t["topic"]] / total)
    order = [t["untested_traffic_hits"] for t in doc["topics"]]
    assert order == sorted(order, reverse=True)
    assert sum(t["traffic_share"] for t in doc["topics"]) == pytest.approx(1.0)


# ------------------------------------------------------------------ storage, staleness
def test_topics_are_kept_until_asked_otherwise(capsys, recorded, tmp_path) -> None:
    data = _copy(recorded, tmp_path)
    before = read_topics(CoverageData(data))
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--format", "json")
    assert code == 0 and "Topics kept from" in err
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--topics", "4", "--seed", "2",
                       "--format", "json")
    assert code == 0 and "Clustered 219 chunks" in err
    after = read_topics(CoverageData(data))
    assert after.n_topics == 4 and after.settings["seed"] == 2
    assert after.settings["created"] >= before.settings["created"]
    tables = {r[0] for r in sqlite3.connect(data).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'topic%'")}
    assert tables == {"topic_meta", "topic_labels", "topic_chunks"}


def test_a_new_recording_keeps_topics_and_a_changed_corpus_makes_them_stale(
        capsys, recorded, tmp_path) -> None:
    data = _copy(recorded, tmp_path)
    suite = str(recorded["suite"])
    # The same corpus recorded again (a nightly run): the topics stay and still answer.
    code, _, err = cli(capsys, "run", "--corpus", str(recorded["pages"]), "--split",
                       "--queries", suite, "--retriever", "bm25", "-k", "3",
                       "--data-file", str(data), "--quiet")
    assert code == 0, err
    code, _, err = cli(capsys, "report", "--data-file", str(data), "--by", "topic")
    assert code == 0, err
    # One page fewer: the file's corpus changed, its topics are stale, said in one line.
    lines = recorded["pages"].read_text().splitlines(True)
    smaller = tmp_path / "smaller.jsonl"
    smaller.write_text("".join(lines[1:]))
    code, _, err = cli(capsys, "run", "--corpus", str(smaller), "--split", "--queries", suite,
                       "--retriever", "bm25", "-k", "3", "--data-file", str(data), "--quiet")
    assert code == 0, err
    code, out, err = cli(capsys, "report", "--data-file", str(data), "--by", "topic")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "its topics are stale" in err and "ragcov topics" in err
    code, _, err = cli(capsys, "html", "--data-file", str(data), "-d", str(tmp_path / "site"))
    assert code == 0 and "stale" in err and not (tmp_path / "site" / "topics.html").exists()
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--format", "json")
    assert code == 0 and "Clustered" in err  # made again for the corpus now recorded
    code, _, err = cli(capsys, "report", "--data-file", str(data), "--by", "topic")
    assert code == 0, err


def test_combine_keeps_the_topics(capsys, recorded, tmp_path) -> None:
    plain = tmp_path / "plain.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(recorded["pages"]), "--split", "--queries",
                       str(recorded["dir"] / "traffic.jsonl"), "--retriever", "bm25", "-k", "3",
                       "--data-file", str(plain), "--quiet")
    assert code == 0, err
    out = tmp_path / "all.ragcov"
    code, _, err = cli(capsys, "combine", "--keep", "--data-file", str(out), str(plain),
                       str(recorded["tests"]))
    assert code == 0, err
    kept, given = read_topics(CoverageData(out)), read_topics(CoverageData(recorded["tests"]))
    assert kept.labels == given.labels and (kept.assignment == given.assignment).all()


def test_bad_input_is_one_line(capsys, recorded, tmp_path) -> None:
    data = str(recorded["tests"])
    for args, message in (
            (("--topics", "220"), "--topics 220 is more topics than the 219 chunk(s)"),
            (("--topics", "0"), "--topics must be at least 1"),
            (("--vectors", "dense"), "no dense vectors for its corpus"),
            (("--vectors", "store"), "give --corpus, the store's URL"),
            (("--vectors", "words"), "--vectors must be one of"),
            (("--format", "csv"), "--format must be one of"),
            (("--seed", "-1"), "--seed must be a whole number")):
        code, out, err = cli(capsys, "topics", "--data-file", data, *args)
        assert code == 1 and out == "" and err.count("\n") == 1 and message in err, (args, err)
    before = (recorded["tests"]).read_bytes()
    code, _, err = cli(capsys, "topics", "--data-file", data, "--corpus",
                       str(recorded["pages"]), "--split", "--chunk-size", "500")
    assert code == 1 and "not the corpus recorded" in err
    assert recorded["tests"].read_bytes() == before  # nothing written
    code, _, err = cli(capsys, "report", "--data-file", str(recorded["traffic"]), "--by", "topic")
    assert code == 1 and "no topics recorded; run `ragcov topics` first" in err
    code, _, err = cli(capsys, "topics", "--data-file", str(tmp_path / "none.ragcov"))
    assert code == 1 and err.count("\n") == 1


def test_a_topic_is_named_by_number_label_or_a_word(recorded) -> None:
    stored = read_topics(CoverageData(recorded["tests"]))
    t = stored.labels[-1]
    assert find_topic(stored, str(t.topic)) == t.topic == find_topic(stored, t.label.upper())
    unique = next((w for w in t.label.split(", ")
                   if sum(w in x.label.split(", ") for x in stored.labels) == 1), None)
    if unique is not None:
        assert find_topic(stored, unique) == t.topic
    with pytest.raises(RagcovError, match="no such topic"):
        find_topic(stored, str(stored.n_topics + 1))
    with pytest.raises(RagcovError, match="no topic has that number, label or label word"):
        find_topic(stored, "zzzz-not-a-word")


def test_the_gate_judges_at_the_printed_precision(recorded) -> None:
    report = api.topic_coverage(recorded["tests"])
    worst = min(r.coverage for r in report.topics)
    shown = float(f"{worst * 100:.0f}")
    assert min_topic_failure(report, shown, precision=0) is None
    assert min_topic_failure(report, shown + 1, precision=0) is not None
    assert min_topic_failure(report, None) is None


# ------------------------------------------------------------------ acting on topics
def test_diff_shows_each_topics_change(capsys, recorded, tmp_path) -> None:
    data = _copy(recorded, tmp_path)
    head = tmp_path / "head.ragcov"
    shutil.copy(data, head)
    code, _, err = cli(capsys, "run", "--corpus", str(recorded["pages"]), "--split", "--queries",
                       str(recorded["dir"] / "traffic.jsonl"), "--retriever", "bm25", "-k", "3",
                       "--data-file", str(head), "--append", "--quiet")
    assert code == 0, err
    code, out, err = cli(capsys, "diff", str(data), str(head), "--format", "json")
    assert code == 0, err
    changes = json.loads(out)["topics"]
    assert changes["side"] == "head" and changes["unmatched"] == 0
    base, after = (_recount(p) for p in (data, head))
    for c in changes["changes"]:
        b, h = base[c["topic"]], after[c["topic"]]
        assert (c["base_covered"], c["head_covered"]) == (b["covered"], h["covered"])
        assert c["change"] == pytest.approx(h["covered"] / h["chunks"] - b["covered"] / b["chunks"])
    moved = [abs(c["change"]) for c in changes["changes"]]
    assert moved == sorted(moved, reverse=True) and moved[0] > 0
    code, text, _ = cli(capsys, "diff", str(data), str(head))
    assert "By topic (the topics of HEAD):" in text


def test_generate_aims_at_one_topics_untested_chunks(capsys, recorded, tmp_path) -> None:
    data = _copy(recorded, tmp_path)
    report = api.topic_coverage(data)
    topic = report.topics[0]  # the one to test first
    out = tmp_path / "gen.jsonl"
    code, _, err = cli(capsys, "generate", "--corpus", str(recorded["pages"]), "--split",
                       "--retriever", "bm25", "-k", "3", "--data-file", str(data), "--topic",
                       str(topic.topic), "--budget", "3", "--policy", "order", "-o", str(out))
    assert code == 0, err
    assert f"Aiming at topic {topic.topic} ({topic.label})" in err
    aimed = [json.loads(line)["targets"][0] for line in out.read_text().splitlines()]
    assert aimed and set(aimed) <= set(topic.untested_chunks)
    code, _, err = cli(capsys, "generate", "--corpus", str(recorded["pages"]), "--split",
                       "--retriever", "bm25", "--data-file", str(recorded["traffic"]),
                       "--topic", "1", "-o", str(tmp_path / "x.jsonl"))
    assert code == 1 and "no topics recorded" in err


# --------------------------------------------------------------------------- HTML
def test_the_html_topic_page_escapes_and_counts(capsys, recorded, tmp_path) -> None:
    site = tmp_path / "site"
    code, _, err = cli(capsys, "html", "--data-file", str(recorded["tests"]), "-d", str(site))
    assert code == 0, err
    page = (site / "topics.html").read_text()
    report = api.topic_coverage(recorded["tests"])
    rows = page.count('<tr class="topic')
    assert rows == len(report.topics) and page.count("<circle") == 219
    assert page.count('class="pt open"') == sum(r.untested for r in report.topics)
    assert 'href="topics.html"' in (site / "index.html").read_text()
    code, _, err = cli(capsys, "html", "--data-file", str(recorded["traffic"]), "-d",
                       str(tmp_path / "site2"), "--by", "topic")
    assert code == 1 and "no topics recorded" in err


def test_reading_topics_loads_no_clustering_library(recorded) -> None:
    probe = ("import sys; from ragcov.cli import main\n"
             "try:\n    main(['report', '--by', 'topic', '--data-file', sys.argv[1]])\n"
             "except SystemExit as e:\n    assert not e.code, e.code\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'threadpoolctl')))")
    proc = subprocess.run([sys.executable, "-c", probe, str(recorded["tests"])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_probed_files_split_untested_from_unreachable(capsys, recorded, tmp_path) -> None:
    # Four more copies of the first page: with k=3 the fourth and fifth copy of a chunk
    # are never retrieved by anything (ties go to corpus order): unreachable.
    first = json.loads(recorded["pages"].read_text().splitlines()[0])
    pages = tmp_path / "pages.jsonl"
    pages.write_text(recorded["pages"].read_text() + "".join(
        json.dumps({**first, "doc_id": f"copy-{n}"}) + "\n" for n in range(4)))
    data = tmp_path / "probed.ragcov"
    for command in (("run", "--queries", str(recorded["suite"]), "-k", "3"), ("probe",)):
        code, _, err = cli(capsys, *command, "--corpus", str(pages), "--split", "--retriever",
                           "bm25", "--data-file", str(data), "--quiet")
        assert code == 0, err
    doc = _topics_json(capsys, data)
    status = api.audit_reachability(data).status
    stored = read_topics(CoverageData(data))
    per: dict[int, Counter[str]] = {}
    for t, s in zip(stored.assignment.tolist(), status.tolist()):
        per.setdefault(t, Counter())[s] += 1
    for t in doc["topics"]:
        want = per[t["topic"]]
        assert (t["covered"], t["untested"], t["unreachable"]) == (
            want["covered"], want["untested"], want["unreachable"])
    assert sum(t["unreachable"] for t in doc["topics"]) > 0  # BM25 buries some chunks
    code, table, _ = cli(capsys, "report", "--data-file", str(data), "--by", "topic")
    assert "Unreachable" in table.splitlines()[0]
    # --reachable takes the unreachable chunks out of each topic's denominator.
    reach = _topics_json(capsys, data, "--reachable")
    for t, r in zip(sorted(doc["topics"], key=lambda x: x["topic"]),
                    sorted(reach["topics"], key=lambda x: x["topic"])):
        assert r["chunks"] == t["chunks"] - t["unreachable"] and r["covered"] == t["covered"]


# ------------------------------------------------------------------ real browser
@pytest.mark.browser
def test_the_topic_map_names_a_topic_on_hover(capsys, recorded, tmp_path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from test_html import _chrome

    site = tmp_path / "site"
    code, _, err = cli(capsys, "html", "--data-file", str(recorded["tests"]), "-d", str(site),
                       "--by", "topic")
    assert code == 0, err
    driver = _chrome()
    try:
        driver.get((site / "topics.html").as_uri())
        tip = driver.find_element(By.ID, "topic-tip")
        assert not tip.is_displayed()
        rows = driver.find_elements(By.CSS_SELECTOR, "#topics tbody tr")
        label = {r.get_attribute("data-topic"): r.find_elements(By.TAG_NAME, "td")[1].text
                 for r in rows}
        point = driver.find_elements(By.CSS_SELECTOR, "#topic-map .pt")[7]
        topic = point.get_attribute("data-topic")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", point)
        ActionChains(driver).move_to_element(point).perform()
        assert tip.is_displayed() and tip.text.startswith(f"{topic} {label[topic]} · ")
        lit = [r.get_attribute("data-topic") for r in rows if "lit" in r.get_attribute("class")]
        assert lit == [topic]  # the hovered point's row is lit, and only it
        others = driver.find_elements(By.CSS_SELECTOR, f"#topic-map .pt:not([data-topic='{topic}'])")
        assert float(others[0].value_of_css_property("opacity")) < 0.5
        # The table sorts as every table of the site does.
        driver.find_element(By.XPATH, "//table[@id='topics']//th[.//button[.='Chunks']]//button").click()
        sizes = [int(r.find_elements(By.TAG_NAME, "td")[2].text)
                 for r in driver.find_elements(By.CSS_SELECTOR, "#topics tbody tr")]
        assert sizes == sorted(sizes, reverse=True)
        assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()


# ------------------------------------------------------------------ dense and store vectors
SLOW_PAGES = 15


@pytest.mark.slow
def test_dense_and_store_vectors(capsys, tmp_path, minilm_path, minilm_vectors) -> None:
    """A dense run's cached embeddings are its topics' vectors (nothing embedded again); a
    store's topics come from the vectors it holds."""
    import chromadb

    from ragcov.corpus import load_corpus
    from ragcov.retrievers import make_retriever
    from ragcov.topics.vectors import chunk_vectors

    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:SLOW_PAGES]))
    docs = {json.loads(line)["doc_id"] for line in pages.read_text().splitlines()}
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(line + "\n" for line in (SAMPLE / "finqa_questions.jsonl").read_text()
                             .splitlines() if json.loads(line)["doc_id"] in docs))
    dense = tmp_path / "dense.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(pages), "--split", "--queries", str(suite),
                       "--retriever", "dense", "--model", "all-MiniLM-L6-v2", "--data-file",
                       str(dense), "--quiet")
    assert code == 0, err
    doc = _topics_json(capsys, dense)
    assert doc["made"]["vectors"] == "dense sentence-transformers/all-MiniLM-L6-v2"
    corpus = load_corpus(pages, split=True)
    # The dense retriever's own cache entry: read from the cache (nothing embedded), and
    # the very vectors the topics were made from, found from the data file alone.
    retriever = make_retriever("dense", corpus, model="all-MiniLM-L6-v2", progress=False)
    assert retriever.chunks_embedded == 0
    cached = retriever.embeddings
    meta = CoverageData(dense).meta()
    found = chunk_vectors(str(dense), meta, corpus.texts, "dense")
    assert np.array_equal(found.matrix, cached)
    direct = topic_fit.fit(cached, corpus.texts, doc["made"]["topics"], seed=0)
    stored = read_topics(CoverageData(dense))
    assert (stored.assignment == direct.assignment).all()

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    col = client.create_collection("finqa", configuration={"hnsw": {"space": "cosine"}})
    vectors = minilm_vectors(corpus.texts)
    col.add(ids=corpus.ids, documents=corpus.texts, embeddings=vectors.tolist(),
            metadatas=[{"doc_id": c.doc_id} for c in corpus])
    url = f"chroma://{tmp_path}/chroma?collection=finqa"
    store = tmp_path / "store.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", url, "--queries", str(suite), "--retriever",
                       "store", "--model", minilm_path, "--data-file", str(store), "--quiet")
    assert code == 0, err
    code, _, err = cli(capsys, "topics", "--data-file", str(store), "--corpus", url, "-q",
                       "--topics", "3", "--format", "json")
    assert code == 0, err
    made = read_topics(CoverageData(store))
    assert made.settings["vectors"] == "store" and made.n_topics == 3
    from_store = chunk_vectors(str(store), CoverageData(store).meta(), corpus.texts, "store",
                               corpus=load_corpus(url))
    assert np.allclose(from_store.matrix, vectors, atol=1e-6)
    code, _, err = cli(capsys, "topics", "--data-file", str(store), "--vectors", "dense")
    assert code == 1 and "no dense vectors for its corpus" in err
