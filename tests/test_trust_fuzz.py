"""Every reader, fed generated hostile input through the real command line, fails cleanly.

For each input format (JSONL corpus and suite, CSV suite, TREC and ranx runs, OTLP
spans, Phoenix parquet, Langfuse observations, qrels, per-query scores, the
config file) hypothesis writes files shaped like the real thing with hostile
values in every field (lists and objects for ids, NaN and infinities, booleans,
blanks, control characters, huge numbers, repeated keys), or no shape at all
(bytes that are not UTF-8, truncated JSON, nesting past the recursion limit).
The command must then exit 0 or 1, with no traceback; on 1 it says one
``ragcov: error:`` line and leaves no data file behind.

The fast suite runs a modest, derandomized number of examples per reader (the
same examples every run, so CI is stable) in process through ``ragcov.cli.main``;
a handful also go through a real ``python -m ragcov`` subprocess. The ``slow``
variant runs many more, randomly, for hunting.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcov.cli import main

FAST = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
# Fixed like FAST, so a CI run explores what the last run did: a gate, 150 examples a
# reader (about 2 minutes in all on 2 cores). RAGCOV_FUZZ_RANDOM=1 draws 600 new ones
# each run (for a search, not a gate).
SEARCHING = bool(os.environ.get("RAGCOV_FUZZ_RANDOM"))
THOROUGH = settings(max_examples=600 if SEARCHING else 150, deadline=None, database=None,
                    derandomize=not SEARCHING, suppress_health_check=list(HealthCheck))

CHUNK_IDS = ["c0", "c1", "c2", "c3"]
CORPUS = "".join(json.dumps({"id": c, "text": f"text about topic {n}", "doc_id": f"d{n % 2}"}) + "\n"
                 for n, c in enumerate(CHUNK_IDS))
QUERIES = "".join(json.dumps({"id": f"q{n}", "query": f"topic {n}"}) + "\n" for n in range(3))

# ------------------------------------------------------------------ hostile values
WEIRD_TEXT = st.sampled_from(["", " ", "\t\n", "\x00", "\x1b[31m", "\u202e", "NaN", "Infinity",
                              "-0", "1e400", "null", "true", "#", "c0 c1", "c0\n", "é", "\ufeff"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), WEIRD_TEXT, st.text(max_size=12),
    st.text(max_size=400).filter(lambda t: len(t) > 200),
)
KEYS = st.sampled_from(["id", "_id", "chunk_id", "doc_id", "text", "content", "page_content", "title",
                        "query", "query_id", "score", "metadata", "retrieved", "scores", "documents",
                        "document.id", "document.score", "lc", "kwargs", "id_", "source"])
JSONISH = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.one_of(KEYS, st.text(max_size=4)), inner, max_size=4)),
    max_leaves=8)
CHUNK_ID = st.one_of(st.sampled_from(CHUNK_IDS), SCALARS, JSONISH)
QUERY_ID = st.one_of(st.sampled_from(["q0", "q1", "q2"]), SCALARS, JSONISH)
SCORE = st.one_of(st.floats(min_value=-1, max_value=1), SCALARS)


def dumps(value: object) -> str:
    return json.dumps(value, allow_nan=True)


@st.composite
def record(draw, fields: dict[str, st.SearchStrategy]) -> dict:
    """An object with some of ``fields`` (each drawn), plus perhaps a stray key."""
    out = {k: draw(v) for k, v in fields.items() if draw(st.integers(0, 4))}
    if draw(st.integers(0, 5)) == 0:
        out[draw(st.one_of(KEYS, st.text(max_size=4)))] = draw(JSONISH)
    return out


@st.composite
def damaged(draw, text: st.SearchStrategy[str]) -> bytes:
    """``text`` as bytes, sometimes damaged the ways files are: cut short, a BOM,
    bytes that are not UTF-8, a NUL, nesting past the recursion limit, or nothing."""
    body = draw(text).encode("utf-8")
    how = draw(st.integers(0, 12))
    if how == 0 and body:
        body = body[: draw(st.integers(0, len(body) - 1))]
    elif how == 1:
        body = b"\xef\xbb\xbf" + body
    elif how == 2:
        body = body + b"\xff\xfe\x80"
    elif how == 3:
        body = body.replace(b"\n", b"\x00\n", 1)
    elif how == 4:
        depth = draw(st.sampled_from([50, 5000, 100_000]))
        body = b"[" * depth + b"]" * depth + b"\n"
    elif how == 5:
        body = b""
    elif how == 6:
        body = draw(st.binary(max_size=64))
    return body


def jsonl(rec: st.SearchStrategy[dict]) -> st.SearchStrategy[bytes]:
    line = st.one_of(rec.map(dumps), rec.map(dumps), JSONISH.map(dumps), st.text(max_size=10))
    return damaged(st.lists(line, min_size=1, max_size=6).map(lambda ls: "\n".join(ls) + "\n"))


# ------------------------------------------------------------------ one strategy per reader
CORPUS_LINES = jsonl(record({"id": CHUNK_ID, "text": st.one_of(st.text(max_size=30), SCALARS),
                             "doc_id": CHUNK_ID, "title": SCALARS, "metadata": JSONISH,
                             "position": SCALARS}))
SUITE_LINES = jsonl(record({"id": QUERY_ID, "query": st.one_of(st.text(max_size=30), SCALARS),
                            "metadata": JSONISH}))
TRACE_LINES = jsonl(record({"query_id": QUERY_ID, "query": SCALARS,
                            "retrieved": st.lists(st.one_of(CHUNK_ID, st.tuples(CHUNK_ID, SCORE).map(list),
                                                            record({"id": CHUNK_ID, "score": SCORE,
                                                                    "text": SCALARS})), max_size=4),
                            "scores": st.lists(SCORE, max_size=4), "retrieved_contexts": JSONISH}))
QRELS_LINES = jsonl(record({"query_id": QUERY_ID, "doc_id": CHUNK_ID, "chunk_id": CHUNK_ID,
                            "relevance": SCORE}))
SCORES_LINES = jsonl(record({"query_id": QUERY_ID, "query": SCALARS, "faith": SCORE}))

CELL = st.one_of(st.sampled_from(["q0", "q1", "", " ", "topic 1", "0.5", "nan", "inf"]),
                 st.text(max_size=15))


@st.composite
def csv_text(draw) -> str:
    header = draw(st.lists(st.sampled_from(["id", "query", "question", "query_id", "text", "", "faith",
                                            "user_input", " id "]), min_size=1, max_size=4))
    rows = draw(st.lists(st.lists(CELL, min_size=max(0, len(header) - 1), max_size=len(header) + 1),
                         max_size=4))
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue() + draw(st.sampled_from(["", '"unterminated\n', "a,b\r\n", "\n\n"]))


TOKEN = st.one_of(st.sampled_from(["q0", "q1", "Q0", "c0", "c1", "c9", "0", "1", "-1", "0.5", "nan",
                                   "inf", "-inf", "1e999", "x", "#"]), st.text(max_size=6))


@st.composite
def trec_text(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        cols = draw(st.lists(TOKEN, min_size=5, max_size=7))
        lines.append(" ".join(cols))
    return "\n".join(lines) + "\n"


@st.composite
def ranx_text(draw) -> str:
    """``{qid: {doc: score}}`` written by hand, so keys may repeat and values be anything."""
    def obj(pairs: list[tuple[str, str]]) -> str:
        return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"
    inner = st.lists(st.tuples(st.one_of(st.sampled_from(CHUNK_IDS), st.text(max_size=4)),
                               SCORE.map(dumps)), max_size=4).map(obj)
    outer = draw(st.lists(st.tuples(st.one_of(st.sampled_from(["q0", "q1"]), st.text(max_size=4)),
                                    st.one_of(inner, JSONISH.map(dumps))), min_size=1, max_size=3))
    return obj(outer) + "\n"


ANY_VALUE = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.one_of(st.sampled_from(CHUNK_IDS), SCALARS)),
    st.builds(lambda v: {"doubleValue": v}, st.one_of(SCORE, st.sampled_from(["NaN", "Infinity", "x"]))),
    st.builds(lambda v: {"intValue": v}, st.one_of(st.integers(), SCALARS)),
    st.builds(lambda v: {"boolValue": v}, SCALARS),
    st.builds(lambda v: {"arrayValue": v}, st.one_of(JSONISH, st.builds(lambda vs: {"values": vs},
                                                                          st.lists(JSONISH, max_size=3)))),
    st.builds(lambda v: {"kvlistValue": v}, JSONISH),
    JSONISH,
)
OI_KEYS = st.sampled_from(["openinference.span.kind", "input.value", "output.value",
                           "retrieval.documents", "retrieval.documents.0.document.id",
                           "retrieval.documents.0.document.score", "retrieval.documents.1.document.id",
                           "retrieval.documents.0.document.content", "retrieval.documents.x",
                           "reranker.output_documents.0.document.id", "gen_ai.operation.name"])
ATTRIBUTE = st.one_of(
    st.fixed_dictionaries({"key": st.just("openinference.span.kind"),
                           "value": st.just({"stringValue": "RETRIEVER"})}),
    st.fixed_dictionaries({"key": OI_KEYS, "value": ANY_VALUE}),
    st.fixed_dictionaries({"key": st.one_of(OI_KEYS, SCALARS), "value": ANY_VALUE}),
    JSONISH,
)
SPAN = record({"traceId": st.one_of(st.sampled_from(["t0", "t1"]), SCALARS),
               "spanId": st.one_of(st.sampled_from(["s0", "s1"]), SCALARS),
               "parentSpanId": st.one_of(st.sampled_from(["s0", "s1"]), SCALARS),
               "name": SCALARS, "startTimeUnixNano": st.one_of(st.integers(), SCALARS),
               "attributes": st.one_of(st.lists(ATTRIBUTE, max_size=6), JSONISH)})
OTLP_LINES = jsonl(st.one_of(
    st.lists(SPAN, max_size=3).map(lambda spans: {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}),
    SPAN, record({"resourceSpans": JSONISH})))

DOC = record({"id": CHUNK_ID, "page_content": SCALARS, "metadata": JSONISH, "score": SCORE})
OBSERVATION = record({"id": st.one_of(st.sampled_from(["o0", "o1"]), SCALARS),
                      "traceId": st.one_of(st.sampled_from(["t0", "t1"]), SCALARS),
                      "type": st.one_of(st.sampled_from(["RETRIEVER", "SPAN", "GENERATION"]), SCALARS),
                      "name": st.one_of(st.just("retriever"), SCALARS),
                      "parentObservationId": st.one_of(st.just("o0"), SCALARS),
                      "startTime": SCALARS, "input": JSONISH,
                      "output": st.one_of(st.lists(DOC, max_size=3), JSONISH,
                                          st.lists(DOC, max_size=3).map(lambda d: {"documents": d}))})
LANGFUSE = damaged(st.one_of(
    st.lists(OBSERVATION, max_size=4).map(lambda obs: dumps({"data": obs, "meta": {}})),
    st.lists(OBSERVATION, max_size=4).map(dumps), JSONISH.map(dumps)))

TOML_KEYS = st.sampled_from(["k", "data_file", "retriever", "corpus", "queries", "model", "chunk_size",
                             "chunk_overlap", "append", "index", "precision", "show_missing", "omit",
                             "format", "output", "name", "skip_covered", "bogus", "run", "report"])


@st.composite
def toml_value(draw) -> str:
    return draw(st.one_of(
        st.integers(min_value=-2**70, max_value=2**70).map(str),
        st.sampled_from(["nan", "inf", "-inf", "true", "false", "1.5", "0", "[]", "{}", '"bm25"',
                         '"dense"', '"/nonexistent/x"', '""', "1979-05-27", '[1, "a"]', "{ a = 1 }"]),
        st.text(max_size=10).map(json.dumps),
    ))


@st.composite
def toml_text(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 4)) == 0:
            lines.append(f"[{draw(st.sampled_from(['run', 'report', 'json', 'nope', 'run.x']))}]")
        lines.append(f"{draw(TOML_KEYS)} = {draw(toml_value())}")
    if draw(st.integers(0, 5)) == 0:
        lines.append(draw(st.text(max_size=12)))
    return "\n".join(lines) + "\n"


DOC_ID_KINDS = {
    "str": st.one_of(st.sampled_from(CHUNK_IDS), WEIRD_TEXT, st.text(max_size=5)),
    "int": st.integers(min_value=-2**63, max_value=2**63 - 1),
    "bool": st.booleans(),
    "float": st.floats(allow_nan=True, allow_infinity=True),
}


@st.composite
def phoenix_rows(draw) -> list[dict]:
    """Rows as Phoenix's spans dataframe holds them, each column of one type per file
    (as parquet needs) but with hostile values: repeated span ids, NaN scores, odd kinds."""
    id_kind = draw(st.sampled_from(sorted(DOC_ID_KINDS)))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        docs = draw(st.one_of(st.none(), st.lists(st.fixed_dictionaries({
            "document.id": st.one_of(st.none(), DOC_ID_KINDS[id_kind]),
            "document.score": st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
            "document.content": st.one_of(st.none(), st.text(max_size=8)),
        }), max_size=3)))
        rows.append({
            "context.span_id": draw(st.one_of(st.none(), st.sampled_from(["s0", "s1", ""]))),
            "context.trace_id": draw(st.one_of(st.none(), st.sampled_from(["t0", "t1", " "]))),
            "parent_id": draw(st.one_of(st.none(), st.sampled_from(["s0", "s1"]))),
            "span_kind": draw(st.one_of(st.none(), st.sampled_from(["RETRIEVER", "RERANKER", "LLM", ""]))),
            "name": draw(st.one_of(st.none(), st.text(max_size=5))),
            "attributes.input.value": draw(st.one_of(st.none(), st.text(max_size=8))),
            "attributes.output.value": draw(st.one_of(st.none(), JSONISH.map(dumps))),
            "attributes.retrieval.documents": docs,
        })
    return rows


@st.composite
def phoenix_bytes(draw) -> bytes:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.one_of(st.binary(max_size=64), st.just(b"PAR1garbagePAR1")))
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = draw(phoenix_rows())
    if not rows:
        rows = [{"context.span_id": None}]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


# ------------------------------------------------------------------ the readers and commands
@dataclass(frozen=True)
class Reader:
    """A hostile file's name and content, and the command line that reads it."""

    name: str
    content: st.SearchStrategy[bytes]
    args: Callable[[Path, Path], list[str]]  # (folder, hostile file) -> arguments


def run_args(corpus: str, queries: str) -> Callable[[Path, Path], list[str]]:
    return lambda d, f: ["run", "--corpus", str(d / corpus), "--queries", str(d / queries),
                         "--retriever", "bm25", "-k", "2", "--data-file", str(d / "out.ragcov")]


def import_args(fmt: str) -> Callable[[Path, Path], list[str]]:
    return lambda d, f: ["import", str(f), "--format", fmt, "--corpus", str(d / "corpus.jsonl"),
                         "--data-file", str(d / "out.ragcov")]


def faults_args(option: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda d, f: ["faults", "--data-file", str(d / "good.ragcov"), option, str(f), *extra,
                         "-o", str(d / "out.ragcov")]


READERS = {r.name: r for r in [
    Reader("corpus.jsonl", CORPUS_LINES, run_args("fuzz.jsonl", "queries.jsonl")),
    Reader("suite.jsonl", SUITE_LINES, run_args("corpus.jsonl", "fuzz.jsonl")),
    Reader("suite.csv", damaged(csv_text()), run_args("corpus.jsonl", "fuzz.csv")),
    Reader("traces.jsonl", TRACE_LINES, import_args("jsonl")),
    Reader("run.trec", damaged(trec_text()), import_args("trec")),
    Reader("run.ranx.json", damaged(ranx_text()), import_args("ranx")),
    Reader("spans.otlp.json", OTLP_LINES, import_args("openinference")),
    Reader("spans.otel.json", OTLP_LINES, import_args("otel")),
    Reader("spans.parquet", phoenix_bytes(), import_args("phoenix")),
    Reader("observations.json", LANGFUSE, import_args("langfuse")),
    Reader("qrels.jsonl", QRELS_LINES, faults_args("--qrels")),
    Reader("qrels.trec", damaged(trec_text()), faults_args("--qrels", "--qrels-level", "chunk")),
    Reader("scores.jsonl", SCORES_LINES, faults_args("--scores", "--metric", "faith")),
    Reader("scores.csv", damaged(csv_text()), faults_args("--scores", "--metric", "faith")),
    Reader("ragcov.toml", damaged(toml_text()), run_args("corpus.jsonl", "queries.jsonl")),
]}


def prepare(folder: Path, reader: Reader, content: bytes) -> Path:
    """The good files every command needs, and the hostile one."""
    (folder / "corpus.jsonl").write_text(CORPUS, encoding="utf-8")
    (folder / "queries.jsonl").write_text(QUERIES, encoding="utf-8")
    suffix = {"corpus.jsonl": "fuzz.jsonl", "suite.jsonl": "fuzz.jsonl", "suite.csv": "fuzz.csv",
              "ragcov.toml": "ragcov.toml"}
    hostile = folder / suffix.get(reader.name, "fuzz-" + reader.name)
    hostile.write_bytes(content)
    return hostile


@pytest.fixture(scope="module")
def good_data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data file for the ``faults`` readers (qrels, scores), recorded once."""
    folder = tmp_path_factory.mktemp("good")
    (folder / "corpus.jsonl").write_text(CORPUS, encoding="utf-8")
    (folder / "queries.jsonl").write_text(QUERIES, encoding="utf-8")
    code, _out, err = in_process(folder, ["run", "--corpus", str(folder / "corpus.jsonl"), "--queries",
                                          str(folder / "queries.jsonl"), "--retriever", "bm25",
                                          "-k", "2", "--data-file", str(folder / "good.ragcov")])
    assert code == 0, err
    return folder / "good.ragcov"


@contextlib.contextmanager
def working_dir(folder: Path):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def in_process(folder: Path, args: list[str]) -> tuple[int, str, str]:
    """``ragcov ARGS`` run by ``main`` in this process, from ``folder`` (where the
    config file is looked for): exit status, stdout, stderr. Any exception but
    SystemExit escapes, as it would as a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with working_dir(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            code: int = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def assert_clean(code: int, err: str, data: Path, warnings_ok: bool = False) -> None:
    assert "Traceback" not in err, err
    assert code in (0, 1), (code, err)
    if code == 1:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if warnings_ok:
            lines = [ln for ln in lines if not ln.startswith("ragcov: warning:")]
        assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), err
        assert not data.exists(), f"a data file was written on error: {err}"


def check(reader: Reader, content: bytes, good: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        hostile = prepare(folder, reader, content)
        (folder / "good.ragcov").write_bytes(good.read_bytes())
        code, _out, err = in_process(folder, reader.args(folder, hostile))
        assert_clean(code, err, folder / "out.ragcov")


def fuzz(reader: Reader, good: Path, profile: settings) -> None:
    @profile
    @given(reader.content)
    def one(content: bytes) -> None:
        check(reader, content, good)

    one()


@pytest.mark.parametrize("name", sorted(READERS))
def test_hostile_input_exits_cleanly(name: str, good_data_file: Path) -> None:
    fuzz(READERS[name], good_data_file, FAST)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(READERS))
def test_hostile_input_exits_cleanly_thorough(name: str, good_data_file: Path) -> None:
    fuzz(READERS[name], good_data_file, THOROUGH)


SUBPROCESS_READERS = ["corpus.jsonl", "spans.otlp.json", "suite.csv", "ragcov.toml"]


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(SUBPROCESS_READERS).flatmap(
    lambda name: st.tuples(st.just(name), READERS[name].content)))
def test_hostile_input_through_a_real_process(example: tuple[str, bytes]) -> None:
    """The same through ``python -m ragcov``: what a user sees, warnings included."""
    name, content = example
    reader = READERS[name]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        hostile = prepare(folder, reader, content)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "NO_COLOR": "1"}
        proc = subprocess.run([sys.executable, "-m", "ragcov", *reader.args(folder, hostile)],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=120)
        assert_clean(proc.returncode, proc.stderr, folder / "out.ragcov", warnings_ok=True)
