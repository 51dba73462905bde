"""What a report reads back from a data file, each against the read it replaced.

A report over a million chunks no longer builds a dict of every chunk's position and
text: positions are one column (:class:`ChunkPositions`), the duplicate groups are
found by the content hash each row keeps and only the chunks that share one have their
text compared (:func:`same_text_columns`), and texts are read when a rule or a reporter
asks for them (:class:`ChunkTexts`), from the same corpus or not at all. Each is checked
here against the plain reading: every text, every position, grouped by hand.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcov.cli.console import Terminal
from ragcov.copies import copied_tests
from ragcov.corpus import Chunk, Corpus
from ragcov.data import CoverageData
from ragcov.data.columns import ChunkPositions, ChunkTexts, chunk_positions, same_text_columns
from ragcov.errors import RagcovError
from ragcov.metrics import duplicate_groups
from ragcov.retrieval import Run
from ragcov.scope import ReportScope, load_scoped
from ragcov.summary import document_positions

FP = {"kind": "test", "model": "fixed"}
TEXTS = ["", "ok", "revenue grew 4%", "Revenue grew 4%", "the board met twice in 2023 and again",
         "中文 段落"]


def edit(path: Path, *statements: str) -> None:
    """The file changed behind ragcov's back, as a user with sqlite3 would change it."""
    con = sqlite3.connect(path)
    with con:
        for statement in statements:
            con.execute(statement)
    con.close()


def write(path: Path, texts: list[str], docs: list[str], positions: list[int],
          hits: list[list[int]], k: int = 3) -> Corpus:
    corpus = Corpus([Chunk(id=f"c{j}", text=t, doc_id=d, position=p)
                     for j, (t, d, p) in enumerate(zip(texts, docs, positions))])
    run = Run(k=k, retriever=FP)
    for i, h in enumerate(hits):
        run.add(f"q{i}", f"the board met twice in 2023 and again question {i}",
                [(f"c{j}", 1.0 / (r + 1)) for r, j in enumerate(h)])
    CoverageData(path).write(corpus, run)
    return corpus


@st.composite
def files(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 30))
    texts = [draw(st.sampled_from(TEXTS)) for _ in range(n)]
    docs = [draw(st.sampled_from(["a.md", "b.md", "c/d.txt"])) for _ in range(n)]
    positions = [draw(st.integers(0, 5)) for _ in range(n)]
    hits = [sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=3)))
            for _ in range(draw(st.integers(1, 5)))]
    return texts, docs, positions, hits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files(), st.sampled_from(["", "a.md", "c/*"]))
def test_positions_duplicates_and_copies_are_those_of_the_texts(tmp_path_factory, file,
                                                                omit: str) -> None:
    texts, docs, positions, hits = file
    path = tmp_path_factory.mktemp("r") / ".ragcov"
    write(path, texts, docs, positions, hits)
    if omit and all(d.startswith(omit.rstrip("*")) for d in docs):
        return  # nothing would be left to report
    scoped = load_scoped(path, ReportScope(omit=(omit,) if omit else ()))
    m = scoped.matrix
    every = dict(zip([f"c{j}" for j in range(len(texts))], texts))  # the plain reading
    plain_positions = {f"c{j}": p for j, p in enumerate(positions)}
    assert document_positions(m, scoped.positions).tolist() == \
        document_positions(m, plain_positions).tolist()
    assert [vars(g) for g in scoped.duplicates()] == [vars(g) for g in duplicate_groups(m, every)]
    assert scoped.copied == copied_tests(m, every)


def test_hand_worked_duplicates(tmp_path: Path) -> None:
    """c1 and c4 say "ok", c2 and c5 the same sentence; c0 and c3 are empty (never a group);
    "Revenue" with a capital differs. Only c4 is retrieved."""
    path = tmp_path / ".ragcov"
    texts = ["", "ok", "revenue grew 4%", "", "ok", "revenue grew 4%", "Revenue grew 4%"]
    write(path, texts, ["a", "a", "a", "b", "b", "b", "b"], [0, 1, 2, 0, 1, 2, 3], [[4]])
    assert [g.tolist() for g in same_text_columns(path)] == [[1, 4], [2, 5]]
    groups = load_scoped(path).duplicates()
    assert [(g.chunk_ids, g.doc_ids, g.covered) for g in groups] == [
        (["c1", "c4"], ["a", "b"], 1), (["c2", "c5"], ["a", "b"], 0)]
    # Omitting document b leaves no group of two.
    assert load_scoped(path, ReportScope(omit=("b",))).duplicates() == []


def test_a_shared_hash_is_not_a_shared_text(tmp_path: Path) -> None:
    """Two different texts given one hash (a file edited by hand): the texts are compared,
    and the two chunks are not called duplicates; a hash not written as hex still counts."""
    path = tmp_path / ".ragcov"
    write(path, ["alpha", "beta", "alpha"], ["a", "a", "a"], [0, 1, 2], [[0]])
    edit(path, "UPDATE chunks SET hash = (SELECT hash FROM chunks WHERE id = 'c0')")
    assert [g.tolist() for g in same_text_columns(path)] == [[0, 2]]
    edit(path, "UPDATE chunks SET hash = 'not hex at all'")
    assert [g.tolist() for g in same_text_columns(path)] == [[0, 2]]


def test_positions_are_one_array_for_the_files_own_chunks(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    write(path, ["x", "y", "z"], ["a", "a", "b"], [4, 2, 0], [[0]])
    ids = ["c0", "c1", "c2"]
    got = chunk_positions(path, ids)
    assert isinstance(got, ChunkPositions)
    assert got.aligned(list(ids)).tolist() == [4, 2, 0]
    assert got.aligned(["c1", "c0", "c2"]) is None  # another order is looked up id by id
    assert dict(got) == {"c0": 4, "c1": 2, "c2": 0} and got["c1"] == 2 and "c9" not in got


def test_texts_are_read_when_asked_and_only_from_the_same_corpus(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    write(path, ["x", "y", "z", "w", "v"], ["a"] * 5, [0, 1, 2, 3, 4], [[0]])
    scoped = load_scoped(path)
    texts = scoped.texts
    assert isinstance(texts, ChunkTexts)
    assert texts._texts is None  # nothing read yet: the table needs no text
    assert dict(texts.of(["c1"])) == {"c1": "y"} and texts._texts is None
    # The file recorded again over another corpus: the texts are refused, not mixed.
    write(path, ["x", "y", "changed", "w", "v"], ["a"] * 5, [0, 1, 2, 3, 4], [[0]])
    with pytest.raises(RagcovError, match="now holds another corpus"):
        texts["c2"]
    # Recorded again over the same corpus: the same texts, read.
    write(path, ["x", "y", "z", "w", "v"], ["a"] * 5, [0, 1, 2, 3, 4], [[1]])
    assert texts["c2"] == "z" and len(texts) == 5


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_a_table_written_straight_through_is_what_rich_prints(text: str) -> None:
    shown, through = io.StringIO(), io.StringIO()
    Terminal(highlight=False, soft_wrap=True, emoji=False, file=shown).print(text, markup=False)
    Terminal(highlight=False, soft_wrap=True, emoji=False, file=through).print_text(text)
    assert through.getvalue() == shown.getvalue()


def test_hashes_of_other_lengths_are_compared_as_strings(tmp_path: Path) -> None:
    """One hash cut short and the next one lengthened (an edited file): the joined column
    would split at the wrong places, so the hashes are compared whole."""
    path = tmp_path / ".ragcov"
    write(path, ["same text", "same text", "other", "third"], ["a"] * 4, [0, 1, 2, 3], [[0]])
    edit(path, "UPDATE chunks SET hash = substr(hash, 1, 15) WHERE idx = 2",
         "UPDATE chunks SET hash = hash || '0' WHERE idx = 3")
    assert [g.tolist() for g in same_text_columns(path)] == [[0, 1]]


def test_a_position_that_is_no_whole_number_is_read_as_stored(tmp_path: Path) -> None:
    path = tmp_path / ".ragcov"
    write(path, ["x", "y", "z"], ["a", "a", "b"], [0, 1, 0], [[0]])
    edit(path, "UPDATE chunks SET position = 1.5 WHERE idx = 1")
    got = chunk_positions(path, ["c0", "c1", "c2"])
    assert not isinstance(got, ChunkPositions) and got["c1"] == 1.5
    assert load_scoped(path).summary().covered == 1  # the report is made, not a traceback


def test_texts_are_read_from_the_same_file_after_a_change_of_directory(tmp_path: Path,
                                                                       monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(Path(".ragcov"), ["x", "y"], ["a", "a"], [0, 1], [[0]])
    texts = load_scoped(".ragcov").texts
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert texts["c1"] == "y"
