"""``ragcov topics --engine dask``: the chunks' words counted in shards on a real
LocalCluster give one process's topics chunk for chunk; the shard join is checked
against scikit-learn's own count of the same words, whatever the shard size."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli, cluster_losing_workers, kill_after_first_result
from ragcov import api
from ragcov.data import CoverageData
from ragcov.data.topics import read_topics
from ragcov.tfidf import words
from ragcov.topics import fit as topic_fit
from ragcov.topics import terms as topic_terms

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
WORDS = ["revenue", "goodwill", "lease", "Umsatz", "wachstum", "的收入", "증가율", "der", "und",
         "net", "2024", "q3", "éléments"]


def _sklearn_counts(texts: list[str], extra: frozenset[str]):
    """The independent recount: scikit-learn's CountVectorizer over the same words."""
    from sklearn.feature_extraction.text import CountVectorizer

    cv = CountVectorizer(analyzer=lambda t: [w for w in words(t) if w not in extra], dtype=np.int64)
    counts = cv.fit_transform(texts)
    counts.sort_indices()
    return list(cv.get_feature_names_out()), counts


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), min_size=1,
                      max_size=30),
       shard=st.integers(1, 7), drop=st.sets(st.sampled_from(["der", "und", "net"])))
def test_counts_in_shards_are_scikit_learns_counts(texts: list[str], shard: int,
                                                   drop: set[str]) -> None:
    extra = frozenset(drop)
    got = topic_terms.term_counts(texts, extra, shard=shard)
    whole = topic_terms.term_counts(texts, extra)
    assert got.vocab == whole.vocab
    for a, b in ((got.counts, whole.counts),):
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        assert np.array_equal(a.data, b.data)
    if not got.vocab:
        assert all(not [w for w in words(t) if w not in extra] for t in texts)
        return
    vocab, counts = _sklearn_counts(texts, extra)
    assert got.vocab == vocab
    assert np.array_equal(got.counts.indptr, counts.indptr)
    assert np.array_equal(got.counts.indices, counts.indices)
    assert np.array_equal(got.counts.data, counts.data)


def test_tfidf_from_the_counts_is_scikit_learns_tfidf() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [json.loads(line)["text"] for line in
             (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()[:60]]
    x = TfidfVectorizer(analyzer=words, sublinear_tf=True, dtype=np.float32).fit_transform(texts)
    x.sort_indices()
    from sklearn.feature_extraction.text import TfidfTransformer

    mine = TfidfTransformer(sublinear_tf=True).fit_transform(
        topic_fit.corpus_terms(texts).counts.astype(np.float32))
    assert mine.dtype == np.float32 and (x != mine).nnz == 0


pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("topics-dask")
    data = d / "run.ragcov"
    api.run(SAMPLE / "finqa_pages.jsonl", SAMPLE / "finqa_questions.jsonl", retriever="bm25", k=3,
            data_file=data, split=True, progress=False)
    return data


def _stored(path: Path):
    topics = read_topics(CoverageData(str(path)))
    assert topics is not None
    settings = {k: v for k, v in topics.settings.items() if k != "created"}
    return settings, topics.labels, topics.chunk_ids, topics.assignment, topics.xy


@pytest.mark.parametrize("extra", [(), ("--topics", "7", "--seed", "3")])
def test_dask_topics_are_one_process_topics(capsys, tmp_path: Path, sample_run: Path,
                                            cluster_address: str, monkeypatch,
                                            extra: tuple[str, ...]) -> None:
    local, remote = tmp_path / "local.ragcov", tmp_path / "dask.ragcov"
    shutil.copy(sample_run, local)
    shutil.copy(sample_run, remote)
    # Shards of 100 chunks: the sample's 1,184 chunks go out as 12 tasks.
    monkeypatch.setattr(topic_terms, "SHARD", 100)
    code, _, err = cli(capsys, "topics", "--data-file", str(local), "-q", *extra)
    assert code == 0, err
    code, _, err = cli(capsys, "topics", "--data-file", str(remote), "-q", *extra,
                       "--engine", "dask", "--scheduler", cluster_address)
    assert code == 0, err
    a, b = _stored(local), _stored(remote)
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
    assert np.array_equal(a[3], b[3]) and np.array_equal(a[4], b[4])
    if not extra:
        assert len(a[0]["candidates"]) > 3  # N was chosen, the same way


def test_dense_fit_with_a_dask_mapper_is_the_local_fit(cluster_address: str) -> None:
    from ragcov.distributed import dask_mapper

    texts = [json.loads(line)["text"] for line in
             (SAMPLE / "finqa_pages.jsonl").read_text().splitlines()[:300]]
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(6, 32))
    v = centres[rng.integers(0, 6, len(texts))] + 0.3 * rng.normal(size=(len(texts), 32))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    here = topic_fit.fit(v, texts, seed=1)
    with dask_mapper(cluster_address) as mapper:
        there = topic_fit.fit(v, texts, seed=1, mapper=mapper)
    assert here.candidates == there.candidates and here.terms == there.terms
    assert np.array_equal(here.assignment, there.assignment) and np.array_equal(here.xy, there.xy)


def test_kept_topics_need_no_cluster_and_a_refit_says_it_cannot_reach_one(
        capsys, tmp_path: Path, sample_run: Path) -> None:
    data = tmp_path / "run.ragcov"
    shutil.copy(sample_run, data)
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "-q")
    assert code == 0, err
    nowhere = ["--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"]
    code, out, err = cli(capsys, "topics", "--data-file", str(data), "--format", "json", *nowhere)
    assert code == 0, err
    assert "Topics kept" in err and json.loads(out)["topics"]
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--refit", "-q", *nowhere)
    assert code == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1


def test_an_unknown_engine_is_one_line(capsys, tmp_path: Path, sample_run: Path) -> None:
    data = tmp_path / "run.ragcov"
    shutil.copy(sample_run, data)
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--engine", "spark", "-q")
    assert code != 0 and "unknown engine 'spark': expected local or dask" in err


@pytest.mark.parametrize("extra, message", [
    (("--workers", "0"), "--workers must be at least 1, got 0"),
    (("--workers", "-1"), "--workers must be at least 1, got -1"),
    (("--scheduler", "notaurl"), "cannot reach the Dask scheduler at notaurl"),
])
def test_bad_cluster_settings_are_one_line(capsys, tmp_path: Path, sample_run: Path,
                                           extra: tuple[str, ...], message: str) -> None:
    data = tmp_path / "run.ragcov"
    shutil.copy(sample_run, data)
    code, _, err = cli(capsys, "topics", "--data-file", str(data), "--refit", "-q",
                       "--engine", "dask", *extra)
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("n", [2.5, "3", True])
def test_a_topic_count_that_is_not_a_whole_number_is_one_line(sample_run: Path, n) -> None:
    from ragcov.errors import RagcovError

    with pytest.raises(RagcovError, match="--topics must be a whole number of topics"):
        api.fit_topics(sample_run, n_topics=n, refit=True)


def test_every_worker_lost_mid_topics_changes_no_topic(capsys, tmp_path: Path, sample_run: Path,
                                                       monkeypatch) -> None:
    """Every worker killed (SIGKILL) once the first shard's counts are back, the shards
    scattered to them lost too: the lost shards are scattered and counted again, and the
    topics are one process's."""
    from ragcov import distributed

    local, remote = tmp_path / "local.ragcov", tmp_path / "lost.ragcov"
    shutil.copy(sample_run, local)
    shutil.copy(sample_run, remote)
    monkeypatch.setattr(topic_terms, "SHARD", 100)
    code, _, err = cli(capsys, "topics", "--data-file", str(local), "-q")
    assert code == 0, err
    with cluster_losing_workers("every worker") as (address, kill_now, killed):
        kill_after_first_result(monkeypatch, distributed, "_completed", kill_now)
        code, _, err = cli(capsys, "topics", "--data-file", str(remote), "-q",
                           "--engine", "dask", "--scheduler", address)
    assert killed and code == 0, err
    a, b = _stored(local), _stored(remote)
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
    assert np.array_equal(a[3], b[3]) and np.array_equal(a[4], b[4])
