"""The CI recipe in docs/ci.md runs: its workflow's shell steps and the pre-commit hook.

The workflow YAML is parsed from the page; its ``run:`` steps are run in order, as the
runner would (``bash -eo pipefail``), in a two-commit git repository built from the bundled
FinQA sample: the base commit's retrieval tests ask a few questions, the head's ask more.
The project's retriever is BM25 (set in its pyproject.toml), so nothing loads a model. The
files the later ``uses:`` steps upload (Codecov's Cobertura file, the comment's Markdown,
the artifact) must exist when those steps would run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ragcov.corpus import load_corpus

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
SAMPLE = ROOT / "src" / "ragcov" / "data_sample"
N_PAGES = 40
BLOCK = re.compile(r"<!--\s*(?P<marker>[^>]*?)\s*-->\s*\n```yaml\n(?P<body>.*?)```", re.DOTALL)
# The expressions the run steps may use (through a step's env), as a pull request sets them.
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")


def yaml_blocks(marker: str) -> list[str]:
    return [m.group("body") for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))
            if m.group("marker").startswith(marker)]


def workflow() -> dict:
    (body,) = yaml_blocks("ci-workflow")
    return yaml.safe_load(body)


def steps() -> list[dict]:
    (job,) = workflow()["jobs"].values()
    return job["steps"]


def test_workflow_parses_and_is_well_formed() -> None:
    wf = workflow()
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert set(on) == {"pull_request", "push"}
    assert wf["permissions"]["pull-requests"] == "write"
    (job,) = wf["jobs"].values()
    for step in job["steps"]:
        assert ("run" in step) != ("uses" in step), step
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]
        if "run" in step:
            assert "${{" not in step["run"], "expressions go through env, so the script runs as is"
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert {"codecov/codecov-action", "marocchino/sticky-pull-request-comment"} <= set(uses)
    assert job["steps"][-1].get("name") == "Chunk coverage gate"  # after the uploads


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def retrieval_tests(questions: list[str]) -> str:
    return ("import pytest\n\n\n"
            f"QUESTIONS = {json.dumps(questions, indent=4)}\n\n\n"
            "@pytest.mark.parametrize('question', QUESTIONS)\n"
            "def test_finds_context(ragcov_retriever, question):\n"
            "    assert ragcov_retriever(question, k=3)\n")


@pytest.fixture
def project(tmp_path: Path) -> dict:
    """A project with a chunk corpus and retrieval tests; the head commit asks more questions."""
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "tests").mkdir()
    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    corpus = load_corpus(pages, split=True)
    (repo / "data" / "chunks.jsonl").write_text(
        "".join(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text}) + "\n" for c in corpus))
    docs = {c.doc_id for c in corpus}
    questions = [q["question"] for q in map(json.loads, (SAMPLE / "finqa_questions.jsonl").read_text()
                                             .splitlines()) if q["doc_id"] in docs]
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nragcov_corpus = "data/chunks.jsonl"\nragcov_k = "3"\n'
        'ragcov_retriever = "bm25"\n')
    (repo / ".gitignore").write_text(".ragcov\n")
    (repo / "tests" / "test_retrieval.py").write_text(retrieval_tests(questions[:3]))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "tests" / "test_retrieval.py").write_text(retrieval_tests(questions[:12]))
    git(repo, "commit", "-q", "-am", "more retrieval tests")
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    return {"repo": repo, "base": base, "runner_temp": runner_temp, "n_chunks": len(corpus)}


def runner_env(project: dict, step_env: dict | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(GITHUB_WORKSPACE=str(project["repo"]), RUNNER_TEMP=str(project["runner_temp"]),
               GITHUB_EVENT_NAME="pull_request", HF_HUB_OFFLINE="1")
    (job,) = workflow()["jobs"].values()
    expressions = {"github.event.pull_request.base.sha": project["base"]}
    for key, value in {**job.get("env", {}), **(step_env or {})}.items():
        value = str(value)
        for expr in EXPRESSION.findall(value):
            inner = expr[3:-2].strip()
            assert inner in expressions, f"the test does not know {expr}"
            value = value.replace(expr, expressions[inner])
        env[key] = value
    return env


def run_step(step: dict, project: dict, **overrides: str) -> subprocess.CompletedProcess:
    env = {**runner_env(project, step.get("env")), **overrides}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=project["repo"], env=env, capture_output=True, text=True, timeout=600)


def total_percent(repo: Path) -> float:
    from ragcov.data import CoverageData
    from ragcov.summary import summarize

    return summarize(CoverageData(repo / ".ragcov").matrix()).coverage * 100


def test_workflow_run_steps_produce_what_the_uploads_need(project: dict) -> None:
    repo = project["repo"]
    all_steps = steps()
    gate = all_steps[-1]
    installs = [s for s in all_steps if "run" in s and "pip install" in s["run"]]
    assert len(installs) == 1  # the one step not run here: this environment is installed
    for step in all_steps[:-1]:
        if "uses" in step:
            # What an upload or comment step reads must be there when it runs.
            inputs = step.get("with", {})
            for key in ("files", "path"):
                for path in str(inputs.get(key, "")).split():
                    if step["uses"].startswith(("codecov/", "marocchino/", "actions/upload-artifact")):
                        assert (repo / path).exists(), f"{step['uses']} would find no {path}"
            continue
        if step in installs:
            continue
        proc = run_step(step, project)
        assert proc.returncode == 0, f"{step.get('name')}:\n{proc.stdout}\n{proc.stderr}"

    # The base commit was measured too, and the comment compares the two.
    from ragcov.data import CoverageData

    assert len(CoverageData(repo / "base.ragcov").query_texts()) == 3
    assert len(CoverageData(repo / ".ragcov").query_texts()) == 12
    comment = (repo / "ragcov-diff.md").read_text()
    assert "|" in comment and "\x1b[" not in comment  # a Markdown table, no terminal colours
    assert "Chunk coverage:" in comment and "9 only in HEAD" in comment
    cobertura = ET.parse(repo / "coverage.xml").getroot()
    assert cobertura.tag == "coverage" and 0 < float(cobertura.get("line-rate")) < 1
    assert (repo / "ragcov-html" / "index.html").is_file()

    # The gate: passes at the measured level, fails (status 2) just above it.
    total = total_percent(repo)
    assert 0 < total < 100
    passed = run_step(gate, project, RAGCOV_FAIL_UNDER=f"{total - 0.5:.1f}")
    assert passed.returncode == 0, passed.stderr
    failed = run_step(gate, project, RAGCOV_FAIL_UNDER=f"{total + 0.5:.1f}")
    assert failed.returncode == 2, failed.stdout + failed.stderr


def test_workflow_without_a_base_comments_this_run_alone(project: dict) -> None:
    """A push (or a base without ragcov): no base.ragcov, the comment is this run's report."""
    repo = project["repo"]
    by_name = {s.get("name"): s for s in steps()}
    for name in ("Retrieval tests under ragcov", "Cobertura XML and the comment"):
        proc = run_step(by_name[name], project, GITHUB_EVENT_NAME="push")
        assert proc.returncode == 0, proc.stderr
    assert not (repo / "base.ragcov").exists()
    assert "|" in (repo / "ragcov-diff.md").read_text()
    assert (repo / "coverage.xml").is_file()


def hooks() -> list[dict]:
    return yaml.safe_load(HOOKS.read_text(encoding="utf-8"))


def test_pre_commit_manifest_is_well_formed_and_documented() -> None:
    manifest = {h["id"]: h for h in hooks()}
    for hook in manifest.values():
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert shlex.split(hook["entry"])[0] == "ragcov"  # the console script ragcov installs
    configs = [yaml.safe_load(b) for b in yaml_blocks("pre-commit-config")]
    assert configs
    for config in configs:
        for repo in config["repos"]:
            for hook in repo["hooks"]:
                if repo["repo"] != "local":
                    assert hook["id"] in manifest, hook["id"]
    assert all(h in DOC.read_text() for h in manifest)


def test_pre_commit_hook_passes_and_fails_on_the_recorded_run(tmp_path: Path) -> None:
    """The hook's command, with the manifest's arguments and with the documented ones."""
    from ragcov.data import CoverageData
    from ragcov.summary import summarize

    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    subprocess.run(["ragcov", "run", "--corpus", str(pages), "--split", "--queries",
                    str(SAMPLE / "finqa_questions.jsonl"), "--retriever", "bm25", "-k", "3", "--quiet"],
                   cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    total = summarize(CoverageData(tmp_path / ".ragcov").matrix()).coverage * 100
    (hook,) = hooks()
    documented = next(h for c in map(yaml.safe_load, yaml_blocks("pre-commit-config"))
                      for r in c["repos"] for h in r["hooks"] if h["id"] == hook["id"])

    def run_hook(args: list[str]) -> subprocess.CompletedProcess:
        # pre-commit runs the entry followed by args (pass_filenames: false: no file names)
        return subprocess.run([*shlex.split(hook["entry"]), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    for args in (hook["args"], documented["args"]):
        threshold = float(next(a.split("=", 1)[1] for a in args if a.startswith("--fail-under=")))
        proc = run_hook(args)
        assert proc.returncode == (0 if total >= threshold else 2), proc.stdout + proc.stderr
    assert run_hook([f"--fail-under={total - 0.5:.1f}"]).returncode == 0
    failed = run_hook([f"--fail-under={total + 0.5:.1f}"])
    assert failed.returncode == 2 and "fail" in (failed.stdout + failed.stderr).lower()
    missing = subprocess.run([*shlex.split(hook["entry"]), *hook["args"]], cwd=tmp_path / "..",
                             env=env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "no data file" in missing.stderr
