"""Every command, in every output format, over one hostile corpus and suite.

Ids and texts are other people's data: a bidi override in a chunk id (``doc\\u202etxt.exe``
displays as "docexe.txt"), a line or paragraph separator in a document id, a NUL, an
ANSI escape (``ESC[31m`` recolours the terminal), ``<script>`` in a page and ids of
thousands of characters. No output for people (terminal, Markdown, HTML; the text of
JSON, XML and lcov follow their own rules) may carry one of those characters raw, and no
page may carry the markup. The table is keyed by the CLI's own list of commands, so a
command added without a case here fails :func:`test_every_command_has_a_case`.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from ragcov.cli import main
from ragcov.cli.commands import NAMES
from ragcov.controls import CONTROL, INVISIBLE
from ragcov.reporters.registry import REPORTERS

SCRIPT = "<script>alert(1)</script>"
LONG = "long" + "L" * 3000 + "\u202e.exe"
CHUNKS = [
    {"id": "doc\u202etxt.exe", "doc_id": "d\u2028x",
     "text": "Quarterly revenue growth\u2029 rose \x1b[31msharply\x00 in the third quarter. " + SCRIPT},
    {"id": "c\x1b[31mred\x1b]0;title\x07", "doc_id": "d" + SCRIPT,
     "text": "The capital of France is Paris, on the Seine. " + SCRIPT},
    {"id": LONG, "doc_id": "d\u2029p\x00", "text": "Mitochondria power the cell \u202e and make energy."},
    {"id": "leaf\u2066iso\u2069", "doc_id": "bio\u200blogy",
     "text": "Leaves turn sunlight, water and carbon dioxide into sugar."},
    {"id": "plain1", "doc_id": "plain", "text": "The board declared quarterly dividends per share."},
    {"id": "plain2", "doc_id": "plain", "text": "Berlin is the capital of Germany and its largest city."},
    {"id": "plain3", "doc_id": "plain", "text": "Interest expense rose on new long-term debt."},
]
QUERIES = [
    {"id": "q\u202eevil", "query": "quarterly revenue growth \u2028 in the third quarter"},
    {"id": "q\x1b[2J" + SCRIPT, "query": "What is the capital of France? " + SCRIPT},
    {"id": "q\x00nul", "query": "what powers the cell\x1b[31m"},
    {"id": "q" + "Q" * 2000, "query": "dividends per share declared by the board"},
]


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _ragcov(*args: str) -> tuple[int, str, str]:
    """``ragcov ARGS`` in this process (the consoles print to sys.stdout and sys.stderr as
    they are at print time, so redirecting both captures everything)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return (code if isinstance(code, int) else (0 if code is None else 1)), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile inputs and the data files the reading commands read."""
    tmp = tmp_path_factory.mktemp("hostile")
    _jsonl(tmp / "c.jsonl", CHUNKS)
    _jsonl(tmp / "q.jsonl", QUERIES)
    _jsonl(tmp / "head.jsonl", QUERIES[:2])
    _jsonl(tmp / "qrels.jsonl", [{"query_id": QUERIES[0]["id"], "chunk_id": CHUNKS[0]["id"]},
                                 {"query_id": QUERIES[1]["id"], "chunk_id": CHUNKS[2]["id"]},
                                 {"query_id": QUERIES[2]["id"], "chunk_id": CHUNKS[3]["id"]}])
    _jsonl(tmp / "traces.jsonl", [{"query_id": q["id"], "query": q["query"],
                                   "retrieved": [CHUNKS[i]["id"], CHUNKS[(i + 1) % 3]["id"]]}
                                  for i, q in enumerate(QUERIES)])
    _jsonl(tmp / "distractors.jsonl", [{"id": "x\u202edistract", "doc_id": "x\u2028d",
                                        "text": "Zebra quokka lorem ipsum " + SCRIPT}])
    run = ("run", "--corpus", "c.jsonl", "--retriever", "bm25", "-k", "2", "-q")
    with contextlib.chdir(tmp):
        for queries, data in (("q.jsonl", "t.ragcov"), ("head.jsonl", "head.ragcov")):
            code, _, err = _ragcov(*run, "--queries", queries, "--data-file", data)
            assert code == 0, err
        code, _, err = _ragcov("topics", "--data-file", "t.ragcov", "-q")
        assert code == 0, err
    return tmp


DATA = ("--data-file", "t.ragcov")
PROBE = ("probe", "--corpus", "c.jsonl", "--retriever", "bm25", *DATA, "--show-ids")
DRIFT = ("drift", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--retriever", "bm25", "-k", "2",
         "--data-file", "drift.ragcov", "--distractors", "distractors.jsonl", "--show", "20")

# command -> [(case, arguments, {output: kind})]. stdout and stderr are always read, as
# text unless the case names them; "json" output is parsed (its text is exempt), "data"
# (XML, lcov, an SVG, node ids) is exempt, "html" is a page or a folder of pages.
CASES: dict[str, list[tuple[str, tuple[str, ...], dict[str, str]]]] = {
    "run": [("text", ("run", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--retriever", "bm25",
                      "-k", "7", "--data-file", "new.ragcov"), {})],
    "report": [(fmt, ("report", *DATA, "--format", fmt, "-m", "--show-ids", "--redundant",
                      "--qrels", "qrels.jsonl"), {}) for fmt in REPORTERS]
    + [("by topic", ("report", *DATA, "--by", "topic"), {}),
       ("by topic markdown", ("report", *DATA, "--by", "topic", "--format", "markdown"), {})],
    "json": [("json", ("json", *DATA, "-o", "r.json"), {"r.json": "json"}),
             ("stdout", ("json", *DATA, "-o", "-"), {"stdout": "json"})],
    "combine": [("text", ("combine", "t.ragcov", "head.ragcov", "-o", "both.ragcov",
                          "--keep"), {})],
    "erase": [("text", ("erase", *DATA), {})],
    "index": [("text", ("index", "--corpus", "c.jsonl", "--retriever", "bm25"), {})],
    "demo": [("text (bundled data: nothing hostile to read)",
              ("demo", "--dir", "demo", "--retriever", "bm25"), {})],
    "faults": [("text and json", ("faults", *DATA, "--qrels", "qrels.jsonl", "-o", "f.json"),
                {"f.json": "json"})],
    "generate": [("text", ("generate", "--corpus", "c.jsonl", "--retriever", "bm25", "-k", "2",
                           "--queries", "q.jsonl", "--budget", "3", "-o", "gen.jsonl",
                           "--data-file", "gen.ragcov", "--ragas", "ragas.json"),
                  {"gen.jsonl": "data", "ragas.json": "json"})],
    "html": [("site", ("html", *DATA, "-d", "site", "--title", "T" + SCRIPT + "\u202e"), {"site": "html"})],
    "xml": [("xml", ("xml", *DATA, "-o", "c.xml"), {"c.xml": "data"})],
    "lcov": [("lcov", ("lcov", *DATA, "-o", "c.lcov"), {"c.lcov": "data"})],
    "badge": [("svg", ("badge", *DATA, "-o", "b.svg"), {"b.svg": "data"})],
    "import": [("jsonl", ("import", "traces.jsonl", "--format", "jsonl", "--corpus", "c.jsonl",
                          "--k", "2", "--data-file", "imported.ragcov"), {})],
    "select": [("json, suite and node ids", ("select", *DATA, "-o", "order.json", "--show-ids",
                                             "--suite-out", "cut.jsonl"),
                {"order.json": "json", "cut.jsonl": "data"})],
    "diff": [(fmt, ("diff", "head.ragcov", "t.ragcov", "--format", fmt, "--show-ids"),
              {"stdout": "json"} if fmt == "json" else {}) for fmt in ("text", "markdown", "json")]
    + [("html", ("diff", "head.ragcov", "t.ragcov", "--html", "dsite"), {"dsite": "html"})],
    "gap": [(fmt, ("gap", "--tests", "head.ragcov", "--traffic", "t.ragcov", "--format", fmt,
                   "--show-ids"), {"stdout": "json"} if fmt == "json" else {})
            for fmt in ("text", "markdown", "json")],
    "probe": [("text", (*PROBE, "--drafts-out", "drafts.jsonl", "--qrels", "qrels.jsonl"),
               {"drafts.jsonl": "data"}),
              ("json", (*PROBE, "--format", "json"), {"stdout": "json"})],
    "drift": [(fmt, (*DRIFT, "--format", fmt), {"stdout": "json"} if fmt == "json" else {})
              for fmt in ("text", "markdown", "json")]
    + [("html", (*DRIFT, "--html", "driftsite", "-q"), {"driftsite": "html"})],
    "topics": [(fmt, ("topics", *DATA, "--format", fmt), {"stdout": "json"} if fmt == "json" else {})
               for fmt in ("text", "markdown", "json")],
    "qrels": [(fmt, ("qrels", "check", "qrels.jsonl", "--corpus", "c.jsonl", *DATA, "--format", fmt,
                     "--fix", "-o", f"fixed-{fmt}.jsonl"),
               {"stdout": "json", f"fixed-{fmt}.jsonl": "data"} if fmt == "json"
               else {f"fixed-{fmt}.jsonl": "data"})
              for fmt in ("text", "json")],
}

# What must never reach an output for people raw: every control, separator, override and
# invisible character (line breaks and tabs of the report itself aside).
RAW = [c for c in map(chr, range(0x110000)) if (CONTROL.match(c) or INVISIBLE.match(c))
       and c not in "\n\t" and not 0xD800 <= ord(c) <= 0xDFFF]


def _raw(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c in _RAW_SET})


_RAW_SET = frozenset(RAW)


def test_every_command_has_a_case() -> None:
    assert set(CASES) == set(NAMES), ("each command needs a case in CASES (missing: "
                                      f"{sorted(set(NAMES) - set(CASES))})")


# Cases whose output shows the hostile ids or texts (the others print counts, or data):
# there the escaped form must be found, so the check above is not vacuous.
SHOWS_IDS = {"report-text", "report-markdown", "report-by topic", "report-by topic markdown",
             "faults-text and json", "html-site", "diff-markdown", "diff-html", "gap-text",
             "gap-markdown", "probe-text", "drift-text", "drift-markdown", "drift-html",
             "topics-text", "topics-markdown"}


def _params() -> list:
    return [pytest.param(command, case, args, outputs, id=f"{command}-{case}")
            for command, cases in CASES.items() for case, args, outputs in cases]


@pytest.mark.parametrize(("command", "case", "args", "outputs"), _params())
def test_no_raw_control_character_in_any_output(workspace: Path, tmp_path: Path, command: str,
                                                case: str, args: tuple[str, ...],
                                                outputs: dict[str, str]) -> None:
    work = tmp_path / "w"
    shutil.copytree(workspace, work)
    with contextlib.chdir(work):
        code, out, err = _ragcov(*args)
    assert code in (0, 1, 2), (code, err)
    if code == 1:  # a refusal (xml, lcov) is one line, its id escaped
        assert err.count("\n") == 1 and err.startswith("ragcov: error:"), err
    streams = {"stdout": out, "stderr": err}
    texts: dict[str, str] = {}
    for name, text in streams.items():
        kind = outputs.get(name, "text")
        if kind == "json" and text.strip():
            json.loads(text)
        elif kind == "text":
            texts[name] = text
    for name, kind in outputs.items():
        if name in streams:
            continue
        path = work / name
        if not path.exists():
            assert code != 0, f"{name} was not written: {err}"
            continue
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            text = file.read_text(encoding="utf-8")
            if kind == "json":
                json.loads(text)
            elif kind == "html" and file.suffix == ".html":
                texts[str(file.relative_to(work))] = text
                assert "<script>alert" not in text, f"{file.name} carries the markup raw"
    assert texts, "nothing printed to check"
    found = {name: _raw(text) for name, text in texts.items() if _raw(text)}
    assert not found, f"raw characters in {found}"
    if f"{command}-{case}" in SHOWS_IDS:  # the ids reached the output, escaped
        assert any("\\u202e" in text or "\\x1b" in text for text in texts.values()), texts


def test_outputs_leave_through_the_escaping_sinks() -> None:
    """The sinks are the only ways out: a report reaches stdout or its file through
    ``cli.options.write_output`` (escaped unless its format is data), every page is
    rendered by ``reporters.html.environment`` (values finalised, the page escaped whole),
    and the terminal is ``cli.console``'s. A renderer writing past them is caught here."""
    import ragcov

    src = Path(ragcov.__file__).parent
    modules = {str(p.relative_to(src)): p.read_text(encoding="utf-8") for p in src.rglob("*.py")}
    assert [m for m, text in modules.items() if "sys.stdout.write" in text] == ["cli/options.py"]
    # Prompts are not output: generation/templates.py renders what a model is sent.
    assert sorted(m for m, text in modules.items() if "jinja2.Environment" in text) == [
        "generation/templates.py", "reporters/html.py"]
    # progress.py draws bars and spinners on stderr, their labels escaped; demo.py's own
    # console prints the bundled sample only when run_demo is called from Python.
    assert sorted(m for m, text in modules.items() if "import Console" in text) == [
        "cli/console.py", "demo.py", "progress.py"]
