"""``ragcov diff``: checked against recounts read straight from the SQLite files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.compare.diff import diff_recordings
from ragcov.compare.recording import Recording
from ragcov.data.schema import new_meta

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
PAGES = SAMPLE / "finqa_pages.jsonl"
QUESTIONS = SAMPLE / "finqa_questions.jsonl"


# ---------------------------------------------------------------- recounts, no ragcov code
def raw(path: Path) -> dict:
    """Chunks, per-query retrieved sets and covered chunk ids, by plain SQL."""
    con = sqlite3.connect(path)
    chunks = {i: (cid, doc, text) for i, cid, doc, text in
              con.execute("SELECT idx, id, doc_id, text FROM chunks")}
    qid = dict(con.execute("SELECT idx, id FROM queries"))
    sets: dict[str, set[str]] = {q: set() for q in qid.values()}
    for q, c in con.execute("SELECT query_idx, chunk_idx FROM hits"):
        sets[qid[q]].add(chunks[c][0])
    con.close()
    covered = set().union(*sets.values()) if sets else set()
    docs: dict[str, list[str]] = {}
    for cid, doc, _text in chunks.values():
        docs.setdefault(doc, []).append(cid)
    return {"chunks": {cid: (doc, text) for cid, doc, text in chunks.values()}, "sets": sets,
            "covered": covered, "docs": docs}


def pair_by_text(b: dict, h: dict) -> dict[str, str]:
    """BASE chunk id -> HEAD chunk id of equal text: same document first, copies in order."""
    free = dict(h["chunks"])  # insertion order is corpus order
    out = {}
    for same_doc in (True, False):
        for cid, (doc, text) in b["chunks"].items():
            if cid in out:
                continue
            for hid, (hdoc, htext) in free.items():
                if htext == text and (hdoc == doc or not same_doc):
                    out[cid] = hid
                    del free[hid]
                    break
    return out


def doc_coverage(r: dict) -> dict[str, float]:
    return {d: sum(c in r["covered"] for c in cids) / len(cids) for d, cids in r["docs"].items()}


def run_sample(capsys, out: Path, k: int, *extra: str, corpus: Path = PAGES,
               queries: Path = QUESTIONS, chunk_size: int = 1000) -> Path:
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--split", "--chunk-size",
                       str(chunk_size), "--queries", str(queries), "--k", str(k),
                       "--data-file", str(out), "-q", *extra)
    assert code == 0, err
    return out


def diff_json(capsys, base: Path, head: Path, *extra: str) -> dict:
    code, out, err = cli(capsys, "diff", str(base), str(head), "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def check_same_corpus(doc: dict, base: Path, head: Path) -> None:
    b, h = raw(base), raw(head)
    assert doc["format"] == 1
    assert doc["base"]["chunk_coverage"] == pytest.approx(len(b["covered"]) / len(b["chunks"]))
    assert doc["head"]["chunk_coverage"] == pytest.approx(len(h["covered"]) / len(h["chunks"]))
    assert doc["delta"] == pytest.approx(doc["head"]["chunk_coverage"]
                                         - doc["base"]["chunk_coverage"])
    assert set(doc["gained"]) == h["covered"] - b["covered"]
    assert set(doc["lost"]) == b["covered"] - h["covered"]
    bd, hd = doc_coverage(b), doc_coverage(h)
    assert {d["doc_id"]: d["base"] for d in doc["documents"]} == pytest.approx(bd)
    assert {d["doc_id"]: d["head"] for d in doc["documents"]} == pytest.approx(hd)
    jac = {q: len(b["sets"][q] & h["sets"][q]) / len(b["sets"][q] | h["sets"][q])
           for q in b["sets"] if b["sets"][q] | h["sets"][q]}
    changed = {q: j for q, j in jac.items() if j < 1}
    assert {c["query_id"]: c["jaccard"] for c in doc["changed_queries"]} == pytest.approx(changed)
    assert doc["queries"]["changed"] == len(changed)
    assert [c["jaccard"] for c in doc["changed_queries"]] == sorted(changed.values())


# ---------------------------------------------------------------- k=5 against k=10
def record(*args: str) -> None:
    """``ragcov ARGS`` in process, for a module fixture (no capsys there)."""
    from ragcov.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code in (0, None)


@pytest.fixture(scope="module")
def k_files(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("diffk")
    for k in (5, 10):
        record("run", "--corpus", str(PAGES), "--split", "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--k", str(k), "--data-file", str(d / f"k{k}.ragcov"), "-q")
    return d / "k5.ragcov", d / "k10.ragcov"


def test_k5_against_k10_matches_recount(capsys, k_files) -> None:
    k5, k10 = k_files
    doc = diff_json(capsys, k5, k10, "--allow-different-k")
    check_same_corpus(doc, k5, k10)
    assert doc["lost"] == []  # a longer top-k of the same ranking only adds chunks
    assert all(c["jaccard"] == pytest.approx(0.5) for c in doc["changed_queries"])
    assert doc["base"]["k"] == 5 and doc["head"]["k"] == 10


def test_different_k_refused_like_combine(capsys, k_files) -> None:
    code, _, err = cli(capsys, "diff", *map(str, k_files))
    assert code == 1
    assert "cannot compare coverage data: k differs (5 in" in err
    assert "--allow-different-k" in err
    assert len(err.strip().splitlines()) == 1


def test_fail_under_delta(capsys, k_files) -> None:
    k5, k10 = k_files
    code, _, err = cli(capsys, "diff", str(k10), str(k5), "--allow-different-k",
                       "--fail-under-delta", "5")
    assert code == 2 and "Coverage failure" in err
    assert cli(capsys, "diff", str(k10), str(k5), "--allow-different-k",
               "--fail-under-delta", "50")[0] == 0
    assert cli(capsys, "diff", str(k5), str(k10), "--allow-different-k",
               "--fail-under-delta", "0")[0] == 0  # a rise never fails
    assert cli(capsys, "diff", str(k5), str(k10), "--fail-under-delta", "150")[0] == 1


def test_fail_under_delta_judges_the_drop_as_printed() -> None:
    """A drop shown as -19.0 points passes a gate of 19, as report's total is judged as shown;
    past the printed digits it fails, and the message shows the drop at that precision."""
    from ragcov.compare.render import delta_failure

    assert delta_failure(-0.19003, 19, precision=1) is None
    assert delta_failure(-0.19003, 19, precision=3) is not None
    assert "changed by -19.003 points" in delta_failure(-0.19003, 19, precision=3)
    assert delta_failure(-0.1906, 19, precision=1) is not None  # shown as -19.1
    assert delta_failure(-0.0000001, 0, precision=1) is not None  # any drop, shown as -0.1
    assert delta_failure(0.0, 0) is None and delta_failure(0.05, 0) is None


def test_markdown_is_a_pull_request_comment(capsys, k_files) -> None:
    code, out, _ = cli(capsys, "diff", *map(str, k_files), "--allow-different-k",
                       "--format", "markdown")
    assert code == 0
    assert out.startswith("### Chunk coverage +")
    assert "<details><summary>Full list</summary>" in out and out.rstrip().endswith("</details>")
    top = out.split("**Largest document changes**")[1].split("\n\n")[1]
    assert len([line for line in top.splitlines() if line.startswith("| ")]) == 1 + 10
    assert len(out) < 65536


def test_html_diff_page(capsys, k_files, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(k_files[1]), "-d", str(site))[0] == 0
    assert cli(capsys, "diff", *map(str, k_files), "--allow-different-k", "--html",
               str(site))[0] == 0
    page = (site / "diff.html").read_text(encoding="utf-8")
    assert (site / "index.html").exists() and 'href="diff.html" class="current"' in page
    gained = raw(k_files[1])["covered"] - raw(k_files[0])["covered"]
    assert all(f"<code>{c}</code>" in page for c in gained)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = cli(capsys, "diff", *map(str, k_files), "--allow-different-k", "--html",
                       str(other))
    assert code == 1 and "not a ragcov HTML report" in err


@pytest.mark.slow
def test_dense_k5_against_k10(capsys, tmp_path: Path, minilm_path: str) -> None:
    dense = ("--retriever", "dense", "--model", minilm_path)
    k5 = run_sample(capsys, tmp_path / "k5.ragcov", 5, *dense)
    k10 = run_sample(capsys, tmp_path / "k10.ragcov", 10, *dense)
    doc = diff_json(capsys, k5, k10, "--allow-different-k")
    check_same_corpus(doc, k5, k10)
    assert doc["delta"] > 0


# ---------------------------------------------------------------- a re-chunked corpus
def test_rechunked_corpus_with_new_and_removed_documents(capsys, tmp_path: Path) -> None:
    pages = PAGES.read_text(encoding="utf-8").splitlines()
    (tmp_path / "old.jsonl").write_text("\n".join(pages[:208]) + "\n", encoding="utf-8")
    (tmp_path / "new.jsonl").write_text("\n".join(pages[3:]) + "\n", encoding="utf-8")
    base = run_sample(capsys, tmp_path / "base.ragcov", 5, "--retriever", "bm25",
                      corpus=tmp_path / "old.jsonl")
    head = run_sample(capsys, tmp_path / "head.ragcov", 5, "--retriever", "bm25",
                      corpus=tmp_path / "new.jsonl", chunk_size=800)
    code, _, err = cli(capsys, "diff", str(base), str(head), "--format", "json")
    assert code == 1 and "--allow-different-retriever" in err  # BM25 over another corpus
    doc = diff_json(capsys, base, head, "--allow-different-retriever")
    b, h = raw(base), raw(head)
    partner = pair_by_text(b, h)
    new_docs = set(h["docs"]) - set(b["docs"])
    removed = set(b["docs"]) - set(h["docs"])
    assert len(new_docs) == 10 and len(removed) == 3
    assert {d["doc_id"] for d in doc["new_documents"]} == new_docs
    assert {d["doc_id"] for d in doc["removed_documents"]} == removed
    new_chunks = [c for d in new_docs for c in h["docs"][d]]
    assert sum(d["head_chunks"] for d in doc["new_documents"]) == len(new_chunks)
    assert sum(d["head_covered"] for d in doc["new_documents"]) == len(
        set(new_chunks) & h["covered"])
    back = {v: k for k, v in partner.items()}
    assert set(doc["gained"]) == {c for c in h["covered"] if h["chunks"][c][0] not in new_docs
                                  and back.get(c) not in b["covered"]}
    assert set(doc["lost"]) == {c for c in b["covered"] if b["chunks"][c][0] not in removed
                                and partner.get(c) not in h["covered"]}
    assert doc["matched_chunks"] == len(partner) > 0 and not doc["same_corpus"]
    bd, hd = doc_coverage(b), doc_coverage(h)
    both = set(bd) & set(hd)
    assert {d["doc_id"]: d["base"] for d in doc["documents"]} == pytest.approx(
        {d: bd[d] for d in both})
    assert {d["doc_id"]: d["head"] for d in doc["documents"]} == pytest.approx(
        {d: hd[d] for d in both})
    code, out, _ = cli(capsys, "diff", str(base), str(head), "--allow-different-retriever")
    assert code == 0 and "New documents: 10 (" in out and "Removed documents: 3 (" in out


# ---------------------------------------------------------------- properties
def recording(sets: list[list[int]], n_chunks: int, name: str) -> Recording:
    q = np.repeat(np.arange(len(sets)), [len(s) for s in sets]).astype(np.int64)
    c = np.array([x for s in sets for x in s], dtype=np.int64)
    return Recording(path=Path(name), meta=new_meta(3, {"kind": "test"}, "h"),
                     chunk_ids=[f"c{j}" for j in range(n_chunks)],
                     doc_ids=np.array([f"d{j % 3}" for j in range(n_chunks)], dtype=object),
                     _hashes=[f"h{j}" for j in range(n_chunks)],
                     query_ids=[f"q{i}" for i in range(len(sets))], hit_query=q, hit_chunk=c,
                     hit_rank=None)


suites = st.lists(st.lists(st.integers(0, 11), max_size=4), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(suites, suites)
def test_properties_against_python_sets(a: list[list[int]], b: list[list[int]]) -> None:
    d = diff_recordings(recording(a, 12, "a"), recording(b, 12, "b"))
    cov_a = {f"c{x}" for s in a for x in s}
    cov_b = {f"c{x}" for s in b for x in s}
    assert d.delta == pytest.approx(d.head_coverage - d.base_coverage)
    assert d.base_coverage == len(cov_a) / 12 and d.head_coverage == len(cov_b) / 12
    assert set(d.gained) == cov_b - cov_a and set(d.lost) == cov_a - cov_b
    assert not set(d.gained) & set(d.lost)
    n = min(len(a), len(b))
    assert d.queries_compared == n
    for i in range(n):
        sa, sb = set(a[i]), set(b[i])
        want = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
        assert d.jaccard[i] == pytest.approx(want)
    assert ((d.jaccard >= 0) & (d.jaccard <= 1)).all()


def test_ids_are_printed_and_escaped_as_they_are(capsys, tmp_path: Path) -> None:
    chunks = [{"id": f"[bold]c{i}:smile:", "doc_id": "<b>doc</b>" if i < 3 else "plain",
               "text": text} for i, text in enumerate(
        ["Paris is the capital of France.", "Berlin is the capital of Germany.",
         "Tokyo is the capital of Japan.", "Plants make sugar from sunlight."])]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "question": "capital of Japan"}) + "\n")
    files = []
    for k in (1, 2):
        files.append(str(tmp_path / f"k{k}.ragcov"))
        assert cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                   "--retriever", "bm25", "--k", str(k), "--data-file", files[-1], "-q")[0] == 0
    code, out, _ = cli(capsys, "diff", *files, "--allow-different-k", "--format", "markdown",
                       "--show-ids")
    assert code == 0 and "`[bold]c" in out and ":smile:`" in out
    code, out, _ = cli(capsys, "diff", *files, "--allow-different-k", "--html",
                       str(tmp_path / "site"))
    assert "<b>doc</b>" in out  # the terminal shows the id as it is
    page = (tmp_path / "site" / "diff.html").read_text(encoding="utf-8")
    assert "<b>doc</b>" not in page and "&lt;b&gt;doc&lt;/b&gt;" in page


@pytest.mark.parametrize("format", ["text", "markdown"])
def test_control_characters_in_queries_are_escaped_in_diff_and_gap(capsys, tmp_path: Path,
                                                                    format: str) -> None:
    """A query id or text holding ESC[2J (clear screen) or a bidi override is data, not a
    terminal command: diff and gap write it escaped, as every other printed line does."""
    chunks = [{"id": f"c{i}", "doc_id": "d", "text": text} for i, text in enumerate(
        ["Paris is the capital of France.", "Berlin is the capital of Germany.",
         "Tokyo is the capital of Japan.", "Plants make sugar from sunlight."])]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "esc\x1b[31mred", "text": "capital \x1b[2J of Japan"})
                       + "\n" + json.dumps({"id": "q\u202eevil", "text": "sugar \u202e plants"})
                       + "\n")
    files = []
    for k in (1, 2):
        files.append(str(tmp_path / f"k{k}.ragcov"))
        assert cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                   "--retriever", "bm25", "--k", str(k), "--data-file", files[-1], "-q")[0] == 0
    outputs = []
    code, out, err = cli(capsys, "diff", *files, "--allow-different-k", "--format", format)
    assert code == 0, err
    outputs.append(out)
    code, out, err = cli(capsys, "gap", "--tests", files[0], "--traffic", files[1],
                         "--allow-different-k", "--format", format)
    assert code == 0, err
    outputs.append(out)
    code, out, err = cli(capsys, "diff", *files, "--allow-different-k", "--format", format,
                         "-o", str(tmp_path / "d.txt"))
    assert code == 0, err
    outputs.append((tmp_path / "d.txt").read_text(encoding="utf-8"))
    for text in outputs:
        assert "\x1b" not in text and "\u202e" not in text, text
    assert "\\x1b[31mred" in outputs[0] + outputs[2]
    assert "\\x1b[2J" in outputs[1] or "\\u202e" in outputs[1], outputs[1]
