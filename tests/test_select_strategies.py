"""The fault-revealing strategies of `ragcov select`: permutations, seeded, label-blind, by hand."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.errors import RagcovError
from ragcov.matrix import CoverageMatrix
from ragcov.selection import ALL_STRATEGIES, FAULT_STRATEGIES, STRATEGIES, select
from ragcov.selection.fault import fault_order, interleave


def scored(lists: list[list[tuple[int, float]]], n_chunks: int) -> CoverageMatrix:
    """A pool from each query's ranked (chunk, score) list."""
    rows, cols, ranks, scores = [], [], [], []
    for q, ranked in enumerate(lists):
        for rank, (c, s) in enumerate(ranked, start=1):
            rows.append(q)
            cols.append(c)
            ranks.append(rank)
            scores.append(s)
    return CoverageMatrix.from_triples(np.array(rows), np.array(cols), np.array(ranks),
                                       np.array(scores), [f"q{i}" for i in range(len(lists))],
                                       [f"c{i}" for i in range(n_chunks)], k=3)


pools = st.integers(1, 10).flatmap(lambda n_chunks: st.tuples(
    st.just(n_chunks),
    st.lists(st.lists(st.tuples(st.integers(0, n_chunks - 1),
                                st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9])),
                      max_size=3, unique_by=lambda t: t[0]), min_size=1, max_size=12)))


@settings(max_examples=60, deadline=None)
@given(pools, st.integers(0, 5))
def test_every_strategy_is_a_seeded_permutation(pool, seed: int) -> None:
    n_chunks, lists = pool
    lists = [sorted(x, key=lambda t: -t[1]) for x in lists]  # ranked: best score first
    m = scored(lists, n_chunks)
    for name in ALL_STRATEGIES:
        order = select(m, name, seed=seed).order
        assert sorted(order.tolist()) == list(range(len(lists))), name
        assert select(m, name, seed=seed).order.tolist() == order.tolist(), name


# Four queries, two chunks each, scores best first. Riskiness of confmargin is the mean
# percentile of low top score and small margin (top minus last score):
#   A top .9 margin .1 | B top .8 margin .5 | C top .5 margin .05 | D top .6 margin .2
#   low-top percentile: A 0, B 1/3, D 2/3, C 1; small-margin: B 0, D 1/3, A 2/3, C 1
#   mean: C 1, D 1/2, A 1/3, B 1/6 -> riskiest first C, D, A, B; risk 1, 2/3, 1/3, 0.
A, B, C, D = 0, 1, 2, 3
POOL = [[(0, .9), (1, .8)], [(2, .8), (3, .3)], [(0, .5), (1, .45)], [(4, .6), (5, .4)]]


def test_confmargin_gain5_by_hand() -> None:
    # gain + 5 * risk. Step 1: every gain is 2: C 7, D 5.33, A 3.67, B 2 -> C (covers 0, 1).
    # Step 2: D 2 + 3.33, A 0 + 1.67, B 2 + 0 -> D. Step 3: B 2 beats A 1.67 -> B, then A.
    # The risk signal alone would take A before B: the gain still counts.
    m = scored(POOL, 6)
    for seed in range(3):
        assert select(m, "confmargin-gain5", seed=seed).order.tolist() == [C, D, B, A]
    assert fault_order(m, "confmargin", 0).tolist() == [C, D, A, B]


# B now shares chunk 0 with A and C: A top .9, B top .55, C top .5, D top .6.
POOL2 = [[(0, .9), (1, .8)], [(0, .55), (2, .5)], [(0, .5), (1, .45)], [(4, .6), (5, .4)]]


def test_lowconf_and_coverage_lowconf_by_hand() -> None:
    m = scored(POOL2, 6)
    # lowconf: ascending top score, C .5, B .55, D .6, A .9.
    assert select(m, "lowconf", seed=7).order.tolist() == [C, B, D, A]
    # coverage-lowconf: all gains 2, the lowest top score first: C (covers 0, 1); then
    # A 0, B 1, D 2 -> D; then B (gain 1); then the tail A.
    assert select(m, "coverage-lowconf", seed=7).order.tolist() == [C, D, B, A]


def test_interleave_by_hand() -> None:
    # Gains 3, 2, 1, 0 whatever the seed: coverage is A, D, B, C; lowconf is C, B, D, A.
    # In turn, skipping what the other took: A (coverage), C (lowconf), D (coverage), B.
    m = scored([[(0, .9), (1, .8), (2, .7)], [(0, .55), (3, .5)], [(0, .5)],
                [(4, .6), (5, .4)]], 6)
    assert select(m, "coverage", seed=1).order.tolist() == [A, D, B, C]
    for seed in range(3):
        assert select(m, "interleave", seed=seed).order.tolist() == [A, C, D, B]
    assert interleave(np.array([0, 1, 2, 3, 4, 5]), np.array([5, 4, 3, 2, 1, 0]), 3).tolist() \
        == [0, 1, 5, 2, 3, 4]


def test_unscored_recordings_and_unknown_names_are_clear_errors() -> None:
    m = scored(POOL, 6)
    m.scores.data[:] = np.nan
    for name in FAULT_STRATEGIES:
        with pytest.raises(RagcovError, match="needs retrieval scores.*has none"):
            select(m, name)
    assert select(m, "coverage").order.size == 4
    part = scored(POOL, 6)
    part.score_data[:2] = np.nan  # two hits recorded without a score
    with pytest.raises(RagcovError, match=f"lacks 2 of its {part.nnz} hits' scores"):
        select(part, "lowconf")
    with pytest.raises(RagcovError, match="unknown strategy 'nope'.*confmargin-gain5"):
        select(m, "nope")


# A real recording (BM25 over a small BEIR folder) for the CLI and the label check.
CHUNKS = [("paris", "Paris is the capital of France on the Seine."),
          ("berlin", "Berlin is the capital of Germany."),
          ("tokyo", "Tokyo is the capital of Japan."),
          ("plants", "Photosynthesis turns sunlight and water into sugar in plants."),
          ("cells", "Mitochondria power the cell with chemical energy."),
          ("debt", "Interest expense rose as the company issued long-term debt."),
          ("dividend", "The board declared a quarterly dividend per share."),
          ("rivers", "The Seine and the Rhine are rivers of Europe.")]
QUERIES = ["capital of France", "capital of Germany", "sunlight sugar", "interest on debt",
           "which city is a capital", "cell energy", "dividend per share", "capital of Japan",
           "rivers of Europe", "company debt and dividends"]


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from ragcov.cli import app

    return CliRunner().invoke(app, args)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    folder = tmp_path / "pool"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in CHUNKS), "utf-8")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{n}", "text": t}) + "\n" for n, t in enumerate(QUERIES)),
        "utf-8")
    data = tmp_path / ".ragcov"
    res = _cli(["run", "--corpus", str(folder), "--queries", str(folder / "queries.jsonl"),
                "--retriever", "bm25", "-k", "2", "--data-file", str(data), "-q"])
    assert res.exit_code == 0, res.output
    return data


def test_list_strategies_prints_one_name_a_line_and_each_is_accepted(
        recording: Path, tmp_path: Path) -> None:
    res = _cli(["select", "--list-strategies"])
    assert res.exit_code == 0, res.output
    names = res.output.split()
    assert names == list(ALL_STRATEGIES) and res.output.count("\n") == len(names)
    assert set(STRATEGIES) < set(names) and set(FAULT_STRATEGIES) < set(names)
    for name in names:
        orders = []
        for _ in range(2):
            out = tmp_path / f"{name}.json"
            res = _cli(["select", "--data-file", str(recording), "--strategy", name,
                        "--seed", "3", "-o", str(out)])
            assert res.exit_code == 0, res.output
            orders.append(json.loads(out.read_text("utf-8"))["order"])
        assert orders[0] == orders[1], name
        assert sorted(orders[0]) == sorted(f"q{n}" for n in range(len(QUERIES))), name
    res = _cli(["select", "--data-file", str(recording), "--strategy", "nope", "-o", "-"])
    assert res.exit_code != 0 and "confmargin-gain5" in str(res.exception)


def test_orders_use_no_label(recording: Path) -> None:
    """Shuffling which chunks are relevant to which query changes the failures, not the order."""
    from ragcov.api import select_tests
    from ragcov.data import CoverageData

    m = CoverageData(recording).matrix()
    truth = dict(zip(m.query_ids, [c for c, _ in CHUNKS] + ["rivers", "debt"]))

    def failing(labels: dict[str, str]) -> set[str]:
        return {q for r, q in enumerate(m.query_ids)
                if labels[q] not in {m.chunk_ids[c] for c in m.retrieved(r)}}

    rng = random.Random(0)
    checked = 0
    for name in FAULT_STRATEGIES:
        before = select_tests(recording, name, seed=2)["order"]
        for _ in range(3):
            values = list(truth.values())
            rng.shuffle(values)
            shuffled = dict(zip(truth, values))
            if failing(shuffled) == failing(truth):
                continue
            assert select_tests(recording, name, seed=2)["order"] == before, name
            checked += 1
    assert checked >= len(FAULT_STRATEGIES)
