"""Every example in docs/integrations/*.md runs, and prints what the page says it prints.

Conventions in those pages:

- ``<!-- file: NAME -->`` before a code block: the block is written to NAME.
- ``<!-- skip ... -->`` before a code block: not run (a sketch).
- a ``python`` block: run with this Python in the page's working folder.
- a ``console`` block: its ``$ `` lines run as one bash script; every other
  non-blank line is output that must appear in what the commands printed.

Each page runs in its own empty folder, top to bottom, as a reader would.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations"
BLOCK = re.compile(r"(?:<!--\s*(?P<marker>[^>]*?)\s*-->\s*\n)?```(?P<lang>[\w-]*)\n(?P<body>.*?)```",
                   re.DOTALL)
# Pages whose examples load the embedding model.
SLOW_PAGES = {"langchain.md", "llamaindex.md", "chroma.md", "qdrant.md", "lancedb.md", "milvus.md",
              "faiss.md", "llamaindex-storage.md"}


def blocks(page: Path) -> list[tuple[str, str, str]]:
    return [(m.group("marker") or "", m.group("lang"), m.group("body"))
            for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def pages() -> list:
    found = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")
    return [pytest.param(p, id=p.name,
                         marks=[pytest.mark.slow] if p.name in SLOW_PAGES else [])
            for p in found]


def test_every_integration_has_a_page():
    names = {p.name for p in DOCS.glob("*.md")}
    assert {"python-callable.md", "langchain.md", "llamaindex.md", "http.md",
            "traces.md"} <= names


@pytest.mark.parametrize("page", pages())
def test_page_examples_run(page: Path, tmp_path: Path):
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = str(tmp_path)
    ran = 0
    for n, (marker, lang, body) in enumerate(blocks(page), start=1):
        where = f"{page.name} block {n}"
        if marker.startswith("skip"):
            continue
        if marker.startswith("file:"):
            (tmp_path / marker[len("file:"):].strip()).write_text(body, encoding="utf-8")
            continue
        if lang == "python":
            script = tmp_path / f"_block{n}.py"
            script.write_text(body, encoding="utf-8")
            proc = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{where} failed:\n{proc.stdout}\n{proc.stderr}"
            ran += 1
        elif lang == "console":
            lines = body.splitlines()
            commands = [line[2:] for line in lines if line.startswith("$ ")]
            expected = [line.strip() for line in lines
                        if line.strip() and not line.startswith("$ ")]
            # Its own session, so a server the block started is stopped even if it fails.
            proc = subprocess.Popen(["bash", "-e", "-c", "\n".join(commands)], cwd=tmp_path,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
            try:
                stdout, stderr = proc.communicate(timeout=600)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            output = stdout + stderr
            assert proc.returncode == 0, f"{where} failed:\n{output}"
            for line in expected:
                assert line in output, f"{where}: expected {line!r} in:\n{output}"
            ran += 1
    assert ran > 0, f"{page.name} has no runnable example"
