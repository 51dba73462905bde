"""Loading corpora and suites, and the errors bad input gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcov.corpus import load_corpus
from ragcov.errors import InputFormatError, RagcovError
from ragcov.suite import load_suite


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_chunks_with_alternative_keys(tmp_path: Path) -> None:
    p = write(tmp_path / "c.jsonl", "\n".join([
        json.dumps({"id": "a", "text": "alpha", "doc_id": "d1"}),
        json.dumps({"_id": "b", "content": "beta", "document_id": "d1", "title": "T"}),
        "",
        json.dumps({"chunk_id": "c", "page_content": "gamma", "metadata": {"source": "d2"}}),
        json.dumps({"id": 7, "text": "delta"}),
    ]))
    corpus = load_corpus(p)
    assert corpus.ids == ["a", "b", "c", "7"]
    assert [c.doc_id for c in corpus] == ["d1", "d1", "d2", "7"]
    assert [c.position for c in corpus] == [0, 1, 0, 0]
    assert corpus.get("b").title == "T"
    assert len(corpus.get("a").hash) == 16 and corpus.get("a").hash != corpus.get("b").hash


def test_beir_folder(tmp_path: Path) -> None:
    write(tmp_path / "beir" / "corpus.jsonl",
          json.dumps({"_id": "d1", "title": "One", "text": "first"}) + "\n")
    corpus = load_corpus(tmp_path / "beir")
    assert corpus.ids == ["d1"] and corpus[0].title == "One"


def test_text_folder_is_chunked_with_stable_ids(tmp_path: Path) -> None:
    body = "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(6))
    write(tmp_path / "docs" / "guide.md", body)
    write(tmp_path / "docs" / "sub" / "notes.txt", "short note")
    write(tmp_path / "docs" / "ignored.bin", "x")
    corpus = load_corpus(tmp_path / "docs", chunk_size=300, chunk_overlap=30)
    docs = corpus.documents()
    assert set(docs) == {"guide.md", "sub/notes.txt"}
    assert [c.id for c in docs["guide.md"]] == [f"guide.md#{n}" for n in range(len(docs["guide.md"]))]
    assert len(docs["guide.md"]) > 1
    assert all(len(c.text) <= 300 for c in corpus)
    assert corpus.chunking == {"method": "semantic-text-splitter", "unit": "characters",
                               "size": 300, "overlap": 30}
    again = load_corpus(tmp_path / "docs", chunk_size=300, chunk_overlap=30)
    assert again.hash == corpus.hash
    assert load_corpus(tmp_path / "docs", chunk_size=200, chunk_overlap=30).hash != corpus.hash


def test_documents_jsonl_split(tmp_path: Path) -> None:
    p = write(tmp_path / "docs.jsonl", json.dumps({"doc_id": "page1", "text": "a " * 800}) + "\n")
    corpus = load_corpus(p, chunk_size=500, chunk_overlap=0, split=True)
    assert corpus.ids[0] == "page1#0" and len(corpus) >= 3


def test_corpus_hash_changes_with_content(tmp_path: Path) -> None:
    a = load_corpus(write(tmp_path / "a.jsonl", json.dumps({"id": "x", "text": "one"}) + "\n"))
    b = load_corpus(write(tmp_path / "b.jsonl", json.dumps({"id": "x", "text": "two"}) + "\n"))
    assert a.hash != b.hash


@pytest.mark.parametrize("content, message", [
    ('{"id": "a", "text": "ok"}\n{"id": "b", "text": \n', r"c\.jsonl:2: invalid JSON"),
    ('{"id": "a", "text": "ok"}\n["a list"]\n', r"c\.jsonl:2: expected a JSON object"),
    ('{"text": "no id"}\n', r"c\.jsonl:1: no chunk id"),
    ('{"id": "a"}\n', r"c\.jsonl:1: no chunk text"),
    ("\n\n", r"the corpus is empty"),
])
def test_bad_corpus_lines(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(RagcovError, match=message):
        load_corpus(write(tmp_path / "c.jsonl", content))


def test_duplicate_chunk_ids_are_listed(tmp_path: Path) -> None:
    lines = [{"id": i, "text": str(n)} for n, i in enumerate(["a", "b", "a", "c", "b"])]
    p = write(tmp_path / "c.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(RagcovError, match="duplicate chunk ids: a, b"):
        load_corpus(p)


def test_duplicate_chunk_ids_name_the_lines(tmp_path: Path) -> None:
    lines = [{"id": i, "text": str(n)} for n, i in enumerate(["a", "b", "a", "c", "b"])]
    p = write(tmp_path / "c.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(InputFormatError) as info:
        load_corpus(p)
    assert str(info.value) == (f"{p}:3: duplicate chunk ids: a, b "
                               "(a: line 3 repeats line 1; b: line 5 repeats line 2)")
    assert info.value.line == 3


def test_duplicate_chunk_ids_in_a_beir_folder_name_the_line(tmp_path: Path) -> None:
    write(tmp_path / "beir" / "corpus.jsonl", "".join(json.dumps(x) + "\n" for x in [
        {"_id": "d1", "text": "one"}, {"_id": "d2", "text": "two"}, {"_id": 7, "text": "3"},
        {"_id": "7", "text": "four"}]))
    with pytest.raises(InputFormatError, match=r"corpus\.jsonl:4: duplicate chunk ids: 7 "
                                               r"\(7: line 4 repeats line 3\)"):
        load_corpus(tmp_path / "beir")


@pytest.mark.parametrize("value, message", [
    (True, "True is not an id"),
    (["a"], r"\['a'\] is not an id"),
    ({"x": 1}, r"\{'x': 1\} is not an id"),
    ("  ", "the id is blank"),
    (1.5, "1.5 is not an id"),
])
def test_unusable_chunk_ids_name_the_line(tmp_path: Path, value, message) -> None:
    p = write(tmp_path / "c.jsonl", json.dumps({"id": "a", "text": "ok"}) + "\n"
              + json.dumps({"id": value, "text": "bad"}) + "\n")
    with pytest.raises(InputFormatError, match=r"c\.jsonl:2: chunk id: " + message):
        load_corpus(p)


def test_non_utf8_names_the_file(tmp_path: Path) -> None:
    p = write(tmp_path / "latin.jsonl", '{"id": "a", "text": "caf\xe9"}\n'.encode("latin-1"))
    # UTF-8 errors name the line too, so the file and the line are checked.
    with pytest.raises(InputFormatError, match=r"latin\.jsonl:1: not UTF-8"):
        load_corpus(p)


def test_missing_and_unsupported_paths(tmp_path: Path) -> None:
    with pytest.raises(RagcovError, match="no such file"):
        load_corpus(tmp_path / "nope.jsonl")
    with pytest.raises(RagcovError, match="unsupported corpus"):
        load_corpus(write(tmp_path / "x.parquet", "x"))


# ------------------------------------------------------------------ suites
def test_suite_jsonl_keys_and_generated_ids(tmp_path: Path) -> None:
    p = write(tmp_path / "q.jsonl", "\n".join(json.dumps(x) for x in [
        {"id": "q1", "text": "first"},
        {"query_id": "q2", "query": "second"},
        {"question": "third"},
        {"user_input": "fourth", "reference": "r"},
        {"input": "third"},
        {"_id": "q6", "question": "sixth"},
    ]))
    suite = load_suite(p)
    assert suite.texts == ["first", "second", "third", "fourth", "third", "sixth"]
    ids = suite.ids
    assert ids[:2] == ["q1", "q2"] and ids[5] == "q6"
    assert ids[2].startswith("q-") and ids[4] == ids[2] + "-2"
    assert load_suite(p).ids == ids  # stable
    assert suite[3].metadata == {"reference": "r"}


def test_suite_csv_and_ragas_deepeval(tmp_path: Path) -> None:
    csv_p = write(tmp_path / "q.csv", 'id,question\nq1,"What, exactly?"\nq2,Why\n')
    assert load_suite(csv_p).texts == ["What, exactly?", "Why"]
    ragas = write(tmp_path / "ragas.csv",
                  "user_input,reference_contexts,reference\nHow big?,\"['ctx']\",big\n")
    assert load_suite(ragas).texts == ["How big?"]
    deepeval = write(tmp_path / "goldens.json", json.dumps(
        {"goldens": [{"input": "Who?", "expected_output": "me", "context": ["c"]}]}))
    assert load_suite(deepeval).texts == ["Who?"]
    as_list = write(tmp_path / "list.json", json.dumps([{"input": "A?"}, {"input": "B?"}]))
    assert load_suite(as_list).texts == ["A?", "B?"]


@pytest.mark.parametrize("name, content, message", [
    ("q.jsonl", '{"id": "a", "text": "ok"}\nnot json\n', r"q\.jsonl:2: invalid JSON"),
    ("q.jsonl", '{"id": "a"}\n', r"q\.jsonl:1: no query text"),
    ("q.csv", "id,question\nq1,a,b\n", r"q\.csv:2: expected 2 fields"),
    ("q.jsonl", "", "the suite is empty"),
    ("q.jsonl", '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "duplicate query ids: a"),
])
def test_bad_suites(tmp_path: Path, name: str, content: str, message: str) -> None:
    with pytest.raises(RagcovError, match=message):
        load_suite(write(tmp_path / name, content))


@pytest.mark.parametrize("name, content, message", [
    ("q.jsonl", '{"id": "a", "text": "x"}\n\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n',
     r"q\.jsonl:4: duplicate query ids: a \(a: line 4 repeats line 1\)$"),
    ("q.csv", "id,question\nq1,x\nq2,y\nq2,z\nq1,w\n",
     r"q\.csv:4: duplicate query ids: q2, q1 \(q2: line 4 repeats line 3; "
     r"q1: line 5 repeats line 2\)$"),
    ("q.json", json.dumps([{"id": "a", "input": "x"}, {"id": "b", "input": "y"},
                           {"id": "a", "input": "z"}]),
     r"q\.json: duplicate query ids: a \(a: item 2 repeats item 0\)$"),
])
def test_duplicate_query_ids_name_the_lines(tmp_path: Path, name, content, message) -> None:
    with pytest.raises(RagcovError, match=message):
        load_suite(write(tmp_path / name, content))


@pytest.mark.parametrize("value, message", [
    (True, "True is not an id"),
    ([1], r"\[1\] is not an id"),
    (2.5, "2.5 is not an id"),
])
def test_unusable_query_ids_name_the_line(tmp_path: Path, value, message) -> None:
    p = write(tmp_path / "q.jsonl", json.dumps({"id": "a", "text": "ok"}) + "\n"
              + json.dumps({"id": value, "text": "bad"}) + "\n")
    with pytest.raises(InputFormatError, match=r"q\.jsonl:2: query id: " + message):
        load_suite(p)


def test_numeric_query_and_chunk_ids_become_text(tmp_path: Path) -> None:
    q = write(tmp_path / "q.jsonl", json.dumps({"id": 12, "text": "twelve"}) + "\n")
    assert load_suite(q).ids == ["12"]
    c = write(tmp_path / "c.jsonl", json.dumps({"id": 12, "text": "twelve"}) + "\n")
    assert load_corpus(c).ids == ["12"]


def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path: Path) -> None:
    text = "first\u2028second\u2029third\x85fourth"
    p = write(tmp_path / "c.jsonl", json.dumps({"id": "a", "text": text}, ensure_ascii=False)
              + "\r\n" + json.dumps({"id": "b", "text": "plain"}) + "\n")
    corpus = load_corpus(p)
    assert corpus.get("a").text == text and corpus.ids == ["a", "b"]


def test_csv_quoted_fields_keep_their_newlines(tmp_path: Path) -> None:
    p = write(tmp_path / "q.csv", 'id,question\nq1,"line one\nline two"\nq2,plain\n')
    suite = load_suite(p)
    assert suite.texts == ["line one\nline two", "plain"]


def _whole_file_lines(path: Path) -> list[tuple[int, object]]:
    """The JSONL reading before lines were streamed: the file decoded whole, split at \\n."""
    from ragcov.files import read_text

    out = []
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, lineno, f"invalid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputFormatError(path, lineno, "expected a JSON object")
        out.append((lineno, obj))
    return out


PIECES = [b'{"id": "a", "text": "x"}', b'{"t": "\xe2\x80\xa8 raw U+2028"}', b"\n", b"\r\n", b"\r",
          b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xc3\xa9", b"[1]", b"  ", b'{"u": "\\u00e9"}']


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_lines_read_one_at_a_time_are_the_whole_files(tmp_path: Path, pieces: list[bytes]) -> None:
    """Read a line at a time, a JSONL file gives the objects and the errors (line, byte,
    column) of the file decoded whole: at U+2028 inside a string, a byte order mark, a
    carriage return, a byte that is not UTF-8 on any line. (The one difference: a bad
    line before the first byte that is not UTF-8 is now named first, as it comes.)"""
    from ragcov.files import iter_jsonl

    p = write(tmp_path / "f.jsonl", b"".join(pieces))

    def outcome(read):  # type: ignore[no-untyped-def]
        try:
            return read()
        except InputFormatError as exc:
            return exc

    got, want = outcome(lambda: list(iter_jsonl(p))), outcome(lambda: _whole_file_lines(p))
    if isinstance(want, InputFormatError) and "not UTF-8" in str(want) \
            and not (isinstance(got, InputFormatError) and "not UTF-8" in str(got)):
        assert isinstance(got, InputFormatError) and got.line < want.line
    else:
        assert str(got) == str(want)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


def _typed(value):  # type: ignore[no-untyped-def]
    """The value with each number's type beside it: 1 and 1.0 are not the same reading."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_loads_json_reads_what_json_loads_reads(value, as_bytes: bool) -> None:
    """orjson where it agrees with the standard library: an integer past 64 bits (which
    orjson makes a float) stays an exact int, on text and on bytes."""
    from ragcov.files import loads_json

    text = json.dumps(value)
    got = loads_json(text.encode() if as_bytes else text)
    assert _typed(got) == _typed(json.loads(text))


@pytest.mark.parametrize("text", ["123456789012345678901", "-9223372036854775809",
                                  "18446744073709551616", "[1e400, -1e400]",
                                  '{"t": 1733450000000000000, "n": NaN}'])
def test_loads_json_hand_picked_numbers(text: str) -> None:
    from ragcov.files import loads_json

    got, want = loads_json(text), json.loads(text)
    assert repr(got) == repr(want)


def test_loads_json_refuses_a_lone_surrogate_at_its_line() -> None:
    from ragcov.files import loads_json

    assert loads_json('"\\ud83d\\ude00"', "f.jsonl", 3) == "\U0001f600"
    with pytest.raises(InputFormatError, match=r"f\.jsonl:3"):
        loads_json('{"q": "\\ud800"}', "f.jsonl", 3)
