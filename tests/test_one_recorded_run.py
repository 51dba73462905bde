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
    assert ragcov.api.recorded_retriever(data) == {"kind": "callable",
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
    recorded = ragcov.api.CoverageData(data).query_texts()
    assert {"test_app.py::test_retrieves[q1]", "q4"} <= set(recorded)  # pytest's, the CLI's
    assert {t["query_id"] for t in noise["per_test"]} == set(recorded)


def test_record_with_source_serves_probe_and_without_it_says_how(
        pytester: pytest.Pytester, capsys, monkeypatch) -> None:
    data = _session(pytester, THROUGH_RECORD.replace("SOURCE", "'rag_app:search'"))
    monkeypatch.syspath_prepend(str(pytester.path))
    assert ragcov.api.recorded_retriever(data)["name"] == "rag_app:search"
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


def test_drift_refuses_a_retriever_that_ignores_the_copy(tmp_path: Path, capsys,
                                                          monkeypatch) -> None:
    (tmp_path / "rag_app.py").write_text(APP)
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"id": qid, "text": text}) + "\n"
                                              for qid, text in QUESTIONS.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code, err = _drift(capsys, "rag_app:fixed_collection")
    assert code == 1
    assert "does not search the corpus copy it is handed" in err
    # Refused before anything of the drift run was recorded.
    assert ragcov.api.drift_summary("fixed_collection.ragcov") is None
    code, err = _drift(capsys, "rag_app:make_retriever")
    assert code == 0, err
    assert ragcov.api.drift_summary("make_retriever.ragcov") is not None
