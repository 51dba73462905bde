"""docs/extending.md's worked example runs: a reporter added by one registry entry."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from conftest import CITY_CHUNKS
from helpers import cli

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_the_junit_reporter_of_the_page_is_a_format_at_once(tmp_path: Path, capsys, monkeypatch) -> None:
    from ragcov.reporters import registry

    block = re.search(r"## A reporter.*?```python\n(.*?)```", DOC.read_text(), re.DOTALL).group(1)
    code = block.split("REPORTERS = {", 1)[0]  # the function; the entry is added below
    namespace: dict[str, Any] = {"Any": Any}
    exec(code, namespace)  # the page's own code
    junit = registry.Reporter("junit", "JUnit XML: a failed case per document with missing chunks",
                              namespace["_junit"], ".xml", "ragcov-junit.xml")
    monkeypatch.setitem(registry.REPORTERS, "junit", junit)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "capital of Japan"}) + "\n")
    data = str(tmp_path / ".ragcov")
    assert cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries), "--retriever",
               "bm25", "-k", "1", "--data-file", data, "-q")[0] == 0
    code, out, err = cli(capsys, "report", "--format", "junit", "--data-file", data)
    assert code == 0, err
    suite = ET.fromstring(out)
    docs = {c["doc_id"] for c in CITY_CHUNKS}
    assert {case.get("name") for case in suite} == docs
    failed = {case.get("name") for case in suite if case.find("failure") is not None}
    assert failed == docs - {"asia"}  # Tokyo, the one chunk of asia, is covered
    assert "junit (JUnit XML" in registry.names_help()
