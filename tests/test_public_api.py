"""`import ragcov` is enough: the verbs the CLI uses are the package's own names."""

from __future__ import annotations

import json

import ragcov
import ragcov.reporters.table  # noqa: F401  (a subpackage import must not shadow a verb)
from conftest import CITY_CHUNKS


def test_measure_report_combine_erase_through_the_package(tmp_path):
    corpus_file = tmp_path / "chunks.jsonl"
    corpus_file.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "text": "river Seine Paris"}) + "\n"
                         + json.dumps({"id": "q2", "text": "photosynthesis sunlight"}) + "\n")
    corpus = ragcov.load_corpus(corpus_file)
    suite = ragcov.load_suite(questions)
    bm25 = ragcov.make_retriever("bm25", corpus)
    shard_a, shard_b = tmp_path / ".ragcov.a", tmp_path / ".ragcov.b"
    ragcov.measure(corpus, ragcov.Suite(suite.queries[:1]), bm25, k=1, data_file=shard_a,
                   progress=False)
    ragcov.measure(corpus, ragcov.Suite(suite.queries[1:]), bm25, k=1, data_file=shard_b,
                   progress=False)
    done = ragcov.combine(data_file=tmp_path / ".ragcov")
    assert sorted(p.name for p in done.inputs) == [".ragcov.a", ".ragcov.b"]
    assert not shard_a.exists() and not shard_b.exists()  # merged shards are deleted

    report = ragcov.report(tmp_path / ".ragcov")
    assert report.summary().covered == 2 and report.matrix.n_chunks == len(CITY_CHUNKS)
    scoped = ragcov.report(tmp_path / ".ragcov", ragcov.ReportScope(exclude=("(?i)seine",)))
    assert [e.chunk_id for e in scoped.excluded] == ["paris"]
    assert scoped.summary().covered == 1

    assert ragcov.erase(tmp_path / ".ragcov") == []
    assert not (tmp_path / ".ragcov").exists()


def test_every_exported_name_resolves():
    for name in ragcov.__all__:
        assert getattr(ragcov, name) is not None, name
    assert callable(ragcov.report) and callable(ragcov.measure) and callable(ragcov.combine)


def test_every_verb_is_callable_after_the_api_and_its_subpackages_load():
    """Importing the api imports every subpackage; none may take a verb's name."""
    import ragcov.api
    import ragcov.reachability.audit  # noqa: F401

    for name in ragcov._VERBS:
        assert callable(getattr(ragcov, name)), name
        assert getattr(ragcov, name) is getattr(ragcov.api, name)
    assert set(ragcov._VERBS) <= set(dir(ragcov)) and "Corpus" in dir(ragcov)


def test_audit_reachability_through_the_package(tmp_path, capsys):
    from helpers import cli

    corpus_file = tmp_path / "chunks.jsonl"
    corpus_file.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "text": "river Seine Paris"}) + "\n")
    data = tmp_path / ".ragcov"
    for args in (["run", "--queries", str(queries)], ["probe"]):
        assert cli(capsys, *args, "--corpus", str(corpus_file), "--retriever", "bm25",
                   "--data-file", str(data), "-q")[0] == 0
    r = ragcov.audit_reachability(data)
    assert len(r.chunk_ids) == len(CITY_CHUNKS) and "covered" in set(r.status)


def test_a_run_travels_as_one_checked_settings_object(tmp_path, city_corpus_file) -> None:
    """The CLI checks the settings once (RunSettings.checked) and hands them whole to the
    api; every refusal comes before the corpus is read."""
    import json

    import pytest

    from ragcov import api
    from ragcov.errors import RagcovError

    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "capital of Japan"}) + "\n")
    for bad, message in (({"k": 0}, "k must be"), ({"engine": "spark"}, "unknown engine"),
                         ({"append": True, "parallel_mode": True}, "do not go together")):
        with pytest.raises(RagcovError, match=message):
            api.RunSettings.checked(tmp_path / "no-such-corpus.jsonl", queries, "bm25",
                                    data_file=tmp_path / "d.ragcov", **bad)
    settings = api.RunSettings.checked(city_corpus_file, queries, "bm25", k=2,
                                       data_file=tmp_path / "d.ragcov")
    assert settings.kind == "bm25" and settings.destination == tmp_path / "d.ragcov"
    done = api.run(settings, progress=False)
    assert done.matrix.n_queries == 1 and done.data_file == tmp_path / "d.ragcov"


def test_a_probe_travels_as_one_checked_settings_object(tmp_path, city_corpus_file,
                                                         capsys) -> None:
    """``ragcov probe`` checks its settings once (ProbeSettings.checked: refusals before the
    corpus is read, the retriever taken from the recorded run) and hands them whole to
    ``api.probe_corpus``, which gives what the command prints."""
    import pytest

    from helpers import cli
    from ragcov import api
    from ragcov.errors import RagcovError

    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "capital of Japan"}) + "\n")
    data = tmp_path / "d.ragcov"
    api.run(city_corpus_file, queries, "bm25", k=2, data_file=data, progress=False)
    missing = tmp_path / "no-such-corpus.jsonl"
    for bad, message in (({"seed": -1}, "--seed must be"),
                         ({"min_index_recall": 150.0}, "index-recall"),
                         ({"retriever": "dense"}, "recorded with the bm25 retriever"),
                         ({"qrels": tmp_path / "none.jsonl"}, "none.jsonl")):
        with pytest.raises(RagcovError, match=message):
            api.ProbeSettings.checked(missing, data, **bad)
    with pytest.raises(RagcovError, match="no coverage data"):
        api.ProbeSettings.checked(missing, tmp_path / "never-run.ragcov")
    settings = api.ProbeSettings.checked(city_corpus_file, data)
    assert settings.retriever == "bm25" and settings.from_data_file
    probed = api.probe_corpus(settings, progress=False)
    assert probed.run.added > 0 and probed.lost_gold is None
    statuses = dict(zip(probed.run.reachability.chunk_ids, probed.run.reachability.status))
    # The command, run again, has nothing left to probe and prints the same statuses.
    code, out, err = cli(capsys, "probe", "--corpus", str(city_corpus_file), "--data-file",
                         str(data), "--format", "json")
    assert code == 0 and "0 new probe(s)" in err, err
    assert "probing through the retriever" in err and "bm25" in err
    printed = json.loads(out)["totals"]
    assert printed["unreachable_chunks"] == list(statuses.values()).count("unreachable")
    assert printed["untested_chunks"] == list(statuses.values()).count("untested")
