"""The house rules of docs/architecture.md, checked so they stay true.

* Layers: every part of ragcov (a top-level module, or a package taken whole) has a
  place in :data:`LAYERS`, lowest first, and a module imports only from its own part
  or from parts below it, at module level or inside a function alike. An import that
  still runs up is listed in :data:`UPWARD` with the reason, and must go from the list
  once it is gone from the code.
* No import loops between ragcov's modules.
* SQL only in ``ragcov/data/``: a new schema changes one folder.

``if TYPE_CHECKING:`` imports count as every other import: a type named from a layer
above is a dependency a reader follows all the same, and two modules naming each
other's types are a circle. ``from ragcov import api`` imports the module ``ragcov.api``;
``from ragcov import __version__`` would import the package's face (``ragcov/__init__``,
the public door at the top), which is why the version lives in ``ragcov.version``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Lowest first. Within a group the order is strict too: each part may import the
# parts before it, never those after it.
LAYERS: tuple[tuple[str, ...], ...] = (
    # The floor: the version, errors, field rules, files and their destinations, retrying,
    # warnings, Ctrl-C and threads, progress, URL redaction, settings,
    # the paused cycle collector.
    # Control characters are escaped below progress, whose labels may name a retriever.
    ("version", "analyzer", "errors", "controls", "user_warnings", "sigint", "progress", "retry",
     "redaction", "fields", "destinations", "files", "config", "collector"),
    # What is recorded and measured. ``stores`` reads a vector store's chunks (a corpus
    # may be a store URL), so it sits below ``corpus``; searching a store is a
    # retriever (``retrievers/store.py``). ``data`` records a corpus and a run and reads
    # back a matrix, so it sits above the three.
    ("textcov", "stores", "corpus", "suite", "retrieval", "qrels", "matrix", "copies", "data", "tfidf",
     "metrics", "summary", "apfd", "failures", "faults"),
    # Retrieving, importing, probing, generating, selecting, reporting, comparing.
    # ``scope`` (what a report counts) reads the reachability audit; ``topics`` clusters
    # the vectors the retrievers cached and counts per topic what the audit found;
    # ``overwrite`` guards every output a command writes.
    ("retrievers", "traces", "reachability", "generation", "selection", "scope", "drift",
     "reporters", "compare", "topics", "overwrite"),
    # The one door and the engine that runs a measurement on a cluster.
    ("distributed", "distributed_traffic", "api"),
    # Parsing and printing; ``ragcov`` is the package's face (``import ragcov``), its
    # public names loaded from the api on first use.
    ("demo", "cli", "pytest_plugin", "__main__", "ragcov"),
)
# (importer, imported) -> why it still runs up the layers.
UPWARD: dict[tuple[str, str], str] = {}
# Modules outside ragcov/data/ allowed SQL, and why.
SQL_ELSEWHERE = {
    "ragcov/stores/pgvector.py": "queries the user's own Postgres table (a vector store), "
                                "not ragcov's data file",
}
SQL = re.compile(r"\b(SELECT\s[^\n]*?\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                 r"CREATE\s+(TEMP\s+|TEMPORARY\s+)?TABLE)\b|\.execute(many|script)?\(")


def _modules() -> dict[str, Path]:
    mods = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _runtime_imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # ``from PACKAGE import module`` imports the module; any other name, the package.
            names = [f"{base}.{alias.name}" for alias in node.names]
            targets = [*names, *([base] if any(n not in mods for n in names) else [])]
        else:
            continue
        found.update(t for t in targets if t in mods and t != name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on_stack.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
    return found


def test_cycle_finder_finds_a_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_loops() -> None:
    mods = _modules()
    graph = {name: _runtime_imports(name, path, mods) for name, path in mods.items()}
    assert _cycles(graph) == []


def test_the_wheel_holds_no_research_harness() -> None:
    assert not (SRC / "ragcov" / "experiments").exists()
    assert (SRC.parent / "research" / "__main__.py").is_file()


def _part(module: str) -> str:
    """The part of the house a module belongs to: ``ragcov.reporters.html`` -> ``reporters``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


RANK = {part: i for i, part in enumerate(p for group in LAYERS for p in group)}


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every (importer, imported) whose imported part ranks above the importer's part."""
    return {(name, target) for name, targets in graph.items() for target in targets
            if RANK[_part(target)] > RANK[_part(name)]}


def test_layer_check_finds_an_import_that_runs_up() -> None:
    graph = {"ragcov.errors": {"ragcov.api"}, "ragcov.api": {"ragcov.errors"},
             "ragcov.reporters.html": {"ragcov.reporters.names", "ragcov.metrics"}}
    assert _upward(graph) == {("ragcov.errors", "ragcov.api")}


def test_every_part_has_one_place_in_the_layers() -> None:
    listed = [p for group in LAYERS for p in group]
    assert len(listed) == len(set(listed))
    assert {_part(name) for name in _modules()} == set(listed)


def test_no_import_runs_up_the_layers() -> None:
    mods = _modules()
    graph = {name: _runtime_imports(name, path, mods) for name, path in mods.items()}
    found = _upward(graph)
    assert sorted(found - set(UPWARD)) == []
    # A listed exception that is fixed leaves the list, so the list stays true.
    assert sorted(set(UPWARD) - found) == []


def test_sql_check_finds_sql() -> None:
    assert SQL.search('con.execute("SELECT id, position FROM chunks")')
    assert SQL.search("INSERT INTO wanted VALUES (?)")
    assert SQL.search("CREATE TEMP TABLE wanted (chunk_idx INTEGER PRIMARY KEY)")
    assert not SQL.search("Select a strategy from the list; update the table by hand.")


def test_sql_only_in_data() -> None:
    found = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("ragcov/data/") or rel in SQL_ELSEWHERE:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SQL.search(line):
                found[f"{rel}:{number}"] = line.strip()
    assert found == {}


# What the CLI reaches only through ragcov.api: it parses and prints (renderers and
# formatting helpers are its own to use).
CLI_THROUGH_API = ("data", "retrievers", "retrieval", "traces", "generation", "selection", "suite",
                   "distributed", "distributed_traffic", "stores", "scope", "drift", "topics")


def test_the_cli_does_its_work_through_the_api() -> None:
    mods = _modules()
    found = sorted(f"{name} -> {target}" for name, path in mods.items()
                   if name.startswith("ragcov.cli.")
                   for target in _runtime_imports(name, path, mods)
                   if _part(target) in CLI_THROUGH_API)
    assert found == []


# What the CLI may import besides ragcov.api: the floor, the renderers of what the api
# returned, and its own modules. Anything that does work (reads the data file, retrieves,
# measures, selects) is reached through the api, the one door.
CLI_MAY_IMPORT = ("ragcov.api", "ragcov.cli", "ragcov.reporters", "ragcov.compare.render",
                  "ragcov.compare.html", "ragcov.demo")


def test_the_cli_goes_through_the_api() -> None:
    mods = _modules()
    floor = {f"ragcov.{p}" for p in LAYERS[0]}
    found = {}
    for name, path in mods.items():
        if not name.startswith("ragcov.cli"):
            continue
        for target in _runtime_imports(name, path, mods):
            allowed = target in floor or any(target == a or target.startswith(a + ".")
                                             for a in CLI_MAY_IMPORT)
            if not allowed:
                found.setdefault(name, set()).add(target)
    assert found == {}


def test_the_drawing_in_architecture_md_is_the_checked_one() -> None:
    """docs/architecture.md draws the layers; the drawing is this test's table, top first."""
    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc.split("<!-- layers: test_architecture.py reads these lines -->", 1)[1]
    drawn = []
    for line in block.splitlines()[1:]:
        if not line.strip():
            break
        number, _name, *parts = line.split()
        drawn.append((int(number), tuple(parts)))
    assert [n for n, _ in drawn] == list(range(len(LAYERS) - 1, -1, -1))
    assert [parts for _, parts in reversed(drawn)] == list(LAYERS)
