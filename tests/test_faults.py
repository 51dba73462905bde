"""Failures, fault clustering and APFD: hand-worked cases, brute-force references, the CLI."""

from __future__ import annotations

import csv
import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.errors import InputFormatError, RagcovError
from ragcov.faults import (
    apfd,
    cluster_faults,
    failing_mask,
    failure_rate_by_segment,
    fault_of_row,
    first_reveals,
    label_failures,
    label_metric,
    load_order,
    load_scores,
    score_failures,
)
from ragcov.matrix import CoverageMatrix
from ragcov.qrels import Qrels, load_qrels

# ----------------------------------------------------------------- APFD by hand


def test_apfd_hand_worked_full_orders() -> None:
    # Rows 1 and 4 reveal fault 0, row 3 fault 1; rows 0 and 2 pass.
    fault_of = np.array([-1, 0, -1, 1, 0])
    # Order 0..4: TF = (2, 4); APFD = 1 - 6/(5*2) + 1/(2*5) = 0.5
    assert apfd([0, 1, 2, 3, 4], fault_of) == pytest.approx(0.5)
    # Order 3,4,... : TF = (2, 1); APFD = 1 - 3/10 + 1/10 = 0.8
    assert apfd([3, 4, 0, 1, 2], fault_of) == pytest.approx(0.8)
    # Three singleton faults, one passing test: 1 - (1+2+3)/12 + 1/8 and 1 - (2+3+4)/12 + 1/8.
    three = np.array([0, 1, 2, -1])
    assert apfd([0, 1, 2, 3], three) == pytest.approx(0.625)
    assert apfd([3, 2, 1, 0], three) == pytest.approx(0.375)


def test_apfd_edge_cases_are_defined() -> None:
    fault_of = np.array([-1, 0, -1, 1, 0])
    # m = 0: nothing fails, so nothing to reveal: undefined, never 0 or 1.
    assert apfd([0, 1, 2], np.array([-1, -1, -1])) is None
    # n = 0: an empty order: undefined.
    assert apfd([], fault_of) is None
    # A budgeted prefix revealing 1 of 2 faults (NAPFD): p = 1/2, TF = 2, n = 2:
    # 0.5 - 2/(2*2) + 0.5/(2*2) = 0.125
    assert apfd([0, 1], fault_of) == pytest.approx(0.125)
    # A prefix revealing nothing scores 0 (p = 0).
    assert apfd([0, 2], fault_of) == pytest.approx(0.0)
    # n_faults beyond those present in fault_of counts as unrevealed faults.
    assert apfd([1], np.array([-1, 0]), n_faults=2) == pytest.approx(0.5 - 1 / 2 + 0.5 / 2)
    with pytest.raises(RagcovError):
        apfd([1, 1], fault_of)


def test_first_reveals() -> None:
    fault_of = np.array([-1, 0, -1, 1, 0, 2])
    assert first_reveals([4, 0, 3, 1], fault_of).tolist() == [1, 3, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 4), min_size=1, max_size=12), st.randoms(use_true_random=False),
       st.integers(1, 12))
def test_apfd_matches_the_formula(labels: list[int], rnd, budget: int) -> None:
    # Renumber faults 0..m-1 so every fault index exists.
    present = sorted({x for x in labels if x >= 0})
    fault_of = np.array([present.index(x) if x >= 0 else -1 for x in labels])
    m = len(present)
    order = list(range(len(labels)))
    rnd.shuffle(order)
    prefix = order[:budget]
    n = len(prefix)
    tf = {}
    for pos, row in enumerate(prefix, start=1):
        f = int(fault_of[row])
        if f >= 0 and f not in tf:
            tf[f] = pos
    value = apfd(prefix, fault_of, m)
    if m == 0:
        assert value is None
        return
    p = len(tf) / m
    assert value == pytest.approx(p - sum(tf.values()) / (n * m) + p / (2 * n))
    if len(tf) == m:  # every fault revealed: the paper's formula, within its bounds
        assert value == pytest.approx(1 - sum(tf.values()) / (n * m) + 1 / (2 * n))
        assert 1 / (2 * n) - 1e-12 <= value <= 1 - 1 / (2 * n) + 1e-12


def test_failure_rate_by_segment() -> None:
    failing = np.array([True, False, False, True, True, True])
    assert failure_rate_by_segment([0, 1, 2, 3, 4, 5], failing, 3) == [0.5, 0.5, 1.0]
    assert failure_rate_by_segment([5, 4, 3, 2, 1, 0], failing, 2) == [1.0, 1 / 3]


# ----------------------------------------------------------------- clustering

def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _brute_components(sets: list[set[int]], rows: list[int], tau: float) -> set[frozenset[int]]:
    parent = {r: r for r in rows}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in combinations(rows, 2):
        if _jaccard(sets[a], sets[b]) > tau:
            parent[find(a)] = find(b)
    groups: dict[int, set[int]] = {}
    for r in rows:
        groups.setdefault(find(r), set()).add(r)
    return {frozenset(g) for g in groups.values()}


def _brute_leader(sets: list[set[int]], rows: list[int], tau: float) -> set[frozenset[int]]:
    leaders: list[int] = []
    groups: dict[int, set[int]] = {}
    for r in sorted(rows):
        scored = [(_jaccard(sets[r], sets[ld]), -ld) for ld in leaders]
        best = max(scored, default=(0.0, 0))
        if scored and best[0] > tau:
            groups[-best[1]].add(r)
        else:
            leaders.append(r)
            groups[r] = {r}
    return {frozenset(g) for g in groups.values()}


set_lists = st.lists(st.sets(st.integers(0, 7), max_size=4), min_size=1, max_size=14)


@settings(max_examples=80, deadline=None)
@given(set_lists, st.data(), st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.8, 1.0]))
def test_components_match_union_find(sets: list[set[int]], data, tau: float) -> None:
    rows = data.draw(st.lists(st.integers(0, len(sets) - 1), unique=True))
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 8)
    faults = cluster_faults(m, rows, tau, "components")
    assert {frozenset(f.rows) for f in faults} == _brute_components(sets, rows, tau)
    # Faults are numbered by their first member; shared chunks are the members' intersection.
    assert [f.id for f in faults] == [f"F{i}" for i in range(1, len(faults) + 1)]
    assert [f.rows[0] for f in faults] == sorted(f.rows[0] for f in faults)
    for f in faults:
        shared = set.intersection(*(sets[r] for r in f.rows))
        assert {int(c[1:]) for c in f.shared_chunks} == shared


@settings(max_examples=80, deadline=None)
@given(set_lists, st.data(), st.sampled_from([0.0, 0.3, 0.5, 0.8]))
def test_leader_matches_reference(sets: list[set[int]], data, tau: float) -> None:
    rows = data.draw(st.lists(st.integers(0, len(sets) - 1), unique=True))
    m = CoverageMatrix.from_sets([sorted(s) for s in sets], 8)
    faults = cluster_faults(m, rows, tau, "leader")
    assert {frozenset(f.rows) for f in faults} == _brute_leader(sets, rows, tau)
    for f in faults:   # every member is within tau of its leader (the first member)
        assert all(_jaccard(sets[f.rows[0]], sets[r]) > tau for r in f.rows[1:])


def test_leader_does_not_chain_where_components_do() -> None:
    # A~B (J=0.6) and B~C (J=0.6) but A and C are far apart (J=0.25).
    sets = [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]
    m = CoverageMatrix.from_sets(sets, 6)
    comps = cluster_faults(m, [0, 1, 2], 0.5, "components")
    assert [f.rows for f in comps] == [(0, 1, 2)]
    assert comps[0].shared_chunks == ("c2", "c3")
    lead = cluster_faults(m, [0, 1, 2], 0.5, "leader")
    assert [f.rows for f in lead] == [(0, 1), (2,)]


def test_identical_sets_at_default_tau_and_empty_sets() -> None:
    sets = [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 1, 2, 3, 5], [], []]
    m = CoverageMatrix.from_sets(sets, 6)
    # 4/6 = 0.67 is not > 0.8: only the identical pair joins; empty sets stay apart.
    faults = cluster_faults(m, range(5))
    assert [f.rows for f in faults] == [(0, 1), (2,), (3,), (4,)]
    assert fault_of_row(5, faults).tolist() == [0, 0, 1, 2, 3]
    with pytest.raises(RagcovError):
        cluster_faults(m, [0], tau=1.5)
    with pytest.raises(RagcovError):
        cluster_faults(m, [0], clustering="kmeans")


# ----------------------------------------------------------------- label metrics

def _doc_matrix() -> CoverageMatrix:
    # chunks c0,c1 in d0; c2,c3 in d1; c4 in d2
    return CoverageMatrix.from_sets([[0, 2], [2, 3], [4, 1], []], 5,
                                    doc_ids=["d0", "d0", "d1", "d1", "d2"])


def test_label_metrics_doc_and_chunk_level() -> None:
    m = _doc_matrix()
    doc = Qrels("doc", {"q0": {"d0"}, "q1": {"d0"}, "q2": {"d2", "d0"}, "q3": {"d1"}, "zz": {"d1"}})
    assert label_metric(m, doc, "hit").tolist() == [1.0, 0.0, 1.0, 0.0]
    assert label_metric(m, doc, "context_relevance").tolist() == [0.5, 0.0, 1.0, 0.0]
    chunk = Qrels("chunk", {"q0": {"c2"}, "q1": {"c0"}})
    hit = label_metric(m, chunk, "hit")
    assert hit[:2].tolist() == [1.0, 0.0] and np.isnan(hit[2:]).all()
    f = label_failures(m, chunk)
    assert f.ids == ["q1"] and f.unlabelled == ["q2", "q3"] and f.unmatched == 0
    f = label_failures(m, doc, "context_relevance", fail_below=0.75)
    assert f.ids == ["q0", "q1", "q3"] and f.unmatched == 1
    with pytest.raises(RagcovError):
        label_metric(m, doc, "ndcg")


def test_failing_mask() -> None:
    v = np.array([0.0, 0.2, np.nan, -1.0, 1.0])
    assert failing_mask(v).tolist() == [True, False, False, True, False]
    assert failing_mask(v, 0.5).tolist() == [True, True, False, True, False]


# ----------------------------------------------------------------- loaders on real slices

@pytest.fixture
def finqa_slice(datasets_dir: Path) -> list[dict]:
    records = json.loads((datasets_dir / "finqa" / "dev_200.json").read_text(encoding="utf-8"))
    return records[:6]


def test_qrels_jsonl_trec_and_beir_from_real_labels(tmp_path: Path, finqa_slice: list[dict]) -> None:
    pairs = [(f"dev-{i}", r["filename"]) for i, r in enumerate(finqa_slice)]
    expected = {q: {d} for q, d in pairs}
    (tmp_path / "q.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "doc_id": d}) + "\n" for q, d in pairs)
        + json.dumps({"query_id": "dev-0", "doc_id": "OTHER/2000/page_1.pdf", "relevance": 0})
        + "\n\n")
    got = load_qrels(tmp_path / "q.jsonl")
    assert got.level == "doc" and got.relevant == expected
    (tmp_path / "q.trec").write_text("".join(f"{q} 0 {d} 1\n" for q, d in pairs)
                                     + "dev-99 0 X/1/page_1.pdf 0\n")
    trec = load_qrels(tmp_path / "q.trec")
    assert trec.level == "doc" and trec.relevant == {**expected, "dev-99": set()}
    assert load_qrels(tmp_path / "q.trec", "chunk").level == "chunk"
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                    + "".join(f"{q}\t{d}\t1\n" for q, d in pairs))
    assert load_qrels(tmp_path / "q.tsv").relevant == expected
    # Chunk-level JSONL.
    (tmp_path / "c.jsonl").write_text(json.dumps({"query_id": "dev-0", "chunk_id": "p#1"}) + "\n"
                                      + json.dumps({"query_id": "dev-0", "chunk_id": "p#2"}) + "\n")
    c = load_qrels(tmp_path / "c.jsonl")
    assert c.level == "chunk" and c.relevant == {"dev-0": {"p#1", "p#2"}}
    with pytest.raises(RagcovError, match="chunk-level"):
        load_qrels(tmp_path / "c.jsonl", "doc")


def test_qrels_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "a", "doc_id": "x"}\n{"query_id": "b", "chunk_id": "y"}\n')
    with pytest.raises(InputFormatError, match=":2: mixes"):
        load_qrels(bad)
    bad.write_text('{"doc_id": "x"}\n')
    with pytest.raises(InputFormatError, match=":1: no query id"):
        load_qrels(bad)
    trec = tmp_path / "bad.trec"
    trec.write_text("q1 0 d1 1\nq2 d2\n")
    with pytest.raises(InputFormatError, match=":2:"):
        load_qrels(trec)
    trec.write_text("q1 0 d1 yes\n")
    with pytest.raises(InputFormatError, match="not a number"):
        load_qrels(trec)
    with pytest.raises(RagcovError, match="no such file"):
        load_qrels(tmp_path / "missing.jsonl")


def test_scores_ragas_csv_by_text_and_jsonl_by_id(tmp_path: Path, finqa_slice: list[dict]) -> None:
    questions = [r["qa"]["question"] for r in finqa_slice]
    m = CoverageMatrix.from_sets([[0]] * len(questions), 1)
    m.query_texts = list(questions)
    values = ["0.0", "0.5", "", " ", "1", "0"]
    with (tmp_path / "ragas.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["user_input", "retrieved_contexts", "context_relevance", "faithfulness"])
        for q, v in zip(questions, values):
            w.writerow([f"  {q} ", "['a, b']", v, "1.0"])
        w.writerow(["a question nobody asked", "[]", "0", "0"])
    scores = load_scores(tmp_path / "ragas.csv", "context_relevance")
    assert scores.missing == 2
    f = score_failures(m, scores)
    assert f.ids == ["q0", "q5"] and f.unlabelled == ["q2", "q3"] and f.unmatched == 1
    assert score_failures(m, scores, fail_below=0.6).ids == ["q0", "q1", "q5"]
    assert score_failures(m, load_scores(tmp_path / "ragas.csv", "faithfulness")).ids == []

    (tmp_path / "s.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "groundedness": v}) + "\n"
        for i, v in enumerate([0, 0.3, None, 0.0])))
    f = score_failures(m, load_scores(tmp_path / "s.jsonl", "groundedness"))
    assert f.ids == ["q0", "q3"] and f.unlabelled == ["q2", "q4", "q5"]
    with pytest.raises(InputFormatError, match="no 'relevance' column"):
        load_scores(tmp_path / "s.jsonl", "relevance")
    (tmp_path / "t.jsonl").write_text(json.dumps({"query_id": "q0", "g": "high"}) + "\n")
    with pytest.raises(InputFormatError, match="not a number"):
        load_scores(tmp_path / "t.jsonl", "g")


def test_load_order(tmp_path: Path) -> None:
    m = CoverageMatrix.from_sets([[0], [1], [0]], 2)
    p = tmp_path / "o.json"
    p.write_text(json.dumps({"strategy": "coverage", "order": ["q2", "q0"]}))
    assert load_order(p, m).tolist() == [2, 0]
    p.write_text(json.dumps({"order": ["q2", "nope"]}))
    with pytest.raises(RagcovError, match="not in the data file"):
        load_order(p, m)
    p.write_text(json.dumps({"order": ["q2", "q2"]}))
    with pytest.raises(RagcovError, match="more than once"):
        load_order(p, m)


# ----------------------------------------------------------------- the CLI



QUERIES = [
    ("q-fr", "What is the capital of France?", {"paris"}),
    ("q-fr2", "Paris France capital Seine", {"berlin"}),          # fails: asks about Paris
    ("q-de", "Which city is Germany's capital?", {"berlin"}),
    ("q-jp", "Tokyo Japan capital metropolis", {"dividends"}),    # fails
    ("q-plants", "How do plants make sugar from sunlight?", {"photosynthesis"}),
    ("q-cell", "What powers a cell with chemical energy?", {"interest"}),  # fails
    ("q-none", "When were dividends declared?", None),            # unlabelled
]


def test_faults_cli_agrees_with_an_independent_recount(capsys, tmp_path: Path, monkeypatch,
                                                       city_corpus_file: Path, city_corpus) -> None:
    from ragcov.retrievers.bm25 import BM25Retriever

    monkeypatch.chdir(tmp_path)
    Path("queries.jsonl").write_text("".join(json.dumps({"id": q, "question": t}) + "\n"
                                             for q, t, _ in QUERIES))
    Path("qrels.jsonl").write_text("".join(json.dumps({"query_id": q, "chunk_id": c}) + "\n"
                                           for q, _, rel in QUERIES if rel for c in rel))
    code, _, _ = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries",
                     "queries.jsonl", "--retriever", "bm25", "--k", "2", "-q")
    assert code == 0
    # Independent recount: retrieve again, check relevance by hand, group by Jaccard with sets.
    ranked = BM25Retriever(city_corpus).retrieve([t for _, t, _ in QUERIES], 2)
    got = {q: {c for c, _ in r} for (q, _, _), r in zip(QUERIES, ranked)}
    failing = [q for q, _, rel in QUERIES if rel and not (got[q] & rel)]
    assert failing  # the suite was built to have failures
    ids = [q for q, _, _ in QUERIES]
    rows = [ids.index(q) for q in failing]
    groups = _brute_components([got[q] for q in ids], rows, 0.8)

    orders = {"forward": ids, "backward": ids[::-1], "half": ids[:3]}
    for name, o in orders.items():
        Path(f"{name}.json").write_text(json.dumps({"strategy": name, "order": o}))
    code, out, err = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--order", "forward.json",
                         "--order", "backward.json", "--order", "half.json", "-o", "faults.json")
    assert code == 0, err
    assert "q-none" in err  # the unlabelled query is reported, not dropped silently
    doc = json.loads(Path("faults.json").read_text())
    assert doc["failures"] == failing
    assert doc["unlabelled"] == ["q-none"]
    assert {frozenset(ids.index(q) for q in f["queries"]) for f in doc["faults"]} == groups
    fault_idx = {q: i for i, f in enumerate(doc["faults"]) for q in f["queries"]}
    n_faults = len(doc["faults"])
    for name, o in orders.items():
        tf: dict[int, int] = {}
        for pos, q in enumerate(o, start=1):
            if q in fault_idx:
                tf.setdefault(fault_idx[q], pos)
        p, n = len(tf) / n_faults, len(o)
        assert doc["apfd"][name] == pytest.approx(p - sum(tf.values()) / (n * n_faults) + p / (2 * n))
        assert name in out
    assert doc["metric"] == "hit" and doc["tau"] == 0.8 and doc["clustering"] == "components"
    # The table names each shared chunk by its id (a position names another chunk once one
    # is deleted, and DOC#N can be another chunk's id), as the JSON does.
    from conftest import CITY_CHUNKS

    seen: dict[str, int] = {}
    name = {}
    for c in CITY_CHUNKS:
        seen[c["doc_id"]] = seen.get(c["doc_id"], 0) + 1
        name[c["id"]] = f"{c['doc_id']}#{seen[c['doc_id']]}"
    shared = [c for f in doc["faults"] for c in f["shared_chunks"]]
    assert shared, "the suite was built to have faults that share chunks"
    assert all(c in out for c in shared), out
    assert not any(name[c] in out for c in shared)
    code, out_ids, _ = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--show-ids")
    assert code == 0 and all(c in out_ids for c in shared)  # accepted from older scripts

    # Scores instead of labels: a CSV keyed by query text.
    with Path("scores.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user_input", "groundedness"])
        for q, t, _ in QUERIES:
            w.writerow([t, "0" if q in ("q-de", "q-cell") else "0.9"])
    code, out, _ = cli(capsys, "faults", "--scores", "scores.csv", "--metric", "groundedness",
                       "--clustering", "leader", "-o", "f2.json")
    assert code == 0
    assert json.loads(Path("f2.json").read_text())["failures"] == ["q-de", "q-cell"]


def test_faults_cli_errors_write_nothing(capsys, tmp_path: Path, monkeypatch,
                                         city_corpus_file: Path) -> None:
    monkeypatch.chdir(tmp_path)
    Path("queries.jsonl").write_text(json.dumps({"id": "a", "question": "capital of France"}) + "\n")
    cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "queries.jsonl",
        "--retriever", "bm25", "--k", "2", "-q")
    code, _, err = cli(capsys, "faults", "-o", "f.json")
    assert code == 1 and "--qrels or --scores" in err
    code, _, err = cli(capsys, "faults", "--scores", "x.csv", "-o", "f.json")
    assert code == 1 and "--metric" in err
    Path("qrels.jsonl").write_text('{"query_id": "a", "doc_id": "europe"}\n')
    Path("bad.json").write_text(json.dumps({"order": ["zzz"]}))
    code, _, err = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--order", "bad.json",
                       "-o", "f.json")
    assert code == 1 and "not in the data file" in err
    code, _, err = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--tau", "2", "-o", "f.json")
    assert code == 1 and "tau" in err
    Path("adir").mkdir()
    for option in (["--qrels", "adir"], ["--scores", "adir", "--metric", "x"]):
        code, _, err = cli(capsys, "faults", *option)
        assert code == 1 and err.strip() == "ragcov: error: adir: is a directory, not a file"
    # NaN turned the gate off (no value is below it); infinities were a traceback at -o.
    for bad in ("nan", "inf", "-inf"):
        code, _, err = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--fail-below", bad,
                           "-o", "f.json")
        assert code == 1 and "Traceback" not in err, err
        assert err.strip().splitlines() == [
            f"ragcov: error: --fail-below must be a finite number, got {float(bad)}"]
    assert not Path("f.json").exists()
    # No failures: APFD is undefined and says so.
    Path("o.json").write_text(json.dumps({"order": ["a"]}))
    code, out, _ = cli(capsys, "faults", "--qrels", "qrels.jsonl", "--order", "o.json",
                       "-o", "f.json")
    assert code == 0 and "undefined" in out
    doc = json.loads(Path("f.json").read_text())
    assert doc["failures"] == [] and doc["apfd"] == {"o": None}
    assert not math.isnan(doc["labelled"])


def test_scores_row_with_blank_id_and_no_text_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "scores.csv"
    p.write_text("query_id,groundedness\nq1,0.5\n,0.0\n")
    with pytest.raises(InputFormatError, match=r"scores\.csv:3: no query id or query text"):
        load_scores(p, "groundedness")


def test_a_query_scored_twice_with_two_values_is_refused(tmp_path: Path) -> None:
    """Line order would settle which score counts (the last row won): one row per query."""
    p = tmp_path / "scores.jsonl"
    p.write_text('{"query_id": "q1", "context_relevance": 0.1}\n'
                 '{"query_id": "q2", "context_relevance": 0.7}\n'
                 '{"query_id": "q1", "context_relevance": 0.9}\n')
    with pytest.raises(InputFormatError, match=r"scores\.jsonl:3: query id 'q1' is scored twice "
                       r"with different context_relevance values \(0\.1 on line 1, 0\.9 here\)"):
        load_scores(p, "context_relevance")
    c = tmp_path / "scores.csv"
    c.write_text("question,faithfulness\nWhat is X?,0.5\nWhat is X?,0.2\n")
    with pytest.raises(InputFormatError, match=r"scores\.csv:3: query text 'What is X\?' is scored"):
        load_scores(c, "faithfulness")
    # The same row twice (two result files concatenated) is one score.
    p.write_text('{"query_id": "q1", "context_relevance": 0.1}\n' * 2)
    assert load_scores(p, "context_relevance").by_id == {"q1": 0.1}


def test_faults_output_file_is_written_when_stdout_closes_early(tmp_path: Path,
                                                                 city_corpus_file: Path) -> None:
    """``ragcov faults -o f.json | head``: the file asked for is saved before the tables."""
    import subprocess
    import sys

    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": t}) + "\n" for i, t in enumerate(
            ["capital of France", "capital of Japan", "sugar from sunlight", "dividends"])))
    (tmp_path / "qrels.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "doc_id": "nowhere"}) + "\n" for i in range(4)))
    ragcov = [sys.executable, "-m", "ragcov"]
    subprocess.run([*ragcov, "run", "--corpus", str(city_corpus_file), "--queries",
                    "queries.jsonl", "--retriever", "bm25", "--k", "2", "-q"], cwd=tmp_path,
                   check=True)
    # ``true`` reads nothing and exits long before ragcov has started: every print fails.
    shell = f"{' '.join(ragcov)} faults --qrels qrels.jsonl --tau 0 -o f.json | true"
    subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, timeout=120)
    doc = json.loads((tmp_path / "f.json").read_text())
    assert len(doc["failures"]) == 4


def test_a_folder_is_exchanged_in_one_step(tmp_path) -> None:
    """The HTML report replaces its folder with one exchange where the system offers it: no
    instant in which the folder is missing (a kill between two renames left none)."""
    from ragcov.files import exchange

    old, new = tmp_path / "site", tmp_path / ".site.tmp"
    old.mkdir()
    (old / "index.html").write_text("old")
    new.mkdir()
    (new / "index.html").write_text("new")
    if not exchange(new, old):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not offered here: two renames are used")
    assert (old / "index.html").read_text() == "new"
    assert (new / "index.html").read_text() == "old"
    assert not exchange(tmp_path / "missing", old)  # refused, nothing moved
    assert (old / "index.html").read_text() == "new"


def test_a_data_file_erased_while_it_is_opened_leaves_the_path_free(tmp_path, monkeypatch) -> None:
    """An erase between the destination's stat and SQLite's open: SQLite says "unable to open
    database file", and the path is free, not "not a readable ragcov data file" (seen in the
    race trial). A labelled fake: the erase is done inside the open, the instant a real race
    hits only now and then."""
    from ragcov.data import CoverageData
    from ragcov.errors import RagcovError

    path = tmp_path / ".ragcov"
    path.write_bytes(b"x" * 100)  # not empty: the destination check opens it

    def erased_while_opening(self):
        path.unlink()
        raise RagcovError(f"{path}: unable to open database file (cannot use the data file)")

    monkeypatch.setattr(CoverageData, "meta", erased_while_opening)
    CoverageData(path).check_destination()  # free: no error
    path.write_bytes(b"x" * 100)
    monkeypatch.setattr(CoverageData, "meta", lambda self: (_ for _ in ()).throw(
        RagcovError("file is not a database")))
    with pytest.raises(RagcovError, match="exists and is not a readable ragcov data file"):
        CoverageData(path).check_destination()  # still there: still refused
