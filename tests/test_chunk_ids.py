"""Content-addressed ids for the chunks ragcov splits (--chunk-ids content), and spans kept
by --append and combine."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.corpus import Corpus, load_corpus
from ragcov.demo import sample_path
from ragcov.errors import RagcovError


def _sha8(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 30 pages of the bundled FinQA sample, as whole documents."""
    lines = sample_path("finqa_pages.jsonl").read_text(encoding="utf-8").splitlines()[:30]
    path = tmp_path_factory.mktemp("pages") / "pages.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pieces(corpus: Corpus) -> dict[tuple[str, int, int, str], str]:
    """(document, start, stop, text) -> id, from the splitter's own spans."""
    spans = corpus.text_spans.spans
    return {(c.doc_id, *spans[c.id], c.text): c.id for c in corpus}


# ----------------------------------------------------------------- the ids themselves
def test_hand_worked_equal_texts_in_one_document_get_distinct_ids() -> None:
    para = "Alpha beta gamma delta. " * 8
    doc = (para + "\n\n") * 3 + "Tail paragraph here."
    corpus = Corpus.from_documents([("d.md", doc)], 200, 0, chunk_ids="content")
    body = para.strip()
    # Three copies of one paragraph (191 characters, 3 characters of "  \n\n" between them),
    # then the tail: the span tells the copies apart, the hash says what each holds.
    assert corpus.ids == [f"d.md@0-191:{_sha8(body)}", f"d.md@194-385:{_sha8(body)}",
                          f"d.md@388-579:{_sha8(body)}", f"d.md@582-602:{_sha8('Tail paragraph here.')}"]
    assert len(set(corpus.ids)) == 4
    assert corpus.chunking["ids"] == "content"
    # Position ids are the default, and their chunking describes them as it always did.
    plain = Corpus.from_documents([("d.md", doc)], 200, 0)
    assert plain.ids == ["d.md#0", "d.md#1", "d.md#2", "d.md#3"]
    assert "ids" not in plain.chunking


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.sampled_from(["Same words again.", "Other text here, longer than that.",
                                       "x", "A third paragraph of some length for the cut."]),
                      min_size=1, max_size=30),
       size=st.integers(min_value=10, max_value=120), overlap=st.integers(min_value=0, max_value=9))
def test_property_ids_are_unique_and_name_span_and_text(parts: list[str], size: int,
                                                        overlap: int) -> None:
    doc = "\n\n".join(parts)
    corpus = Corpus.from_documents([("doc", doc), ("twin", doc)], size, overlap, chunk_ids="content")
    assert len(set(corpus.ids)) == len(corpus)
    for chunk in corpus:
        start, stop = corpus.text_spans.spans[chunk.id]
        assert chunk.id == f"{chunk.doc_id}@{start}-{stop}:{_sha8(chunk.text)}"
        assert doc[start:stop] == chunk.text


def test_a_rechunk_keeps_the_ids_of_chunks_whose_text_and_span_are_unchanged(pages: Path) -> None:
    small = load_corpus(pages, chunk_size=600, chunk_overlap=0, split=True, chunk_ids="content")
    large = load_corpus(pages, chunk_size=900, chunk_overlap=0, split=True, chunk_ids="content")
    a, b = _pieces(small), _pieces(large)
    kept = a.keys() & b.keys()
    assert kept and kept != a.keys()  # some chunks survive the re-chunk, others do not
    assert all(a[p] == b[p] for p in kept)
    # Every other chunk has an id the other chunking does not use.
    assert not {a[p] for p in a.keys() - kept} & set(b.values())
    assert not {b[p] for p in b.keys() - kept} & set(a.values())
    # Position ids name another text after the same re-chunk: the problem this solves.
    pos_a = load_corpus(pages, chunk_size=600, chunk_overlap=0, split=True)
    pos_b = load_corpus(pages, chunk_size=900, chunk_overlap=0, split=True)
    texts_b = {c.id: c.text for c in pos_b}
    assert any(c.id in texts_b and texts_b[c.id] != c.text for c in pos_a)


def test_ids_are_the_same_in_another_process(pages: Path) -> None:
    here = load_corpus(pages, chunk_size=700, chunk_overlap=50, split=True, chunk_ids="content").ids
    code = ("import json, sys; from ragcov.corpus import load_corpus; "
            "print(json.dumps(load_corpus(sys.argv[1], chunk_size=700, chunk_overlap=50, split=True, "
            "chunk_ids='content').ids))")
    for seed in ("1", "2"):  # another string hash seed: nothing may hang on Python's hash()
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code, str(pages)], env=env, check=True,
                             capture_output=True, text=True).stdout
        assert json.loads(out) == here


def test_chunks_given_with_their_own_ids_refuse_content_ids(tmp_path: Path) -> None:
    chunks = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}])
    with pytest.raises(RagcovError, match="come with their own ids"):
        load_corpus(chunks, chunk_ids="content")
    with pytest.raises(RagcovError, match="--chunk-ids must be position or content, got 'hash'"):
        load_corpus(chunks, chunk_ids="hash")
    assert load_corpus(chunks, chunk_ids="position").ids == ["a", "b"]


# ----------------------------------------------------------------- through the commands
def _questions(tmp_path: Path, first: int, last: int) -> Path:
    lines = sample_path("finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / f"q{first}-{last}.jsonl"
    path.write_text("\n".join(lines[first:last]) + "\n", encoding="utf-8")
    return path


def _ids(data: Path) -> list[str]:
    with sqlite3.connect(data) as con:
        return [r[0] for r in con.execute("SELECT id FROM chunks ORDER BY idx")]


def test_the_scheme_is_recorded_and_later_commands_on_the_file_use_it(
        capsys, tmp_path: Path, pages: Path) -> None:
    data = tmp_path / "c.ragcov"
    base = ["--corpus", str(pages), "--split", "--retriever", "bm25", "-q", "--data-file", str(data)]
    code, _o, err = cli(capsys, "run", *base, "--chunk-ids", "content",
                        "--queries", str(_questions(tmp_path, 0, 20)))
    assert code == 0, err
    ids = _ids(data)
    assert all("@" in i and "#" not in i for i in ids)
    with sqlite3.connect(data) as con:
        assert con.execute("SELECT value FROM span_meta WHERE key = 'ids'").fetchone() == ("content",)
    # --append without --chunk-ids splits as the file did; another scheme is refused.
    code, _o, err = cli(capsys, "run", *base, "--append", "--queries", str(_questions(tmp_path, 20, 30)))
    assert code == 0, err
    with sqlite3.connect(data) as con:
        assert con.execute("SELECT COUNT(*) FROM queries").fetchone() == (30,)
    code, _o, err = cli(capsys, "run", *base, "--append", "--chunk-ids", "position",
                        "--queries", str(_questions(tmp_path, 30, 40)))
    assert code == 1 and "names its chunks by content" in err
    # probe reads the corpus as the run did, with no flag to repeat.
    code, _o, err = cli(capsys, "probe", "--corpus", str(pages), "--split", "--data-file", str(data))
    assert code == 0, err
    # topics, given the corpus, reads it as the run did too.
    code, _o, err = cli(capsys, "topics", "--data-file", str(data), "--corpus", str(pages), "--split",
                        "--vectors", "tfidf", "-q")
    assert code == 0, err
    # combine keeps the scheme, so a probe of the combined file splits the same way.
    merged = tmp_path / "m.ragcov"
    code, _o, err = cli(capsys, "combine", str(data), "--data-file", str(merged), "--keep")
    assert code == 0, err
    with sqlite3.connect(merged) as con:
        assert con.execute("SELECT value FROM span_meta WHERE key = 'ids'").fetchone() == ("content",)
    assert _ids(merged) == ids


def test_generate_on_a_content_file_splits_as_its_run_did(capsys, tmp_path: Path,
                                                          pages: Path) -> None:
    data = tmp_path / "g.ragcov"
    base = ["--corpus", str(pages), "--split", "--retriever", "bm25", "--data-file", str(data)]
    code, _o, err = cli(capsys, "run", *base, "-q", "--chunk-ids", "content",
                        "--queries", str(_questions(tmp_path, 0, 10)))
    assert code == 0, err
    code, out, err = cli(capsys, "generate", *base, "--budget", "2", "-o", str(tmp_path / "g.jsonl"))
    assert code == 0, err
    assert "Generated 2 questions" in out
    assert all("@" in i for i in _ids(data))
    # drift (its suite and retriever from the file) splits as the run did too; its suite is
    # the run's 10 questions, not the 2 generated ones no suite has accepted.
    code, out, err = cli(capsys, "drift", "--corpus", str(pages), "--split", "--data-file", str(data),
                         "--relation", "noise", "--resamples", "100", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["relations"][0]["tests"] == 10


def test_chunk_ids_in_the_config_file(capsys, tmp_path: Path, pages: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    q = _questions(tmp_path, 0, 10)
    (tmp_path / "ragcov.toml").write_text('chunk_ids = "content"\n', encoding="utf-8")
    code, _o, err = cli(capsys, "run", "--corpus", str(pages), "--split", "--retriever", "bm25",
                        "-q", "--queries", str(q), "--data-file", "cfg.ragcov")
    assert code == 0, err
    assert all("@" in i for i in _ids(tmp_path / "cfg.ragcov"))
    # The flag wins over the file.
    code, _o, err = cli(capsys, "run", "--corpus", str(pages), "--split", "--retriever", "bm25",
                        "-q", "--queries", str(q), "--data-file", "flag.ragcov",
                        "--chunk-ids", "position")
    assert code == 0, err
    assert all("#" in i for i in _ids(tmp_path / "flag.ragcov"))
    (tmp_path / "ragcov.toml").write_text('chunk_ids = "hash"\n', encoding="utf-8")
    code, _o, err = cli(capsys, "run", "--corpus", str(pages), "--split", "--retriever", "bm25",
                        "-q", "--queries", str(q), "--data-file", "bad.ragcov")
    assert code == 1 and "ragcov.toml: chunk_ids = 'hash'" in err and "position or content" in err
    assert not (tmp_path / "bad.ragcov").exists()


def test_labels_on_content_ids_stay_valid_where_the_chunk_is_unchanged(
        capsys, tmp_path: Path, pages: Path) -> None:
    """``qrels check`` against a re-chunk: a label on a chunk that kept its text and span keeps
    its id too, so it is valid as it stands; no label is valid by a reused position."""
    data = tmp_path / "old.ragcov"
    cli(capsys, "run", "--corpus", str(pages), "--split", "--chunk-size", "600", "--chunk-overlap",
        "0", "--chunk-ids", "content", "--retriever", "bm25", "-q", "--queries",
        str(_questions(tmp_path, 0, 5)), "--data-file", str(data))
    old = load_corpus(pages, chunk_size=600, chunk_overlap=0, split=True, chunk_ids="content")
    new = load_corpus(pages, chunk_size=900, chunk_overlap=0, split=True, chunk_ids="content")
    labels = _jsonl(tmp_path / "labels.jsonl",
                    [{"query_id": f"q{n}", "chunk_id": c.id} for n, c in enumerate(old)])
    code, out, err = cli(capsys, "qrels", "check", str(labels), "--corpus", str(pages), "--split",
                         "--chunk-size", "900", "--chunk-overlap", "0", "--chunk-ids", "content",
                         "--data-file", str(data), "--format", "json")
    assert code == 0, err
    unchanged = len(_pieces(old).keys() & _pieces(new).keys())
    assert json.loads(out)["counts"]["valid"] == unchanged > 0
    # Without --chunk-ids the new chunks are named as the data file's were, and --fix writes
    # content ids: the labels keep the names the team chose.
    fixed = tmp_path / "fixed.jsonl"
    code, out, err = cli(capsys, "qrels", "check", str(labels), "--corpus", str(pages), "--split",
                         "--chunk-size", "900", "--chunk-overlap", "0", "--data-file", str(data),
                         "--format", "json", "--fix", "-o", str(fixed))
    assert code == 0, err
    assert json.loads(out)["counts"]["valid"] == unchanged
    written = [json.loads(line)["chunk_id"] for line in fixed.read_text(encoding="utf-8").splitlines()]
    assert written and set(written) <= set(new.ids)


# ----------------------------------------------------------------- spans and --append
def test_an_append_with_documents_adds_spans_to_a_file_recorded_without(
        capsys, tmp_path: Path, pages: Path) -> None:
    docs = [json.loads(line) for line in pages.read_text(encoding="utf-8").splitlines()]
    chunks = _jsonl(tmp_path / "chunks.jsonl", [
        {"id": f"{d['doc_id']}::{n}", "doc_id": d["doc_id"], "text": p}
        for d in docs for n, p in enumerate(d["text"].split("\n\n")) if p.strip()])
    docs_file = _jsonl(tmp_path / "docs.jsonl", [{"doc_id": d["doc_id"], "text": d["text"]} for d in docs])
    data = tmp_path / "a.ragcov"
    base = ["--corpus", str(chunks), "--retriever", "bm25", "-q", "--data-file", str(data)]
    code, _o, err = cli(capsys, "run", *base, "--queries", str(_questions(tmp_path, 0, 20)))
    assert code == 0, err
    code, out, _e = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert "text_coverage" not in json.loads(out)["totals"]
    code, _o, err = cli(capsys, "run", *base, "--append", "--documents", str(docs_file),
                        "--queries", str(_questions(tmp_path, 20, 30)))
    assert code == 0, err
    code, out, _e = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    doc = json.loads(out)
    assert doc["text"]["method"] == "located"
    assert 0 < doc["totals"]["text_coverage"] <= 1
    # Spans recorded once are kept by a later --append that gives no documents.
    code, _o, err = cli(capsys, "run", *base, "--append", "--queries", str(_questions(tmp_path, 30, 40)))
    assert code == 0, err
    code, out, _e = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    again = json.loads(out)
    assert again["text"]["method"] == "located"
    assert again["totals"]["text_characters"] == doc["totals"]["text_characters"]


def test_unknown_content_ids_of_known_documents_point_at_the_chunking() -> None:
    """A store or trace split at another size names chunks of the corpus's documents that the
    corpus does not have: the hint says to split the same way, as it does for DOC#N ids."""
    from ragcov.retrieval import mismatch_hint

    corpus = Corpus.from_documents([("d.md", "One paragraph.\n\nAnother one.")], 20, 0,
                                   chunk_ids="content")
    hint = mismatch_hint([f"d.md@0-30:{_sha8('x')}"], corpus)
    assert "the same --chunk-size and --chunk-overlap with --split" in hint


def test_an_import_append_with_documents_adds_spans_too(capsys, tmp_path: Path, pages: Path) -> None:
    docs = [json.loads(line) for line in pages.read_text(encoding="utf-8").splitlines()]
    rows = [{"id": f"{d['doc_id']}::{n}", "doc_id": d["doc_id"], "text": p}
            for d in docs for n, p in enumerate(d["text"].split("\n\n")) if p.strip()]
    chunks = _jsonl(tmp_path / "chunks.jsonl", rows)
    docs_file = _jsonl(tmp_path / "docs.jsonl", [{"doc_id": d["doc_id"], "text": d["text"]} for d in docs])
    first, second = tmp_path / "a.trec", tmp_path / "b.trec"
    first.write_text(f"t1 Q0 {rows[0]['id']} 1 2.0 prod\n", encoding="utf-8")
    second.write_text(f"t2 Q0 {rows[1]['id']} 1 1.0 prod\n", encoding="utf-8")
    data = tmp_path / "t.ragcov"
    base = ["--format", "trec", "--corpus", str(chunks), "--data-file", str(data), "-q"]
    code, _o, err = cli(capsys, "import", str(first), *base)
    assert code == 0, err
    code, _o, err = cli(capsys, "import", str(second), *base, "--append", "--documents", str(docs_file))
    assert code == 0, err
    code, out, _e = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    doc = json.loads(out)
    assert doc["text"]["method"] == "located"
    # Both imports' chunks count: the first document's first two paragraphs are covered.
    text = docs[0]["text"]
    covered = len("".join(rows[0]["text"].split())) + len("".join(rows[1]["text"].split()))
    assert rows[1]["doc_id"] == docs[0]["doc_id"]
    assert doc["documents"][docs[0]["doc_id"]]["covered_text_characters"] == covered
    assert doc["documents"][docs[0]["doc_id"]]["text_characters"] == len("".join(text.split()))
