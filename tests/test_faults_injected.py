"""kill -9 at seeded random points of run, --append, combine, html and generate.

Each scenario starts from an "old" state, runs one command in a child process that
SIGKILLs itself at the N-th write point (see ``fault_child.py``: SQLite VM steps,
renames, links, fsyncs, writes, unlinks), and then asserts what ragcov promises:

- the data file opens and passes ``PRAGMA integrity_check``;
- it holds exactly the old content or exactly the new one (an HTML site: the old
  site or the new one, complete);
- rerunning the same command finishes with the new content and leaves no
  temporary file behind.

Kill points are drawn uniformly over the points the uninterrupted command passes
(counted first), ``POINTS`` per scenario, from a fixed seed, so a failure names a
point that reproduces. To add a scenario, give it a setup, a command and a
``content`` reader.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "src" / "ragcov" / "data_sample"
SEED = 20261201
POINTS = int(os.environ.get("RAGCOV_FAULT_POINTS", "12"))

pytestmark = pytest.mark.slow


def child(kill_at: int, args: list[str], cwd: Path, count_file: Path | None = None
          ) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if count_file is not None:
        env["RAGCOV_FAULT_COUNT"] = str(count_file)
    return subprocess.run([sys.executable, str(HERE / "fault_child.py"), str(kill_at), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def data_content(path: Path) -> object:
    """A data file's queries and hits, read with sqlite3 alone (no ragcov code)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        queries = {idx: (qid, text) for idx, qid, text in
                   con.execute("SELECT idx, id, text FROM queries")}
        chunks = dict(con.execute("SELECT idx, id FROM chunks"))
        hits: dict[str, list[tuple[int, str]]] = {queries[q][0]: [] for q in queries}
        for q, c, r in con.execute("SELECT query_idx, chunk_idx, rank FROM hits"):
            hits[queries[q][0]].append((r, chunks[c]))
        k = con.execute("SELECT value FROM meta WHERE key = 'k'").fetchone()[0]
    finally:
        con.close()
    return (k, frozenset((qid, text, tuple(sorted(hits[qid]))) for qid, text in queries.values()))


def site_content(path: Path) -> object:
    """An HTML site: its title and the set of pages, each page complete."""
    index = (path / "index.html").read_text(encoding="utf-8")
    assert index.rstrip().endswith("</html>")
    pages = sorted(p.name for p in path.glob("*.html"))
    for page in pages:
        assert (path / page).read_text(encoding="utf-8").rstrip().endswith("</html>"), page
    title = index.split("<title>", 1)[1].split("</title>", 1)[0]
    return title, tuple(pages)


def stray_temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*") if p.suffix in (".tmp", ".old")
                  or p.name.startswith(".ragcov-shards-") or p.name.endswith("-journal"))


@dataclass
class Scenario:
    name: str
    setup: Callable[[Path], None]      # builds the old state in an empty folder
    args: list[str]
    target: str                        # the file or folder the command writes
    content: Callable[[Path], object]
    old_may_be_absent: bool = False


def _queries(folder: Path, name: str, lines: range) -> None:
    src = (SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / name).write_text("".join(src[i] + "\n" for i in lines), encoding="utf-8")


def _corpus(folder: Path) -> None:
    pages = (SAMPLE / "finqa_pages.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    (folder / "pages.jsonl").write_text("\n".join(pages) + "\n", encoding="utf-8")
    _queries(folder, "a.jsonl", range(0, 30))
    _queries(folder, "b.jsonl", range(30, 60))
    _queries(folder, "c.jsonl", range(60, 70))


RUN = ["run", "--corpus", "pages.jsonl", "--split", "--retriever", "bm25", "-q"]


def _ragcov(folder: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def setup_run(folder: Path) -> None:
    _corpus(folder)
    _ragcov(folder, *RUN, "--queries", "a.jsonl")


def setup_combine(folder: Path) -> None:
    _corpus(folder)
    _ragcov(folder, *RUN, "--queries", "a.jsonl", "--data-file", "s1.ragcov")
    _ragcov(folder, *RUN, "--queries", "b.jsonl", "--data-file", "s2.ragcov")
    _ragcov(folder, *RUN, "--queries", "c.jsonl", "--data-file", "out.ragcov")


def setup_html(folder: Path) -> None:
    setup_run(folder)
    _ragcov(folder, "html", "-d", "site", "--title", "old site")
    _ragcov(folder, *RUN, "--queries", "b.jsonl", "--append")


def setup_generate(folder: Path) -> None:
    setup_run(folder)


SCENARIOS = [
    Scenario("run", setup_run, [*RUN, "--queries", "b.jsonl"], ".ragcov", data_content),
    Scenario("append", setup_run, [*RUN, "--queries", "b.jsonl", "--append"], ".ragcov",
             data_content),
    Scenario("combine", setup_combine, ["combine", "s1.ragcov", "s2.ragcov", "-o", "out.ragcov"],
             "out.ragcov", data_content),
    Scenario("html", setup_html, ["html", "-d", "site", "--title", "new site"], "site",
             site_content),
    Scenario("generate", setup_generate,
             ["generate", "--corpus", "pages.jsonl", "--split", "--generator", "extractive",
              "--retriever", "bm25", "--budget", "6", "--queries", "a.jsonl",
              "-o", "generated.jsonl"], ".ragcov", data_content),
]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    made = {}
    for s in SCENARIOS:
        folder = tmp_path_factory.mktemp(f"template-{s.name}")
        s.setup(folder)
        made[s.name] = folder
    return made


def _copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_minus_nine_leaves_old_or_new(scenario: Scenario, templates, tmp_path: Path) -> None:
    template = templates[scenario.name]
    old = scenario.content(template / scenario.target)

    # The uninterrupted command: how many points it passes, and the new content.
    reference = _copy(template, tmp_path / "reference")
    count_file = tmp_path / "count"
    proc = child(0, scenario.args, reference, count_file)
    assert proc.returncode == 0, proc.stderr
    total = int(count_file.read_text())
    new = scenario.content(reference / scenario.target)
    assert new != old
    assert stray_temps(reference) == []
    generated = (reference / "generated.jsonl").read_text() if scenario.name == "generate" else None

    rng = random.Random(f"{SEED}-{scenario.name}")
    points = sorted(rng.sample(range(1, total + 1), min(POINTS, total)))
    outcomes = {"old": 0, "new": 0}
    for n in points:
        folder = _copy(template, tmp_path / f"kill-{n}")
        proc = child(n, scenario.args, folder)
        assert proc.returncode in (-9, 0), f"point {n}: {proc.stderr}"
        after = scenario.content(folder / scenario.target)
        if scenario.name == "generate":
            # Generation commits one query at a time: every query recorded is complete
            # and the file grows from the old content towards the new one.
            assert old[1] <= after[1] <= new[1], f"point {n}/{total}"
            outcomes["old" if after == old else "new"] += 1
        else:
            assert after in (old, new), f"point {n}/{total}: neither old nor new content"
            outcomes["old" if after == old else "new"] += 1
        rerun = child(-1, scenario.args, folder)
        assert rerun.returncode == 0, f"point {n}: rerun failed: {rerun.stderr}"
        assert scenario.content(folder / scenario.target) == new, f"point {n}/{total}: rerun"
        assert stray_temps(folder) == [], f"point {n}/{total}: rerun left temporaries"
        if generated is not None:
            assert (folder / "generated.jsonl").read_text() == generated, f"point {n}: resume"
        shutil.rmtree(folder)
    # The draw really spans the command: some kills land before the commit, some after.
    assert outcomes["old"] > 0, outcomes
    print(f"{scenario.name}: {total} points, {len(points)} kills, outcomes {json.dumps(outcomes)}")
