"""Sharded runs on a real Dask LocalCluster give exactly the single-process result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("dask.distributed")

from ragcov.api import INDEX_RECALL, measure  # noqa: E402
from ragcov.corpus import Chunk, Corpus  # noqa: E402
from ragcov.data import CoverageData  # noqa: E402
from ragcov.distributed import aligned_slices, measure_dask  # noqa: E402
from ragcov.errors import RagcovError  # noqa: E402
from ragcov.metrics import chunk_coverage  # noqa: E402
from ragcov.report.jsonreport import json_report  # noqa: E402
from ragcov.retrievers import make_retriever  # noqa: E402
from ragcov.suite import Suite  # noqa: E402

WORDS = ["capital", "France", "Germany", "energy", "cell", "plants", "debt", "dividends",
         "Japan", "Spain", "sunlight", "share"]


@pytest.fixture(scope="module")
def cluster_address():
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def city_suite(n: int = 150) -> Suite:
    # More than two retrieval batches of 64, so the suite really is split into shards.
    return Suite.from_texts([f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]} {WORDS[(i * 7) % 11]}"
                             for i in range(n)])


def _without_times(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report["meta"].pop("created", None)
    report["meta"].pop("ragcov_version", None)
    return report


def assert_same(a: Path, b: Path) -> None:
    ma, mb = CoverageData(a).matrix(), CoverageData(b).matrix()
    assert ma.query_ids == mb.query_ids
    assert (ma.hits != mb.hits).nnz == 0
    assert (ma.ranks != mb.ranks).nnz == 0
    np.testing.assert_array_equal(ma.scores.data, mb.scores.data)
    assert chunk_coverage(ma) == chunk_coverage(mb)
    assert _without_times(json_report(ma)) == _without_times(json_report(mb))


def test_bm25_on_local_cluster_matches_single_process(city_corpus, cluster_address, tmp_path):
    suite = city_suite()
    local = tmp_path / "local.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=3,
            data_file=local, progress=False)
    sharded = tmp_path / "dask.ragcov"
    m = measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded,
                     scheduler=cluster_address, partitions=2, progress=False)
    assert m.n_queries == len(suite)
    assert 0 < chunk_coverage(m) <= 1
    assert_same(local, sharded)
    # No shard files are left behind next to the data file.
    assert not [p for p in tmp_path.iterdir() if "shard" in p.name]


def test_own_local_cluster_when_no_address(city_corpus, tmp_path):
    suite = city_suite(70)
    local, sharded = tmp_path / "local.ragcov", tmp_path / "dask.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=2,
            data_file=local, progress=False)
    measure_dask(city_corpus, suite, "bm25", k=2, data_file=sharded, partitions=2,
                 progress=False)
    assert_same(local, sharded)


def test_append_retrieves_only_new_queries_and_matches(city_corpus, cluster_address, tmp_path):
    suite = city_suite()
    first = Suite(list(suite)[:90])
    local = tmp_path / "local.ragcov"
    measure(city_corpus, suite, make_retriever("bm25", city_corpus, progress=False), k=3,
            data_file=local, progress=False)
    sharded = tmp_path / "dask.ragcov"
    measure_dask(city_corpus, first, "bm25", k=3, data_file=sharded,
                 scheduler=cluster_address, progress=False)
    assert len(CoverageData(sharded).query_ids()) == 90
    measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded, append=True,
                 scheduler=cluster_address, progress=False)
    assert_same(local, sharded)
    # Nothing new: the file is unchanged.
    before = CoverageData(sharded).matrix()
    measure_dask(city_corpus, suite, "bm25", k=3, data_file=sharded, append=True,
                 scheduler=cluster_address, progress=False)
    assert CoverageData(sharded).matrix().query_ids == before.query_ids


def test_append_to_incompatible_file_is_refused_and_writes_nothing(city_corpus, cluster_address,
                                                                    tmp_path):
    suite = city_suite(10)
    path = tmp_path / "d.ragcov"
    measure_dask(city_corpus, suite, "bm25", k=2, data_file=path, scheduler=cluster_address,
                 progress=False)
    before = path.read_bytes()
    more = Suite.from_texts(["capital of Japan"])
    with pytest.raises(RagcovError, match="k differs"):
        measure_dask(city_corpus, Suite([*suite, *[type(more[0])("new", more[0].text)]]), "bm25",
                     k=3, data_file=path, append=True, scheduler=cluster_address, progress=False)
    assert path.read_bytes() == before


def test_bad_arguments(city_corpus, tmp_path):
    with pytest.raises(RagcovError, match="partitions"):
        measure_dask(city_corpus, city_suite(3), "bm25", data_file=tmp_path / "x", partitions=0)
    with pytest.raises(RagcovError, match="k must be"):
        measure_dask(city_corpus, city_suite(3), "bm25", k=0, data_file=tmp_path / "x")
    with pytest.raises(RagcovError, match="empty"):
        measure_dask(city_corpus, Suite([]), "bm25", data_file=tmp_path / "x")
    assert not (tmp_path / "x").exists()


@given(n=st.integers(0, 5000), parts=st.integers(1, 20), unit=st.integers(1, 1100))
def test_aligned_slices_cover_range_on_unit_boundaries(n, parts, unit):
    slices = aligned_slices(n, parts, unit)
    assert len(slices) <= parts
    assert [i for a, b in slices for i in range(a, b)] == list(range(n))
    assert all(a % unit == 0 and b > a for a, b in slices)


def test_cli_engine_dask_in_a_subprocess(city_corpus_file, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                               for i, t in enumerate(city_suite(80).texts)), encoding="utf-8")
    ragcov = Path(sys.executable).with_name("ragcov")
    args = ["--corpus", str(city_corpus_file), "--queries", str(queries), "--retriever", "bm25",
            "--k", "2", "-q"]
    subprocess.run([str(ragcov), "run", *args, "--data-file", str(tmp_path / "a.ragcov")],
                   check=True, cwd=tmp_path, timeout=300)
    subprocess.run([str(ragcov), "run", *args, "--data-file", str(tmp_path / "b.ragcov"),
                    "--engine", "dask", "--partitions", "2"], check=True, cwd=tmp_path,
                   timeout=300)
    assert_same(tmp_path / "a.ragcov", tmp_path / "b.ragcov")


def _many_chunks(n: int) -> Corpus:
    topics = ["rivers and lakes", "interest rates", "cell biology", "football results",
              "train timetables", "volcanoes", "tax law", "jazz history"]
    return Corpus([Chunk(id=f"c{i}", doc_id=f"d{i // 50}",
                         text=f"Note {i} on {topics[i % 8]}: item {i * 7 % 101} of the series.")
                   for i in range(n)])


@pytest.mark.slow
@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_dense_on_local_cluster_matches_single_process(cluster_address, tmp_path, index,
                                                       monkeypatch):
    import faiss

    from ragcov.retrievers.dense import ENCODE_CHUNK, DenseRetriever

    # A multi-threaded HNSW build inserts in a racy order; one thread makes both the
    # sharded run's graph (built in this process) and the local one the same graph.
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        # More chunks than one encode slice, so the corpus is embedded in several shards.
        corpus = _many_chunks(ENCODE_CHUNK + 200)
        suite = Suite.from_texts([f"what about {t} number {i}" for i, t in enumerate(
            ["lakes", "rates", "cells", "volcano", "tax", "jazz"] * 25)])
        # Private caches so the sharded run cannot reuse the local run's embeddings.
        monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-dask"))
        sharded = tmp_path / "dask.ragcov"
        measure_dask(corpus, suite, "dense", index=index, k=5, data_file=sharded,
                     scheduler=cluster_address, partitions=2, progress=False)
        monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache-local"))
        r = DenseRetriever(corpus, index=index, progress=False)
        local = tmp_path / "local.ragcov"
        measure(corpus, suite, r, k=5, data_file=local, progress=False)
    finally:
        faiss.omp_set_num_threads(threads)
    assert r.chunks_embedded == len(corpus)
    dask_emb = np.load(next((tmp_path / "cache-dask" / "embeddings").glob("*.npy")))
    np.testing.assert_array_equal(dask_emb, r.embeddings)
    assert_same(local, sharded)
    if index == "flat":
        assert CoverageData(sharded).annotation(INDEX_RECALL) is None
    else:
        assert CoverageData(sharded).meta().retriever["approximate"] is True
        rec = CoverageData(sharded).annotation(INDEX_RECALL)
        assert rec is not None and rec["sample"] == min(200, len(suite)) and rec["k"] == 5
        assert 0.0 <= rec["recall_at_k"] <= 1.0
