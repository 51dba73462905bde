"""The columnar reader of OpenInference OTLP JSON (ragcov.traces.columnar) against the
general reader: the same import, query for query and hit for hit, the same error with its
line, on generated exports (hypothesis) and on real instrumentor output."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from trace_samples import otlp_export, retriever_span, write

from ragcov.corpus import Chunk, Corpus
from ragcov.errors import RagcovError
from ragcov.traces import importer
from ragcov.traces.columnar import Fallback, read_columnar
from ragcov.traces.importer import import_traces

CORPUS = Corpus([Chunk(id=f"c{i}", doc_id=f"d{i % 2}", text=f"chunk text number {i}")
                 for i in range(6)])


def outcome(path: Path, columnar: bool, ignore_unknown: bool = False, k: int | None = None
            ) -> tuple:
    """What an import gives: its queries, lists and counts, or its error's text."""
    before = importer.COLUMNAR, importer.COLUMNAR_MIN_BYTES
    importer.COLUMNAR, importer.COLUMNAR_MIN_BYTES = columnar, 0  # small files too
    try:
        r = import_traces(path, "openinference", CORPUS, k=k, ignore_unknown=ignore_unknown,
                          workers=1)
    except RagcovError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "line", None))
    finally:
        importer.COLUMNAR, importer.COLUMNAR_MIN_BYTES = before
    results = {q: [(c, None if s is None else (repr(s) if math.isnan(s) else s)) for c, s in r]
               for q, r in r.run.results.items()}
    return (list(r.run.queries.items()), list(results.items()), r.run.k, r.traces, r.unknown,
            r.fallbacks, r.duplicate_spans, r.merged_spans, r.empty_spans, r.reranker_spans)


def value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def attr(key, v):
    return {"key": key, "value": value(v)}


# Plain spans: what the columnar path reads itself.
plain_ids = st.sampled_from([f"c{i}" for i in range(6)])
scores = st.one_of(st.none(), st.floats(-2, 2, allow_nan=False), st.just(-0.0))


@st.composite
def plain_span(draw, n: int):
    trace = draw(st.sampled_from(["T1", "T2", "T3", f"T{n + 10}"]))
    kind = draw(st.sampled_from(["RETRIEVER", "retriever", "LLM", "CHAIN", ""]))
    attrs = [attr("openinference.span.kind", kind)] if kind else []
    if draw(st.booleans()):
        attrs.append(attr("input.value", draw(st.text(max_size=8))))
    for d, (cid, score) in enumerate(draw(st.lists(st.tuples(plain_ids, scores), max_size=4))):
        attrs.append(attr(f"retrieval.documents.{d}.document.id", cid))
        if score is not None:
            attrs.append(attr(f"retrieval.documents.{d}.document.score", score))
        if draw(st.booleans()):
            attrs.append(attr(f"retrieval.documents.{d}.document.content", "some text"))
    if draw(st.booleans()):
        attrs.append(attr("llm.token_count.total", draw(st.integers(-5, 10**12))))
    if draw(st.booleans()):
        attrs.append(attr("tag.flag", draw(st.booleans())))
    draw(st.randoms()).shuffle(attrs)
    span = {"traceId": trace, "spanId": f"s{n}", "name": "x", "attributes": attrs,
            "startTimeUnixNano": draw(st.sampled_from(
                ["", "1700000000000000000", "1700000000000000001", "5", str(10**18 + n)]))}
    if draw(st.booleans()):
        span["parentSpanId"] = draw(st.sampled_from(["", "p0", "p1"]))
    return span


# Anything else: what the columnar path must hand to the general reader, or read span by
# span through the general pick.
odd_values = st.one_of(st.sampled_from(["", " ", "c1", "zz", "01", "retriever", "RERANKER",
                                        "application/json", '{"query": "q"}', '[{"id": "c2"}]',
                                        "<NodeWithScore(node=TextNode(id_=c3), score=0.5)>"]),
                       st.integers(-3, 7), st.booleans(), st.floats(allow_nan=True),
                       st.just(None))
odd_keys = st.sampled_from(["openinference.span.kind", "input.value", "input.mime_type",
                            "output.value", "retrieval.documents", "retrieval.documents.0",
                            "retrieval.documents.0.document.id", "retrieval.documents.01.document.id",
                            "retrieval.documents.1.document.score",
                            "retrieval.documents.1.document.metadata",
                            "retrieval.documents.0.document.metadata.source",
                            "retrieval.documents.x", "retrieval.documents.2.document.content",
                            "reranker.output_documents.0.document.id", "other"])


def odd_value(v):
    if v is None:
        return {}
    return value(v)


@st.composite
def odd_span(draw, n: int):
    span = draw(plain_span(n))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(odd_keys)
        if all(a["key"] != key for a in span["attributes"]):  # a key twice: below, rarely
            span["attributes"].append({"key": key, "value": odd_value(draw(odd_values))})
    # Rarely: most of these send the whole file to the general reader.
    change = draw(st.sampled_from(["none"] * 60 + ["dup id", "no trace", "start", "null", "array",
                                   "kvlist", "int start", "bad int", "nested", "span_kind", "key twice"]))
    if change == "dup id":
        span["spanId"] = "s0"
    elif change == "no trace":
        del span["traceId"]
    elif change == "start":
        span["startTimeUnixNano"] = draw(st.sampled_from(["2024-01-01T00:00:00Z", "x",
                                                          "99999999999999999999"]))
    elif change == "null":
        span["attributes"].append({"key": "n", "value": {"stringValue": None}})
    elif change == "array":
        span["attributes"].append({"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "x"}]}}})
    elif change == "kvlist":
        span["attributes"].append({"key": "k", "value": {"kvlistValue": {"values": []}}})
    elif change == "int start":
        span["startTimeUnixNano"] = 1700000000000000000 + n
    elif change == "bad int":
        span["attributes"].append({"key": "i", "value": {"intValue": " 12"}})
    elif change == "nested":
        span["parentSpanId"] = "s0"
    elif change == "span_kind":
        span["span_kind"] = "RETRIEVER"
    elif change == "key twice" and span["attributes"]:
        span["attributes"].append(span["attributes"][0])
    return span


@st.composite
def export(draw, spans_of):
    n = draw(st.integers(1, 8))
    spans = [draw(spans_of(i)) for i in range(n)]
    if draw(st.booleans()):  # a span exported again, as it was
        spans.append(json.loads(json.dumps(draw(st.sampled_from(spans)))))
    per_line = draw(st.integers(1, 4))
    lines = [json.dumps(otlp_export(spans[i:i + per_line]))
             for i in range(0, len(spans), per_line)]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "")
    return "\n".join(lines) + "\n"


def same(text: str, ignore_unknown: bool = False, part_bytes: int | None = None,
         k: int | None = None) -> tuple:
    """The import both ways; ``part_bytes``: the columnar reader's parts that small."""
    from ragcov.traces import columnar

    with tempfile.TemporaryDirectory() as d:
        f = write(Path(d) / "spans.jsonl", text)
        general = outcome(f, columnar=False, ignore_unknown=ignore_unknown, k=k)
        before = columnar.PART_BYTES
        columnar.PART_BYTES = part_bytes or before
        try:
            fast = outcome(f, columnar=True, ignore_unknown=ignore_unknown, k=k)
        finally:
            columnar.PART_BYTES = before
        assert fast == general
        return general


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(export(plain_span))
def test_plain_exports_are_read_in_columns_as_the_general_reader_reads_them(text):
    with tempfile.TemporaryDirectory() as d:
        f = write(Path(d) / "spans.jsonl", text)
        try:
            read_columnar(f, CORPUS.positions)
        except Fallback as exc:  # only what the general reader must decide
            assert any(w in str(exc) for w in ("twice", "encloses")), exc
    same(text)
    same(text, k=2)  # lists cut to k, then their repeats dropped, as the general reader does
    same(text, k=10)  # every list within k: taken whole where it holds no repeat


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(export(odd_span), st.booleans(), st.sampled_from([None, 1, 600]))
@example('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "T", "spanId": "s", '
         '"attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}, '
         '{"key": "x", "value": {"stringValue": null, "doubleValue": 1.5}}]}]}]}]}\n', False, None)
@example('{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}\n{"resourceSpans": [}\n', False,
         None)
@example('\ufeff' + json.dumps(otlp_export([retriever_span("A", "a", docs=[("c1", 0.5)])])) + "\n",
         False, 1)
def test_any_export_imports_as_the_general_reader_imports_it(text, ignore_unknown, part_bytes):
    """Falls back, or reads a span through the general pick, wherever it cannot be sure:
    the same queries, lists, counts, or the same error and line; read whole or in parts
    (a part of 1 byte is a line each)."""
    same(text, ignore_unknown, part_bytes)


def test_a_malformed_line_keeps_its_error_and_line(tmp_path):
    good = json.dumps(otlp_export([retriever_span("A", "a", docs=[("c1", 0.5)])]))
    bad = json.dumps(otlp_export([{"traceId": ["T"], "spanId": "s", "attributes": []}]))
    f = write(tmp_path / "spans.jsonl", good + "\n" + bad + "\n" + good + "\n")
    got = outcome(f, columnar=True)
    assert got == outcome(f, columnar=False)
    assert got[0] == "error" and got[3] == 2 and str(f) + ":2:" in got[2]


@pytest.mark.parametrize("part_bytes", [None, 3000])
def test_the_benchmarks_export_is_read_in_columns(tmp_path, part_bytes, monkeypatch):
    """The shape of benchmarks/bench_import.py: exports of 100 spans a line, an LLM span
    every 4th trace; read here without a fallback, and the same import."""
    import random

    rng = random.Random(3)
    spans = []
    for i in range(300):
        attrs = [attr("openinference.span.kind", "RETRIEVER"), attr("input.value", f"q {i}")]
        for r, c in enumerate(rng.sample(range(6), 4)):
            attrs += [attr(f"retrieval.documents.{r}.document.id", f"c{c}"),
                      attr(f"retrieval.documents.{r}.document.score", round(1 - r / 10, 3)),
                      attr(f"retrieval.documents.{r}.document.content", f"chunk {c}")]
        spans.append({"traceId": f"{i:032x}", "spanId": f"{2 * i:016x}", "name": "retrieve",
                      "startTimeUnixNano": str(1_700_000_000_000_000_000 + 10 * (i % 7)),
                      "attributes": attrs})
        if i % 4 == 0:
            spans.append({"traceId": f"{i:032x}", "spanId": f"{2 * i + 1:016x}",
                          "parentSpanId": "", "name": "llm", "attributes": [
                              attr("openinference.span.kind", "LLM")]})
    text = "".join(json.dumps(otlp_export(spans[i:i + 100])) + "\n"
                   for i in range(0, len(spans), 100))
    f = write(tmp_path / "spans.jsonl", text)
    if part_bytes:
        from ragcov.traces import columnar

        monkeypatch.setattr(columnar, "PART_BYTES", part_bytes)
    traces, stats = read_columnar(f, CORPUS.positions)
    assert len(list(traces)) == 300 and stats.empty == 0
    got = same(text, part_bytes=part_bytes)
    assert got[3] == 300 and got[-1] == 0


def test_reranker_spans_are_counted_and_the_first_stage_read_only_then(tmp_path, monkeypatch):
    """An export with no RERANKER span is read once: there is no first stage to read again."""
    from ragcov import api
    from ragcov.traces import importer as imp

    calls = []
    real = imp.first_stage_lists
    monkeypatch.setattr(imp, "first_stage_lists", lambda *a: calls.append(a) or real(*a))
    plain = write(tmp_path / "plain.jsonl", json.dumps(otlp_export(
        [retriever_span("A", "a", docs=[("c1", 0.5)])])) + "\n")
    done = api.record_traces(plain, "openinference", CORPUS, tmp_path / "a.ragcov")
    assert done.result.reranker_spans == 0 and calls == []
    reranked = write(tmp_path / "reranked.jsonl", json.dumps(otlp_export([
        retriever_span("A", "a", start=1, docs=[("c1", 0.5), ("c2", 0.4)]),
        {"traceId": "A", "spanId": "r", "startTimeUnixNano": "2", "attributes": [
            attr("openinference.span.kind", "RERANKER"),
            attr("reranker.input_documents.0.document.id", "c1"),
            attr("reranker.input_documents.1.document.id", "c2"),
            attr("reranker.output_documents.0.document.id", "c2")]}])) + "\n")
    done = api.record_traces(reranked, "openinference", CORPUS, tmp_path / "b.ragcov")
    assert done.result.reranker_spans == 1 and len(calls) == 1
    assert [c for c, _s in done.result.run.results["A"]] == ["c2"]


def test_reranker_spans_are_counted_alike_in_parts(tmp_path, monkeypatch):
    from ragcov.traces import parallel

    lines = [json.dumps(otlp_export([
        retriever_span(f"T{i}", "a", docs=[("c1", 0.5)]),
        {"traceId": f"T{i}", "spanId": "r", "attributes": [
            attr("openinference.span.kind", "reranker"),
            attr("reranker.output_documents.0.document.id", "c3")]}])) for i in range(40)]
    f = write(tmp_path / "spans.jsonl", "\n".join(lines) + "\n")
    one = import_traces(f, "openinference", CORPUS, workers=1)
    monkeypatch.setattr(parallel, "PART_BYTES", 2000)
    assert len(parallel.file_parts(str(f))) > 2
    many = import_traces(f, "openinference", CORPUS,
                         read_parts=lambda fmt, parts, known: [parallel.read_part(fmt, p, known)
                                                               for p in parts])
    assert one.reranker_spans == many.reranker_spans == 40
    assert one.run.results == many.run.results


@pytest.mark.slow
def test_real_langchain_spans_as_otlp_json_import_alike(minilm_path, tmp_path):
    """openinference-instrumentation-langchain's spans, written by the OTLP exporter's own
    encoder: ids only in output.value, read span by span through the general pick."""
    pytest.importorskip("openinference.instrumentation.langchain")
    from instrumented import traced, write_otlp_json
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from helpers import langchain_embeddings
    from ragcov.retrievers.dense import load_encoder

    store = InMemoryVectorStore(langchain_embeddings(load_encoder(minilm_path)))
    store.add_documents([Document(page_content=c.text, id=c.id) for c in CORPUS])
    retriever = store.as_retriever(search_kwargs={"k": 3})
    with traced() as exporter:
        returned = [[d.id for d in retriever.invoke(q)] for q in ("number 1", "number 4", "text")]
    f = write_otlp_json(exporter.get_finished_spans(), tmp_path / "spans.json")
    traces, _stats = read_columnar(f, CORPUS.positions)  # no fallback
    assert [[i.id for i in t.items] for t in list(traces)] == returned
    got = same(f.read_text(encoding="utf-8"))
    assert got[3] == 3


# Phoenix spans dataframes, as pandas or pyarrow save them.
doc_entry = st.fixed_dictionaries(
    {"document.id": st.one_of(plain_ids, plain_ids, st.sampled_from(["zz", " "])),
     "document.score": st.one_of(scores, st.just(float("nan")))},
    optional={"document.content": st.just("some text"), "document.metadata": st.just("{}")})


@st.composite
def phoenix_row(draw, n: int):
    from datetime import datetime, timedelta, timezone

    kind = draw(st.sampled_from(["RETRIEVER", "retriever", "LLM", "", None]))
    row = {"context.span_id": draw(st.sampled_from([f"s{n}"] * 9 + ["s0"])),
           "context.trace_id": draw(st.sampled_from(["t1", "t2", f"t{n + 9}"])),
           "parent_id": draw(st.sampled_from([None, None, "", "p1", "s0"])),
           "name": "span", "span_kind": kind,
           "start_time": draw(st.one_of(st.none(), st.integers(0, 10**6).map(
               lambda us: datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)))),
           "attributes.input.value": draw(st.one_of(st.none(), st.text(max_size=6))),
           "attributes.retrieval.documents": draw(st.one_of(
               st.none(), st.lists(doc_entry, max_size=4)))}
    if draw(st.integers(0, 9)) == 0:
        row["attributes.openinference.span.kind"] = draw(st.sampled_from(["RETRIEVER", "CHAIN"]))
    if draw(st.integers(0, 9)) == 0:
        row["attributes.output.value"] = draw(st.sampled_from(['[{"id": "c2"}]', "done"]))
    if draw(st.integers(0, 9)) == 0:
        row["attributes.input.mime_type"] = "application/json"
        row["attributes.input.value"] = '{"query": "q"}'
    return row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(*[phoenix_row(i) for i in range(n)])),
       st.booleans())
def test_phoenix_parquet_imports_as_the_general_reader_imports_it(rows, by_pandas):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [dict(r) for r in rows]
    keys = {k for r in rows for k in r}
    rows = [{k: r.get(k) for k in sorted(keys)} for r in rows]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "spans.parquet"
        try:
            if by_pandas:
                pd.DataFrame(rows).set_index("context.span_id").to_parquet(f)
            else:
                pq.write_table(pa.Table.from_pylist(rows), f)
        except (pa.ArrowException, TypeError, ValueError):
            return  # a frame these writers refuse (mixed types in a column)
        # Whole lists; cut to k before their repeats are dropped; every list within k.
        for k in (None, 2, 10):
            assert phoenix_outcome(f, True, k) == phoenix_outcome(f, False, k)


def phoenix_outcome(path: Path, columnar: bool, k: int | None = None) -> tuple:
    before = importer.COLUMNAR
    importer.COLUMNAR = columnar
    try:
        r = import_traces(path, "phoenix", CORPUS, k=k, workers=1)
    except RagcovError as exc:
        return ("error", type(exc).__name__, str(exc))
    finally:
        importer.COLUMNAR = before
    return (list(r.run.queries.items()), list(r.run.results.items()), r.run.k, r.traces,
            r.unknown, r.duplicate_spans, r.merged_spans, r.empty_spans, r.reranker_spans)


def test_a_phoenix_frame_of_plain_retrievals_is_read_in_columns(tmp_path):
    import pandas as pd

    from ragcov.traces.columnar import read_phoenix_columnar

    rows = [{"context.span_id": f"s{i}", "context.trace_id": f"t{i // 2}",
             "parent_id": None if i % 2 == 0 else f"s{i - 1}",
             "span_kind": "CHAIN" if i % 2 == 0 else "RETRIEVER",
             "start_time": pd.Timestamp(1_735_689_600_000_000_000 + 1000 * (i % 5), tz="UTC"),
             "attributes.input.value": f"q{i}",
             "attributes.retrieval.documents": None if i % 2 == 0 else [
                 {"document.id": f"c{(i + j) % 6}", "document.score": 1 - j / 10,
                  "document.content": "x", "document.metadata": "{}"} for j in range(3)]}
            for i in range(40)]
    f = tmp_path / "spans.parquet"
    pd.DataFrame(rows).set_index("context.span_id").to_parquet(f)
    traces, stats = read_phoenix_columnar(f, CORPUS.positions)
    assert len(list(traces)) == 20 and stats.empty == 0
    assert phoenix_outcome(f, True) == phoenix_outcome(f, False)
