"""What the reading commands import: `report` and the CI formats start in a fraction of a second.

`ragcov report`, `json`, `xml`, `lcov` and `badge` only read the data file, so they must
not pay for the libraries a run needs (torch, the encoders, faiss, store clients, data
frame stacks, HTTP clients). Each command runs in a fresh interpreter, and the set of
modules it imported is checked, on a data file with and without reachability probes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "src" / "ragcov" / "data_sample"

# Top-level packages no reading command may import.
HEAVY = (
    "torch", "sentence_transformers", "transformers", "tokenizers", "huggingface_hub",
    "faiss", "onnxruntime", "sklearn", "chromadb", "lancedb", "qdrant_client", "pymilvus",
    "psycopg", "psycopg2", "pgvector", "pyarrow", "pandas", "polars", "bm25s", "numba", "dask",
    "distributed", "openai", "httpx", "requests", "aiohttp", "grpc",
    # typer coerces options through pydantic; ragcov's plain options skip it (cli/coercion.py).
    "pydantic",
    # ssl and urllib.request: what an HTTP client costs even from the standard library.
    "ssl",
)
HEAVY_PREFIXES = ("langchain", "llama_index")
# Submodules of libraries a report does use in part (scipy.sparse for the hit matrix).
HEAVY_SUBMODULES = ("scipy.stats", "scipy.optimize", "scipy.spatial", "scipy.linalg",
                    "urllib.request", "http.client")

COMMANDS = {
    "report": ["report"],
    "json": ["json", "-o", "out.json"],
    "xml": ["xml", "-o", "out.xml"],
    "lcov": ["lcov", "-o", "out.lcov"],
    "badge": ["badge", "-o", "out.svg"],
}

PROBE = """
import json, sys
from ragcov.cli import main
try:
    main({argv!r})
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps({{"code": code, "modules": sorted(sys.modules)}}) + "\\n")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _ragcov(cwd: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bundled FinQA sample run with bm25; a copy of it with reachability probes."""
    plain = tmp_path_factory.mktemp("plain")
    _ragcov(plain, "run", "--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split",
            "--queries", str(SAMPLE / "finqa_questions.jsonl"), "--retriever", "bm25")
    probed = tmp_path_factory.mktemp("probed")
    (probed / ".ragcov").write_bytes((plain / ".ragcov").read_bytes())
    _ragcov(probed, "probe", "--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split",
            "--retriever", "bm25")
    return {"plain": plain, "probed": probed}


def imported_by(cwd: Path, argv: list[str]) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, proc.stderr
    got = json.loads(line[-1][len("MODULES "):])
    assert got["code"] in (0, None), proc.stderr
    return set(got["modules"])


def heavy_in(modules: set[str]) -> list[str]:
    tops = {m.split(".")[0] for m in modules}
    found = sorted(tops & set(HEAVY))
    found += sorted(t for t in tops if t.startswith(HEAVY_PREFIXES))
    found += sorted(m for m in HEAVY_SUBMODULES
                    if any(x == m or x.startswith(m + ".") for x in modules))
    return found


#: The commands that count and name chunks only: the hit matrix's numpy arrays serve
#: them, so they never import scipy (a third of their start-up). ``json`` does: its
#: mean pairwise Jaccard and redundant tests are sparse products.
WITHOUT_SCIPY = ("report", "xml", "lcov", "badge")


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("data", ["plain", "probed"])
def test_reading_commands_import_no_heavy_library(data_dirs: dict[str, Path], command: str,
                                                  data: str) -> None:
    modules = imported_by(data_dirs[data], COMMANDS[command])
    assert "ragcov.cli" in modules  # the command really ran through the CLI
    assert heavy_in(modules) == []
    if command in WITHOUT_SCIPY:
        assert not {m for m in modules if m.split(".")[0] == "scipy"}


def test_a_drift_run_in_the_file_adds_no_heavy_library(data_dirs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """`report` and `json` show a recorded `ragcov drift` run: its summary and bootstrap
    intervals are numpy alone (report still without scipy), not the retriever's stack."""
    (tmp_path / ".ragcov").write_bytes((data_dirs["plain"] / ".ragcov").read_bytes())
    _ragcov(tmp_path, "drift", "--corpus", str(SAMPLE / "finqa_pages.jsonl"), "--split",
            "--queries", str(SAMPLE / "finqa_questions.jsonl"), "--retriever", "bm25",
            "--relation", "noise", "-q")
    for command in ("report", "json"):
        modules = imported_by(tmp_path, COMMANDS[command])
        assert "ragcov.drift.summary" in modules  # the drift run was read and shown
        assert heavy_in(modules) == []
        if command in WITHOUT_SCIPY:
            assert not {m for m in modules if m.split(".")[0] == "scipy"}
    assert "drift" in json.loads((tmp_path / "out.json").read_text())


def test_the_check_sees_a_heavy_import(data_dirs: dict[str, Path]) -> None:
    """The probe reports what was imported, so a heavy import on the path would be caught."""
    modules = imported_by(data_dirs["plain"], ["report"])
    assert heavy_in(modules | {"torch", "scipy.stats._stats_py", "langchain_core"}) == [
        "torch", "langchain_core", "scipy.stats"]


def test_reading_commands_still_write_their_output(data_dirs: dict[str, Path]) -> None:
    cwd = data_dirs["probed"]
    for command in ("json", "xml", "lcov", "badge"):
        imported_by(cwd, COMMANDS[command])
    assert json.loads((cwd / "out.json").read_text())
    assert (cwd / "out.xml").read_text().startswith("<?xml")
    assert "end_of_record" in (cwd / "out.lcov").read_text()
    svg = (cwd / "out.svg").read_text()
    assert svg.startswith("<svg") and 'aria-label="chunk coverage: ' in svg
