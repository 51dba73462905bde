"""The HTML report: numbers, escaping, file names, atomic replacement, and a real browser."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.reporters import html as html_mod
from ragcov.reporters.html import (
    MARKER,
    curve_from_order,
    document_filename,
    html_report,
)
from ragcov.retrieval import Run
from ragcov.summary import display_percent

HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_DOC = "<script>alert(2)</script>/../evil"

CHUNKS = [
    {"id": "paris", "doc_id": "europe", "text": "Paris is the capital of France."},
    {"id": "berlin", "doc_id": "europe", "text": "Berlin is Germany's capital."},
    {"id": "madrid", "doc_id": "europe", "text": "Madrid is the Spanish capital."},
    {"id": "tokyo", "doc_id": "asia", "text": "Tokyo is the capital of Japan."},
    {"id": "photosynthesis", "doc_id": "biology", "text": "Plants turn sunlight into sugar."},
    {"id": "mitochondria", "doc_id": "biology", "text": "Mitochondria power the cell."},
    {"id": "interest", "doc_id": "finance", "text": "Interest expense rose in 2009."},
    {"id": "dividends", "doc_id": "finance", "text": "Dividends of $0.25 per share."},
    {"id": "evil", "doc_id": HOSTILE_DOC, "text": HOSTILE},
]
# query id -> (text, retrieved chunk ids best first)
RETRIEVALS = {
    "q1": ("capital of France <i>?</i>", ["paris", "berlin"]),
    "q2": ("how do plants make sugar", ["photosynthesis"]),
    "q<3>": ("\"><svg onload=alert(3)>", ["evil", "paris"]),
}
# Worked by hand from RETRIEVALS: document -> (chunks, covered).
EXPECTED_DOCS = {"europe": (3, 2), "asia": (1, 0), "biology": (2, 1), "finance": (2, 0),
                 HOSTILE_DOC: (1, 1)}
EXPECTED_TOTAL = (9, 4)


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(c) + "\n" for c in CHUNKS), encoding="utf-8")
    corpus = load_corpus(corpus_file)
    run = Run(k=2, retriever={"kind": "hand-made"})
    for qid, (text, ids) in RETRIEVALS.items():
        run.add(qid, text, [(cid, 1.0 / rank) for rank, cid in enumerate(ids, start=1)])
    path = tmp_path / ".ragcov"
    CoverageData(path).write(corpus, run, context={"q<3>": "tests/test_x.py::test_<evil>"})
    return path


def build(data_file: Path, out: Path, **kw) -> Path:
    data = CoverageData(data_file)
    return html_report(data.matrix(), data.chunk_texts(), out, **kw)


class Rows(HTMLParser):
    """The data-sort values of each body row of one table, as the browser would read them."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.depth, self.in_body = table_id, 0, False
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == self.table_id:
            self.depth = 1
        elif self.depth and tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag == "td" and "data-sort" in a:
            self.rows[-1].append(a["data-sort"])

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False
        elif tag == "table":
            self.depth = 0


def table_rows(page: Path, table_id: str) -> list[list[str]]:
    p = Rows(table_id)
    p.feed(page.read_text(encoding="utf-8"))
    return p.rows


def test_index_numbers_match_a_hand_count_and_the_text_report(data_file: Path, tmp_path: Path):
    index = build(data_file, tmp_path / "site", precision=1)
    rows = {r[0]: r for r in table_rows(index, "documents")}
    assert set(rows) == set(EXPECTED_DOCS)
    for doc, (chunks, covered) in EXPECTED_DOCS.items():
        name, n, cov, missing, frac = rows[doc]
        assert (int(n), int(cov), int(missing)) == (chunks, covered, chunks - covered)
        assert float(frac) == pytest.approx(covered / chunks)
    text = index.read_text(encoding="utf-8")
    total = display_percent(EXPECTED_TOTAL[1] / EXPECTED_TOTAL[0], 1)
    assert total == "44.4"
    assert f'id="total-cc">{total}%<' in text
    # The same figure the text report prints at the same precision.
    from ragcov.reporters.table import render_table
    from ragcov.summary import summarize

    table = render_table(summarize(CoverageData(data_file).matrix()), precision=1)
    assert table.splitlines()[-1].split()[-1] == f"{total}%"


def test_every_page_escapes_corpus_query_and_context_text(data_file: Path, tmp_path: Path):
    build(data_file, tmp_path / "site")
    pages = list((tmp_path / "site").glob("*.html"))
    assert len(pages) == 2 + len(EXPECTED_DOCS)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for raw in ("<img", "<svg onload", "<script>alert", "<i>?", "test_<evil>", "q<3>"):
            assert raw not in text, (page.name, raw)
    everything = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert "&lt;img src=x onerror=alert(1)&gt;" in everything
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in everything
    assert "test_&lt;evil&gt;" in everything


def test_document_page_shades_chunks_and_lists_the_tests_that_hit_them(data_file: Path,
                                                                      tmp_path: Path):
    build(data_file, tmp_path / "site")
    page = (tmp_path / "site" / document_filename("europe")).read_text(encoding="utf-8")
    assert page.count('class="chunk covered"') == 2
    assert page.count('class="chunk missing"') == 1
    # paris was retrieved by q1 (rank 1) and q<3> (rank 2): both tests, with their text.
    paris = page[page.index(">paris<"):page.index(">berlin<")]
    assert "2 hits" in paris
    assert ">q1<" in paris and ">q&lt;3&gt;<" in paris
    assert "capital of France &lt;i&gt;?&lt;/i&gt;" in paris
    assert "tests/test_x.py::test_&lt;evil&gt;" in paris
    madrid = page[page.index(">madrid<"):]
    assert "not retrieved" in madrid


def test_queries_page_lists_each_query_retrievals_in_rank_order(data_file: Path, tmp_path: Path):
    build(data_file, tmp_path / "site")
    page = (tmp_path / "site" / "queries.html").read_text(encoding="utf-8")
    rows = {r[0]: r for r in table_rows(tmp_path / "site" / "queries.html", "queries")}
    assert set(rows) == set(RETRIEVALS)
    for qid, (text, ids) in RETRIEVALS.items():
        assert rows[qid][1] == text and int(rows[qid][2]) == len(ids)
    q3 = page[page.index('id="q2"'):]
    assert q3.index(">evil<") < q3.index(">paris<")


@pytest.mark.parametrize("doc_ids", [
    ["../../etc/passwd", "a/b", "a_b", "A", "a", "", "...", "con", "ünï cödé " * 20],
])
def test_document_file_names_are_safe_and_unique(doc_ids: list[str], tmp_path: Path):
    names = [document_filename(d) for d in doc_ids]
    assert len(set(n.lower() for n in names)) == len(doc_ids)
    for n in names:
        assert "/" not in n and "\\" not in n and ".." not in n and n.endswith(".html")
        assert len(n) < 100
        (tmp_path / n).write_text("x")  # the filesystem accepts it
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_refuses_to_replace_a_directory_that_is_not_a_report(data_file: Path, tmp_path: Path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(RagcovError, match="not a ragcov HTML report"):
        build(data_file, target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_rebuild_replaces_the_old_report_whole(data_file: Path, tmp_path: Path):
    target = tmp_path / "site"
    build(data_file, target)
    (target / "d_stale_0000000000.html").write_text("old")
    build(data_file, target)
    assert not (target / "d_stale_0000000000.html").exists()
    assert (target / MARKER).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_a_failed_build_leaves_the_previous_report(data_file: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "site"
    build(data_file, target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    calls = {"n": 0}
    real_write = html_mod._write

    def failing_write(path: Path, text: str) -> None:
        # Fake: a disk that fills up part-way, which a test cannot otherwise arrange.
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real_write(path, text)

    monkeypatch.setattr(html_mod, "_write", failing_write)
    with pytest.raises(OSError):
        build(data_file, target)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_curve_from_an_order_is_worked_by_hand(data_file: Path):
    m = CoverageData(data_file).matrix()
    # q<3> reaches evil, paris (2 of 9); q1 adds berlin (3); q2 adds photosynthesis (4).
    c = curve_from_order(m, ["q<3>", "q1", "q2"], "mine")
    assert c.values == pytest.approx([2 / 9, 3 / 9, 4 / 9])
    with pytest.raises(RagcovError, match="not in the data file: nope"):
        curve_from_order(m, ["q1", "nope"], "bad")




def test_cli_draws_the_curve_of_an_order_file(data_file: Path, tmp_path: Path, capsys):
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"strategy": "<b>mine</b>", "order": ["q2", "q1", "q<3>"],
                                 "curve": [0.1, 0.2, 0.3]}), encoding="utf-8")
    site = tmp_path / "site"
    code, out, err = cli(capsys, "html", "--data-file", str(data_file), "-d", str(site),
                         "--order", str(order), "--no-greedy")
    assert code == 0, err
    assert "Wrote HTML report" in out
    text = (site / "index.html").read_text(encoding="utf-8")
    assert text.count("<polyline") == 2  # the order and the suite as recorded
    assert "&lt;b&gt;mine&lt;/b&gt;" in text and "<b>mine" not in text
    # Final CC of both orderings is the whole suite's: 4 of 9 at precision 0.
    assert text.count(">44%<") >= 2


def test_cli_without_selection_data_draws_no_curve(data_file: Path, tmp_path: Path, capsys):
    code, _, err = cli(capsys, "html", "--data-file", str(data_file), "-d",
                       str(tmp_path / "site"), "--no-greedy")
    assert code == 0, err
    assert "<polyline" not in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_cli_reports_a_bad_order_file_and_writes_nothing(data_file: Path, tmp_path: Path,
                                                         capsys):
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"order": ["q1", "ghost"]}), encoding="utf-8")
    code, _, err = cli(capsys, "html", "--data-file", str(data_file), "-d",
                       str(tmp_path / "site"), "--order", str(order))
    assert code == 1
    assert "ghost" in err
    assert not (tmp_path / "site").exists()


def test_cli_missing_data_file_is_a_clear_error(tmp_path: Path, capsys):
    code, _, err = cli(capsys, "html", "--data-file", str(tmp_path / "nope"), "-d",
                       str(tmp_path / "site"))
    assert code == 1 and "no data file" in err


# ------------------------------------------------------------------------------ browser
def _chrome():
    if not (shutil.which("chromium") and Path("/usr/bin/chromedriver").exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (make browser installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='ragcov-chrome-')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


@pytest.fixture
def browser():
    driver = _chrome()
    try:
        yield driver
    finally:
        driver.quit()


def _visible_docs(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [r.get_attribute("data-name")
            for r in driver.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
            if r.is_displayed()]


@pytest.mark.browser
def test_report_in_headless_chromium(browser, data_file: Path, tmp_path: Path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    index = build(data_file, tmp_path / "site")
    browser.get(index.as_uri())
    assert browser.title == "Chunk coverage report"
    assert browser.find_element(By.ID, "total-cc").text == "44%"
    assert len(_visible_docs(browser)) == len(EXPECTED_DOCS)
    assert browser.find_element(By.ID, "shown-count").text == "5 of 5 shown"  # the script ran

    def header(label: str):
        return browser.find_element(By.XPATH, f"//table[@id='documents']//th[.//button[.='{label}']]")

    header("Chunks").find_element(By.TAG_NAME, "button").click()
    counts = [EXPECTED_DOCS[d][0] for d in _visible_docs(browser)]
    assert counts == sorted(counts, reverse=True) and counts[0] == 3
    assert header("Chunks").get_attribute("aria-sort") == "descending"
    header("Chunks").find_element(By.TAG_NAME, "button").click()
    counts = [EXPECTED_DOCS[d][0] for d in _visible_docs(browser)]
    assert counts == sorted(counts)
    header("Document").find_element(By.TAG_NAME, "button").click()
    assert _visible_docs(browser) == sorted(EXPECTED_DOCS, key=str.lower)

    browser.find_element(By.ID, "filter").send_keys("OPE")
    assert _visible_docs(browser) == ["europe"]
    browser.find_element(By.ID, "filter").clear()
    browser.find_element(By.ID, "filter").send_keys("x")  # clear() fires no input event
    browser.find_element(By.ID, "filter").send_keys("\b")
    browser.find_element(By.ID, "hide-covered").click()
    assert set(_visible_docs(browser)) == {"europe", "asia", "biology", "finance"}
    browser.save_screenshot(str(tmp_path / "index.png"))

    # The hostile chunk: shown as text, no element made from it, nothing run.
    browser.get((tmp_path / "site" / document_filename(HOSTILE_DOC)).as_uri())
    chunk = browser.find_element(By.CSS_SELECTOR, "li.chunk .chunk-text")
    assert chunk.text == HOSTILE
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main script, main svg") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert "evil" in browser.find_element(By.CSS_SELECTOR, "h1 .docname").text
    browser.save_screenshot(str(tmp_path / "document.png"))

    browser.get((tmp_path / "site" / "queries.html").as_uri())
    assert browser.find_elements(By.CSS_SELECTOR, "main svg, img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_the_docs_example_runs(tmp_path: Path):
    from test_pytest_plugin import DOCS, run_doc_examples

    assert run_doc_examples(DOCS / "html.md", tmp_path) == 1
    assert (tmp_path / "ragcov-html" / document_filename("europe")).is_file()


# ------------------------------------------------------- scope, redundancy, overlap, keys
def test_site_marks_excluded_chunks_and_lists_redundant_tests(tmp_path: Path, capsys,
                                                               monkeypatch: pytest.MonkeyPatch):
    from report_samples import SCOPE_FLAGS, write_sample

    monkeypatch.chdir(tmp_path)
    write_sample(tmp_path)
    code, _, err = cli(capsys, "html", "-d", "site", *SCOPE_FLAGS)
    assert code == 0, err
    guide = (tmp_path / "site" / document_filename("guide")).read_text(encoding="utf-8")
    assert guide.count('class="chunk excluded"') == 2
    assert "excluded (exclude: ^Table of contents)" in guide
    assert guide.count('class="chunk covered"') == 3 and guide.count('class="chunk missing"') == 3
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert table_rows(tmp_path / "site" / "index.html", "documents")[0][:3] == ["guide", "6", "3"]
    assert index.count("<tr><td class=\"chunk-id\">") == 4  # the excluded list
    assert "legal/terms#1" in index and "exclude_docs: legal/*" in index
    queries = (tmp_path / "site" / "queries.html").read_text(encoding="utf-8")
    assert "retrieves a subset of q1" in queries and "Jaccard 1.00 with q4" in queries
    assert 'id="retriever-name">sample-retriever (hand-made)<' in queries


def test_overlapping_chunks_show_the_document_text_once(tmp_path: Path):
    from ragcov.corpus import Corpus

    text = ("Retrieval coverage measures chunks. <b>Overlapping</b> windows repeat their "
            "edges. Every chunk shares words with its neighbour. The report shows the text once.")
    corpus = Corpus.from_documents([("greek", text)], chunk_size=50, chunk_overlap=25)
    assert len(corpus) >= 3
    run = Run(k=1, retriever={"kind": "hand-made"})
    run.add("q", "first", [(corpus[0].id, 1.0)])
    path = tmp_path / ".ragcov"
    CoverageData(path).write(corpus, run)
    site = build(path, tmp_path / "site")
    page = (site.parent / document_filename("greek")).read_text(encoding="utf-8")
    stitched = page[page.index('<div class="stitched" dir="auto">'):page.index("</div>", page.index(
        '<div class="stitched" dir="auto">'))]
    shown = re.sub(r"<[^>]+>", "", stitched).replace("&lt;", "<").replace("&gt;", ">")
    assert shown == text  # once, in order, nothing repeated
    assert corpus[0].text.endswith("<b>Overlapping") and corpus[1].text.startswith("<b>Overl")
    assert "<b>Overlapping" not in stitched  # chunk text stays escaped
    covered = "".join(re.findall(r'class="seg covered"[^>]*>([^<]*)<', stitched))
    assert covered.replace("&lt;", "<").replace("&gt;", ">") == corpus[0].text


@pytest.mark.browser
def test_keyboard_shortcuts_in_headless_chromium(browser, data_file: Path, tmp_path: Path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    build(data_file, tmp_path / "site")
    browser.get((tmp_path / "site" / "index.html").as_uri())
    body = browser.find_element(By.TAG_NAME, "body")
    help_panel = browser.find_element(By.ID, "keyboard-help")
    assert not help_panel.is_displayed()
    body.send_keys("?")
    assert help_panel.is_displayed() and "focus the filter" in help_panel.text
    body.send_keys(Keys.ESCAPE)
    assert not help_panel.is_displayed()
    body.send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "filter"
    browser.switch_to.active_element.send_keys("fin")  # typed into the filter, not a shortcut
    assert _visible_docs(browser) == ["finance"]

    # finance has two chunks, both missing: j steps forward and wraps, k steps back.
    browser.get((tmp_path / "site" / document_filename("finance")).as_uri())
    body = browser.find_element(By.TAG_NAME, "body")

    def focused() -> str:
        return browser.find_element(By.CSS_SELECTOR, "li.chunk.focus .chunk-id").text

    body.send_keys("j")
    assert focused() == "interest"
    body.send_keys("j")
    assert focused() == "dividends"
    body.send_keys("j")
    assert focused() == "interest"
    body.send_keys("k")
    assert focused() == "dividends"
    body.send_keys("n")
    assert focused() == "interest"
    body.send_keys("]")
    assert "evil" in browser.find_element(By.CSS_SELECTOR, "h1 .docname").text
    browser.find_element(By.TAG_NAME, "body").send_keys("u")
    assert browser.find_element(By.ID, "total-cc").text == "44%"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


@pytest.mark.parametrize(("texts", "text"), [
    (["0123456789 abc", "789 abc def ghij"], None),                    # 7 shared: chance
    (["the first sentence here", "sentence here and more"], "the first sentence here and more"),
    (["abcdefgh abcdefgh", "abcdefgh tail"], "abcdefgh abcdefgh tail"),  # the longest overlap
])
def test_stitch_joins_chunks_at_their_overlap(texts, text):
    from ragcov.reporters.overlap import stitch

    got = stitch(texts)
    assert (got[0] if got else None) == text
    if got:
        doc, spans = got
        assert [doc[a:b] for a, b in spans] == texts
