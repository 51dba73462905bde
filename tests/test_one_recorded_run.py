"""One recorded run serves every command: a pytest session's data file is probed, grown by
``generate`` and drift-tested with no ``--retriever`` and no queries file, because the
session recorded which ``module:attr`` builds its retriever; and drift refuses a factory
whose retriever ignores the corpus copy it is handed (a silent pass otherwise).

The app is a nested pytest (pytester) over a small keyword retriever of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Imported here, before pytester snapshots sys.modules: it drops, at teardown, every module
# imported during a test, and numpy's and scipy's extensions cannot be loaded twice.
import ragcov.api
import ragcov.api.settings
import ragcov.data
import ragcov.reporters.jsonreport
import ragcov.reporters.table
import ragcov.retrievers.bm25  # noqa: F401
from conftest import CITY_CHUNKS
from helpers import cli

pytest_plugins = ["pytester"]

APP = '''
"""The team's retriever: a keyword match over the chunks it is built on."""

CHUNKS = {c["id"]: c["text"] for c in CITY_CHUNKS}


def _words(text):
    return set(text.lower().replace("?", " ").replace(".", " ").replace(",", " ").split())


def _over(texts):
    def search(query, k):
        q = _words(query)
        ranked = sorted(texts, key=lambda cid: (-len(q & _words(texts[cid])), cid))
        return [(cid, float(len(q & _words(texts[cid])))) for cid in ranked[:k]]
    return search


def make_retriever(corpus):
    """Built on the corpus it is handed, as a drift copy needs."""
    return _over({c.id: c.text for c in corpus})


def fixed_collection(corpus):
    """Searches its own fixed collection whatever corpus it is handed."""
    return _over(CHUNKS)


search = _over(CHUNKS)


def top_one(corpus):
    """Fixed at one chunk a query, whatever k it is asked for (an app's top-1 retriever)."""
    inner = _over({c.id: c.text for c in corpus})
    return lambda query, k: inner(query, 1)


class Incremental:
    """Adds to its index only the chunk ids it lacks: a changed text under a known id is
    never seen (a common upsert-by-id ingestion)."""

    index = {}

    def __init__(self, corpus):
        for c in corpus:
            Incremental.index.setdefault(c.id, c.text)
        self.search = _over(dict(Incremental.index))

    def __call__(self, query, k):
        return self.search(query, k)


class Protocol:
    """A retriever of ragcov's own protocol: retrieve(texts, k) and fingerprint()."""

    def __init__(self, corpus=None):
        self.search = _over({c.id: c.text for c in corpus} if corpus is not None else CHUNKS)

    def retrieve(self, texts, k):
        return [self.search(t, k) for t in texts]

    def fingerprint(self):
        return {"kind": "protocol", "version": 1}


def returns_a_class():
    return Protocol
'''.replace("CITY_CHUNKS", json.dumps(CITY_CHUNKS))

QUESTIONS = {"q1": "What is the capital of France?", "q2": "Which city is Germany's capital?",
             "q3": "Where does photosynthesis happen?"}

THROUGH_FIXTURE = f'''
import pytest

QUESTIONS = {QUESTIONS!r}


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_retrieves(ragcov_retriever, qid):
    assert ragcov_retriever(QUESTIONS[qid], 2)
'''

THROUGH_RECORD = f'''
import pytest

import rag_app
from ragcov.pytest_plugin import record

QUESTIONS = {QUESTIONS!r}


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_retrieves(qid):
    retriever = record(rag_app.search, query_id=qid, source=SOURCE)
    assert retriever(QUESTIONS[qid], 2)
'''


def _session(pytester: pytest.Pytester, test: str, *args: str) -> Path:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(rag_app=APP, test_app=test)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "2", *args)
    result.assert_outcomes(passed=3)
    return pytester.path / ".ragcov"


def test_a_pytest_run_through_a_factory_serves_probe_generate_and_drift(
        pytester: pytest.Pytester, capsys, monkeypatch) -> None:
    data = _session(pytester, THROUGH_FIXTURE, "--ragcov-retriever", "rag_app:make_retriever")
    monkeypatch.syspath_prepend(str(pytester.path))
    assert ragcov.api.settings.recorded_retriever(data) == {"kind": "callable",
                                                            "name": "rag_app:make_retriever"}
    # The same retriever from the command line records into the same file (same fingerprint).
    (pytester.path / "more.jsonl").write_text(
        json.dumps({"id": "q4", "text": "Spanish capital in the centre"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "more.jsonl",
                       "--retriever", "rag_app:make_retriever", "-k", "2", "--append", "-q")
    assert code == 0, err

    code, _, err = cli(capsys, "probe", "--corpus", "corpus.jsonl")
    assert code == 0, err
    assert "was recorded with: rag_app:make_retriever" in err

    code, out, err = cli(capsys, "generate", "--corpus", "corpus.jsonl", "-o", "new.jsonl",
                         "-k", "2", "--budget", "2", "-q")
    assert code == 0, err
    assert (pytester.path / "new.jsonl").read_text().strip()

    # No --queries: drift reruns the questions the data file recorded, the session's.
    code, out, err = cli(capsys, "drift", "--corpus", "corpus.jsonl", "-k", "2", "--relation",
                         "noise", "--resamples", "100", "--format", "json")
    assert code == 0, err
    (noise,) = json.loads(out)["relations"]
    recorded = ragcov.data.CoverageData(data).query_texts()
    suite = {"test_app.py::test_retrieves[q1]", "test_app.py::test_retrieves[q2]",
             "test_app.py::test_retrieves[q3]", "q4"}  # pytest's and the CLI's questions
    assert suite < set(recorded)  # and generate's, not accepted into the suite
    assert {t["query_id"] for t in noise["per_test"]} == suite


def test_record_with_source_serves_probe_and_without_it_says_how(
        pytester: pytest.Pytester, capsys, monkeypatch) -> None:
    data = _session(pytester, THROUGH_RECORD.replace("SOURCE", "'rag_app:search'"))
    monkeypatch.syspath_prepend(str(pytester.path))
    assert ragcov.api.settings.recorded_retriever(data)["name"] == "rag_app:search"
    code, _, err = cli(capsys, "probe", "--corpus", "corpus.jsonl")
    assert code == 0, err

    data.unlink()
    _session(pytester, THROUGH_RECORD.replace("SOURCE", "None"))
    code, _, err = cli(capsys, "probe", "--corpus", "corpus.jsonl")
    assert code == 1
    assert "names no module:attr that builds it again" in err
    assert "source='module:attr'" in err


def test_record_refuses_a_source_that_is_not_module_attr(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(rag_app=APP, test_app=THROUGH_RECORD.replace("SOURCE", "'rag_app.search'"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "2")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*source 'rag_app.search': expected module:attr*"])


def test_a_bad_ragcov_retriever_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(test_app=THROUGH_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-retriever", "no such thing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ragcov-retriever must be one of*module:attr*"])


def _drift(capsys, factory: str) -> tuple[int, str]:
    code, _, err = cli(capsys, "drift", "--corpus", "corpus.jsonl", "--queries", "q.jsonl", "-k",
                       "2", "--retriever", factory, "--relation", "noise", "--resamples", "100",
                       "-q", "--data-file", f"{factory.split(':')[1]}.ragcov")
    return code, err


@pytest.fixture
def app_folder(tmp_path: Path, monkeypatch) -> Path:
    """The app's module, its corpus and its questions in a folder, the working one."""
    (tmp_path / "rag_app.py").write_text(APP)
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"id": qid, "text": text}) + "\n"
                                              for qid, text in QUESTIONS.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_drift_refuses_a_retriever_that_ignores_the_copy(app_folder: Path, capsys) -> None:
    code, err = _drift(capsys, "rag_app:fixed_collection")
    assert code == 1
    assert "does not search the corpus copy it is handed" in err
    # Refused before anything was recorded: not even the suite's baseline.
    assert not (app_folder / "fixed_collection.ragcov").exists()
    code, err = _drift(capsys, "rag_app:make_retriever")
    assert code == 0, err
    assert ragcov.api.drift_summary("make_retriever.ragcov") is not None
    # Its report names the factory that drifted, as the run's header does, not its kind only.
    code, out, err = cli(capsys, "drift", "--corpus", "corpus.jsonl", "--queries", "q.jsonl", "-k",
                         "2", "--retriever", "rag_app:make_retriever", "--relation", "noise",
                         "--resamples", "100", "--data-file", "make_retriever.ragcov")
    assert code == 0, err
    assert "Drift of retriever callable (rag_app:make_retriever), k=2" in out


def test_a_protocol_retriever_is_rebuilt_by_its_source(pytester: pytest.Pytester, capsys,
                                                      monkeypatch) -> None:
    """A retriever of ragcov's own protocol fingerprints itself without the name it was
    loaded by: its source is kept beside the fingerprint, by the plugin and by run."""
    test = THROUGH_RECORD.replace("rag_app.search", "rag_app.Protocol()").replace(
        "retriever(QUESTIONS[qid], 2)", "retriever.retrieve([QUESTIONS[qid]], 2)[0]")
    data = _session(pytester, test.replace("SOURCE", "'rag_app:Protocol'"))
    monkeypatch.syspath_prepend(str(pytester.path))
    assert ragcov.api.settings.recorded_retriever(data) == {"kind": "protocol", "version": 1}
    code, _, err = cli(capsys, "probe", "--corpus", "corpus.jsonl")
    assert code == 0, err
    assert "was recorded with: rag_app:Protocol" in err
    (pytester.path / "q.jsonl").write_text(json.dumps({"id": "x", "text": "capital"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "q.jsonl",
                       "--retriever", "rag_app:Protocol", "-k", "2", "-q", "--data-file", "cli.ragcov")
    assert code == 0, err
    code, _, err = cli(capsys, "probe", "--corpus", "corpus.jsonl", "--data-file", "cli.ragcov")
    assert code == 0, err


def test_the_fixture_hands_tests_the_same_shapes_with_coverage_on_or_off(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(rag_app=APP, test_app='''
def test_shape(ragcov_retriever):
    got = ragcov_retriever("What is the capital of France?", 2)
    assert [cid for cid, _ in got][0] == "paris"
    assert ragcov_retriever.retrieve(["capital of France"], 1)[0][0][0] == "paris"
''')
    common = ("-p", "no:cacheprovider", "--ragcov-corpus", "corpus.jsonl", "--ragcov-retriever",
              "rag_app:make_retriever")
    pytester.runpytest_subprocess(*common).assert_outcomes(passed=1)
    pytester.runpytest_subprocess(*common, "--ragcov", "--ragcov-k", "2").assert_outcomes(passed=1)


def test_the_fixture_wrapped_with_a_query_id_records_each_question_once(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(rag_app=APP, test_app=f'''
import pytest
from ragcov.pytest_plugin import record

QUESTIONS = {QUESTIONS!r}


@pytest.mark.parametrize("qid", sorted(QUESTIONS))
def test_labelled(ragcov_retriever, qid):
    assert record(ragcov_retriever, query_id=qid)(QUESTIONS[qid], 2)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-k", "2", "--ragcov-retriever",
                                           "rag_app:make_retriever")
    result.assert_outcomes(passed=3)
    assert set(ragcov.data.CoverageData(pytester.path / ".ragcov").query_texts()) == set(QUESTIONS)


def test_a_factory_returning_a_class_is_one_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(c) for c in CITY_CHUNKS))
    pytester.makepyfile(rag_app=APP, test_app=THROUGH_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus",
                                           "corpus.jsonl", "--ragcov-retriever",
                                           "rag_app:returns_a_class")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*the factory returned the class Protocol; return an instance of it*"])


def test_drift_refuses_an_index_that_only_adds_new_ids_and_writes_nothing(
        app_folder: Path, capsys) -> None:
    code, err = _drift(capsys, "rag_app:Incremental")
    assert code == 1
    assert "does not search the corpus copy it is handed" in err
    assert not (app_folder / "Incremental.ragcov").exists()  # nothing recorded at all


def test_drift_judges_copies_at_the_depth_the_suite_was_recorded(app_folder: Path,
                                                                  capsys) -> None:
    """An app fixed at top-1, recorded at k = 2: the identity copy changes nothing."""
    code, out, err = cli(capsys, "drift", "--corpus", "corpus.jsonl", "--queries", "q.jsonl", "-k", "2",
                         "--retriever", "rag_app:top_one", "--relation", "identity", "--resamples",
                         "100", "--format", "json")
    assert code == 0, err
    assert "returned at most 1 chunks a query (k = 2)" in err
    (identity,) = json.loads(out)["relations"]
    assert identity["violated"] == 0 and identity["tests"] == 3
