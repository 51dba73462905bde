"""From a number to the next action: the test to write, the chunk to exclude, the test to drop.

Each output here ends in something a team can do: a draft test per untested chunk, the
config lines that exclude junk, the tests that can go together, the gate on correctness.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import cli
from test_trust_totals import probed  # noqa: F401 - the probed BM25 recording, a fixture


def _json(capsys, data: Path, *args: str) -> dict:
    code, out, err = cli(capsys, "json", "--data-file", str(data), "-o", "-", *args)
    assert code == 0, err
    return json.loads(out)


def test_every_untested_chunk_gets_a_draft_that_retrieves_it(probed: Path, capsys,  # noqa: F811
                                                             tmp_path: Path) -> None:
    data = tmp_path / ".ragcov"
    shutil.copy(probed, data)
    corpus = str(probed.parent / "chunks.jsonl")
    drafts = tmp_path / "drafts.jsonl"
    code, out, err = cli(capsys, "probe", "--corpus", corpus, "--retriever", "bm25", "--data-file",
                         str(data), "--include", "planted", "--drafts-out", str(drafts))
    assert code == 0, err
    assert "Draft tests (" in out and "Wrote " in err
    doc = _json(capsys, data)
    untested = {c for c, e in doc["chunks"].items() if e.get("status") == "untested"}
    written = [json.loads(x) for x in drafts.read_text().splitlines()]
    assert {d["chunk_id"] for d in written} == {c for c in untested if doc["chunks"][c].get("draft")}
    assert len(written) >= 0.9 * len(untested)
    for d in written[:5]:
        assert doc["chunks"][d["chunk_id"]]["draft"]["text"] == d["question"]
    # Added as they are, the drafts cover the chunks they were written for: each is the very
    # question that reached its chunk.
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(drafts), "--retriever",
                       "bm25", "-k", "3", "--data-file", str(data), "--append", "-q")
    assert code == 0, err
    after = _json(capsys, data)
    newly = {d["chunk_id"] for d in written}
    assert all(after["chunks"][c]["hit_count"] > 0 for c in newly)
    assert after["totals"]["covered_chunks"] >= doc["totals"]["covered_chunks"] + len(newly)
    # The HTML shows each untested chunk's draft on its document's page.
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(probed), "-d", str(site))[0] == 0
    first = written[0]
    pages = "".join(p.read_text(encoding="utf-8") for p in site.glob("*.html"))
    assert 'draft test: <q class="draft">' in pages
    assert first["question"][:40].replace("'", "&#39;").replace('"', "&#34;") in pages
