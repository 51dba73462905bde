"""A document page's legend says what its highlights mean, in every state.

A document no test retrieved was shaded from end to end under a legend saying that
highlighted text was retrieved. Three documents, none, some and all of their chunks
retrieved, rendered from the document's own text (``--split``) and rebuilt from chunks
(a chunk file, no text recorded): each page's legend names exactly the highlights its
text carries, and the one no test retrieved says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.reporters.html_context import document_filename

WORDS = {"none": "granite basalt obsidian pumice quartz feldspar mica shale slate marble "
                 "gneiss schist chalk flint jasper",
         "some": "falcon heron osprey plover curlew dunlin avocet bittern egret gannet "
                 "kestrel merlin puffin shrike thrush",
         "all": "cedar birch alder aspen hazel rowan larch maple poplar willow spruce yew "
                "juniper holly linden"}


def _pages(tmp_path: Path) -> Path:
    pages = tmp_path / "pages.jsonl"
    with pages.open("w") as f:
        for doc, words in WORDS.items():
            text = " ".join(f"{w} {w}s are {w}like and {w}ish." for w in words.split())
            f.write(json.dumps({"doc_id": doc, "text": text}) + "\n")
    return pages


@pytest.mark.parametrize("recorded", [True, False], ids=["own-text", "rebuilt-from-chunks"])
def test_the_legend_names_the_highlights_the_text_carries(tmp_path: Path, capsys, monkeypatch,
                                                          recorded: bool) -> None:
    pages = _pages(tmp_path)
    sizes = ["--chunk-size", "200", "--chunk-overlap", "40"]
    chunks = load_corpus(pages, chunk_size=200, chunk_overlap=40, split=True)
    by_doc: dict[str, list] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    assert all(len(v) >= 3 for v in by_doc.values())
    # Each query is a chunk's own text: BM25 ranks that chunk first (k=1).
    asked = by_doc["some"][:1] + by_doc["all"]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": c.id, "question": c.text}) + "\n" for c in asked))
    if recorded:
        corpus = ["--corpus", str(pages), "--split", *sizes]
    else:
        chunk_file = tmp_path / "chunks.jsonl"
        chunk_file.write_text("".join(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text})
                                      + "\n" for c in chunks))
        corpus = ["--corpus", str(chunk_file)]
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", *corpus, "--retriever", "bm25", "-k", "1",
                       "--queries", str(queries), "-q")
    assert code == 0, err
    code, out, _ = cli(capsys, "json", "-o", "-")
    docs = json.loads(out)["documents"]
    assert docs["none"]["covered_chunks"] == 0
    assert 0 < docs["some"]["covered_chunks"] < docs["some"]["chunks"]
    assert docs["all"]["covered_chunks"] == docs["all"]["chunks"]
    assert cli(capsys, "html", "-d", "site")[0] == 0
    for doc in WORDS:
        page = (tmp_path / "site" / document_filename(doc)).read_text()
        stitched = re.search(r'<div class="stitched"[^>]*>(.*?)</div>', page, re.S).group(1)
        shown = set(re.findall(r'class="seg (\w+)"', stitched))
        keys = set(re.findall(r'<span class="text-key" data-state="(\w+)">', page))
        legend = re.search(r'<span id="text-legend">(.*?)</span>', page, re.S).group(1)
        assert keys == shown, doc  # the legend names each highlight, and no other
        if doc == "none":
            assert shown == {"missing"}
            assert legend.startswith("No test retrieved any chunk of this document")
        elif doc == "some":
            assert {"covered", "missing"} <= shown
            assert legend.startswith("Text marked retrieved lies in a chunk at least one test")
        else:
            assert shown == {"covered"}
            assert legend.startswith("Every chunk of this document that counts was retrieved")
        assert "highlighted text" not in page
