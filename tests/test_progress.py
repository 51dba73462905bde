"""Progress on a terminal: it moves per query and per embedding batch, with an ETA; silent elsewhere.

The real CLI runs in a child process whose stderr is a pseudo-terminal (the pty
module), so rich draws exactly what a user would see; what it drew is read back
from the terminal and checked frame by frame.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r")
N_QUERIES = 20

# A real retriever that is deliberately slow: its factory takes a while to "build its
# store" and every query sleeps, as a remote vector store or a reranker would.
SLOW_RETRIEVER = textwrap.dedent("""
    import time

    def build(corpus):
        time.sleep(1.5)  # building the store
        ids = [c.id for c in corpus]

        def retrieve(text, k):
            time.sleep(0.15)
            return ids[:k]

        return retrieve
""")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40",
            "RAGCOV_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [
                os.environ.get("PYTHONPATH")])])}


def run_on_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``python -m ragcov ARGS`` with stderr on a pty: (status, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ragcov", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


@pytest.fixture
def slow_setup(tmp_path: Path) -> Path:
    (tmp_path / "slowrag.py").write_text(SLOW_RETRIEVER)
    (tmp_path / "c.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "doc_id": f"d{i % 2}", "text": f"chunk number {i}"}) + "\n"
        for i in range(6)))
    (tmp_path / "q.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "text": f"question {i}"}) + "\n" for i in range(N_QUERIES)))
    return tmp_path


RUN = ["run", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--retriever", "slowrag:build",
       "--k", "2"]


def test_bar_moves_per_query_with_an_eta_and_a_spinner_while_the_store_builds(
        slow_setup: Path) -> None:
    code, out, term = run_on_terminal(RUN, slow_setup, _env(slow_setup))
    assert code == 0, term
    text = ANSI.sub("\n", term)
    assert "Building retriever slowrag:build" in text
    counts = {int(m) for m in re.findall(rf"\b(\d+)/{N_QUERIES}\b", text)}
    intermediate = {c for c in counts if 0 < c < N_QUERIES}
    # Per query, not per batch of 64: most of the 1..19 counts were drawn.
    assert len(intermediate) >= 8, sorted(counts)
    etas = re.findall(r"ETA (\d+:\d\d:\d\d)", text)
    assert etas, text[-2000:]
    assert "Wrote .ragcov: 20 queries" in out


def test_no_terminal_no_progress(slow_setup: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ragcov", *RUN], cwd=slow_setup,
                          env=_env(slow_setup), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "Wrote .ragcov" in proc.stdout


def test_quiet_on_a_terminal_prints_nothing(slow_setup: Path) -> None:
    code, out, term = run_on_terminal([*RUN, "-q"], slow_setup, _env(slow_setup))
    assert code == 0, term
    assert term == "" and out == ""


N_CHUNKS = 640
WORDS = ("revenue", "dividend", "capital", "segment", "margin", "liquidity", "pension", "lease")


@pytest.mark.slow
def test_embedding_bar_moves_per_batch(tmp_path: Path, minilm_path: str) -> None:
    """640 chunks fit one 1,024-text slice: the bar still moves with each batch of 64."""
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({
        "id": f"c{i}", "doc_id": "d",
        "text": " ".join(WORDS[(i * j) % len(WORDS)] for j in range(60)) + f" {i}"}) + "\n"
        for i in range(N_CHUNKS)))
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "dividend"}) + "\n")
    code, _, term = run_on_terminal(
        ["run", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--model", minilm_path],
        tmp_path, _env(tmp_path))
    assert code == 0, term
    text = ANSI.sub("\n", term)
    assert "Embedding corpus" in text
    counts = {int(m) for m in re.findall(rf"\b(\d+)/{N_CHUNKS}\b", text)}
    assert {c for c in counts if 0 < c < N_CHUNKS}, sorted(counts)
    assert all(c % 64 == 0 or c == N_CHUNKS for c in counts), sorted(counts)


@pytest.mark.slow
def test_encode_advances_once_per_encoder_batch(minilm_path: str, monkeypatch) -> None:
    """What the bar is told, call by call: one advance per batch the model runs."""
    import contextlib

    import ragcov.retrievers.dense as dense

    told: list[int] = []

    @contextlib.contextmanager
    def recording_bar(label: str, total: int, enabled: bool = True, unit: str | None = None):
        yield told.append

    monkeypatch.setattr(dense, "progress_bar", recording_bar)
    emb = dense.encode(dense.load_encoder(minilm_path), [f"text {i}" for i in range(300)],
                       batch_size=64)
    assert told == [64, 64, 64, 64, 44] and emb.shape[0] == 300
