"""ragcov in CI as coverage.py is: the gate, names a person reads, usage errors, warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.demo import sample_path

pytest_plugins = ["pytester"]

REPORTERS = ["report", "json", "xml", "lcov", "html", "badge"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled FinQA sample measured with bm25 (under a second): 55.07% at k=5."""
    from ragcov.cli import main

    folder = tmp_path_factory.mktemp("sample")
    args = ["run", "--corpus", str(sample_path("finqa_pages.jsonl")), "--split",
            "--queries", str(sample_path("finqa_questions.jsonl")), "--retriever", "bm25",
            "--data-file", str(folder / ".ragcov"), "-q"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code in (0, None)
    return folder


@pytest.fixture
def in_sample(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(sample)
    return sample


# 1. The gate compares the total as it is printed ---------------------------------------

def test_ratchet_on_the_printed_total_passes(in_sample: Path, capsys) -> None:
    """`--fail-under "$(ragcov report --format total)"` is the ratchet CI writes: it must pass."""
    code, total, _ = cli(capsys, "report", "--format", "total")
    assert code == 0
    total = total.strip()
    assert total == "55.07"
    assert cli(capsys, "report", "--fail-under", total)[0] == 0
    assert cli(capsys, "report", "--fail-under", "55.06")[0] == 0


def test_gate_failure_prints_the_total_at_the_compared_precision(in_sample: Path, capsys) -> None:
    code, _, err = cli(capsys, "report", "--fail-under", "55.08")
    assert code == 2
    assert "Coverage failure: total of 55.07% is less than fail-under=55.08" in err
    # An explicit precision is the precision the gate compares at, as coverage.py's.
    code, _, err = cli(capsys, "report", "--precision", "0", "--fail-under", "55.07")
    assert code == 2 and "total of 55% is less than fail-under=55.07" in err
    assert cli(capsys, "report", "--precision", "1", "--fail-under", "55.1")[0] == 0


# 2. --fail-under on every reporter, and in each reporter's config table -----------------

@pytest.mark.parametrize("command", REPORTERS)
def test_every_reporter_has_the_same_gate(in_sample: Path, capsys, command: str) -> None:
    code, _, err = cli(capsys, command, "--fail-under", "55.08")
    assert code == 2, err
    assert err.strip().splitlines()[-1] == ("Coverage failure: total of 55.07% is less than "
                                            "fail-under=55.08")
    assert cli(capsys, command, "--fail-under", "55.07")[0] == 0
    code, _, err = cli(capsys, command, "--fail-under", "101")
    assert code == 1 and "--fail-under must be a percentage from 0 to 100" in err


def _text_total(capsys) -> str:
    """The sample's text coverage as the gate compares it (2 decimals)."""
    from ragcov.summary import display_percent

    code, out, err = cli(capsys, "json", "-o", "-")
    assert code == 0, err
    return display_percent(json.loads(out)["totals"]["text_coverage"], 2)


@pytest.mark.parametrize("command", REPORTERS)
def test_every_reporter_has_the_same_text_gate(in_sample: Path, capsys, command: str) -> None:
    """--fail-under-text wherever --fail-under is: one check, one message, one exit status."""
    shown = _text_total(capsys)
    above = f"{float(shown) + 0.01:.2f}"
    code, _, err = cli(capsys, command, "--fail-under-text", above)
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (f"Coverage failure: text coverage of {shown}% is less "
                                            f"than fail-under-text={above}")
    assert cli(capsys, command, "--fail-under-text", shown)[0] == 0
    code, _, err = cli(capsys, command, "--fail-under-text", "101")
    assert code == 1 and "--fail-under-text must be a percentage from 0 to 100" in err


def test_flat_fail_under_text_gates_every_reporter(in_sample: Path, capsys) -> None:
    (in_sample / "ragcov.toml").write_text("fail_under_text = 99\n")
    try:
        for command in REPORTERS:
            code, _, err = cli(capsys, command)
            assert code == 2 and "fail-under-text=99" in err, (command, err)
        code, _, err = cli(capsys, "gap", "--tests", ".ragcov", "--traffic", ".ragcov")
        assert code == 0, err
    finally:
        (in_sample / "ragcov.toml").unlink()


@pytest.mark.parametrize("command", REPORTERS)
def test_fail_under_in_a_reporters_own_table(in_sample: Path, capsys, command: str) -> None:
    (in_sample / "pyproject.toml").write_text(f"[tool.ragcov.{command}]\nfail_under = 60\n")
    try:
        code, _, err = cli(capsys, command)
        assert code == 2 and "fail-under=60" in err
        # The flag still wins over the file.
        assert cli(capsys, command, "--fail-under", "50")[0] == 0
    finally:
        (in_sample / "pyproject.toml").unlink()


def test_flat_fail_under_gates_every_reporter_but_not_gap(in_sample: Path, capsys) -> None:
    (in_sample / "ragcov.toml").write_text("fail_under = 60\n")
    try:
        for command in ("xml", "lcov"):
            code, _, err = cli(capsys, command)
            assert code == 2 and "fail-under=60" in err
        code, _, err = cli(capsys, "gap", "--tests", ".ragcov", "--traffic", ".ragcov")
        assert code == 0, err
    finally:
        (in_sample / "ragcov.toml").unlink()


@pytest.mark.parametrize("command", REPORTERS)
def test_a_flat_precision_setting_is_every_reporters_gate_precision(in_sample: Path, capsys,
                                                                     command: str) -> None:
    """One config, one answer: at precision 0 the total is 55, below 55.05, in every reporter
    (json, xml and lcov compared at 55.07 and passed while report failed)."""
    (in_sample / "ragcov.toml").write_text("precision = 0\nfail_under = 55.05\n")
    try:
        code, _, err = cli(capsys, command)
        assert code == 2, err
        assert err.strip().splitlines()[-1] == ("Coverage failure: total of 55% is less than "
                                                "fail-under=55.05")
        assert cli(capsys, command, "--precision", "2")[0] == 0  # the flag wins
    finally:
        (in_sample / "ragcov.toml").unlink()


def test_gate_writes_the_report_before_failing(in_sample: Path, capsys) -> None:
    """As coverage.py: the report a failing gate was run for is still there to read."""
    (in_sample / "gated.json").unlink(missing_ok=True)
    code, _, _ = cli(capsys, "json", "-o", "gated.json", "--fail-under", "99")
    assert code == 2
    assert json.loads((in_sample / "gated.json").read_text())["totals"]


def test_html_gate_judges_the_numbers_the_site_shows(in_sample: Path, capsys,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One read for the site and its gate: an append between two reads would make the
    gate judge a total the site does not show."""
    from ragcov.data.datafile import CoverageData

    reads = []
    real = CoverageData.matrix
    monkeypatch.setattr(CoverageData, "matrix", lambda self, *a, **kw: reads.append(1) or
                        real(self, *a, **kw))
    code, _, err = cli(capsys, "html", "-d", "gated-html", "--fail-under", "55.08")
    assert code == 2 and "total of 55.07% is less than fail-under=55.08" in err
    assert len(reads) == 1
    assert "55%" in (in_sample / "gated-html" / "index.html").read_text()


# 3. Chunks named DOC#N (N from 1, the Cobertura/lcov line) wherever a person reads them ----

UUIDS = [f"{i:08x}-7c1e-4b5a-9f00-{i:012x}" for i in range(8)]


@pytest.fixture
def uuid_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store-like corpus (UUID ids): BASE retrieves manual:1-2, HEAD manual:1-5."""
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrieval import Run

    monkeypatch.chdir(tmp_path)
    texts = [f"Step {i} of the manual: turn valve {i} a quarter turn." for i in range(6)]
    texts += ["Refunds take five working days.", "Refunds take five working days."]
    chunks = [{"id": cid, "doc_id": "manual" if i < 6 else "faq", "text": text}
              for i, (cid, text) in enumerate(zip(UUIDS, texts))]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    corpus = load_corpus(tmp_path / "c.jsonl")
    for name, hit in (("base", UUIDS[:2]), ("head", UUIDS[:5])):
        run = Run(k=1, retriever={"kind": "hand-made"})
        for i, cid in enumerate(hit):
            run.add(f"q{i}", f"question {i}", [(cid, 1.0)])
        CoverageData(tmp_path / f"{name}.ragcov").write(corpus, run)
    return tmp_path


def _row(out: str, doc: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(doc + " "))


def test_show_missing_numbers_are_the_cobertura_lines(uuid_runs: Path, capsys) -> None:
    import xml.etree.ElementTree as ET

    code, out, _ = cli(capsys, "report", "-m", "--data-file", "base.ragcov")
    assert code == 0 and _row(out, "manual").endswith("   3-6")
    assert UUIDS[2] not in out
    code, xml_text, _ = cli(capsys, "xml", "--data-file", "base.ragcov", "-o", "-")
    manual = next(c for c in ET.fromstring(xml_text).iter("class") if c.get("name") == "manual")
    assert [int(line.get("number")) for line in manual.iter("line")
            if line.get("hits") == "0"] == [3, 4, 5, 6]
    code, out, _ = cli(capsys, "report", "-m", "--show-ids", "--data-file", "base.ragcov")
    assert _row(out, "manual").endswith("   " + ", ".join(UUIDS[2:6]))


def test_duplicates_line_names_each_chunk_by_its_id(uuid_runs: Path, capsys) -> None:
    _, out, _ = cli(capsys, "report", "--data-file", "base.ragcov")
    assert f"first: {UUIDS[6]}, {UUIDS[7]})" in out and "faq#1" not in out


def test_a_store_recordings_missing_chunks_are_listed_by_id(uuid_runs: Path, capsys) -> None:
    """A store's read order is not stable: a deleted chunk shifts every position after it."""
    import sqlite3

    con = sqlite3.connect("base.ragcov")
    con.execute("""INSERT INTO meta VALUES ('x:corpus_kind', '"store"')""")
    con.commit()
    con.close()
    _, out, _ = cli(capsys, "report", "-m", "--data-file", "base.ragcov")
    assert _row(out, "manual").endswith("   " + ", ".join(UUIDS[2:6]))


def test_diff_lists_gained_chunks_as_ranges(uuid_runs: Path, capsys) -> None:
    code, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--format", "markdown")
    assert code == 0 and "Gained chunks (3): `manual:3-5`" in out
    assert UUIDS[3] not in out
    _, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--format", "markdown",
                    "--show-ids")
    assert f"`{UUIDS[2]}`, `{UUIDS[3]}`, `{UUIDS[4]}`" in out
    # JSON keeps the ids (nothing renamed).
    _, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--format", "json")
    assert json.loads(out)["gained"] == UUIDS[2:5]


def test_gap_names_each_untested_chunk_by_its_id(uuid_runs: Path, capsys) -> None:
    """One chunk a row: its id (a store's UUID here), never its position, which names another
    chunk once one is deleted; the document is the next column."""
    args = ["gap", "--tests", "base.ragcov", "--traffic", "head.ragcov"]
    code, out, _ = cli(capsys, *args)
    assert code == 0
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()
            if line.split() and line.split()[0] in UUIDS}
    assert rows == {UUIDS[i]: "manual" for i in (2, 3, 4)}
    assert "manual:3" not in out
    _, out, _ = cli(capsys, *args, "--format", "json")
    untested = json.loads(out)["untested"]
    assert {(u["chunk_id"], u["name"]) for u in untested} == {
        (UUIDS[i], f"manual:{i + 1}") for i in (2, 3, 4)}


# 4. Usage errors, help, pytest-cov's suffix, gap --top, RAGCOV_FILE and --rcfile ----------

@pytest.mark.parametrize("args", [
    ["report", "--skip-covred"], ["report", "--precision", "many"], ["diff"],
    ["nosuch"], ["gap", "--top"],
])
def test_usage_errors_are_one_line_and_exit_1(in_sample: Path, capsys, args: list[str]) -> None:
    code, out, err = cli(capsys, *args)
    assert code == 1
    if args[0] == "report":
        assert f"(see 'ragcov {args[0]} --help')" in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), err
    assert "╭" not in err and out == ""


def test_help_shows_no_bool_placeholder_on_flags(capsys) -> None:
    from ragcov.cli.commands import COMMANDS

    for name in ["", *(n for n, _ in COMMANDS)]:
        code, out, _ = cli(capsys, *([name] if name else []), "--help")
        assert code == 0 and "--help" in out
        assert "<bool>" not in out, name


def test_gap_top_limits_every_table_and_json_is_whole(sample: Path, capsys,
                                                      tmp_path: Path) -> None:
    questions = sample_path("finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "few.jsonl").write_text("\n".join(questions[:20]) + "\n", encoding="utf-8")
    tests = tmp_path / "tests.ragcov"
    assert cli(capsys, "run", "--corpus", str(sample_path("finqa_pages.jsonl")), "--split",
               "--queries", str(tmp_path / "few.jsonl"), "--retriever", "bm25",
               "--data-file", str(tests), "-q")[0] == 0
    args = ["gap", "--tests", str(tests), "--traffic", str(sample / ".ragcov")]
    code, out, _ = cli(capsys, *args, "--top", "5")
    assert code == 0
    tables = out.split("\n\n")[1:]
    assert len(tables) == 2
    assert [len(t.strip().splitlines()) - 2 for t in tables] == [5, 5]  # header and rule
    code, out, _ = cli(capsys, *args, "--format", "json")
    doc = json.loads(out)
    assert len(doc["untested"]) == doc["untested_chunks"] > 100


def test_ragcov_file_names_the_data_file(in_sample: Path, capsys,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCOV_FILE", "elsewhere.ragcov")
    code, _, err = cli(capsys, "report")
    assert code == 1 and "elsewhere.ragcov: no data file" in err
    assert cli(capsys, "report", "--data-file", ".ragcov", "--format", "total")[0] == 0
    (in_sample / "ragcov.toml").write_text('data_file = "config.ragcov"\n')
    try:  # as COVERAGE_FILE: the variable wins over the config file, the flag over both
        code, _, err = cli(capsys, "report")
        assert code == 1 and "elsewhere.ragcov" in err
    finally:
        (in_sample / "ragcov.toml").unlink()
    monkeypatch.setenv("RAGCOV_FILE", ".ragcov")
    code, out, _ = cli(capsys, "report", "--format", "total")
    assert code == 0 and out.strip() == "55.07"


def test_rcfile_names_the_config_file(in_sample: Path, capsys, tmp_path: Path) -> None:
    (in_sample / "ragcov.toml").write_text("[report]\nfail_under = 10\n")
    (tmp_path / "ci.toml").write_text("[report]\nfail_under = 60\n")
    try:
        assert cli(capsys, "report")[0] == 0
        for args in (["report", "--rcfile", str(tmp_path / "ci.toml")],
                     [f"--rcfile={tmp_path / 'ci.toml'}", "report"]):
            code, _, err = cli(capsys, *args)
            assert code == 2 and "fail-under=60" in err
        (tmp_path / "pyproject.toml").write_text("[tool.ragcov.report]\nfail_under = 70\n")
        code, _, err = cli(capsys, "report", "--rcfile", str(tmp_path / "pyproject.toml"))
        assert code == 2 and "fail-under=70" in err
        code, _, err = cli(capsys, "report", "--rcfile", "missing.toml")
        assert code == 1 and err.strip() == ("ragcov: error: missing.toml: no such config file "
                                             "(given by --rcfile)")
        # A pyproject.toml whose tool or tool.ragcov is no table: the line the upward search
        # prints, not an AttributeError.
        (tmp_path / "pyproject.toml").write_text('[tool]\nragcov = "x"\n')
        code, _, err = cli(capsys, "report", "--rcfile", str(tmp_path / "pyproject.toml"))
        assert code == 1 and "Traceback" not in err
        assert err.strip().endswith("pyproject.toml: [tool.ragcov] must be a table of settings, "
                                    "got str 'x'"), err
        (tmp_path / "pyproject.toml").write_text("tool = 5\n")  # no ragcov section: defaults
        assert cli(capsys, "report", "--rcfile", str(tmp_path / "pyproject.toml"))[0] == 0
    finally:
        (in_sample / "ragcov.toml").unlink()


PLUGIN_TEST = '''
def test_tokyo(ragcov_retriever):
    assert ragcov_retriever("Tokyo, the capital of Japan")[0][0] == "tokyo"
'''


def test_pytest_plugin_accepts_skip_covered(pytester: pytest.Pytester) -> None:
    """pytest-cov's ``--cov-report term-missing:skip-covered`` habit."""
    from conftest import CITY_CHUNKS

    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_city=PLUGIN_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus", "corpus.jsonl",
        "--ragcov-retriever", "bm25", "--ragcov-k", "1",
        "--ragcov-report", "term-missing:skip-covered")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["Document * Missing chunks", "europe * 1-3",
                                 "1 document skipped due to complete coverage."])
    assert "asia " not in result.stdout.str()


# 5. diff: nothing compared is n/a, and --match text pairs a test run with traces ----------

@pytest.fixture
def renamed_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, city_corpus_file: Path
                 ) -> Path:
    """The same two questions recorded under test ids (BASE) and trace ids (HEAD)."""
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrieval import Run

    monkeypatch.chdir(tmp_path)
    corpus = load_corpus(city_corpus_file)
    for name, ids, hits in (("base", ["test_paris", "test_tokyo"], [["paris"], ["tokyo"]]),
                            ("head", ["trace-9f1", "trace-9f2"], [["paris"], ["berlin"]])):
        run = Run(k=1, retriever={"kind": "hand-made"})
        for qid, text, hit in zip(ids, ["Where is the Seine?", "Capital of Japan?"], hits):
            run.add(qid, text, [(hit[0], 1.0)])
        CoverageData(tmp_path / f"{name}.ragcov").write(corpus, run)
    return tmp_path


def test_diff_with_no_query_in_common_says_n_a(renamed_runs: Path, capsys) -> None:
    code, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov")
    assert code == 0
    assert "Queries: 0 in both" in out and "mean Jaccard of old and new top-k n/a" in out
    assert "1.000" not in out
    code, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--format", "json")
    queries = json.loads(out)["queries"]
    assert queries["compared"] == 0 and queries["mean_jaccard"] is None


def test_diff_match_text_pairs_queries_by_their_text(renamed_runs: Path, capsys) -> None:
    code, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--match", "text",
                       "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["queries"]["compared"] == 2 and doc["queries"]["changed"] == 1
    assert doc["queries"]["mean_jaccard"] == pytest.approx(0.5)
    assert doc["queries"]["match"] == "text"
    assert [q["query_id"] for q in doc["changed_queries"]] == ["test_tokyo"]
    code, out, _ = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--match", "text")
    assert "Queries: 2 in both, 1 retrieve a different set (mean Jaccard of old and new " \
           "top-k 0.500)" in out
    code, _, err = cli(capsys, "diff", "base.ragcov", "head.ragcov", "--match", "name")
    assert code == 1 and "--match must be one of id, text" in err


# 6. The text report says which retriever, model and k produced its number ----------------

def test_report_names_retriever_model_and_k(in_sample: Path, capsys) -> None:
    code, out, _ = cli(capsys, "report")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == ("retriever: bm25 (bm25s(k1=1.5,b=0.75)), k=5; workload ceiling 100% (300 queries "
                        "x k=5 of 1,184 chunks)")
    assert lines[1].split()[0] == "Document"
    _, total, _ = cli(capsys, "report", "--format", "total")
    assert total.strip() == "55.07"  # a number only, for scripts
    _, markdown, _ = cli(capsys, "report", "--format", "markdown")
    assert markdown.startswith("| Document |")


@pytest.mark.parametrize(("fingerprint", "line"), [
    ({"kind": "dense", "model": "/home/ci/models/all-MiniLM-L6-v2", "index": "flat",
      "model_digest": "sha256:ab"}, "retriever: dense (all-MiniLM-L6-v2), k=5"),
    ({"kind": "dense", "model": "all-MiniLM-L6-v2", "index": "hnsw", "approximate": True,
      "model_digest": "sha256:ab"}, "retriever: dense (all-MiniLM-L6-v2, hnsw index), k=5"),
    # recorded before models were known by content
    ({"kind": "dense", "model": "all-MiniLM-L6-v2", "index": "flat"},
     "retriever: dense (all-MiniLM-L6-v2, model known by name only), k=5"),
    ({"kind": "traces", "name": "langfuse"}, "retriever: traces (langfuse), k=5"),
    ({"kind": "callable", "name": "app.search:retrieve"},
     "retriever: callable (app.search:retrieve), k=5"),
])
def test_retriever_line_from_the_recorded_fingerprint(tmp_path: Path, capsys,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      city_corpus_file: Path,
                                                      fingerprint: dict, line: str) -> None:
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrieval import Run

    monkeypatch.chdir(tmp_path)
    run = Run(k=5, retriever=fingerprint)
    run.add("q", "Capital of Japan?", [(c, 1.0 - i / 10) for i, c in enumerate(
        ["tokyo", "paris", "berlin", "madrid", "interest"])])  # k lists: no depth note
    CoverageData(tmp_path / ".ragcov").write(load_corpus(city_corpus_file), run)
    code, out, _ = cli(capsys, "report")
    # One query at k=5 over 8 chunks: the suite can cover 5 of them at most.
    assert code == 0 and out.splitlines()[0] == line + "; workload ceiling 62% (1 query x k=5 of 8 chunks)"


# 7. Other libraries' warnings: once each, labelled with the library, silenced by -q --------

VECDB = '''
import warnings
warnings.simplefilter("always", FutureWarning)  # as some libraries do: every call warns


class VecDBWarning(UserWarning):
    pass


def search(text):
    # stacklevel=2 attributes the warning to the caller's file (app.py), not to vecdb.
    warnings.warn("search() is deprecated; use query()", FutureWarning, stacklevel=2)
    return "Tokyo is the capital of Japan and a huge metropolis."


def connect():
    warnings.warn("no index on the table", VecDBWarning, stacklevel=2)
'''
APP = '''
import vecdb

vecdb.connect()


def retrieve(text, k):
    return [{"text": vecdb.search(text)}]
'''


def _run_app(folder: Path, corpus: Path, *extra: str) -> list[str]:
    import os
    import subprocess
    import sys

    (folder / "vecdb").mkdir(exist_ok=True)
    (folder / "vecdb" / "__init__.py").write_text(VECDB)
    (folder / "app.py").write_text(APP)
    (folder / "q.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "text": f"capital {i}"}) + "\n" for i in range(20)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus),
                           "--queries", "q.jsonl", "--retriever", "app:retrieve", "--k", "1",
                           *extra], cwd=folder, capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr.strip().splitlines()


OURS = ("ragcov: warning: retriever results carry no corpus chunk id of their own; matched "
        "them to the corpus by content hash")


def test_library_warnings_once_each_labelled_with_the_library(tmp_path: Path,
                                                             city_corpus_file: Path) -> None:
    lines = _run_app(tmp_path, city_corpus_file)
    assert sorted(lines) == sorted([
        "ragcov: warning: (vecdb) no index on the table",
        "ragcov: warning: (vecdb) search() is deprecated; use query()",  # 20 calls, one line
        OURS])
    assert "app.py" not in "\n".join(lines)


def test_quiet_silences_other_libraries_warnings_not_ragcovs(tmp_path: Path,
                                                            city_corpus_file: Path) -> None:
    assert _run_app(tmp_path, city_corpus_file, "-q") == [OURS]


def test_warning_label_is_the_library_not_the_file_it_points_at() -> None:
    from ragcov.cli.entry import _library

    class LanceDeprecationWarning(DeprecationWarning):
        pass

    LanceDeprecationWarning.__module__ = "lancedb.util"
    # A library's own warning class names it, wherever stacklevel pointed.
    assert _library(LanceDeprecationWarning, "/srv/app.py", "app") == "lancedb"
    assert _library(FutureWarning, "/srv/app.py", "lancedb.table") == "lancedb"
    # Relayed by ragcov (a Dask worker's) or raised in C under ragcov: never ragcov's voice.
    assert _library(RuntimeWarning, "/x/site-packages/ragcov/metrics.py",
                    "ragcov.metrics") == "RuntimeWarning"
