"""From a number to the next action: the test to write, the chunk to exclude, the test to drop.

Each output here ends in something a team can do: a draft test per untested chunk, the
config lines that exclude junk, the tests that can go together, the gate on correctness.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import cli
from test_trust_totals import probed  # noqa: F401 - the probed BM25 recording, a fixture

SAMPLE = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"


def _json(capsys, data: Path, *args: str) -> dict:
    code, out, err = cli(capsys, "json", "--data-file", str(data), "-o", "-", *args)
    assert code == 0, err
    return json.loads(out)


def test_every_untested_chunk_gets_a_draft_marked_copied_until_rewritten(probed: Path, capsys,  # noqa: F811
                                                                        tmp_path: Path) -> None:
    """Without a generator a draft is a sentence (or the terms) of its chunk: every output
    marks it as a copy to rewrite, and the drafts file cannot run as a suite until each
    has a question (before, 169 such copies were added to a suite as they were)."""
    data = tmp_path / ".ragcov"
    shutil.copy(probed, data)
    corpus = str(probed.parent / "chunks.jsonl")
    drafts = tmp_path / "drafts.jsonl"
    code, out, err = cli(capsys, "probe", "--corpus", corpus, "--retriever", "bm25", "--data-file",
                         str(data), "--include", "planted", "--drafts-out", str(drafts))
    assert code == 0, err
    doc = _json(capsys, data)
    untested = {c for c, e in doc["chunks"].items() if e.get("status") == "untested"}
    written = [json.loads(x) for x in drafts.read_text().splitlines()]
    assert {d["chunk_id"] for d in written} == {c for c in untested if doc["chunks"][c].get("draft")}
    assert len(written) >= 0.9 * len(untested)
    assert f"Draft tests ({len(written)} untested chunks): 0 questions from the generator to " \
           f"review, {len(written)} copied from a chunk, to rewrite as questions" in out
    assert "sentence copied from a chunk: rewrite as a question; rank " in out
    assert f"({len(written)} copied from a chunk: write each one's question" in err
    for d in written:
        draft = doc["chunks"][d["chunk_id"]]["draft"]
        assert "question" not in d and d["rewrite"] == draft["text"]
        assert draft["copied"] is True and draft["question"] is False
        assert d["draft"].endswith("copied from a chunk: rewrite as a question")
    # As written, the file is no suite: a copy is never counted as a question.
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(drafts), "--retriever",
                       "bm25", "-k", "3", "--data-file", str(data), "--append", "-q")
    assert code == 1 and "drafts.jsonl:1: a draft copied from its chunk is no question" in err
    # The HTML shows each untested chunk's draft on its document's page, marked.
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(probed), "-d", str(site))[0] == 0
    pages = "".join(p.read_text(encoding="utf-8") for p in site.glob("*.html"))
    assert 'draft test: <q class="draft">' in pages
    assert "</q> (copied from a chunk: rewrite as a question)" in pages
    assert "Write " in pages and " questions from the sentences copied from untested chunks" in pages


def test_with_a_generator_the_drafts_are_its_questions(probed: Path, capsys,  # noqa: F811
                                                        tmp_path: Path) -> None:
    data = tmp_path / ".ragcov"
    corpus = str(probed.parent / "chunks.jsonl")
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join((SAMPLE / "finqa_questions.jsonl").read_text().splitlines(True)[:60]))
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(questions), "--retriever",
                       "bm25", "-k", "3", "--data-file", str(data), "-q")
    assert code == 0, err
    drafts = tmp_path / "drafts.jsonl"
    code, out, err = cli(capsys, "probe", "--corpus", corpus, "--data-file", str(data), "--sample",
                         "60", "--generator", "extractive", "--drafts-out", str(drafts))
    assert code == 0, err
    written = [json.loads(x) for x in drafts.read_text().splitlines()]
    asked = [d for d in written if "question" in d]
    assert asked and all(d["probe_kind"] == "llm" and d["draft"] == "question from the generator"
                         for d in asked)
    assert all("rewrite" in d and d["probe_kind"] != "llm" for d in written if d not in asked)
    doc = _json(capsys, data)
    assert all(doc["chunks"][d["chunk_id"]]["draft"]["question"] for d in asked)
    # The generator's questions run as a suite; they cover the chunks they were written for.
    suite = tmp_path / "asked.jsonl"
    suite.write_text("".join(json.dumps(d) + "\n" for d in asked))
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(suite), "--retriever",
                       "bm25", "-k", "3", "--data-file", str(data), "--append", "-q")
    assert code == 0, err
    after = _json(capsys, data)
    assert all(after["chunks"][d["chunk_id"]]["hit_count"] > 0 for d in asked)


DISCLAIMER = ("Copyright 2024 Example Health Press. All rights reserved. No part of this "
              "article may be reproduced without permission.")
JUNK = ["[1]", "n = 45", "p<0.05", "12.3 %"]


def test_junk_is_an_exclusion_candidate_and_its_config_lines_exclude_it(tmp_path: Path, capsys,
                                                                        monkeypatch) -> None:
    """7 of 8 copies of one disclaimer were "untested: write a test"; so were "[1]" and
    "n = 45". They are exclusion candidates now, and the printed lines exclude exactly them."""
    sample = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"
    from ragcov.corpus import load_corpus

    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join((sample / "finqa_pages.jsonl").read_text().splitlines(True)[:15]))
    corpus = tmp_path / "chunks.jsonl"
    with corpus.open("w") as f:
        for c in load_corpus(pages, split=True):
            f.write(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text}) + "\n")
        for n in range(8):
            f.write(json.dumps({"id": f"legal{n}", "doc_id": f"article{n}", "text": DISCLAIMER}) + "\n")
        for n, text in enumerate(JUNK):
            f.write(json.dumps({"id": f"junk{n}", "doc_id": "tables", "text": text}) + "\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join((sample / "finqa_questions.jsonl").read_text().splitlines(True)[:20])
                       + json.dumps({"id": "legal", "question": "who holds the copyright of the "
                                     "article"}) + "\n")
    monkeypatch.chdir(tmp_path)
    base = ["--corpus", str(corpus), "--retriever", "bm25"]
    assert cli(capsys, "run", *base, "-k", "3", "--queries", str(queries), "-q")[0] == 0
    code, out, err = cli(capsys, "probe", *base, "--drafts-out", "drafts.jsonl")
    assert code == 0, err
    doc = _json(capsys, tmp_path / ".ragcov")
    candidates = {c for c, e in doc["chunks"].items() if "exclusion_candidate" in e}
    junk_ids = {f"junk{n}" for n in range(len(JUNK))}
    legal = {f"legal{n}" for n in range(8)}
    covered_legal = {c for c in legal if doc["chunks"][c]["hit_count"]}
    assert candidates >= junk_ids | (legal - covered_legal)
    assert doc["totals"]["exclusion_candidates"] == len(candidates)
    drafted = {json.loads(x)["chunk_id"] for x in Path("drafts.jsonl").read_text().splitlines()}
    assert not candidates & drafted
    assert "Exclusion candidates (" in out and "junk rather than tests to write" in out
    lines = doc["exclusion_config"]
    assert any(line.startswith("exclude = [") for line in lines)
    # The lines, pasted into ragcov.toml, exclude the uncovered junk and no content chunk.
    Path("ragcov.toml").write_text("\n".join(lines) + "\n")
    after = _json(capsys, tmp_path / ".ragcov")
    excluded = set(after["excluded"])
    assert candidates <= excluded
    # Besides the candidates they leave out only the covered copies of the disclaimer (the
    # same text), and the comment beside its rule counts them.
    assert excluded - candidates == covered_legal
    assert bool(covered_legal) == any(f"({len(covered_legal)} of them retrieved by a test)" in x
                                      for x in lines)
    assert after["totals"]["exclusion_candidates"] == 0


def test_one_extra_per_store_and_the_hint_names_it(monkeypatch) -> None:
    """A CI job over one store installs one client (docs/ci.md's recipe installs
    ragcov[chroma]); a missing client names that store's extra."""
    import importlib

    import tomllib

    from ragcov.errors import RagcovError
    from ragcov.stores.base import STORE_EXTRAS, require

    extras = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    clients = {req.split(">")[0].split("[")[0] for req in extras["stores"]}
    for extra in STORE_EXTRAS.values():
        assert "ragcov[dense]" in extras[extra], extra  # the query encoder comes with it
        own = {r.split(">")[0].split("[")[0] for r in extras[extra]} - {"ragcov"}
        assert own <= clients, (extra, own - clients)
    assert "ragcov[chroma]" in (Path(__file__).parent.parent / "docs" / "ci.md").read_text()
    real = importlib.import_module

    def missing(name: str, *args, **kwargs):
        if name == "chromadb":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)  # a fake: a client not installed
    with pytest.raises(RagcovError, match=r"pip install 'ragcov\[chroma\]' \(or 'ragcov\[stores\]'"):
        require("chromadb", "Chroma")


def test_small_messages_say_what_to_do(probed: Path, capsys, tmp_path: Path,  # noqa: F811
                                        monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    # A [tool.ragcov] table pasted into ragcov.toml: drop the prefix.
    Path("ragcov.toml").write_text("[tool.ragcov]\nfail_under = 20\n")
    code, _, err = cli(capsys, "report", "--data-file", str(probed))
    assert code == 1 and "[tool.ragcov] is pyproject.toml's table; in ragcov.toml drop the prefix" in err
    Path("ragcov.toml").unlink()
    # probe without --retriever names the one the data file recorded.
    code, _, err = cli(capsys, "probe", "--corpus", str(probed.parent / "chunks.jsonl"),
                       "--data-file", str(probed), "--include", "planted")
    assert code == 0 and f"probing through the retriever {probed} was recorded with: bm25" in err
    # The ratchet's rounding: the table shows a whole percent the gate does not compare.
    total = float(cli(capsys, "report", "--format", "total", "--data-file", str(probed))[1])
    shown = round(total)
    if shown > total:  # this recording's total rounds up: the CLI says it too
        code, _, err = cli(capsys, "report", "--data-file", str(probed), "--fail-under", str(shown))
        assert code == 2 and f"the table above rounds it to {shown}%" in err
    from ragcov.summary import fail_under_failure

    said = fail_under_failure(0.5877, 59, shown_precision=0)  # "59%" printed, 58.77 compared
    assert said is not None and said.startswith("Coverage failure: total of 58.77% is less than "
                                                "fail-under=59 (the table above rounds it to 59%")
    assert "rounds" not in fail_under_failure(0.5877, 59, shown_precision=2)
    assert "rounds" not in fail_under_failure(0.5877, 60, shown_precision=0)  # 59% < 60 too
    code, _, err = cli(capsys, "report", "--data-file", str(probed), "--fail-under", str(total + 0.01),
                       "--precision", "2")
    assert code == 2 and "rounds it" not in err  # shown at the gate's precision: nothing to explain


def test_the_html_says_what_to_do_next(probed: Path, capsys, tmp_path: Path) -> None:  # noqa: F811
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(probed), "-d", str(site))[0] == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    panel = index.split('id="next-actions"', 1)[1].split("</section>", 1)[0]
    for action in ("write-tests", "drafts", "drop"):
        assert f'id="action-{action}"' in panel
    assert "ragcov probe --corpus CORPUS --drafts-out drafts.jsonl" in panel
    assert "ragcov report --redundant" in panel
    # Documents worst first: coverage never falls down the table.
    table = index.split('id="documents"', 1)[1].split("</table>", 1)[0]
    doc = _json(capsys, probed)
    order = [d for d in doc["documents"] if f">{d}</a>" in table]
    rows = sorted(order, key=lambda d: table.index(f">{d}</a>"))
    covers = [doc["documents"][d]["chunk_coverage"] for d in rows]
    assert covers == sorted(covers) and covers[0] < covers[-1]


@pytest.mark.browser
def test_next_actions_panel_in_chromium(probed: Path, capsys, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    from test_html import _chrome

    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(probed), "-d", str(site))[0] == 0
    driver = _chrome()
    try:
        driver.get((site / "index.html").as_uri())
        panel = driver.find_element(By.ID, "next-actions")
        assert panel.is_displayed() and panel.location["y"] < driver.find_element(
            By.ID, "documents").location["y"]
        text = panel.text
        assert "Write tests for the documents with the most missing chunks" in text
        assert "questions from the sentences copied from untested chunks" in text
        assert "ragcov probe --corpus CORPUS --drafts-out" in text
        first = driver.find_element(By.CSS_SELECTOR, "#action-write-tests li a")
        first.click()
        assert "draft test:" in driver.find_element(By.TAG_NAME, "body").text
    finally:
        driver.quit()


def test_generated_questions_are_kept_apart_until_accepted(probed: Path, capsys,  # noqa: F811
                                                           tmp_path: Path) -> None:
    data = tmp_path / ".ragcov"
    shutil.copy(probed, data)
    corpus = str(probed.parent / "chunks.jsonl")
    before = _json(capsys, data)["totals"]
    out = tmp_path / "generated.jsonl"
    code, said, err = cli(capsys, "generate", "--corpus", corpus, "--retriever", "bm25", "-k", "3",
                          "--generator", "extractive", "--data-file", str(data), "--budget", "6",
                          "-o", str(out))
    assert code == 0, err
    assert "kept apart until reviewed" in said
    records = [json.loads(x) for x in out.read_text().splitlines()]
    hits = sum(r["hit_target"] for r in records)
    assert records and hits  # the extractive generator reaches some of its targets
    # Left out of every total and gate, said, and counted with --include-generated.
    doc = _json(capsys, data)
    assert doc["totals"] == {**doc["totals"], "queries": before["queries"],
                             "covered_chunks": before["covered_chunks"]}
    assert set(doc["generated_left_out"]) == {r["id"] for r in records}
    with_generated = _json(capsys, data, "--include-generated")["totals"]
    assert with_generated["queries"] == before["queries"] + len(records)
    assert with_generated["covered_chunks"] > before["covered_chunks"]
    code, text, _ = cli(capsys, "report", "--data-file", str(data))
    assert (f"Generated: {len(records)} questions from ragcov generate ({hits} reached their "
            "target) are not counted until accepted") in text
    # select, diff, gap and probe count the suite as the reports do (they counted them).
    order = tmp_path / "order.json"
    assert cli(capsys, "select", "--data-file", str(data), "-o", str(order))[0] == 0
    assert json.loads(order.read_text())["pool_size"] == before["queries"]
    code, out, _ = cli(capsys, "diff", str(probed), str(data), "--format", "json")
    assert code == 0 and json.loads(out)["delta"] == 0
    gate = f"{with_generated['chunk_coverage'] * 100:.2f}"
    assert cli(capsys, "report", "--data-file", str(data), "--fail-under", gate)[0] == 2
    assert cli(capsys, "report", "--data-file", str(data), "--fail-under", gate,
               "--include-generated")[0] == 0
    # Accepted: the reviewed questions added to the suite and the suite run again.
    kept = records[:2]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": r["id"], "question": r["text"]}) + "\n" for r in kept))
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(suite), "--retriever",
                       "bm25", "-k", "3", "--data-file", str(data), "--append", "-q")
    assert code == 0, err
    doc = _json(capsys, data)
    assert set(doc["generated_left_out"]) == {r["id"] for r in records[2:]}
    assert doc["totals"]["queries"] == before["queries"] + 2


def test_report_shows_hit_rate_and_recall_from_labels_and_gates(probed: Path, capsys,  # noqa: F811
                                                                tmp_path: Path) -> None:
    questions = [json.loads(x) for x in (probed.parent / "q.jsonl").read_text().splitlines()]
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text("".join(json.dumps({"query_id": q["id"], "doc_id": q["doc_id"]}) + "\n"
                             for q in questions))
    doc = _json(capsys, probed)
    docs_of = {c: e["doc_id"] for c, e in doc["chunks"].items()}
    hits = [any(docs_of[c] == q["doc_id"] for c in doc["queries"][q["id"]]["retrieved"])
            for q in questions]
    rate = sum(hits) / len(hits)  # one relevant document a question: recall@k = hit
    code, out, _ = cli(capsys, "report", "--data-file", str(probed), "--qrels", str(qrels))
    assert code == 0
    assert (f"Correctness (document-level labels): hit rate {rate * 100:.1f}% of {len(questions)} "
            f"labelled queries retrieve a chunk of a relevant document; mean recall@3 {rate:.3f} "
            "(of relevant documents)") in out
    code, out, _ = cli(capsys, "report", "--data-file", str(probed), "--qrels", str(qrels),
                       "--format", "json")
    # Labels naming documents this corpus does not hold can never hit: said, not hidden.
    gone = [q["doc_id"] for q in questions if q["doc_id"] not in set(docs_of.values())]
    assert code == 0 and json.loads(out)["correctness"] == {
        "source": "labels", "labelled": len(questions), "hit_rate": pytest.approx(rate),
        "recall_at_k": pytest.approx(rate), "failed_tests": [], "level": "doc",
        **({"unresolved_labels": {"level": "doc", "labels": len(gone), "of": len(questions),
                                  "unknown_ids": sorted(set(gone), key=gone.index),
                                  "queries_that_cannot_hit": len(gone)}} if gone else {})}
    above = f"{rate * 100 + 1:.1f}"
    code, _, err = cli(capsys, "report", "--data-file", str(probed), "--qrels", str(qrels),
                       "--min-hit-rate", above)
    assert code == 2 and f"Correctness failure: hit rate of {rate * 100:.2f}% is less than" in err
    code, _, err = cli(capsys, "report", "--data-file", str(probed), "--min-hit-rate", "50")
    assert code == 1 and "--min-hit-rate needs --qrels" in err


def test_junk_lines_take_a_general_rule_only_where_it_leaves_out_nothing_else() -> None:
    """Hand-worked: "[1]" is uncovered, "[2]" covered. "No words at all" would leave out
    the covered "[2]" too, so the rule names "[1]" alone; with "[2]" gone the rule is
    general (its length). Three copies of a footer are boilerplate; the covered copy is counted."""
    from collections import Counter

    import tomllib

    from ragcov.reachability.junk import NO_WORDS, exclusion_candidates

    footer = "Page footer: printed by the press office of the hospital group"
    texts = {"a": "[1]", "b": "[2]", "c": footer, "d": footer, "e": footer,
             "f": "Aspirin lowers the risk of a second heart attack in adults"}
    hashes = Counter({"h1": 1, "h2": 1, "foot": 3, "h3": 1})
    uncovered = {"a": ("[1]", "h1"), "c": (footer, "foot"), "d": (footer, "foot")}
    found = exclusion_candidates(uncovered, hashes, texts)
    assert set(found.reasons) == {"a", "c", "d"}
    assert found.reasons["c"].startswith("boilerplate: the same text in 3")
    exclude = tomllib.loads("\n".join(found.config_lines))["exclude"]
    assert NO_WORDS not in exclude and len(exclude) == 2
    assert any("# 3 chunks: boilerplate, one text in 3 chunks (1 of them retrieved by a test)" in x
               for x in found.config_lines)
    general = exclusion_candidates(uncovered, hashes, {k: v for k, v in texts.items() if k != "b"})
    config = tomllib.loads("\n".join(general.config_lines))
    assert config["min_chunk_chars"] == 40 and len(config["exclude"]) == 1  # "[1]" by its length
    # A chunk "f" (content) is never a candidate; a text of its own below 40 characters is.
    short = exclusion_candidates({"g": ("Aspirin dose", "h4")}, Counter({"h4": 1}),
                                 {"g": "Aspirin dose", "f": texts["f"]})
    assert short.reasons == {"g": "short: under 40 characters"}
    assert short.config_lines == ["min_chunk_chars = 40  # 1 chunk: shorter than 40 characters"]
