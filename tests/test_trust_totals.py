"""Every name and total means one thing (docs/reliability.md, "Third round").

Reachability totals counted what ``probe --sample`` probed in one place and the whole
corpus in another (``reachable_chunks`` 120 beside ``coverage_of_reachable`` 94/172), and
ignored the report's exclusions (TOTAL 313 chunks beside ``reachable_chunks`` 336).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus

SAMPLE = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"
K = 3
PLANTED = ("Quarterly aquaculture hatchery yields for sturgeon caviar rose sharply while "
           "zebrafish broodstock mortality in the Norwegian fjord pens fell.")


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 sample pages, k + 1 copies of one chunk (the last can never be retrieved: ties go
    to corpus order), the first 60 questions through BM25 at k = 3, then a probe of a
    seeded sample of 120 chunks and of every copy."""
    folder = tmp_path_factory.mktemp("probed")
    pages = folder / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text(encoding="utf-8")
                             .splitlines(True)[:40]), encoding="utf-8")
    corpus = folder / "chunks.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for c in load_corpus(pages, split=True):
            f.write(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text}) + "\n")
        for n in range(K + 1):
            f.write(json.dumps({"id": f"copy{n}", "doc_id": "planted", "text": PLANTED}) + "\n")
    queries = folder / "q.jsonl"
    queries.write_text("".join((SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8")
                               .splitlines(True)[:60]), encoding="utf-8")
    data = folder / ".ragcov"
    from ragcov.cli import main

    for args in (["run", "--corpus", str(corpus), "--queries", str(queries), "--retriever", "bm25",
                  "-k", str(K), "--data-file", str(data), "-q"],
                 ["probe", "--corpus", str(corpus), "--retriever", "bm25", "--data-file", str(data),
                  "--sample", "120", "-q"],
                 ["probe", "--corpus", str(corpus), "--retriever", "bm25", "--data-file", str(data),
                  "--include", "planted", "-q"]):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code in (0, None)
    return data


def _json(capsys, data: Path, *scope: str) -> dict:
    code, out, err = cli(capsys, "json", "--data-file", str(data), "-o", "-", *scope)
    assert code == 0, err
    return json.loads(out)


def _recount(doc: dict) -> dict[str, int]:
    """The totals recounted by hand from the per-chunk statuses of the counted chunks."""
    statuses = [c.get("status") for c in doc["chunks"].values()]
    return {s or "unknown": statuses.count(s) for s in ("covered", "untested", "unreachable", None)}


def test_probe_sample_totals_have_one_definition(probed: Path, capsys) -> None:
    doc = _json(capsys, probed)
    t, seen = doc["totals"], _recount(doc)
    assert t["chunks"] == len(doc["chunks"])
    assert t["unreachable_chunks"] == seen["unreachable"] >= 1  # the last copy
    assert t["untested_chunks"] == seen["untested"]
    assert t["unknown_chunks"] == seen["unknown"] > 0  # a sample leaves chunks with no status
    assert 120 <= t["probed_chunks"] <= 120 + K + 1  # the sample and every copy
    assert t["not_probed_chunks"] == t["chunks"] - t["probed_chunks"]
    # One denominator: the chunks not shown unreachable, in both places it is used.
    assert t["reachable_chunks"] == t["chunks"] - t["unreachable_chunks"]
    assert t["coverage_of_reachable"] == pytest.approx(seen["covered"] / t["reachable_chunks"])
    # The text says how many were not probed, and that the figure is then a lower bound.
    code, out, _ = cli(capsys, "report", "--data-file", str(probed))
    line = next(x for x in out.splitlines() if x.startswith("Reachability"))
    assert f"{t['unknown_chunks']} not probed (no status)" in line
    assert f"({seen['covered']} of {t['reachable_chunks']})" in line


def test_reachability_counts_what_the_report_counts(probed: Path, capsys) -> None:
    """--exclude and --min-chunk-chars: the reachability totals, line and JSON count the table's
    chunks (before, they counted the whole corpus beside a scoped TOTAL)."""
    scope = ("--exclude", "million", "--min-chunk-chars", "400")
    doc = _json(capsys, probed, *scope)
    t, seen = doc["totals"], _recount(doc)
    assert t["chunks"] == len(doc["chunks"]) < _json(capsys, probed)["totals"]["chunks"]
    assert t["excluded_chunks"] > 0
    assert t["reachable_chunks"] == t["chunks"] - t["unreachable_chunks"]
    assert (t["untested_chunks"], t["unreachable_chunks"], t["unknown_chunks"]) == (
        seen["untested"], seen["unreachable"], seen["unknown"])
    # every missing chunk of the table is untested, unreachable or unknown: nothing else
    missing = t["chunks"] - t["covered_chunks"]
    assert missing == t["untested_chunks"] + t["unreachable_chunks"] + t["unknown_chunks"]
    code, out, _ = cli(capsys, "report", "--data-file", str(probed), *scope)
    total = next(x for x in out.splitlines() if x.startswith("TOTAL")).split()
    assert int(total[1]) == t["chunks"]
    line = next(x for x in out.splitlines() if x.startswith("Reachability"))
    assert line.startswith(f"Reachability (ragcov probe): {t['untested_chunks']} untested")
    # The HTML index says the same numbers.
    site = probed.parent / "site"
    assert cli(capsys, "html", "--data-file", str(probed), "-d", str(site), *scope)[0] == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert f"{t['untested_chunks']} untested</span>" in index
    assert f"of {t['chunks']} chunks;" in index


def test_reachable_scope_counts_the_unreachable_it_sets_aside(probed: Path, capsys) -> None:
    doc = _json(capsys, probed, "--reachable")
    t = doc["totals"]
    # The table leaves the unreachable chunks out; the reachable denominator is that table.
    assert t["reachable_chunks"] == t["chunks"]
    assert t["coverage_of_reachable"] == pytest.approx(t["chunk_coverage"])
    assert t["unreachable_chunks"] >= 1 and t["excluded_chunks"] >= t["unreachable_chunks"]


def test_hubs_and_unreachable_chunks_are_named_by_id(probed: Path, capsys) -> None:
    code, out, err = cli(capsys, "probe", "--corpus", str(probed.parent / "chunks.jsonl"),
                         "--retriever", "bm25", "--data-file", str(probed), "--include", "planted")
    assert code == 0, err
    # The last copy's id, and the copy ranked in its place, by id (planted#N named positions).
    assert f"  copy{K}  displaced by copy0" in out
    assert "planted#" not in out
    assert "hub Gini (k-occurrence over all" in out


def _probe_json(capsys, rc: Path, probed: Path) -> str:
    """``ragcov probe --include planted --format json`` of the probed file under ``rc``."""
    code, out, err = cli(capsys, "--rcfile", str(rc), "probe", "--corpus",
                         str(probed.parent / "chunks.jsonl"), "--retriever", "bm25",
                         "--data-file", str(probed), "--include", "planted", "--format", "json")
    assert code == 0, err
    return out


def test_probe_prints_the_totals_the_report_prints_under_a_config(probed: Path, capsys,
                                                                    tmp_path: Path) -> None:
    rc = tmp_path / "ragcov.toml"
    rc.write_text('exclude = ["million"]\nmin_chunk_chars = 400\n', encoding="utf-8")
    out = _probe_json(capsys, rc, probed)
    probe_totals = json.loads(out)["totals"]
    report_totals = _json(capsys, probed, "--rcfile", str(rc))["totals"]
    for key in ("chunks", "untested_chunks", "unreachable_chunks", "reachable_chunks",
                "coverage_of_reachable"):
        assert probe_totals[key] == report_totals[key], key
    assert report_totals["excluded_chunks"] > 0


# ------------------------------------------------------------- bidi and control characters
ODD = {"doc\u202etxt.exe": "Invoices of the year with totals per quarter and region.",
       "line\u2028break": "A manual page on valves, pumps and their\x00 maintenance.",
       "plain": "Plain text about quarterly revenue and its growth.",
       # prints as "plain" though it is another document
       "pl\u200bain": "Notes on warehouse stock and shipping times."}


@pytest.fixture
def odd_ids(tmp_path: Path, capsys) -> Path:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "doc_id": doc, "text": text}) + "\n"
                              for i, (doc, text) in enumerate(ODD.items())), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "quarterly revenue growth"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                       "--retriever", "bm25", "-k", "1", "--data-file", str(tmp_path / ".ragcov"),
                       "-q")
    assert code == 0, err
    return tmp_path / ".ragcov"


def test_rows_with_bidi_and_separator_ids_stay_aligned(odd_ids: Path, capsys) -> None:
    code, out, _ = cli(capsys, "report", "--data-file", str(odd_ids), "-m", "--show-ids")
    rows = [line for line in out.splitlines()[1:] if line and not line.startswith("-")]
    assert "doc\\u202etxt.exe" in out and "line\\u2028break" in out
    assert "\u202e" not in out and "\u2028" not in out
    assert "pl\\u200bain" in out and "\u200b" not in out
    # Every row's Cover column ends at one place (it was padded by the raw id's length).
    covers = {line.index("%") for line in rows if "%" in line}
    assert len(covers) == 1, out


def test_html_shows_bidi_and_nul_escaped_as_the_terminal_does(odd_ids: Path, capsys) -> None:
    site = odd_ids.parent / "site"
    assert cli(capsys, "html", "--data-file", str(odd_ids), "-d", str(site))[0] == 0
    pages = {p.name: p.read_text(encoding="utf-8") for p in site.glob("*.html")}
    everything = "".join(pages.values())
    assert "\u202e" not in everything and "\x00" not in everything and "\u2028" not in everything
    assert "doc\\u202etxt.exe" in pages["index.html"] and "pl\\u200bain" in pages["index.html"]
    assert "\u200b" not in everything
    assert any("their\\x00 maintenance" in text for text in pages.values())


@pytest.mark.browser
def test_bidi_ids_read_as_written_in_chromium(odd_ids: Path, capsys) -> None:
    """What a person sees: the id in its stored order with the override shown, not
    "docexe.txt"; the NUL shown as \\x00 in the chunk's text."""
    from selenium.webdriver.common.by import By

    from test_html import _chrome

    site = odd_ids.parent / "site"
    assert cli(capsys, "html", "--data-file", str(odd_ids), "-d", str(site))[0] == 0
    driver = _chrome()
    try:
        driver.get((site / "index.html").as_uri())
        names = [r.get_attribute("data-name") for r in
                 driver.find_elements(By.CSS_SELECTOR, "#documents tbody tr")]
        shown = driver.find_element(By.ID, "documents").text
        assert "doc\\u202etxt.exe" in shown and "docexe.txt" not in shown
        assert "doc\\u202etxt.exe" in names
        link = driver.find_element(By.PARTIAL_LINK_TEXT, "line\\u2028break")
        link.click()
        assert "their\\x00 maintenance" in driver.find_element(By.TAG_NAME, "body").text
    finally:
        driver.quit()


# ------------------------------------------------------------------- fewer than k
CITY = [("paris", "Paris is the capital of France."), ("berlin", "Berlin is the capital of Germany."),
        ("tokyo", "Tokyo is the capital of Japan."), ("rome", "Rome is the capital of Italy."),
        ("cells", "Mitochondria power the cell."), ("leaves", "Leaves turn sunlight into sugar."),
        ("debt", "The company issued new long-term debt."), ("dividend", "Dividends rose.")]


def every_k(query: str, k: int) -> list[str]:
    """Word overlap, ties by id: always k chunks."""
    words = set(query.lower().split())
    ranked = sorted(CITY, key=lambda c: (-len(words & set(c[1].lower().rstrip(".").split())), c[0]))
    return [cid for cid, _ in ranked[:k]]


def three_at_most(query: str, k: int) -> list[str]:
    """The same with a reranker's cut: never more than 3, whatever k is asked."""
    return every_k(query, min(k, 3))


def test_a_retriever_returning_fewer_than_k_is_recorded_at_its_depth(tmp_path: Path, capsys,
                                                                     monkeypatch) -> None:
    import warnings

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": c, "doc_id": "d", "text": t}) + "\n" for c, t in CITY))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n" for i, q in enumerate(
        ["capital of France", "capital of Japan", "cell power", "new debt"])))
    base = ["run", "--corpus", str(corpus), "--queries", str(queries), "-k", "5"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = cli(capsys, *base, "--retriever", "test_trust_totals:three_at_most",
                           "--data-file", str(tmp_path / "short.ragcov"))
    said = err + "".join(str(w.message) for w in caught)
    assert code == 0, err
    assert said.count("returned fewer than k=5 distinct chunks for 4 of 4 queries (depth 3)") == 1
    code, out, _ = cli(capsys, "report", "--data-file", str(tmp_path / "short.ragcov"))
    assert out.splitlines()[0] == ("retriever: callable (test_trust_totals:three_at_most), k=5; "
                                   "4 of 4 queries retrieved fewer than 5 chunks (effective depth 3); "
                                   "workload ceiling 100% (4 queries x k=5 of 8 chunks)")
    doc = _json(capsys, tmp_path / "short.ragcov")
    assert doc["meta"]["depth"] == {"k": 5, "effective_depth": 3, "mean_depth": 3.0, "short_queries": 4}
    assert {q["depth"] for q in doc["queries"].values()} == {3}
    # A true k = 5 run: diff refuses to put a depth-3 number beside it unless told.
    assert cli(capsys, *base, "--retriever", "test_trust_totals:every_k",
               "--data-file", str(tmp_path / "full.ragcov"), "-q")[0] == 0
    full = _json(capsys, tmp_path / "full.ragcov")
    assert full["meta"]["depth"]["short_queries"] == 0
    code, _, err = cli(capsys, "diff", str(tmp_path / "full.ragcov"), str(tmp_path / "short.ragcov"),
                       "--allow-different-retriever")
    assert code == 1 and "the effective depth differs (5 in" in err and "--allow-different-k" in err
    assert cli(capsys, "diff", str(tmp_path / "full.ragcov"), str(tmp_path / "short.ragcov"),
               "--allow-different-retriever", "--allow-different-k")[0] == 0
    # Two files of one retriever and k whose lists are of two depths: combine says so.
    import shutil
    import sqlite3

    shallow = tmp_path / "shallow.ragcov"
    shutil.copy(tmp_path / "full.ragcov", shallow)
    with sqlite3.connect(shallow) as con:
        con.execute("DELETE FROM hits WHERE rank > 3")
        con.execute("UPDATE queries SET id = id || '-b'")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = cli(capsys, "combine", str(tmp_path / "full.ragcov"), str(shallow), "--keep",
                           "-o", str(tmp_path / "both.ragcov"))
    said = err + "".join(str(w.message) for w in caught)
    assert code == 0, err
    assert "recorded at k=5 but to different depths (5 in" in said and "3 in" in said
    # diff of one retriever's two suites: lists shorter in one come from its queries, and
    # are compared as they are.
    code, out, err = cli(capsys, "diff", str(tmp_path / "full.ragcov"), str(shallow))
    assert code == 0 and "effective depth" not in err, err


def test_show_ids_reaches_probe_and_select(probed: Path, capsys, tmp_path: Path) -> None:
    corpus = str(probed.parent / "chunks.jsonl")
    probe = ["probe", "--corpus", corpus, "--retriever", "bm25", "--data-file", str(probed),
             "--include", "planted"]
    code, out, _ = cli(capsys, *probe)
    assert code == 0 and "Documents with the most untested chunks" in out
    code, out, _ = cli(capsys, *probe, "--show-ids", "--format", "text")
    untested = [c for c, e in _json(capsys, probed)["chunks"].items()
                if e.get("status") == "untested" and "exclusion_candidate" not in e]  # junk: no test
    line = next(x for x in out.splitlines() if x.startswith("Untested chunks ("))
    assert line.startswith(f"Untested chunks ({len(untested)})") and untested[0] in line
    # select: what a cut loses, as DOC:N ranges, or by id
    order = tmp_path / "order.json"
    code, out, _ = cli(capsys, "select", "--data-file", str(probed), "--budget", "5", "-o", str(order))
    lost = json.loads(order.read_text())["cut"]["lost_chunks"]
    assert code == 0 and lost and f"The cut loses {len(lost)} chunks the pool covers: " in out
    code, out, _ = cli(capsys, "select", "--data-file", str(probed), "--budget", "5", "-o", str(order),
                       "--show-ids")
    assert f"covers: {', '.join(lost[:3])}" in out


def test_probe_counts_the_configs_include_omit_and_reachable_as_report_does(probed: Path, capsys,
                                                                           tmp_path: Path) -> None:
    rc = tmp_path / "ragcov.toml"
    rc.write_text('exclude_docs = ["planted"]\nreachable = true\n', encoding="utf-8")
    out = _probe_json(capsys, rc, probed)
    report_totals = _json(capsys, probed, "--rcfile", str(rc))["totals"]
    probe_totals = json.loads(out)["totals"]
    for key in ("reachable_chunks", "unreachable_chunks", "coverage_of_reachable"):
        assert probe_totals[key] == report_totals[key], key
    assert report_totals["reachable_chunks"] == report_totals["chunks"]  # --reachable's table
