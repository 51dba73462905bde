"""Relevance labels across a re-chunk (``ragcov qrels check``) and labels a corpus cannot
resolve (``report --qrels``), on FinQA pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def pages(datasets_dir: Path) -> list[dict]:
    from research.datasets import load_finqa

    d = load_finqa(datasets_dir / "finqa" / "dev_200.json")
    # Pages long enough to hold five 1000-character chunks.
    return [{"doc_id": i, "text": t} for i, t in d.documents.items() if len(t) > 5200][:6]


def _record(capsys, tmp_path: Path, docs: Path, *chunking: str) -> Path:
    q = _jsonl(tmp_path / "suite.jsonl", [{"id": "s1", "text": "net revenue growth"}])
    data = tmp_path / "old.ragcov"
    code, _o, err = cli(capsys, "run", "--corpus", str(docs), "--split", *chunking, "--retriever",
                        "bm25", "-q", "--queries", str(q), "--data-file", str(data))
    assert code == 0, err
    return data


def _old_chunks(docs: list[dict], size: int) -> dict[str, tuple[str, int, int, str]]:
    from semantic_text_splitter import MarkdownSplitter

    out = {}
    for d in docs:
        for n, (s, piece) in enumerate(MarkdownSplitter(size, overlap=0, trim=True).chunk_indices(d["text"])):
            out[f"{d['doc_id']}#{n}"] = (d["doc_id"], s, s + len(piece), piece)
    return out


def test_each_of_the_five_outcomes_planted_is_found_and_only_the_sound_are_fixed(
        capsys, tmp_path: Path, pages: list[dict]) -> None:
    docs = _jsonl(tmp_path / "docs.jsonl", pages)
    data = _record(capsys, tmp_path, docs, "--chunk-size", "1000", "--chunk-overlap", "0")
    old = _old_chunks(pages, 1000)
    a, b, c = pages[0]["doc_id"], pages[1]["doc_id"], pages[2]["doc_id"]
    text_a = pages[0]["text"]

    def piece(cid: str) -> tuple[int, int, str]:
        return old[cid][1], old[cid][2], old[cid][3]

    s2, _e2, _t = piece(f"{a}#2")
    _s3, e3, _t = piece(f"{a}#3")
    s4, e4, t4 = piece(f"{a}#4")
    cut = s4 + t4.index(" ", len(t4) // 2)  # a word boundary inside chunk 4
    new = [
        {"id": f"{a}#0", "doc_id": a, "text": piece(f"{a}#0")[2]},          # valid
        {"id": f"{a}::one", "doc_id": a, "text": piece(f"{a}#1")[2]},      # re-anchorable
        {"id": f"{a}::two-three", "doc_id": a, "text": text_a[s2:e3]},      # 2 and 3 merged
        {"id": f"{a}::four-a", "doc_id": a, "text": text_a[s4:cut]},        # 4 split in two
        {"id": f"{a}::four-b", "doc_id": a, "text": text_a[cut:e4].strip()},
    ]
    # b loses its chunk 1's passage from the document itself; c is gone from the new corpus.
    sb, eb, _tb = old[f"{b}#1"][1], old[f"{b}#1"][2], old[f"{b}#1"][3]
    b_text = pages[1]["text"][:sb] + pages[1]["text"][eb:]
    new.append({"id": f"{b}::all", "doc_id": b, "text": b_text})
    new_docs = [{"doc_id": a, "text": text_a}, {"doc_id": b, "text": b_text}]
    labels = [("q-valid", f"{a}#0"), ("q-moved", f"{a}#1"), ("q-merged", f"{a}#2"),
              ("q-merged", f"{a}#3"), ("q-split", f"{a}#4"), ("q-gone", f"{b}#1"),
              ("q-nodoc", f"{c}#0"), ("q-doc", a)]
    qrels = _jsonl(tmp_path / "qrels.jsonl",
                   [{"query_id": q, "chunk_id": i, "relevance": 2} for q, i in labels[:-1]])
    fixed = tmp_path / "fixed.jsonl"
    code, out, err = cli(capsys, "qrels", "check", str(qrels), "--corpus",
                         str(_jsonl(tmp_path / "new.jsonl", new)), "--documents",
                         str(_jsonl(tmp_path / "newdocs.jsonl", new_docs)), "--data-file", str(data),
                         "--fix", "-o", str(fixed))
    assert code == 0, err
    assert "1 valid, 1 re-anchorable, 2 merged, 1 split, 2 orphaned" in out
    code, out, _e = cli(capsys, "qrels", "check", str(qrels), "--corpus", str(tmp_path / "new.jsonl"),
                        "--documents", str(tmp_path / "newdocs.jsonl"), "--data-file", str(data),
                        "--format", "json")
    fates = {f["old_id"]: f for f in json.loads(out)["labels"]}
    assert fates[f"{a}#0"]["kind"] == "valid"
    assert (fates[f"{a}#1"]["kind"], fates[f"{a}#1"]["new_ids"]) == ("re-anchorable", [f"{a}::one"])
    assert fates[f"{a}#2"]["new_ids"] == fates[f"{a}#3"]["new_ids"] == [f"{a}::two-three"]
    assert (fates[f"{a}#4"]["kind"], sorted(fates[f"{a}#4"]["new_ids"])) == \
        ("split", [f"{a}::four-a", f"{a}::four-b"])
    assert fates[f"{b}#1"]["why"] == "its text is no longer in its document"
    assert fates[f"{c}#0"]["why"] == "its document is not in the new corpus"
    written = [json.loads(x) for x in fixed.read_text(encoding="utf-8").splitlines()]
    # The two merged labels of one query now name one chunk: written once. Split and
    # orphaned labels are left out, never guessed.
    assert written == [{"query_id": "q-valid", "chunk_id": f"{a}#0", "relevance": 2},
                       {"query_id": "q-moved", "chunk_id": f"{a}::one", "relevance": 2},
                       {"query_id": "q-merged", "chunk_id": f"{a}::two-three", "relevance": 2}]


def test_a_resplit_at_another_size_sorts_each_label_as_its_spans_say(
        capsys, tmp_path: Path, pages: list[dict]) -> None:
    """1000 -> 400 characters, both split by ragcov: every label's kind recounted from the
    two splitters' spans by hand."""
    docs = _jsonl(tmp_path / "docs.jsonl", pages)
    data = _record(capsys, tmp_path, docs, "--chunk-size", "1000", "--chunk-overlap", "0")
    old, new = _old_chunks(pages, 1000), _old_chunks(pages, 400)
    qrels = _jsonl(tmp_path / "q.jsonl", [{"query_id": f"q{n}", "chunk_id": cid}
                                          for n, cid in enumerate(old)])
    code, out, err = cli(capsys, "qrels", "check", str(qrels), "--corpus", str(docs), "--split",
                         "--chunk-size", "400", "--chunk-overlap", "0", "--data-file", str(data),
                         "--format", "json")
    assert code == 0, err
    got = {f["old_id"]: f for f in json.loads(out)["labels"]}
    for cid, (doc, s, e, text) in old.items():
        same = [n for n, (d, a, b, t) in new.items() if d == doc and t == text]
        inside = [n for n, (d, a, b, _t) in new.items() if d == doc and a <= s and e <= b]
        touching = [n for n, (d, a, b, _t) in new.items() if d == doc and a < e and s < b]
        if cid in new and new[cid][3] == text:
            want = ("valid", [cid])
        elif same:
            want = ("re-anchorable", same)
        elif inside:
            want = ("merged", inside)
        else:
            want = ("split", touching)
        assert (got[cid]["kind"], got[cid]["new_ids"]) == want, cid
    kinds = {f["kind"] for f in got.values()}
    assert "split" in kinds and kinds <= {"valid", "re-anchorable", "merged", "split"}


def test_old_corpus_file_trec_labels_and_a_rebuilt_document(capsys, tmp_path: Path) -> None:
    """Chunks given without documents on both sides: the document is rebuilt from its new
    chunks (and said); TREC labels are written back as TREC."""
    old = _jsonl(tmp_path / "old.jsonl", [
        {"id": "a", "doc_id": "d", "text": "Revenue grew by ten percent."},
        {"id": "b", "doc_id": "d", "text": "Costs fell sharply in the north."},
        {"id": "c", "doc_id": "d", "text": "Margins widened."}])
    new = _jsonl(tmp_path / "new.jsonl", [
        {"id": "n1", "doc_id": "d", "text": "Revenue grew by ten percent. Costs fell sharply"},
        {"id": "n2", "doc_id": "d", "text": "in the north. Margins widened."}])
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\nq3 0 c 1\nq4 0 zzz 1\n", encoding="utf-8")
    fixed = tmp_path / "fixed.trec"
    code, out, err = cli(capsys, "qrels", "check", str(qrels), "--corpus", str(new), "--old-corpus",
                         str(old), "--qrels-level", "chunk", "--fix", "-o", str(fixed))
    assert code == 0, err
    assert "0 valid, 0 re-anchorable, 2 merged, 1 split, 1 orphaned" in out
    assert "rebuilt from their new chunks" in out
    assert fixed.read_text(encoding="utf-8") == "q1 0 n1 1\nq3 0 n2 1\n"


def test_fix_needs_an_output_and_never_writes_over_its_input(capsys, tmp_path: Path) -> None:
    old = _jsonl(tmp_path / "old.jsonl", [{"id": "a", "doc_id": "d", "text": "Some text here."}])
    qrels = _jsonl(tmp_path / "q.jsonl", [{"query_id": "q", "chunk_id": "a"}])
    code, _o, err = cli(capsys, "qrels", "check", str(qrels), "--corpus", str(old), "--old-corpus",
                        str(old), "--fix")
    assert code == 1 and "-o" in err
    code, _o, err = cli(capsys, "qrels", "check", str(qrels), "--corpus", str(old), "--old-corpus",
                        str(old), "--fix", "-o", str(qrels))
    assert code == 1 and qrels.read_text(encoding="utf-8").count("\n") == 1


def test_report_says_how_many_labels_do_not_resolve_and_why(capsys, tmp_path: Path,
                                                             pages: list[dict]) -> None:
    docs = _jsonl(tmp_path / "docs.jsonl", pages)
    q = _jsonl(tmp_path / "suite.jsonl", [{"id": f"s{n}", "text": p["text"][:80]}
                                          for n, p in enumerate(pages)])
    data = tmp_path / "new.ragcov"
    cli(capsys, "run", "--corpus", str(docs), "--split", "--chunk-size", "400", "--retriever",
        "bm25", "-q", "--queries", str(q), "--data-file", str(data))
    # Labels made on an older chunking: ids past the new last chunk name nothing now.
    labels = [{"query_id": f"s{n}", "chunk_id": f"{p['doc_id']}#{k}"}
              for n, p in enumerate(pages) for k in (0, 40)]
    qrels = _jsonl(tmp_path / "q.jsonl", labels)
    code, out, err = cli(capsys, "report", "--data-file", str(data), "--qrels", str(qrels))
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("Labels not resolved:"))
    assert f"{len(pages)} of {2 * len(pages)} relevant labels name chunk ids not in this corpus" in line
    assert "#40" in line and "qrels check" in line
    assert "can never hit" not in line  # every query keeps its #0 label


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"]), min_size=6, max_size=30),
       st.integers(1, 5), st.integers(1, 5))
def test_property_sound_labels_hold_their_text_and_split_ones_are_never_written(
        words: list[str], old_n: int, new_n: int) -> None:
    """Whatever two cuts of one document: a merged or re-anchored label's new chunk holds
    the labelled text whole, and a split one is not written."""
    import tempfile

    from ragcov.compare.labels import SOUND, check_labels, fixed_text
    from ragcov.corpus import Chunk, Corpus
    from ragcov.textcov import TextSpans

    text = " ".join(f"{w}{i}" for i, w in enumerate(words))
    tokens = text.split(" ")

    def cut(n: int, prefix: str) -> Corpus:
        size = max(1, len(tokens) // n)
        parts = [" ".join(tokens[i:i + size]) for i in range(0, len(tokens), size)]
        chunks, spans, at = [], {}, 0
        for k, p in enumerate(parts):
            start = text.index(p, at)
            spans[f"{prefix}{k}"] = (start, start + len(p))
            chunks.append(Chunk(id=f"{prefix}{k}", text=p, doc_id="d", position=k))
            at = start
        corpus = Corpus(chunks)
        corpus.text_spans = TextSpans({"d": text}, spans)
        return corpus

    old, new = cut(old_n, "o"), cut(new_n, "n")
    with tempfile.TemporaryDirectory() as tmp:
        q = Path(tmp) / "q.jsonl"
        _jsonl(q, [{"query_id": "q", "chunk_id": c.id} for c in old])
        done = check_labels(q, new, old)
        for f in done.fates:
            if f.kind in SOUND:
                assert all(old.get(f.old_id).text in new.get(n).text for n in f.new_ids)
        written, _n = fixed_text(done)
        split = {n for f in done.fates if f.kind == "split" for n in f.new_ids}
        sound = {n for f in done.fates if f.kind in SOUND for n in f.new_ids}
        assert {json.loads(x)["chunk_id"] for x in written.splitlines()} == sound
        assert split - sound == split - {json.loads(x)["chunk_id"] for x in written.splitlines()}
