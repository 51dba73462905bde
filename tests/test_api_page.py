"""``ragcov.api`` is the public surface and docs/api.md its page: the two agree.

* the names the module binds (its verbs, the types they take and return) are exactly
  ``__all__``: a helper added to the door is either public (listed, documented) or lives
  elsewhere (``ragcov.api.settings``, ``steps``, ``cli_support``, or its concept's module);
* every public name has its entry on the page, and every entry names a public name;
* every name the CLI, the pytest plugin, research/, benchmarks/, the tests and the docs
  take from ``ragcov.api`` is public;
* the page's examples run, top to bottom, in an empty folder;
* the CLI's checks in ``ragcov.api.cli_support`` that may load numpy first load it as the
  door does, its BLAS threads leaving Ctrl-C to the main thread.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import ragcov
import ragcov.api as api

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"
ENTRY = re.compile(r"^### `(\w+)`$", re.M)
BLOCK = re.compile(r"(?:<!--\s*(?P<marker>[^>]*?)\s*-->\s*\n)?```python\n(?P<body>.*?)```", re.S)
# What a test of the door's own machinery may take besides the public names.
DOOR_INTERNALS = {"_DEFERRED", "_Door", "_LIGHT", "_load_deferred", "__all__", "__file__",
                  "cli_support", "settings", "steps"}


def _bound_names() -> set[str]:
    """ragcov's own names the api module binds: not private, not a module, not an import
    from the standard library (``Path``, ``Any``, ``dataclass`` ...)."""
    api._load_deferred()  # the public names loaded on first use are bound too
    found = set()
    for name, value in vars(api).items():
        if name.startswith("_") or name == "TYPE_CHECKING" or isinstance(value, types.ModuleType):
            continue
        origin = (getattr(value, "__module__", None) or "").split(".")[0]
        if origin not in sys.stdlib_module_names:
            found.add(name)
    return found


def test_the_api_binds_exactly_its_public_names() -> None:
    assert len(api.__all__) == len(set(api.__all__))
    assert _bound_names() == set(api.__all__)
    assert all(getattr(api, name) is not None for name in api.__all__)


def test_the_package_face_offers_public_verbs_only() -> None:
    assert set(ragcov._VERBS) <= set(api.__all__)


def test_every_public_name_has_its_entry_on_the_page() -> None:
    entries = ENTRY.findall(PAGE.read_text(encoding="utf-8"))
    assert len(entries) == len(set(entries))
    assert sorted(set(api.__all__) - set(entries)) == []  # public, not documented
    assert sorted(set(entries) - set(api.__all__)) == []  # documented, not public


def _taken_from_the_api(path: Path) -> set[str]:
    """Names a module takes from ragcov.api: ``from ragcov.api import X``, and ``X`` of
    ``api.X`` where ``api`` is bound to the module (``from ragcov import api``,
    ``import ragcov.api as api``), and ``ragcov.api.X`` however ``ragcov`` was imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    taken: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ragcov.api":
            taken.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "ragcov":
            aliases.update(a.asname or a.name for a in node.names if a.name == "api")
        elif isinstance(node, ast.Import):
            aliases.update(a.asname or a.name for a in node.names if a.name == "ragcov.api")
    aliases.add("ragcov.api")  # ``import ragcov`` and a submodule import bind it too
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in aliases:
            taken.add(node.attr)
    return taken


def test_every_name_taken_from_the_api_is_public() -> None:
    door = ROOT / "src" / "ragcov" / "api"
    found = {}
    for folder in ("src", "tests", "research", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            if door in path.parents:
                continue
            private = _taken_from_the_api(path) - set(api.__all__) - DOOR_INTERNALS
            if private:
                found[path.relative_to(ROOT).as_posix()] = sorted(private)
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        named = set(re.findall(r"ragcov\.api\.(\w+)", page.read_text(encoding="utf-8")))
        private = named - set(api.__all__) - DOOR_INTERNALS
        if private:
            found[page.relative_to(ROOT).as_posix()] = sorted(private)
    assert found == {}


def test_the_name_scan_sees_each_way_of_taking_a_name(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from ragcov import api\nimport ragcov.api as door\nimport ragcov\n"
                      "from ragcov.api import measure, fail_under_message\n"
                      "api.gate_total\ndoor.one_read\nragcov.api.check_seed\n")
    assert _taken_from_the_api(module) == {"measure", "fail_under_message", "gate_total",
                                           "one_read", "check_seed"}


def _examples(with_slow: bool) -> str:
    blocks = [m.group("body") for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))
              if with_slow or not (m.group("marker") or "").startswith("slow")]
    return "\n".join(blocks)


def _run_examples(code: str, folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "RAGCOV_CACHE_DIR": str(folder / "cache")}
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_page_examples_run(tmp_path: Path) -> None:
    code = _examples(with_slow=False)
    assert "api.measure(" in code and "api.corpus_drift(" in code
    _run_examples(code, tmp_path)


@pytest.mark.slow
def test_the_page_examples_run_with_the_embedding_model(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    _run_examples(_examples(with_slow=True), tmp_path)


SIGINT_PROBE = """
import signal, sys
from pathlib import Path
from ragcov.api import cli_support
{call}
assert "numpy" in sys.modules
me = Path("/proc/self/task")
others = [t for t in me.iterdir() if t.name != str(__import__("threading").get_native_id())]
assert others, "numpy's BLAS started no thread: nothing to check"
for task in others:
    mask = int(next(l.split()[1] for l in (task / "status").read_text().splitlines()
                    if l.startswith("SigBlk:")), 16)
    assert mask & (1 << (signal.SIGINT - 1)), f"thread {{task.name}} takes SIGINT"
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads threads' signal masks in /proc")
@pytest.mark.parametrize("call", [
    "cli_support.check_index_gates(90.0, None)",
    "cli_support.check_min_topic_coverage(50.0)",
    "cli_support.drift_limits(['noise=0.1'])",
    "cli_support.ALL_STRATEGIES",
], ids=["index-gates", "topic-gate", "drift-limits", "strategies"])
def test_a_cli_check_that_loads_numpy_leaves_ctrl_c_to_the_main_thread(call: str) -> None:
    """A check the CLI makes before any verb may be the first to load numpy, whose BLAS
    starts threads: they must block SIGINT, as those the door's own loading starts do."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env.update(PYTHONPATH=str(ROOT / "src"), OPENBLAS_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", SIGINT_PROBE.format(call=call)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
