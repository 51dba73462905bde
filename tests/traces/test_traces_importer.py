"""From traces to a Run (ragcov.traces.importer): unknown ids, k, formats, and the CLI."""

from __future__ import annotations

import json

import pytest
from trace_samples import jsonl, otlp_export, ranked_ids, retriever_span, write

from helpers import cli
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.metrics import chunk_coverage
from ragcov.traces import import_traces, read_traces


def test_unknown_ids_are_listed_or_skipped_and_counted(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [
        {"query_id": "q1", "retrieved": ["paris", "gone-1", "berlin"]},
        {"query_id": "q2", "retrieved": ["gone-1", "gone-2"]},
    ])
    with pytest.raises(RagcovError, match="2 retrieved ids not in the corpus: gone-1, gone-2"):
        import_traces(f, "jsonl", city_corpus)
    result = import_traces(f, "jsonl", city_corpus, ignore_unknown=True)
    assert result.unknown == {"gone-1": 2, "gone-2": 1}
    assert result.skipped == 3
    # Skipped ids leave a hole: nothing below k is pulled up to replace them.
    assert ranked_ids(result.run) == {"q1": ["paris", "berlin"], "q2": []}


def test_k_cuts_before_the_unknown_check(tmp_path, city_corpus):
    f = jsonl(tmp_path / "t.jsonl", [{"query_id": "q1", "retrieved": ["paris", "tokyo",
                                                                      "not-there"]}])
    run = import_traces(f, "jsonl", city_corpus, k=2).run
    assert ranked_ids(run) == {"q1": ["paris", "tokyo"]}


def test_unknown_format_and_missing_file(tmp_path, city_corpus):
    with pytest.raises(RagcovError, match="unknown trace format"):
        import_traces(tmp_path / "x", "csv", city_corpus)
    with pytest.raises(RagcovError, match="no such file"):
        import_traces(tmp_path / "missing.jsonl", "jsonl", city_corpus)
    empty = write(tmp_path / "empty.trec", "\n")
    with pytest.raises(RagcovError, match="no retrievals"):
        import_traces(empty, "trec", city_corpus)


def test_cli_import_writes_data_file_and_refuses_unknown(tmp_path, city_corpus_file, capsys):
    f = write(tmp_path / "run.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 berlin 2 0.8 s\n"
                                     "q2 Q0 tokyo 1 0.5 s\n")
    data = tmp_path / "cov.ragcov"
    code, out, _ = cli(capsys, "import", "--format", "trec", str(f), "--corpus",
                       str(city_corpus_file), "--data-file", str(data))
    assert code == 0
    assert "Imported 2 queries" in out
    assert "Chunk coverage: 37.5% (3 of 8 chunks, 2 queries)" in out
    m = CoverageData(data).matrix()
    assert m.k == 2 and chunk_coverage(m) == pytest.approx(3 / 8)
    assert CoverageData(data).meta().retriever == {"kind": "traces", "name": "traces"}

    bad = write(tmp_path / "bad.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 nowhere 2 0.8 s\n")
    data2 = tmp_path / "cov2.ragcov"
    code, _, err = cli(capsys, "import", "--format", "trec", str(bad), "--corpus",
                       str(city_corpus_file), "--data-file", str(data2))
    assert code == 1
    assert "nowhere" in err
    assert not data2.exists()  # nothing written on error

    code, out, err = cli(capsys, "import", "-f", "trec", str(bad), "--corpus",
                         str(city_corpus_file), "--data-file", str(data2), "--ignore-unknown")
    assert code == 0
    assert "Chunk coverage: 12.5% (1 of 8 chunks, 1 queries)" in out
    assert "Skipped 1 retrieved id(s) not in the corpus" in err
    assert CoverageData(data2).matrix().k == 2
    # With --k 1 the unknown id ranked second never counted: nothing to skip.
    code, _, err = cli(capsys, "import", "-f", "trec", str(bad), "--corpus",
                       str(city_corpus_file), "--data-file", str(data2), "--k", "1")
    assert code == 0 and "Skipped" not in err
    assert CoverageData(data2).matrix().k == 1


def test_cli_import_append_keeps_the_files_k(tmp_path, city_corpus_file, capsys):
    data = tmp_path / "cov.ragcov"
    first = write(tmp_path / "a.trec", "q1 Q0 paris 1 0.9 s\nq1 Q0 berlin 2 0.8 s\n")
    later = write(tmp_path / "b.trec", "q2 Q0 tokyo 1 0.5 s\n")  # a shorter list
    for f in (first, later):
        code, _, err = cli(capsys, "import", "-f", "trec", str(f), "--corpus",
                           str(city_corpus_file), "--data-file", str(data), "--append")
        assert code == 0, err
    m = CoverageData(data).matrix()
    assert m.k == 2 and m.query_ids == ["q1", "q2"]


def test_cli_import_append_never_drops_a_recorded_querys_new_hits(tmp_path, city_corpus_file,
                                                                  capsys):
    """TREC ids (q1, q2) repeat across runs: a recorded id with other hits is refused, not
    kept silently as it was; the same hits again are kept once and said so."""
    data = tmp_path / "cov.ragcov"
    first = write(tmp_path / "a.trec", "q1 Q0 paris 1 0.9 s\nq2 Q0 berlin 1 0.8 s\n")
    code, _, err = cli(capsys, "import", "-f", "trec", str(first), "--corpus",
                       str(city_corpus_file), "--data-file", str(data))
    assert code == 0, err
    before = data.read_bytes()
    other = write(tmp_path / "b.trec", "q2 Q0 dividends 1 0.5 s\nq3 Q0 tokyo 1 0.4 s\n")
    code, out, err = cli(capsys, "import", "-f", "trec", str(other), "--corpus",
                         str(city_corpus_file), "--data-file", str(data), "--append")
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "ragcov: error: query 'q2' is already recorded with other hits (1 of this import's "
        "queries are recorded already); an append keeps recorded queries as they were, so the "
        "new list would be lost: import into another data file (then `ragcov diff`), or give "
        "the queries ids of their own"]
    assert data.read_bytes() == before  # nothing written
    again = write(tmp_path / "c.trec", "q2 Q0 berlin 1 0.7 s\nq3 Q0 tokyo 1 0.4 s\n")
    code, out, err = cli(capsys, "import", "-f", "trec", str(again), "--corpus",
                         str(city_corpus_file), "--data-file", str(data), "--append")
    assert code == 0, err
    assert f"1 of the imported queries were recorded in {data} already, with the same hits" in err
    assert "Imported 1 queries" in out
    assert CoverageData(data).matrix().query_ids == ["q1", "q2", "q3"]


def test_cli_import_malformed_line_exits_1_with_location(tmp_path, city_corpus_file, capsys):
    bad = write(tmp_path / "t.jsonl", '{"query_id": "a", "retrieved": ["paris"]}\n{bad\n')
    code, _, err = cli(capsys, "import", str(bad), "--corpus", str(city_corpus_file),
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 1
    assert f"{bad}:2: invalid JSON" in err
    assert not (tmp_path / "d.ragcov").exists()


def test_the_api_detects_the_format_as_the_cli_does(tmp_path, city_corpus):
    """fmt="auto" reads the file as `ragcov import` without --format reads it, and the
    result names the format it found."""
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps(otlp_export([retriever_span("A", "a1")])) + "\n")
    trec = tmp_path / "run.trec"
    trec.write_text("q1 Q0 tokyo 1 2.0 sys\nq1 Q0 paris 2 1.0 sys\n")
    by_auto = import_traces(spans, "auto", city_corpus)
    assert by_auto.format == "openinference"
    assert by_auto.run.results == import_traces(spans, "openinference", city_corpus).run.results
    assert import_traces(trec, "auto", city_corpus).format == "trec"
    assert [t.query_id for t in read_traces(trec, "auto")] == ["q1"]
    assert import_traces(trec, "trec", city_corpus).format == "trec"


def test_record_traces_reads_the_matrix_back_only_when_asked(tmp_path, city_corpus):
    from ragcov.api import record_traces

    f = write(tmp_path / "spans.jsonl", json.dumps(otlp_export([
        retriever_span("A", "a1", docs=[("paris", 0.9), ("tokyo", 0.5)]),
        retriever_span("B", "b1", start=2, docs=[("berlin", 0.8)])])) + "\n")
    done = record_traces(f, "auto", city_corpus, tmp_path / "d.ragcov")
    assert done.added == 2 and done.result.format == "openinference"
    assert "matrix" not in vars(done)  # nothing read back yet
    m = done.matrix
    assert m.query_ids == ["A", "B"]
    assert sorted(cid for cid, hit in zip(m.chunk_ids, m.covered()) if hit) == [
        "berlin", "paris", "tokyo"]
    assert done.matrix is m


def test_a_device_is_named_for_what_it_is(tmp_path, city_corpus_file, capsys):
    """/dev/null exists: "no such file" sent the user looking for a file that is there."""
    for path, said in (("/dev/null", "/dev/null: is not a regular file"),
                       (str(tmp_path / "gone.jsonl"), f"{tmp_path / 'gone.jsonl'}: no such file")):
        code, _, err = cli(capsys, "import", path, "--format", "jsonl", "--corpus",
                           str(city_corpus_file), "--data-file", str(tmp_path / "d.ragcov"))
        assert code == 1 and err.startswith(f"ragcov: error: {said}"), err


def test_the_same_traces_with_repeats_append_again_as_the_same_hits(tmp_path, city_corpus_file,
                                                                    capsys):
    """Without --k, k is the longest list's length, repeats included: appended again at the
    file's k, the same lists give the same hits (kept once), not a refusal."""
    data = tmp_path / "cov.ragcov"
    run = write(tmp_path / "run.jsonl",
                '{"query_id": "t1", "retrieved": ["paris", "paris", "berlin"]}\n')
    for extra in ((), ("--append",)):
        code, _, err = cli(capsys, "import", str(run), "--format", "jsonl", "--corpus",
                           str(city_corpus_file), "--data-file", str(data), *extra)
        assert code == 0, err
    m = CoverageData(data).matrix()
    assert m.k == 3 and [m.chunk_ids[j] for j in m.retrieved(0)] == ["paris", "berlin"]
    assert "1 of the imported queries were recorded" in err
