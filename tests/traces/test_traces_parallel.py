"""Span exports read in parts by worker processes, and folders of shards: the same
traces as one process reading one file, duplicates across parts included, and the
same first error with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_samples import otlp_export, retriever_span, traffic_lines, write

from ragcov.errors import InputFormatError
from ragcov.traces import import_traces, parallel
from ragcov.traces.spanfile import SpanFile, fingerprint

# The document known only by its content is matched by hash, as it should be, and says so.
pytestmark = pytest.mark.filterwarnings("ignore:openinference trace results carry no corpus")

def serial_and_parallel(path: Path, corpus, monkeypatch, part_bytes: int = 4096):
    monkeypatch.setattr(parallel, "PART_BYTES", part_bytes)
    return (import_traces(path, "openinference", corpus, workers=1),
            import_traces(path, "openinference", corpus, workers=2))


def same(a, b) -> None:
    assert a.run.results == b.run.results
    assert a.run.queries == b.run.queries and list(a.run.queries) == list(b.run.queries)
    assert (a.traces, a.duplicate_spans, a.merged_spans, a.empty_spans, a.fallbacks) == \
        (b.traces, b.duplicate_spans, b.merged_spans, b.empty_spans, b.fallbacks)


def test_parallel_import_is_the_serial_import_hit_for_hit(tmp_path, city_corpus, monkeypatch):
    path = write(tmp_path / "spans.jsonl", "\n".join(traffic_lines()) + "\n")
    serial, par = serial_and_parallel(path, city_corpus, monkeypatch)
    assert len(parallel.line_parts(str(path), 4096)) > 20  # really read in many parts
    same(serial, par)
    assert par.duplicate_spans > 40 and par.merged_spans > 0 and par.fallbacks


def test_a_folder_of_shards_is_the_concatenated_file(tmp_path, city_corpus):
    lines = traffic_lines(seed=1)
    whole = write(tmp_path / "whole.jsonl", "\n".join(lines) + "\n")
    folder = tmp_path / "shards"
    folder.mkdir()
    for n in range(8):
        write(folder / f"part-{n}.jsonl", "\n".join(lines[n::8]) + "\n")
    # The concatenation in the shards' name order, read by the one-file reader.
    write(whole, "".join((folder / f"part-{n}.jsonl").read_text() for n in range(8)))
    same(import_traces(whole, "openinference", city_corpus, workers=1),
         import_traces(folder, "auto", city_corpus))
    same(import_traces(whole, "openinference", city_corpus, workers=1),
         import_traces(f"{folder}/part-*.jsonl", "openinference", city_corpus))


def test_a_malformed_span_in_a_later_part_is_reported_at_its_line(tmp_path, city_corpus,
                                                                  monkeypatch):
    lines = traffic_lines(200)
    bad = json.loads(lines[150])
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = 7
    lines[150] = json.dumps(bad)
    path = write(tmp_path / "spans.jsonl", "\n".join(lines) + "\n")
    monkeypatch.setattr(parallel, "PART_BYTES", 4096)
    with pytest.raises(InputFormatError) as serial:
        import_traces(path, "openinference", city_corpus, workers=1)
    with pytest.raises(InputFormatError) as par:
        import_traces(path, "openinference", city_corpus, workers=2)
    assert par.value.line == serial.value.line == 151
    assert str(par.value) == str(serial.value) and str(par.value).startswith(f"{path}:151: ")


def test_a_copy_with_other_content_in_another_part_names_both_lines(tmp_path, city_corpus,
                                                                   monkeypatch):
    lines = traffic_lines(200)
    other = retriever_span("t0", "r0", start=1000, docs=(("tokyo", 0.5),))
    lines.append(json.dumps(otlp_export([other])))
    path = write(tmp_path / "spans.jsonl", "\n".join(lines) + "\n")
    monkeypatch.setattr(parallel, "PART_BYTES", 4096)
    with pytest.raises(InputFormatError, match=r"span 'r0' of trace 't0' already appeared on "
                                               r"line 1 with different content") as par:
        import_traces(path, "openinference", city_corpus, workers=2)
    assert par.value.line == len(lines)


def test_a_malformed_line_in_one_shard_names_the_shard_and_its_line(tmp_path, city_corpus):
    folder = tmp_path / "shards"
    folder.mkdir()
    lines = traffic_lines(40)
    write(folder / "a.jsonl", "\n".join(lines[:20]) + "\n")
    write(folder / "b.jsonl", "\n".join(lines[20:23]) + "\n{not json\n")
    with pytest.raises(InputFormatError) as info:
        import_traces(folder, "openinference", city_corpus)
    assert str(info.value).startswith(f"{folder / 'b.jsonl'}:4: invalid JSON")


def test_a_file_not_one_value_a_line_is_read_whole(tmp_path, city_corpus, monkeypatch):
    """Pretty-printed exports cannot be cut between lines: the parts say so and the file
    is read by the one-process reader."""
    spans = [retriever_span(f"T{i}", f"s{i}", start=i) for i in range(60)]
    path = write(tmp_path / "spans.json", json.dumps(otlp_export(spans), indent=2))
    serial, par = serial_and_parallel(path, city_corpus, monkeypatch, part_bytes=512)
    same(serial, par)
    assert par.traces == 60


def test_the_fingerprint_is_the_same_in_every_process(tmp_path):
    """Python's hash of a text differs between processes; the fingerprint must not."""
    import subprocess
    import sys

    path = write(tmp_path / "spans.jsonl", traffic_lines(3)[0] + "\n")
    here = [fingerprint(s) for _l, s in SpanFile(path).located()]
    code = ("import sys; from ragcov.traces.spanfile import SpanFile, fingerprint; "
            "print([fingerprint(s) for _l, s in SpanFile(sys.argv[1]).located()])")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, check=True, env={**__import__("os").environ,
                                                         "PYTHONHASHSEED": seed})
        assert out.stdout.strip() == str(here)


def test_a_repeated_id_is_cut_at_k_before_it_is_dropped(tmp_path, city_corpus, monkeypatch):
    """``[paris, paris, berlin]`` at k = 2 is the retriever's top 2: paris twice. Berlin
    ranked third, never reached the model, and must not count, read in one process or
    in parts; without --k the list counts whole (k = 3), each id once."""
    repeated = [("paris", 0.9), ("paris", 0.8), ("berlin", 0.7)]
    lines = [json.dumps(otlp_export([retriever_span(f"T{i}", f"s{i}", start=i, docs=repeated)]))
             for i in range(40)]
    path = write(tmp_path / "spans.jsonl", "\n".join(lines) + "\n")
    monkeypatch.setattr(parallel, "PART_BYTES", 2048)
    for workers in (1, 2):
        cut = import_traces(path, "openinference", city_corpus, k=2, workers=workers)
        assert {tuple(c for c, _ in r) for r in cut.run.results.values()} == {("paris",)}
        whole = import_traces(path, "openinference", city_corpus, workers=workers)
        assert {tuple(c for c, _ in r) for r in whole.run.results.values()} == {("paris", "berlin")}
        assert whole.run.k == 3  # the longest list's length, as the retriever returned it


@pytest.mark.parametrize("fmt", ["jsonl", "trec"])
def test_a_repeated_id_in_jsonl_and_trec_is_cut_at_k_first(capsys, tmp_path, city_corpus_file,
                                                            fmt):
    from helpers import cli
    from ragcov.data import CoverageData

    if fmt == "jsonl":
        path = write(tmp_path / "run.jsonl",
                     '{"query_id": "t1", "retrieved": ["paris", "paris", "berlin"]}\n'
                     '{"query_id": "t2", "retrieved": ["tokyo"]}\n')
    else:
        path = write(tmp_path / "run.trec", "t1 Q0 paris 1 3 x\nt1 Q0 paris 2 2 x\n"
                                            "t1 Q0 berlin 3 1 x\nt2 Q0 tokyo 1 1 x\n")
    code, _, err = cli(capsys, "import", str(path), "--format", fmt, "--corpus",
                       str(city_corpus_file), "--k", "2", "--data-file",
                       str(tmp_path / "d.ragcov"))
    assert code == 0, err
    m = CoverageData(tmp_path / "d.ragcov").matrix()
    covered = {m.chunk_ids[j] for i in range(m.n_queries) for j in m.retrieved(i)}
    assert covered == {"paris", "tokyo"}
