"""The pytest plugin, run over a toy RAG project with pytester (a real nested pytest)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

# The nested pytest runs in a subprocess (runpytest_subprocess): the pytester fixture
# drops, at teardown, every module imported during the test, and numpy or torch cannot
# be loaded twice in one process. Import here, once, what this module itself uses.
import ragcov.api
import ragcov.reporters.html
import ragcov.reporters.jsonreport
import ragcov.reporters.table
import ragcov.retrievers.bm25  # noqa: F401
from conftest import CITY_CHUNKS
from ragcov.data import CoverageData

pytest_plugins = ["pytester"]

CHUNKS = CITY_CHUNKS

# Each question shares its rare words with exactly one chunk, so BM25's top 1 is that
# chunk: with k=1 the suite covers paris, photosynthesis and dividends, 3 of 8 = 37.5%.
# Each also shares one common word (capital, cell, company) with another chunk, which
# BM25 ranks second.
TOY_TESTS = '''
import pytest

QUESTIONS = {
    "Which capital sits on the river Seine, Paris?": "paris",
    "How does photosynthesis in a cell turn sunlight into sugar?": "photosynthesis",
    "What quarterly dividends per share did the company declare?": "dividends",
}

@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_top_chunk(ragcov_retriever, question):
    assert ragcov_retriever(question)[0][0] == QUESTIONS[question]

def test_same_question_again(ragcov_retriever):
    # Asked by another test too: a query of its own, named by this test.
    question = "Which capital sits on the river Seine, Paris?"
    ids = [cid for cid, _ in ragcov_retriever.retrieve([question], 1)[0]]
    assert ids == ["paris"]
'''

# The toy suite's headline: 4 queries (one per test) at k=1 over 8 chunks can cover at most 4.
HEADLINE = ("Chunk coverage: 37.5% (3 of 8 chunks, 4 queries); workload ceiling 50.0% (4 queries x k=1 "
            "of 8 chunks)")


@pytest.fixture
def toy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_toy=TOY_TESTS)
    return pytester


def ragcov_args(*extra: str, k: str = "1") -> list[str]:
    return ["-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus", "corpus.jsonl",
            "--ragcov-retriever", "bm25", "--ragcov-k", k, *extra]


def recorded(path: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT id, text, context FROM queries ORDER BY idx").fetchall()


def test_passes_above_the_threshold_and_records_node_ids(toy: pytest.Pytester):
    result = toy.runpytest(*ragcov_args("--ragcov-fail-under", "37"))
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*- ragcov: chunk coverage -*",
        "TOTAL * 8 * 3 * 5 * 38%",
        HEADLINE,
        "Required chunk coverage of 37% reached. Total chunk coverage: 37.50%",
    ])
    rows = recorded(toy.path / ".ragcov")
    assert len(rows) == 4  # each test's question is a query, named by the test's node id
    for qid, text, context in rows:
        assert qid == context
        assert text in context or context == "test_toy.py::test_same_question_again"
    assert {context for _, _, context in rows} == {
        *(f"test_toy.py::test_top_chunk[{q}]" for q in (
            "Which capital sits on the river Seine, Paris?",
            "How does photosynthesis in a cell turn sunlight into sugar?",
            "What quarterly dividends per share did the company declare?")),
        "test_toy.py::test_same_question_again"}
    m = CoverageData(toy.path / ".ragcov").matrix()
    assert sorted(m.chunk_ids[j] for j in m.covered().nonzero()[0]) == [
        "dividends", "paris", "photosynthesis"]
    assert m.k == 1


def test_fails_below_the_threshold(toy: pytest.Pytester):
    result = toy.runpytest(*ragcov_args("--ragcov-fail-under", "40"))
    result.assert_outcomes(passed=4)  # every test passed; the coverage did not
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAIL Required chunk coverage of 40% not reached. Total chunk coverage: 37.50%"])


def test_a_session_that_records_nothing_says_the_data_file_is_an_earlier_ones(toy: pytest.Pytester):
    assert toy.runpytest(*ragcov_args()).ret == pytest.ExitCode.OK
    before = (toy.path / ".ragcov").read_bytes()
    result = toy.runpytest(*ragcov_args("-k", "no_such_test"))
    result.stdout.fnmatch_lines(["ragcov: no retrievals were recorded*",
                                 "ragcov: *.ragcov is left as an earlier session wrote it; it "
                                 "does not measure this one"])
    assert (toy.path / ".ragcov").read_bytes() == before  # nothing is lost either


def test_records_at_the_session_k_and_returns_what_the_test_asked(toy: pytest.Pytester):
    # At k=2 each question reaches a second chunk, though the tests still see top 1.
    result = toy.runpytest(*ragcov_args("--ragcov-report", "term-missing", k="2"))
    result.assert_outcomes(passed=4)
    m = CoverageData(toy.path / ".ragcov").matrix()
    assert m.k == 2
    assert all(len(m.retrieved(i)) == 2 for i in range(m.n_queries))
    second = {m.chunk_ids[m.retrieved(i)[1]] for i in range(m.n_queries)}
    assert {"mitochondria", "interest"} <= second
    result.stdout.fnmatch_lines(["Document * Missing chunks", "europe * 3 *"])


def test_is_inert_without_the_flag(pytester: pytest.Pytester):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_plain='''
from ragcov.pytest_plugin import record

class Fixed:
    def retrieve(self, texts, k):
        return [[("paris", 1.0)] for _ in texts]

def test_record_is_identity_when_off(ragcov_recorder):
    r = Fixed()
    assert record(r) is r and ragcov_recorder(r) is r

def test_fixture_needs_a_corpus(ragcov_retriever):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*ragcov_retriever needs a corpus*"])
    result.stdout.no_fnmatch_line("*chunk coverage*")
    assert not (pytester.path / ".ragcov").exists()
    # With a corpus but without --ragcov the fixture works and records nothing.
    pytester.makepyfile(test_plain='''
def test_fixture_works(ragcov_retriever):
    assert ragcov_retriever("the Seine river")[0][0] == "paris"
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov-corpus", "corpus.jsonl",
                                "--ragcov-retriever", "bm25")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*chunk coverage*")
    result.stdout.no_fnmatch_line("*ragcov data*")
    assert not (pytester.path / ".ragcov").exists()


def test_records_a_wrapped_retriever_and_writes_the_reports(pytester: pytest.Pytester):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makeconftest('''
import pytest

class TwoCapitals:
    """A team's own retriever: always the same two chunks."""
    def fingerprint(self):
        return {"kind": "toy", "version": 1}
    def retrieve(self, texts, k):
        return [[("berlin", 0.9), ("tokyo", 0.5)][:k] for _ in texts]

@pytest.fixture
def retriever(ragcov_recorder):
    return ragcov_recorder(TwoCapitals())
''')
    pytester.makepyfile(test_mine='''
from ragcov.pytest_plugin import record

def test_one(retriever):
    assert retriever.retrieve(["<b>capitals</b>"], 1) == [[("berlin", 0.9)]]

def test_two():
    from conftest import TwoCapitals
    r = record(TwoCapitals())
    assert [c for c, _ in r("big cities")] == ["berlin", "tokyo"]
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                "corpus.jsonl", "--ragcov-k", "2", "--ragcov-report", "json",
                                "--ragcov-report", "html:site", "--ragcov-data-file", "cov.db",
                                "--ragcov-report", "xml:cov.xml", "--ragcov-report", "lcov")
    result.assert_outcomes(passed=2)
    # Every file reporter of the registry is a --ragcov-report kind: what ragcov xml and
    # ragcov lcov write, from the session's data file.
    import xml.etree.ElementTree as ET

    assert ET.fromstring((pytester.path / "cov.xml").read_text()).get("lines-covered") == "2"
    assert "SF:" in (pytester.path / "ragcov.lcov").read_text()
    report = json.loads((pytester.path / "ragcov.json").read_text(encoding="utf-8"))
    assert report["totals"]["covered_chunks"] == 2
    assert report["totals"]["chunk_coverage"] == pytest.approx(2 / 8)
    assert report["meta"]["retriever"] == {"kind": "toy", "version": 1}
    contexts = {text: ctx for _, text, ctx in recorded(pytester.path / "cov.db")}
    assert contexts == {"<b>capitals</b>": "test_mine.py::test_one",
                        "big cities": "test_mine.py::test_two"}
    page = (pytester.path / "site" / "index.html").read_text(encoding="utf-8")
    assert ">25%<" in page
    assert "<b>capitals" not in (pytester.path / "site" / "queries.html").read_text("utf-8")
    # The site ragcov html writes, through the same api verb: its coverage curves too.
    assert 'class="curve"' in page and "Coverage curve" in page


def test_records_a_plain_function_through_the_adapters(pytester: pytest.Pytester):
    pytest.importorskip("ragcov.retrievers.loader")
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_fn='''
from ragcov.pytest_plugin import record

def search(query, k):
    return ["tokyo", "madrid"][:k]

def test_function():
    assert [c for c, _ in record(search)("far east", 2)] == ["tokyo", "madrid"]
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                "corpus.jsonl", "--ragcov-k", "2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["Chunk coverage: 25.0% (2 of 8 chunks, 1 queries); "
                                 "workload ceiling 25.0% (1 query x k=2 of 8 chunks)"])


def test_a_retriever_shorter_than_k_is_said_beside_the_total(pytester: pytest.Pytester):
    """A reranker that keeps 2 at k=3: the session's summary says the depth, as report does."""
    pytest.importorskip("ragcov.retrievers.loader")
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_fn='''
from ragcov.pytest_plugin import record

def search(query, k):
    return ["tokyo", "madrid"]

def test_function():
    assert len(record(search)("far east", 3)) == 2
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "3")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ragcov: 1 of 1 queries retrieved fewer than 3 chunks (effective "
                                 "depth 2): coverage is measured at that depth"])


def test_ids_outside_the_corpus_fail_the_test_that_retrieved_them(pytester: pytest.Pytester):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_bad='''
from ragcov.pytest_plugin import record

class Stale:
    def retrieve(self, texts, k):
        return [[("paris", 1.0), ("atlantis", 0.5)] for _ in texts]

def test_stale_index():
    record(Stale()).retrieve(["lost city"], 2)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                "corpus.jsonl")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*not in the ragcov corpus*atlantis*"])


@pytest.mark.parametrize(("args", "message"), [
    (["--ragcov"], "*--ragcov needs --ragcov-corpus*"),
    (["--ragcov", "--ragcov-corpus", "nowhere.jsonl"], "*nowhere.jsonl: no such file*"),
    (["--ragcov", "--ragcov-corpus", "corpus.jsonl", "--ragcov-report", "yaml"],
     "*--ragcov-report must be one of term, term-missing, html, json, xml, lcov*"),
    (["--ragcov", "--ragcov-corpus", "corpus.jsonl", "--ragcov-fail-under", "120"],
     "*must be a percentage*"),
    (["--ragcov", "--ragcov-corpus", "corpus.jsonl", "--ragcov-k", "0"], "*at least 1*"),
    (["--ragcov", "--ragcov-corpus", "corpus.jsonl", "--ragcov-device", "gpu"],
     "*unknown --device 'gpu': expected auto, cpu, cuda, cuda:N or mps*"),
])
def test_bad_options_are_usage_errors(toy: pytest.Pytester, args: list[str], message: str):
    result = toy.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (toy.path / ".ragcov").exists()


MANY_TESTS = '''
import pytest

@pytest.mark.parametrize("n", range(40))
def test_many(ragcov_retriever, n):
    ragcov_retriever(f"question {n}")

def test_without_the_fixture():
    pass
'''

GOOD = json.dumps(CHUNKS[0])


@pytest.mark.parametrize(("corpus", "message"), [
    (f'{GOOD}\n{{"id": "b", "text": \n', "*corpus.jsonl:2: invalid JSON*"),
    (f"{GOOD}\n{GOOD}\n", "*corpus.jsonl:2: duplicate chunk ids: paris (paris: line 2 repeats "
                           "line 1)"),
    ("\n", "*corpus.jsonl: the corpus is empty*"),
])
def test_a_bad_corpus_is_one_usage_error(pytester: pytest.Pytester, corpus: str, message: str):
    # It used to be one error per test that used the fixture, each with its traceback.
    (pytester.path / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    pytester.makepyfile(test_many=MANY_TESTS)
    result = pytester.runpytest(*ragcov_args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --ragcov-corpus: {message}"])
    output = result.stdout.lines + result.stderr.lines
    assert sum("corpus.jsonl" in line for line in output) == 1, output
    assert len([line for line in output if line.strip()]) <= 3, output
    result.stdout.no_fnmatch_line("*test_many*")
    assert not (pytester.path / ".ragcov").exists()


def test_a_bad_corpus_without_the_flag_stops_the_run_once(pytester: pytest.Pytester):
    # Without --ragcov the corpus is read only when a test asks for the fixture.
    (pytester.path / "corpus.jsonl").write_text(f'{GOOD}\n["a list"]\n', encoding="utf-8")
    pytester.makepyfile(test_many=MANY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-retriever", "bm25")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.lines + result.stderr.lines
    hits = [line for line in output if "corpus.jsonl:2: expected a JSON object" in line]
    assert len(hits) == 1, output
    assert "--ragcov-corpus" in hits[0]
    assert len(output) < 30, output
    result.stdout.no_fnmatch_line("*test_many*ERROR*")


def test_unusable_items_from_a_recorded_retriever_fail_the_test(pytester: pytest.Pytester):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_bad='''
import pytest
from ragcov.pytest_plugin import record

class Sloppy:
    def __init__(self, item):
        self.item = item
    def fingerprint(self):
        return {"kind": "sloppy"}
    def retrieve(self, texts, k):
        return [[("paris", 1.0), self.item] for _ in texts]

@pytest.mark.parametrize("item", [(None, 0.5), ("berlin", "0.9"), ("berlin", True),
                                  ("berlin", float("nan")), (["berlin"], 0.5)])
def test_sloppy(item):
    record(Sloppy(item)).retrieve(["lost city"], 2)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "2")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines([
        "*Sloppy: result 2 for query 'lost city': None is not an id (item: (None, 0.5))",
        "*Sloppy: result 2 for query 'lost city': score '0.9' is a string, not a number*",
        "*Sloppy: result 2 for query 'lost city': score True is not a number*",
        "*Sloppy: result 2 for query 'lost city': score nan is not a finite number*",
        "*Sloppy: result 2 for query 'lost city': ?'berlin'? is not an id*",
    ], consecutive=False)


@pytest.mark.slow  # three Python processes: about 15 s on two busy cores
def test_xdist_workers_files_are_combined_and_deduplicated(toy: pytest.Pytester):
    pytest.importorskip("xdist")
    # --dist each runs every test on both workers: both record the same four queries (a
    # question is named by the test that asks it: the same question in two tests is two
    # queries), and the combined file must hold each once.
    result = toy.runpytest_subprocess(*ragcov_args("-n", "2", "--dist", "each",
                                                   "--ragcov-fail-under", "37"))
    result.assert_outcomes(passed=8)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([HEADLINE])
    assert len(recorded(toy.path / ".ragcov")) == 4
    assert sorted(p.name for p in toy.path.glob(".ragcov*")) == [".ragcov"]


@pytest.mark.slow
def test_dense_retriever_fixture(pytester: pytest.Pytester, minilm_path: str):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_toy_dense='''
def test_france(ragcov_retriever):
    assert ragcov_retriever("What is the capital of France?")[0][0] == "paris"

def test_cells(ragcov_retriever):
    assert ragcov_retriever("Which organelle powers the cell?")[0][0] == "mitochondria"
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                "corpus.jsonl", "--ragcov-k", "1", "--ragcov-fail-under", "25")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["Required chunk coverage of 25% reached. "
                                 "Total chunk coverage: 25.00%"])
    meta = CoverageData(pytester.path / ".ragcov").meta()
    assert meta.retriever["kind"] == "dense"


def run_doc_examples(page: Path, workdir: Path) -> int:
    """Run a docs page as a reader would (the conventions of tests/test_integration_docs.py):
    ``<!-- file: NAME -->`` blocks are written out, ``<!-- skip -->`` blocks are not run,
    ``console`` blocks run their ``$`` lines and must print their other lines."""
    import os
    import re
    import subprocess
    import sys

    block = re.compile(r"(?:<!--\s*(?P<marker>[^>]*?)\s*-->\s*\n)?```(?P<lang>[\w-]*)\n"
                       r"(?P<body>.*?)```", re.DOTALL)
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    ran = 0
    for n, m in enumerate(block.finditer(page.read_text(encoding="utf-8")), start=1):
        marker, lang, body = m.group("marker") or "", m.group("lang"), m.group("body")
        if marker.startswith("skip"):
            continue
        if marker.startswith("file:"):
            (workdir / marker[5:].strip()).write_text(body, encoding="utf-8")
        elif lang == "console":
            lines = body.splitlines()
            commands = [line[2:] for line in lines if line.startswith("$ ")]
            proc = subprocess.run(["bash", "-e", "-c", "\n".join(commands)], cwd=workdir,
                                  env=env, capture_output=True, text=True, timeout=600)
            output = proc.stdout + proc.stderr
            assert proc.returncode == 0, f"{page.name} block {n}:\n{output}"
            for line in lines:
                if line.strip() and not line.startswith("$ "):
                    assert line.strip() in output, f"{page.name} block {n}: {line!r} in\n{output}"
            ran += 1
    return ran


DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.slow  # five pytest and ragcov processes
def test_the_docs_examples_run(tmp_path: Path):
    assert run_doc_examples(DOCS / "pytest-plugin.md", tmp_path) == 4


@pytest.mark.slow
def test_corpus_from_a_vector_store_url(toy: pytest.Pytester):
    """--ragcov-corpus takes a store URL as `ragcov run --corpus` does: the chunks are
    the store's own (ids, texts, doc_id metadata), and the report is the file's."""
    # Built in a child process: chromadb imported here would be dropped by pytester at
    # teardown, and a later import of it in this process would then be half old, half new.
    build = (
        "import chromadb, json, sys\n"
        "chunks = json.loads(sys.argv[2])\n"
        "col = chromadb.PersistentClient(path=sys.argv[1]).create_collection('city')\n"
        "col.add(ids=[c['id'] for c in chunks], documents=[c['text'] for c in chunks],\n"
        "        embeddings=[[float(i), 1.0, 0.0] for i in range(len(chunks))],\n"
        "        metadatas=[{'doc_id': c['doc_id']} for c in chunks])\n")
    subprocess.run([sys.executable, "-c", build, str(toy.path / "chroma"), json.dumps(CHUNKS)],
                   check=True)
    url = f"chroma://{toy.path}/chroma?collection=city"
    result = toy.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                      url, "--ragcov-retriever", "bm25", "--ragcov-k", "1")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([HEADLINE])


@pytest.mark.parametrize("table", ["", "[tool.ragcov.report]\n"])
def test_config_scope_gives_the_plugin_the_total_ragcov_report_prints(toy: pytest.Pytester,
                                                                    table: str):
    # Leaving the dividends chunk out: 2 of the 7 chunks that count are covered.
    toy.makefile(".toml", pyproject=f'[tool.ragcov]\n{table}exclude = ["(?i)dividend"]\n')
    result = toy.runpytest_subprocess(*ragcov_args("--ragcov-fail-under", "28.57",
                                                   "--ragcov-report", "json:cov.json"))
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*Total chunk coverage: 28.57%"])
    total = subprocess.run([sys.executable, "-m", "ragcov", "report", "--format", "total"],
                           cwd=toy.path, capture_output=True, text=True, check=True).stdout
    assert total.strip() == "28.57"
    # The JSON report reads the json command's settings, as `ragcov json` does: a
    # [tool.ragcov.report] table is not among them.
    subprocess.run([sys.executable, "-m", "ragcov", "json", "-o", "cli.json"], cwd=toy.path,
                   check=True, capture_output=True)
    plugin, cli = (json.loads((toy.path / f).read_text()) for f in ("cov.json", "cli.json"))
    assert plugin["totals"] == cli["totals"] and plugin["excluded"] == cli["excluded"]
    assert list(plugin["excluded"]) == ([] if table else ["dividends"])


def test_the_config_files_k_data_file_and_gate_apply(toy: pytest.Pytester):
    """[tool.ragcov] or ragcov.toml configures pytest --ragcov as it configures ragcov run
    and report (pytest-cov honours coverage's fail_under the same way); options win."""
    toy.makefile(".toml", ragcov='fail_under = 40\nk = 1\ndata_file = "cfg.ragcov"\n')
    args = ["-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus", "corpus.jsonl",
            "--ragcov-retriever", "bm25"]
    result = toy.runpytest(*args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAIL Required chunk coverage of 40% not reached. Total chunk coverage: 37.50%"])
    assert CoverageData(toy.path / "cfg.ragcov").matrix().k == 1
    assert not (toy.path / ".ragcov").exists()
    assert toy.runpytest(*args, "--ragcov-fail-under", "37").ret == pytest.ExitCode.OK
    # The gate compares at the file's precision, as `ragcov report` does: 37.5 shows as 38.
    (toy.path / "ragcov.toml").write_text('fail_under = 37.6\nk = 1\nprecision = 0\n')
    result = toy.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["Required chunk coverage of 37.6% reached. Total chunk "
                                 "coverage: 38%"])
    (toy.path / "ragcov.toml").write_text("k = 0\n")
    result = toy.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ragcov.toml: k = 0: not a whole number of at least 1*"])
    # One strict rule, as the CLI reads the file: numbers in quotes are refused by both.
    (toy.path / "ragcov.toml").write_text('k = "1"\nfail_under = "40"\n')
    result = toy.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ragcov.toml: k = '1': not a whole number of at least 1*"])


def test_an_ini_corpus_path_is_relative_to_the_ini_file(toy: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch):
    """pytest run from a subfolder of the project finds the corpus the ini file names."""
    toy.makeini("[pytest]\nragcov_corpus = corpus.jsonl\nragcov_retriever = bm25\nragcov_k = 1\n")
    (toy.path / "sub").mkdir()
    monkeypatch.chdir(toy.path / "sub")
    result = toy.runpytest("-p", "no:cacheprovider", "--ragcov", str(toy.path / "test_toy.py"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([HEADLINE])


def test_select_writes_the_chosen_tests_for_pytest_to_run(toy: pytest.Pytester):
    """"Run the tests that keep 90% coverage" is one command: the node ids pytest --ragcov
    recorded reach the JSON, the order file and an args file pytest reads with @FILE."""
    from ragcov.cli import main

    assert toy.runpytest(*ragcov_args()).ret == pytest.ExitCode.OK
    data = toy.path / ".ragcov"
    with pytest.raises(SystemExit):
        main(["json", "--data-file", str(data), "-o", str(toy.path / "r.json")])
    tests = {q["test"] for q in json.loads((toy.path / "r.json").read_text())["queries"].values()}
    assert all(t.startswith(("test_toy.py::test_top_chunk[", "test_toy.py::test_same_question"))
               for t in tests)
    with pytest.raises(SystemExit):
        main(["select", "--data-file", str(data), "--budget", "2", "--pytest-args",
              str(toy.path / "keep.txt"), "--suite-out", str(toy.path / "keep.jsonl"),
              "-o", str(toy.path / "order.json")])
    order = json.loads((toy.path / "order.json").read_text())
    keep = (toy.path / "keep.txt").read_text().splitlines()
    assert keep == order["tests"] and len(keep) == 2 and set(keep) <= tests
    assert [json.loads(x)["test"] for x in (toy.path / "keep.jsonl").read_text().splitlines()] == keep
    result = toy.runpytest(*ragcov_args(), f"@{toy.path / 'keep.txt'}")
    result.assert_outcomes(passed=2)


FAILING_TESTS = TOY_TESTS + '''

def test_a_question_that_misses(ragcov_retriever):
    # Retrieves the dividends chunk; the test expects the Tokyo one: a retrieval failure.
    assert ragcov_retriever("What quarterly dividends did the board declare for Tokyo?")[0][0] == "tokyo"


def test_the_same_question_fails_here(ragcov_retriever):
    # asked by test_same_question_again too, which passes: this test's query fails
    assert ragcov_retriever("Which capital sits on the river Seine, Paris?")[0][0] == "tokyo"
'''


def test_outcomes_stand_beside_coverage(pytester: pytest.Pytester):
    """Each test's outcome is kept with its questions: the report shows the pass rate beside
    coverage and gates on it, faults needs no labels, the HTML marks what a failing test
    retrieved."""
    from ragcov.cli import main

    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CHUNKS))
    pytester.makepyfile(test_toy=FAILING_TESTS)
    result = pytester.runpytest(*ragcov_args())
    result.assert_outcomes(passed=4, failed=2)
    data = pytester.path / ".ragcov"

    def ragcov(*args: str) -> int:
        with pytest.raises(SystemExit) as done:
            main([*args, "--data-file", str(data)])
        return done.value.code or 0

    assert ragcov("report") == 0
    report = pytester.path / "r.txt"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert ragcov("report", "--min-hit-rate", "90") == 2
    assert ("Correctness (test outcomes): 4 of 6 recorded tests passed (pass rate 66.7%); "
            "failing: test_toy.py::test_a_question_that_misses") in buffer.getvalue()
    assert ragcov("report", "--min-hit-rate", "66") == 0
    assert ragcov("json", "-o", str(report)) == 0
    doc = json.loads(report.read_text())
    missing = next(q for q in doc["queries"].values() if q["test"].endswith("question_that_misses"))
    seine = doc["queries"]["test_toy.py::test_the_same_question_fails_here"]
    assert missing["outcome"] == "failed" and seine["outcome"] == "failed"
    # The same question in a test that passed is that test's query, and passed.
    assert doc["queries"]["test_toy.py::test_same_question_again"]["outcome"] == "passed"
    assert doc["correctness"]["pass_rate"] == pytest.approx(4 / 6)  # a hit rate is of labels
    assert doc["correctness"]["hit_rate"] == doc["correctness"]["pass_rate"]  # the key kept
    assert ragcov("faults", "-o", str(pytester.path / "f.json")) == 0
    faults = json.loads((pytester.path / "f.json").read_text())
    failed = sorted(q for q, v in doc["queries"].items() if v is missing or v is seine)
    assert sorted(faults["failures"]) == failed
    # --fail-below applies to the outcome values (passed 1, failed 0) as to any metric
    assert ragcov("faults", "--fail-below", "2", "-o", str(pytester.path / "f.json")) == 0
    everything = json.loads((pytester.path / "f.json").read_text())["failures"]
    assert len(everything) == len([q for q in doc["queries"].values() if q.get("outcome")])
    assert ragcov("html", "-d", str(pytester.path / "site")) == 0
    page = (pytester.path / "site" / "queries.html").read_text()
    assert page.count('class="outcome-failed"') == 2 and '<span class="outcome failed">failed' in page


@pytest.mark.parametrize("spec", ["xml:corpus.jsonl", "json:.ragcov", "xml:test_toy.py",
                                  "lcov:ragcov.toml", "xml:skip-covered"])
def test_a_report_is_never_written_over_what_the_session_reads(toy: pytest.Pytester, spec: str):
    """--ragcov-report FMT:PATH wrote Cobertura over the corpus, JSON over the data file and
    over test modules; the CLI refused the same. Refused before any test runs now."""
    (toy.path / "ragcov.toml").write_text("k = 1\n")
    assert toy.runpytest(*ragcov_args()).ret == pytest.ExitCode.OK  # a data file to protect
    before = {p.name: p.read_bytes() for p in toy.path.iterdir() if p.is_file()}
    result = toy.runpytest(*ragcov_args("--ragcov-report", spec))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragcov-report*"])
    after = {p.name: p.read_bytes() for p in toy.path.iterdir() if p.is_file()}
    assert after == before
