"""The exclusion advice is a few readable rules, each with the chunks it leaves out.

The corpus below has the junk a large one has: 12 appendix documents of number tables,
a footer copied into 20 reports (one copy retrieved), 40 headings and notes of their own,
and 2 covered chunks that make the general rules unsafe (a short one, a table of numbers).
The advice
named uncovered texts in escaped regexes of their own (51 on one line, 26 candidates
left); now it is 4 rules that leave out all 95, and pasted into ragcov.toml as printed
they leave out exactly the chunks they count.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from ragcov.reachability.junk import MAX_RULES, NO_WORDS, exclusion_candidates, readable

ANIMALS = ["falcon", "heron", "osprey", "plover", "curlew", "dunlin", "avocet", "bittern",
           "egret", "gannet", "kestrel", "merlin", "puffin", "shrike", "thrush", "wren",
           "finch", "swift", "raven", "rook"]
FOOTER = ("Copyright 2019 Northwind Annual Reports Ltd. All rights reserved; reproduction "
          "without written permission is prohibited.")


def _table(n: int) -> str:
    return " | ".join(f"{n * 7 + i}.{i}" for i in range(12))


@pytest.fixture
def junky(tmp_path: Path, capsys, monkeypatch) -> Path:
    rows, queries = [], []
    for d, animal in enumerate(ANIMALS):
        doc = f"reports/2019/{animal}.pdf"
        body = (f"The {animal} population surveyed in the northern wetlands grew by {d + 3} "
                f"percent as nesting sites recovered after the {animal} protection plan.")
        rows += [{"id": f"{doc}#0", "doc_id": doc, "text": f"Section {d + 1}: {animal}"},
                 {"id": f"{doc}#1", "doc_id": doc, "text": body},
                 {"id": f"{doc}#2", "doc_id": doc, "text": f"Notes on the {animal} survey methods"},
                 {"id": f"{doc}#3", "doc_id": doc, "text": FOOTER}]
        queries.append({"id": f"q-{animal}", "question": f"{animal} population protection plan"})
    for n in range(12):
        doc = f"appendix/tables/t{n:02d}.pdf"
        rows += [{"id": f"{doc}#{j}", "doc_id": doc, "text": _table(n * 3 + j)} for j in range(3)]
    covered = [("misc/short.pdf", "Wetland birds"),  # short, and retrieved
               ("misc/numbers.pdf", "2019 | 2020 | 2021 | 4.5 | 5.5")]  # no words, and retrieved
    for doc, text in covered:
        rows.append({"id": f"{doc}#0", "doc_id": doc, "text": text})
    queries += [{"id": "q-short", "question": "wetland birds"},
                {"id": "q-numbers", "question": "2019 2020 2021"},
                {"id": "q-footer", "question": "Northwind copyright permission reproduction"}]  # a copy
    corpus, qfile = tmp_path / "chunks.jsonl", tmp_path / "q.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    qfile.write_text("".join(json.dumps(q) + "\n" for q in queries))
    monkeypatch.chdir(tmp_path)
    base = ["--corpus", str(corpus), "--retriever", "bm25"]
    assert cli(capsys, "run", *base, "-k", "1", "--queries", str(qfile), "-q")[0] == 0
    code, _, err = cli(capsys, "probe", *base)
    assert code == 0, err
    return tmp_path / ".ragcov"


def _json(capsys) -> dict:
    code, out, err = cli(capsys, "json", "-o", "-")
    assert code == 0, err
    return json.loads(out)


def _reason_of(rule: dict) -> str:
    """The reason scope gives a chunk the rule leaves out (up to the length it states)."""
    return f"{rule['key']}: {rule['value']}" if rule["key"] != "min_chunk_chars" else \
        "min_chunk_chars: "


def test_a_few_rules_that_exclude_what_they_count(junky: Path, capsys) -> None:
    doc = _json(capsys)
    covered = {c for c, e in doc["chunks"].items() if e["hit_count"]}
    assert {"misc/short.pdf#0", "misc/numbers.pdf#0"} <= covered
    assert any(c.endswith("#3") for c in covered)  # one copy of the footer
    candidates = {c for c, e in doc["chunks"].items() if "exclusion_candidate" in e}
    assert len(candidates) >= 90  # 36 tables, 19+ footers, 40 headings and notes
    rules, lines = doc["exclusion_rules"], doc["exclusion_config"]
    assert 1 <= len(rules) <= MAX_RULES
    # Readable: the appendix by its folder, the footer and the headings by their first
    # words, no escaped space.
    assert {"key": "exclude_docs", "value": "appendix/*"}.items() <= rules[0].items()
    values = [r["value"] for r in rules]
    assert r"\A\s*Copyright 2019 Northwind Annual" in values
    assert r"\A\s*Notes on the\b" in values and r"\A\s*Section\b" in values
    assert not any("\\ " in str(r["value"]) for r in rules)
    assert NO_WORDS not in [r["value"] for r in rules]  # a covered table of numbers: unsafe
    # Each rule's line carries its count.
    text = "\n".join(lines)
    for r in rules:
        assert re.search(rf"# {r['chunks']} chunks?: ", text)
    # Pasted into ragcov.toml as printed: the config reads it, and it leaves out exactly the
    # chunks the rules count, each under its own rule, in scope's order.
    Path("ragcov.toml").write_text(text + "\n")
    assert tomllib.loads(text)
    after = _json(capsys)
    excluded = after["excluded"]
    assert len(excluded) == sum(r["chunks"] for r in rules)
    assert after["totals"]["chunks"] == doc["totals"]["chunks"] - len(excluded)
    for r in rules:
        got = sum(1 for e in excluded.values() if e["reason"].startswith(_reason_of(r)))
        assert got == r["chunks"], r
    left = {c for c, e in after["chunks"].items() if "exclusion_candidate" in e}
    # What the rules do not reach is counted in the last line, never dropped silently.
    assert left == candidates - set(excluded) == set()  # here the rules reach every one
    retrieved = sum(r["retrieved"] for r in rules)
    assert retrieved == len(covered & set(excluded))
    assert set(excluded) - candidates <= covered  # the other chunks they take are copies tests retrieve
    # The report prints the same lines under the table; Markdown fences them as TOML.
    Path("ragcov.toml").unlink()
    code, out, _ = cli(capsys, "report", "--format", "markdown")
    assert code == 0
    block = out.split("```toml\n", 1)[1].split("```", 1)[0]
    assert [line.strip() for line in block.splitlines() if line.strip()] == [line.strip() for line in lines]


def test_rules_keep_the_settings_already_in_effect(junky: Path, capsys) -> None:
    """With ``exclude`` already set, the advised ``exclude`` list carries it: the lines
    replace the config's as written, and still count what they add."""
    Path("ragcov.toml").write_text("exclude = ['\\AWetland']\n")
    doc = _json(capsys)
    assert set(doc["excluded"]) == {"misc/short.pdf#0"}
    lines = doc["exclusion_config"]
    assert "    '\\AWetland',  # already set" in lines
    Path("ragcov.toml").write_text("\n".join(lines) + "\n")
    after = _json(capsys)
    assert len(after["excluded"]) == 1 + sum(r["chunks"] for r in doc["exclusion_rules"])


def test_hand_worked_rules() -> None:
    """"[1]" uncovered and "[2]" covered: no-words would take "[2]", so "[1]" is a text of
    its own. A footer in three chunks, one covered: named by its first words, which leave
    out the three copies and no other chunk. "t/x" holds nothing but junk (two tables of
    numbers, too long to name as short texts): its glob. "[1]" is the short text left."""
    footer = "Page footer: printed by the press office of the hospital group"
    texts = {"a": "[1]", "b": "[2]", "c": footer, "d": footer, "e": footer,
             "f": "Aspirin lowers the risk of a second heart attack in adults",
             "g": _table(1) + " | " + _table(2), "h": _table(3) + " | " + _table(4)}
    docs = {"a": "s/1", "b": "s/1", "c": "s/3", "d": "s/4", "e": "s/5", "f": "s/6",
            "g": "t/x", "h": "t/x"}
    hashes = Counter({"h1": 1, "h2": 1, "foot": 3, "h3": 1, "h4": 1, "h5": 1})
    uncovered = {"a": ("[1]", "h1"), "c": (footer, "foot"), "d": (footer, "foot"),
                 "g": (texts["g"], "h4"), "h": (texts["h"], "h5")}
    found = exclusion_candidates(uncovered, hashes, texts, doc_of=docs)
    assert set(found.reasons) == {"a", "c", "d", "g", "h"}
    got = [(r.key, r.value, r.chunks, r.candidates, r.retrieved) for r in found.rules]
    assert got == [("exclude_docs", "t/*", ("g", "h"), 2, 0),
                   ("exclude", r"\A\s*Page footer: printed by", ("c", "d", "e"), 2, 1),
                   ("exclude", r"\A\s*\[1\]\s*\Z", ("a",), 1, 0)]
    config = tomllib.loads("\n".join(found.config_lines))
    assert config == {"exclude_docs": ["t/*"],
                      "exclude": [r"\A\s*Page footer: printed by", r"\A\s*\[1\]\s*\Z"]}
    assert "# 3 chunks: boilerplate, one text in 3 chunks (1 of them retrieved by a test)" in \
        "\n".join(found.config_lines)


@pytest.mark.parametrize("text", ["a  b\tc. (x)", "1+1=2 [ok] ^$ | {3} a?b* back\\slash", "plain words",
                                  "n = 45", "C++ (v2.0)"])
def test_readable_regex_matches_its_text_and_escapes_no_space(text: str) -> None:
    pattern = readable(text)
    assert re.fullmatch(pattern, text.strip())
    assert "\\ " not in pattern


TEXTS = ["[1]", "n = 45", "Notes on falcons", "Notes on herons", "Section 1: falcon",
         "Section 2: heron", "Sectional surveys of the wetlands show a rising trend in nests",
         "Footer: printed by the press office of the Northwind reports group",
         "Footer:  printed by the press office of the Northwind reports group",
         "The falcon population surveyed in the wetlands grew by three percent",
         "Herons nest in reeds along the northern shore of the wetland reserve",
         " | ".join(str(n) for n in range(20)), "12 | 13", "Wetland birds"]
DOCS = ["a/x.pdf", "a/y.pdf", "b/z.pdf", "c", "d/e/f.pdf", "d/g.pdf"]


@given(st.lists(st.tuples(st.sampled_from(TEXTS), st.booleans(), st.sampled_from(DOCS)),
                min_size=1, max_size=40),
       st.sampled_from([0, 10]))
@settings(max_examples=200, deadline=None)
def test_the_rules_leave_out_exactly_what_they_count(rows, min_chunk_chars: int) -> None:
    """Whatever the corpus: the lines, read as TOML into a scope, leave out exactly the
    chunks their rules count, each under its own rule, at most MAX_RULES of them; besides
    candidates they take only copies of a candidate's words; no candidate goes unsaid."""
    from ragcov.scope import ReportScope, exclusion_reason

    texts = {f"c{i}": t for i, (t, _c, _d) in enumerate(rows)}
    doc_of = {f"c{i}": d for i, (_t, _c, d) in enumerate(rows)}
    counted = {c: t for c, t in texts.items()
               if not (min_chunk_chars and len(t.strip()) < min_chunk_chars)}
    uncovered = {c: (t, " ".join(t.split())) for i, (c, t) in enumerate(texts.items())
                 if not rows[i][1] and c in counted}
    hashes = Counter(" ".join(t.split()) for t in texts.values())
    found = exclusion_candidates(uncovered, hashes, counted, min_chunk_chars, doc_of)
    assert len(found.rules) <= MAX_RULES
    config = tomllib.loads("\n".join(found.config_lines))
    scope = ReportScope(exclude=tuple(config.get("exclude", ())),
                        exclude_docs=tuple(config.get("exclude_docs", ())),
                        min_chunk_chars=config.get("min_chunk_chars", min_chunk_chars))
    compiled = [re.compile(p, re.MULTILINE) for p in scope.exclude]
    reason = {c: exclusion_reason(doc_of[c], t, scope, compiled) for c, t in counted.items()}
    excluded = {c for c, why in reason.items() if why}
    assert excluded == {c for r in found.rules for c in r.chunks}
    for r in found.rules:
        assert all(reason[c].startswith(f"{r.key}: ") for c in r.chunks)
        assert r.candidates == len(set(r.chunks) & set(found.reasons))
    words = {" ".join(uncovered[c][0].split()) for c in found.reasons}
    assert all(" ".join(counted[c].split()) in words for c in excluded - set(found.reasons))
    missed = set(found.reasons) - excluded
    last = found.config_lines[-1] if found.config_lines else ""
    assert bool(missed) == last.startswith(f"# {len(missed)} more candidate")


def test_a_long_text_no_general_rule_reaches_is_named_by_its_first_words() -> None:
    """Two long tables of numbers, uncovered, in a document with content, while a covered
    table makes "no words" unsafe: each gets a rule of its own, by its first four words,
    which begin no other chunk."""
    texts = {"a": _table(1), "b": _table(2), "c": "12 | 13",
             "d": "Herons nest in reeds along the northern shore of the wetland reserve"}
    docs = {"a": "r/1", "b": "r/1", "c": "r/2", "d": "r/1"}
    uncovered = {"a": (texts["a"], "ha"), "b": (texts["b"], "hb")}
    found = exclusion_candidates(uncovered, Counter({"ha": 1, "hb": 1}), texts, doc_of=docs)
    assert [(r.value, r.chunks, r.what) for r in found.rules] == [
        (r"\A\s*14\.0 \| 15\.1 \|", ("b",), "a text of its own in 1 chunk"),
        (r"\A\s*7\.0 \| 8\.1 \|", ("a",), "a text of its own in 1 chunk")]
