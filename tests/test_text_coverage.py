"""Text coverage: the share of the documents' characters in retrieved chunks, comparable
across chunkers (ragcov.textcov, its data-file tables, report, JSON, HTML, the gate)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.textcov import NO_DOCUMENT, NOT_FOUND, TextSpans, locate, text_coverage


def _nonspace(text: str, positions: set[int]) -> int:
    return sum(1 for p in positions if not text[p].isspace())


# ---------------------------------------------------------------- the formula, by hand
def test_hand_worked_overlap_counted_once_and_whitespace_not_at_all() -> None:
    doc = "abcde fghij klmno"          # 17 characters, 2 spaces: 15 counted
    spans = TextSpans({"d": doc}, {"a": (0, 8), "b": (6, 14), "c": (12, 17)})
    # a and b covered: characters 0..13 (overlap 6..7 once) = "abcde fghij kl" -> 12 non-space
    tc = text_coverage(spans, ["a", "b", "c"], ["d", "d", "d"], [True, True, False])
    assert (tc.characters, tc.covered) == (15, 12)
    assert tc.documents[0].passages == ((0, 14),)
    assert tc.overlapping == 3  # a-b and b-c share characters
    assert tc.outside == 0


def test_hand_worked_excluded_text_leaves_the_denominator_and_gaps_stay() -> None:
    doc = "xxxx yyyy zzzz wwww"   # four words of 4: 16 counted
    spans = TextSpans({"d": doc}, {"x": (0, 4), "y": (5, 9), "z": (10, 14)})
    # w lies in no chunk (4 counted, never covered); z is excluded (leaves the denominator)
    tc = text_coverage(spans, ["x", "y"], ["d", "d"], [True, False], excluded=[("z", "d")])
    assert (tc.characters, tc.covered, tc.outside) == (12, 4, 4)
    assert any("lie in no chunk" in c for c in tc.caveats())


def test_hand_worked_a_document_whose_chunks_are_all_excluded_is_out_of_the_count() -> None:
    # d2's every chunk is excluded (--exclude-docs): neither its characters, nor the gap
    # between its chunks, nor its overlapping chunks count; d1 alone is the report's text.
    spans = TextSpans({"d1": "aaaa bbbb", "d2": "cccc dddd eeee"},
                      {"a": (0, 4), "b": (5, 9), "c": (0, 6), "d": (5, 9)})
    tc = text_coverage(spans, ["a", "b"], ["d1", "d1"], [True, False],
                       excluded=[("c", "d2"), ("d", "d2")])
    assert [d.doc_id for d in tc.documents] == ["d1"]
    assert (tc.characters, tc.covered, tc.outside, tc.overlapping) == (8, 4, 0, 0)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab \n", min_size=1, max_size=60), st.data())
def test_property_equals_a_recount_character_by_character(doc: str, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 6))
    spans, covered = {}, []
    for i in range(n):
        a = data.draw(st.integers(0, len(doc)))
        b = data.draw(st.integers(a, len(doc)))
        spans[f"c{i}"] = (a, b)
        covered.append(data.draw(st.booleans()))
    ids = list(spans)
    tc = text_coverage(TextSpans({"d": doc}, spans), ids, ["d"] * n, covered)
    hit = {p for cid, c in zip(ids, covered) if c for p in range(*spans[cid])}
    assert tc.covered == _nonspace(doc, hit)
    assert tc.characters == _nonspace(doc, set(range(len(doc))))
    held = {p for cid in ids for p in range(*spans[cid])}
    assert tc.outside == tc.characters - _nonspace(doc, held)


def test_locate_places_repeats_in_order_and_tolerates_changed_whitespace() -> None:
    doc = "Revenue rose.\n\nRevenue rose.  Costs  fell\nsharply."
    found = locate({"d": doc}, [("a", "d", "Revenue rose."), ("b", "d", "Revenue rose."),
                                ("c", "d", "Costs fell sharply."), ("x", "d", "Profit doubled."),
                                ("y", "gone", "anything")])
    assert found.spans["a"] == (0, 13)
    assert found.spans["b"] == (15, 28)  # the second occurrence: the chunk order points there
    s, e = found.spans["c"]
    assert doc[s:e] == "Costs  fell\nsharply."
    assert found.unlocated == {"x": NOT_FOUND, "y": NO_DOCUMENT}


# ---------------------------------------------------------------- real documents
def _finqa_docs(datasets_dir: Path, pages: int) -> tuple[list[dict], list[dict]]:
    from research.datasets import load_finqa

    d = load_finqa(datasets_dir / "finqa" / "dev_200.json")
    ids = list(d.documents)[:pages]
    docs = [{"doc_id": i, "text": d.documents[i]} for i in ids]
    queries = [{"id": q.id, "text": q.text} for q in d.queries if q.metadata["doc_id"] in ids]
    return docs, queries


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _report(capsys, data: Path, out: Path) -> dict:
    code, _o, err = cli(capsys, "json", "--data-file", str(data), "-o", str(out))
    assert code == 0, err
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture
def finqa(datasets_dir: Path, tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    docs, queries = _finqa_docs(datasets_dir, 25)
    return _jsonl(tmp_path / "docs.jsonl", docs), _jsonl(tmp_path / "q.jsonl", queries), docs


@pytest.mark.parametrize("size,overlap", [(400, 80), (1000, 0)])
def test_split_corpus_text_coverage_equals_a_recount_from_the_splitters_spans(
        capsys, tmp_path: Path, finqa, size: int, overlap: int) -> None:
    from semantic_text_splitter import MarkdownSplitter

    docs_file, q_file, docs = finqa
    data = tmp_path / f"s{size}.ragcov"
    code, _o, err = cli(capsys, "run", "--corpus", str(docs_file), "--split", "--chunk-size",
                        str(size), "--chunk-overlap", str(overlap), "--retriever", "bm25", "-k",
                        "3", "-q", "--queries", str(q_file), "--data-file", str(data))
    assert code == 0, err
    doc = _report(capsys, data, tmp_path / f"s{size}.json")
    splitter = MarkdownSplitter(size, overlap=overlap, trim=True)
    total = covered = 0
    for d in docs:
        text, hit = d["text"], set()
        for n, (start, piece) in enumerate(splitter.chunk_indices(text)):
            assert text[start:start + len(piece)] == piece
            if doc["chunks"][f"{d['doc_id']}#{n}"]["hit_count"]:
                hit.update(range(start, start + len(piece)))
        mine = _nonspace(text, hit)
        whole = _nonspace(text, set(range(len(text))))
        got = doc["documents"][d["doc_id"]]
        assert (got["covered_text_characters"], got["text_characters"]) == (mine, whole)
        total, covered = total + whole, covered + mine
    assert doc["totals"]["text_characters"] == total
    assert doc["totals"]["covered_text_characters"] == covered
    assert doc["totals"]["text_coverage"] == pytest.approx(covered / total)
    assert doc["text"]["method"] == "split"
    assert (doc["text"]["overlapping_chunks"] > 0) == (overlap > 0)
    # The same documents cut at two sizes share one denominator: comparable across chunkers.
    assert total == sum(_nonspace(d["text"], set(range(len(d["text"])))) for d in docs)


def test_a_team_chunking_located_in_its_documents_matches_ragcovs_denominator(
        capsys, tmp_path: Path, finqa) -> None:
    """A second splitter (the team's: one chunk per paragraph) placed with --documents."""
    docs_file, q_file, docs = finqa
    chunks = [{"id": f"{d['doc_id']}::p{n}", "doc_id": d["doc_id"], "text": para}
              for d in docs for n, para in enumerate(d["text"].split("\n\n"))]
    chunks_file = _jsonl(tmp_path / "chunks.jsonl", chunks)
    data = tmp_path / "team.ragcov"
    code, _o, err = cli(capsys, "run", "--corpus", str(chunks_file), "--documents", str(docs_file),
                        "--retriever", "bm25", "-k", "3", "-q", "--queries", str(q_file),
                        "--data-file", str(data))
    assert code == 0, err
    doc = _report(capsys, data, tmp_path / "team.json")
    assert doc["text"]["method"] == "located"
    assert doc["text"]["unlocated_chunks"] == {}
    expected = 0
    for d in docs:
        text, hit, at = d["text"], set(), 0
        for n, para in enumerate(text.split("\n\n")):
            if doc["chunks"][f"{d['doc_id']}::p{n}"]["hit_count"]:
                hit.update(range(at, at + len(para)))
            at += len(para) + 2
        expected += _nonspace(text, hit)
    assert doc["totals"]["covered_text_characters"] == expected
    assert doc["totals"]["text_characters"] == sum(
        _nonspace(d["text"], set(range(len(d["text"])))) for d in docs)


def test_pubmedqa_sections_rewritten_and_missing_documents_are_counted_and_said(
        capsys, tmp_path: Path, datasets_dir: Path) -> None:
    from research.datasets import load_pubmedqa

    d = load_pubmedqa(datasets_dir / "pubmedqa")
    pmids = list(d.documents)[:30]
    chunks = [{"id": c.id, "doc_id": c.doc_id, "text": c.text} for c in d.chunks if c.doc_id in pmids]
    chunks[0]["text"] = "A summary rewritten by a cleaning step, found nowhere in the abstract."
    given_docs = [{"doc_id": p, "text": d.documents[p]} for p in pmids[:-1]]  # the last one missing
    given_docs.append({"doc_id": "no-chunk", "text": "A document the chunker never cut."})
    lost = sum(1 for c in chunks if c["doc_id"] == pmids[-1])
    queries = [{"id": q.id, "text": q.text} for q in d.queries if q.metadata["doc_id"] in pmids]
    data = tmp_path / "pqa.ragcov"
    code, _o, err = cli(capsys, "run", "--corpus", str(_jsonl(tmp_path / "c.jsonl", chunks)),
                        "--documents", str(_jsonl(tmp_path / "d.jsonl", given_docs)),
                        "--retriever", "bm25", "-k", "2", "-q", "--queries",
                        str(_jsonl(tmp_path / "q.jsonl", queries)), "--data-file", str(data))
    assert code == 0, err
    doc = _report(capsys, data, tmp_path / "pqa.json")
    assert doc["text"]["unlocated_chunks"] == {NOT_FOUND: 1, NO_DOCUMENT: lost}
    assert doc["text"]["documents_without_text"] == [pmids[-1]]
    assert "text_coverage" not in doc["documents"][pmids[-1]]
    code, out, _e = cli(capsys, "report", "--data-file", str(data))
    line = next(x for x in out.splitlines() if x.startswith("Text coverage:"))
    assert f"1 chunk not placed ({NOT_FOUND})" in line
    assert f"{lost} chunks not placed ({NO_DOCUMENT})" in line
    assert "1 document without text: not counted" in line
    assert "1 document given with no chunk in the corpus (first: no-chunk): not counted" in line
    assert doc["text"]["documents_without_chunks"] == ["no-chunk"]
    code, _o, err = cli(capsys, "html", "--data-file", str(data), "-d", str(tmp_path / "site"))
    assert code == 0, err
    from ragcov.reporters.html_context import document_filename

    page = (tmp_path / "site" / document_filename(pmids[0])).read_text(encoding="utf-8")
    assert 'Not placed</span><span class="value missing-text">1<' in page
    missing = (tmp_path / "site" / document_filename(pmids[-1])).read_text(encoding="utf-8")
    assert 'id="doc-text"' not in missing  # no text known: no figure, no highlight drawn from it


# ---------------------------------------------------------------- the gate and old files
def test_fail_under_text_gates_through_the_fail_under_path(capsys, tmp_path: Path, finqa) -> None:
    docs_file, q_file, _docs = finqa
    data = tmp_path / "g.ragcov"
    cli(capsys, "run", "--corpus", str(docs_file), "--split", "--retriever", "bm25", "-q",
        "--queries", str(q_file), "--data-file", str(data))
    doc = _report(capsys, data, tmp_path / "g.json")
    pc = doc["totals"]["text_coverage"] * 100
    above = f"{round(pc + 1, 2):g}"
    code, _o, err = cli(capsys, "report", "--data-file", str(data), "--fail-under-text", above)
    assert code == 2 and "Coverage failure: text coverage of" in err
    assert f"is less than fail-under-text={above}" in err
    code, _o, _e = cli(capsys, "report", "--data-file", str(data), "--fail-under-text", f"{pc - 1:.2f}")
    assert code == 0
    code, _o, err = cli(capsys, "json", "--data-file", str(data), "-o", str(tmp_path / "x.json"),
                        "--fail-under-text", "100")
    assert code == 2 and "text coverage" in err


def test_a_file_without_spans_reports_no_figure_and_refuses_the_text_gate(
        capsys, tmp_path: Path, city_corpus_file: Path) -> None:
    q = _jsonl(tmp_path / "q.jsonl", [{"id": "q1", "text": "capital of France"}])
    data = tmp_path / "c.ragcov"
    cli(capsys, "run", "--corpus", str(city_corpus_file), "--retriever", "bm25", "-q",
        "--queries", str(q), "--data-file", str(data))
    code, out, _e = cli(capsys, "report", "--data-file", str(data))
    assert code == 0 and "Text coverage" not in out
    assert "text_coverage" not in _report(capsys, data, tmp_path / "c.json")["totals"]
    code, _o, err = cli(capsys, "report", "--data-file", str(data), "--fail-under-text", "10")
    assert code == 1 and "--documents" in err
    for command, out_flag in (("json", "-o"), ("xml", "-o"), ("lcov", "-o"), ("badge", "-o"),
                              ("html", "-d")):
        target = tmp_path / f"gated-{command}"
        code, _o, err = cli(capsys, command, "--data-file", str(data), out_flag, str(target),
                            "--fail-under-text", "10")
        assert code == 1 and "--documents" in err, (command, err)
        assert not target.exists(), command  # refused before anything is written


def test_an_older_file_without_the_span_tables_is_read_and_combine_keeps_spans(
        capsys, tmp_path: Path, finqa) -> None:
    docs_file, q_file, _docs = finqa
    data = tmp_path / "o.ragcov"
    cli(capsys, "run", "--corpus", str(docs_file), "--split", "--retriever", "bm25", "-q",
        "--queries", str(q_file), "--data-file", str(data))
    merged = tmp_path / "m.ragcov"
    code, _o, err = cli(capsys, "combine", str(data), "--data-file", str(merged), "--keep")
    assert code == 0, err
    before = _report(capsys, data, tmp_path / "a.json")["totals"]
    assert _report(capsys, merged, tmp_path / "b.json")["totals"]["text_coverage"] == \
        before["text_coverage"]
    with sqlite3.connect(data) as con:  # as a file written before the tables existed
        for table in ("documents", "chunk_spans", "span_meta"):
            con.execute(f"DROP TABLE {table}")
    after = _report(capsys, data, tmp_path / "c.json")["totals"]
    assert "text_coverage" not in after and after["chunk_coverage"] == before["chunk_coverage"]


def test_html_document_page_highlights_what_the_figure_counts(capsys, tmp_path: Path, finqa) -> None:
    import re

    docs_file, q_file, docs = finqa
    data = tmp_path / "h.ragcov"
    cli(capsys, "run", "--corpus", str(docs_file), "--split", "--chunk-size", "500",
        "--chunk-overlap", "100", "--retriever", "bm25", "-q", "--queries", str(q_file),
        "--data-file", str(data))
    doc = _report(capsys, data, tmp_path / "h.json")
    code, _o, err = cli(capsys, "html", "--data-file", str(data), "-d", str(tmp_path / "site"))
    assert code == 0, err
    from html import unescape

    from ragcov.reporters.html_context import document_filename
    from ragcov.summary import display_percent

    for d in docs[:8]:
        page = (tmp_path / "site" / document_filename(d["doc_id"])).read_text(encoding="utf-8")
        stitched = re.search(r'<div class="stitched" dir="auto">(.*?)</div>', page, re.S).group(1)
        pieces = re.findall(r'class="seg (\w+)"[^>]*>(.*?)</(?:a|span)>', stitched, re.S)
        assert unescape("".join(t for _s, t in pieces)) == d["text"]  # the document, once
        lit = sum(len(unescape(t)) - sum(ch.isspace() for ch in unescape(t))
                  for s, t in pieces if s == "covered")
        assert lit == doc["documents"][d["doc_id"]]["covered_text_characters"]
        pc = display_percent(doc["documents"][d["doc_id"]]["text_coverage"], 0)
        assert f'id="doc-text">{pc}%' in page


# ---------------------------------------------------------------- diff across chunkers
def _split_spans(docs: list[dict], size: int, overlap: int) -> dict[str, tuple[str, int, int]]:
    from semantic_text_splitter import MarkdownSplitter

    out = {}
    for d in docs:
        for n, (s, piece) in enumerate(MarkdownSplitter(size, overlap=overlap, trim=True)
                                       .chunk_indices(d["text"])):
            out[f"{d['doc_id']}#{n}"] = (d["doc_id"], s, s + len(piece))
    return out


def test_diff_across_chunkers_passages_and_query_overlap_equal_a_hand_recount(
        capsys, tmp_path: Path, finqa) -> None:
    docs_file, q_file, docs = finqa
    files, reports, spans = {}, {}, {}
    for name, size, overlap in (("base", 1000, 100), ("head", 600, 0)):
        files[name] = tmp_path / f"{name}.ragcov"
        code, _o, err = cli(capsys, "run", "--corpus", str(docs_file), "--split", "--chunk-size",
                            str(size), "--chunk-overlap", str(overlap), "--retriever", "bm25",
                            "-k", "3", "-q", "--queries", str(q_file), "--data-file", str(files[name]))
        assert code == 0, err
        reports[name] = _report(capsys, files[name], tmp_path / f"{name}.json")
        spans[name] = _split_spans(docs, size, overlap)
    code, out, err = cli(capsys, "diff", str(files["base"]), str(files["head"]), "--format", "json",
                         "--allow-different-retriever")
    assert code == 0, err
    text = json.loads(out)["text"]
    texts = {d["doc_id"]: d["text"] for d in docs}

    def covered(name: str) -> dict[str, set[int]]:
        got: dict[str, set[int]] = {d: set() for d in texts}
        for cid, (doc, s, e) in spans[name].items():
            if reports[name]["chunks"][cid]["hit_count"]:
                got[doc].update(range(s, e))
        return got

    base, head = covered("base"), covered("head")
    by_doc = {d["doc_id"]: d for d in text["documents"]}
    for doc, t in texts.items():
        gained = {p for p in head[doc] - base[doc] if not t[p].isspace()}
        lost = {p for p in base[doc] - head[doc] if not t[p].isspace()}
        if not gained and not lost:
            assert doc not in by_doc
            continue
        entry = by_doc[doc]
        assert entry["gained_characters"] == len(gained) and entry["lost_characters"] == len(lost)
        listed = {p for g in entry["gained"] for p in range(g["start"], g["end"])}
        assert {p for p in listed if not t[p].isspace()} == gained
        assert all(g["text"] == t[g["start"]:g["end"]] for g in entry["gained"] + entry["lost"])
    # Per query: the Jaccard of the characters retrieved before and after, by hand.
    jac = []
    for qid in reports["base"]["queries"]:
        sides = []
        for name in ("base", "head"):
            got = set()
            for cid in reports[name]["queries"][qid]["retrieved"]:
                doc, s, e = spans[name][cid]
                got.update((doc, p) for p in range(s, e) if not texts[doc][p].isspace())
            sides.append(got)
        union = sides[0] | sides[1]
        jac.append(len(sides[0] & sides[1]) / len(union) if union else 1.0)
    assert text["mean_query_text_overlap"] == pytest.approx(sum(jac) / len(jac))
    assert text["base"]["chunks"] == len(spans["base"]) and text["head"]["chunks"] == len(spans["head"])
    code, out, err = cli(capsys, "diff", str(files["base"]), str(files["head"]),
                         "--allow-different-retriever")  # the chunking is in the fingerprint
    assert code == 0, err
    header = out.split("\n\n")[0]
    assert f"Chunking changed: {len(spans['base'])} chunks of" in header
    assert f"-> {len(spans['head'])} of" in header and "Queries by retrieved text" in header
    assert "Passages by document" in out


def test_diff_across_chunkers_says_what_it_cannot_compare(capsys, tmp_path: Path, finqa) -> None:
    """One side's documents revised, one missing; the other side without spans at all."""
    docs_file, q_file, docs = finqa
    base = tmp_path / "base.ragcov"
    cli(capsys, "run", "--corpus", str(docs_file), "--split", "--retriever", "bm25", "-q",
        "--queries", str(q_file), "--data-file", str(base))
    revised = [dict(d) for d in docs[:-1]]  # the last document gone
    revised[0]["text"] = revised[0]["text"] + "\n\nA paragraph added in the new version."
    head = tmp_path / "head.ragcov"
    cli(capsys, "run", "--corpus", str(_jsonl(tmp_path / "rev.jsonl", revised)), "--split",
        "--chunk-size", "700", "--retriever", "bm25", "-q", "--queries", str(q_file),
        "--data-file", str(head))
    code, out, err = cli(capsys, "diff", str(base), str(head), "--format", "json",
                         "--allow-different-retriever")
    assert code == 0, err
    text = json.loads(out)["text"]
    assert text["documents_with_changed_text"] == [docs[0]["doc_id"]]
    assert text["compared_documents"] == len(docs) - 2
    assert json.loads(out)["removed_documents"][0]["doc_id"] == docs[-1]["doc_id"]
    # Chunks given without documents: the chunking change is said, passages are not guessed.
    chunks = [{"id": f"{d['doc_id']}::{n}", "doc_id": d["doc_id"], "text": p}
              for d in docs for n, p in enumerate(d["text"].split("\n\n"))]
    bare = tmp_path / "bare.ragcov"
    cli(capsys, "run", "--corpus", str(_jsonl(tmp_path / "c.jsonl", chunks)), "--retriever",
        "bm25", "-q", "--queries", str(q_file), "--data-file", str(bare))
    code, out, err = cli(capsys, "diff", str(base), str(bare), "--allow-different-retriever")
    assert code == 0, err
    assert "Chunking changed:" in out
    assert "Text not compared by span: HEAD recorded no chunk spans" in out


def test_imported_traces_over_chunks_made_elsewhere_get_text_coverage(capsys, tmp_path: Path,
                                                                     finqa) -> None:
    """``ragcov import --documents``: production traces over a team's chunks, placed."""
    docs_file, _q, docs = finqa
    chunks = [{"id": f"{d['doc_id']}::{n}", "doc_id": d["doc_id"], "text": p}
              for d in docs for n, p in enumerate(d["text"].split("\n\n"))]
    corpus = _jsonl(tmp_path / "chunks.jsonl", chunks)
    run = tmp_path / "run.trec"
    run.write_text(f"t1 Q0 {chunks[0]['id']} 1 2.0 prod\nt2 Q0 {chunks[1]['id']} 1 1.0 prod\n",
                   encoding="utf-8")
    data = tmp_path / "t.ragcov"
    code, _o, err = cli(capsys, "import", str(run), "--format", "trec", "--corpus", str(corpus),
                        "--documents", str(docs_file), "--data-file", str(data), "-q")
    assert code == 0, err
    doc = _report(capsys, data, tmp_path / "t.json")
    text = docs[0]["text"]
    hit = set(range(0, len(chunks[0]["text"])))
    start = text.index(chunks[1]["text"])
    hit.update(range(start, start + len(chunks[1]["text"])))
    assert doc["documents"][docs[0]["doc_id"]]["covered_text_characters"] == _nonspace(text, hit)
    assert doc["text"]["method"] == "located"


def test_passages_in_a_pull_request_comment_carry_no_markup_of_their_own() -> None:
    from ragcov.compare.textdiff import Chunking, PassageChange, TextDiff, passage_lines

    doc = "Intro. </details> | *bold* `code` [link](x) end."
    change = PassageChange("d", len(doc), 0, 10, ((7, len(doc)),), (), 40, 0, doc)
    t = TextDiff(Chunking(2, 10.0, "split"), Chunking(3, 7.0, "split"), 1, [change])
    md = "\n".join(passage_lines(t, markdown=True))
    assert "</details>" not in md and "`code`" not in md and "| *" not in md
    assert "- `+` 7-" in md
    text = "\n".join(passage_lines(t))
    assert "  + 7-" in text and "</details>" in text  # the terminal shows the text as it is


def test_html_diff_page_shows_the_passages_as_text_escaped(capsys, tmp_path: Path) -> None:
    """``diff --html`` across chunkers: each passage newly covered or no longer covered is
    on the page with its whole text, as the JSON gives it, and markup in a document is text."""
    import markupsafe

    from ragcov.demo import sample_path

    pages = [json.loads(line) for line in
             sample_path("finqa_pages.jsonl").read_text(encoding="utf-8").splitlines()[:12]]
    hostile = {"doc_id": "evil<b>.md", "text": "Zebra migration starts in spring. <script>alert('x')"
               "</script> & the herds \"cross\" rivers.\n\nOther zebra facts: stripes differ."}
    docs = _jsonl(tmp_path / "docs.jsonl", [*pages, hostile])
    questions = sample_path("finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    ours = [json.loads(q) for q in questions if json.loads(q)["id"].rsplit("-", 1)[0]
            in {p["doc_id"] for p in pages}][:10]
    base_q = _jsonl(tmp_path / "bq.jsonl", ours)
    head_q = _jsonl(tmp_path / "hq.jsonl", [*ours, {"id": "z", "text": "zebra migration script"}])
    sides = {}
    for name, size, queries in (("base", 400, base_q), ("head", 300, head_q)):
        sides[name] = tmp_path / f"{name}.ragcov"
        code, _o, err = cli(capsys, "run", "--corpus", str(docs), "--split", "--chunk-size", str(size),
                            "--chunk-overlap", "0", "--retriever", "bm25", "-k", "2", "-q",
                            "--queries", str(queries), "--data-file", str(sides[name]))
        assert code == 0, err
    site = tmp_path / "site"
    code, out, err = cli(capsys, "diff", str(sides["base"]), str(sides["head"]), "--format", "json",
                         "--allow-different-retriever", "--html", str(site))
    assert code == 0, err
    changed = json.loads(out[:out.rindex("}") + 1])["text"]["documents"]
    page = (site / "diff.html").read_text(encoding="utf-8")
    assert 'id="passages"' in page
    assert "<script>" not in page and "evil&lt;b&gt;.md" in page
    assert any(p["doc_id"] == hostile["doc_id"] and p["gained"] for p in changed)
    for doc in changed:
        for kind, css in (("gained", "gain"), ("lost", "loss")):
            for p in doc[kind]:
                sign = "+" if kind == "gained" else "-"
                assert (f'<span class="span {css}">{sign} {p["start"]}-{p["end"]}</span>\n'
                        f'      <div class="text" dir="auto">{markupsafe.escape(p["text"])}</div>'
                        ) in page
    shown = sum(len(d["gained"]) + len(d["lost"]) for d in changed)
    assert page.count('<div class="passage ') == shown
