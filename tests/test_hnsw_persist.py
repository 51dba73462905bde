"""The HNSW index saved beside the embedding cache: loaded instead of rebuilt, answering
exactly as the index that was built; a damaged or mismatched file rebuilt with a warning."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from ragcov.retrievers import hnsw_cache  # noqa: E402
from ragcov.retrievers.hnsw_cache import MAGIC, hnsw_cache_path, hnsw_index, hnsw_key  # noqa: E402

N, DIM, M, EF = 3_000, 32, 16, 64


def embedding_like(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).standard_normal((40, DIM)).astype(np.float32)
    x = centres[rng.integers(0, 40, n)] + 0.4 * rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def emb() -> np.ndarray:
    return embedding_like(N, 0)


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return embedding_like(200, 1)


def index_path(emb: np.ndarray, m: int = M) -> Path:
    return hnsw_cache_path(hnsw_key(emb, m, faiss.IndexHNSWFlat(DIM, m).hnsw.efConstruction))


def count_adds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records each graph build (IndexHNSWFlat.add) while still building for real."""
    calls: list[int] = []
    real_new = hnsw_cache.new_hnsw

    def new_hnsw(dim: int, m: int, ef_search: int):
        index = real_new(dim, m, ef_search)
        real_add = index.add

        def add(x):
            calls.append(len(x))
            return real_add(x)

        index.add = add
        return index

    monkeypatch.setattr(hnsw_cache, "new_hnsw", new_hnsw)
    return calls


def search(index, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    return index.search(queries, k)


def quiet_build(emb: np.ndarray, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a first build warns about nothing
        return hnsw_index(emb, M, EF, **kw)


def test_second_run_loads_the_saved_index_and_answers_identically(cache, emb, queries,
                                                                  monkeypatch):
    adds = count_adds(monkeypatch)
    built = quiet_build(emb)
    assert adds == [N]
    assert index_path(emb).is_file()
    loaded = quiet_build(emb)
    assert adds == [N]  # not built again
    assert loaded is not built
    d_built, i_built = search(built, queries)
    d_loaded, i_loaded = search(loaded, queries)
    np.testing.assert_array_equal(i_loaded, i_built)
    np.testing.assert_array_equal(d_loaded, d_built)
    assert loaded.hnsw.efSearch == EF


def test_ef_search_is_set_on_the_loaded_index_not_a_reason_to_rebuild(cache, emb, queries,
                                                                      monkeypatch):
    adds = count_adds(monkeypatch)
    built = hnsw_index(emb, M, EF)
    loaded = hnsw_index(emb, M, 16)
    assert adds == [N]
    assert loaded.hnsw.efSearch == 16
    built.hnsw.efSearch = 16
    np.testing.assert_array_equal(search(loaded, queries)[1], search(built, queries)[1])


def test_other_embeddings_or_m_get_their_own_index(cache, emb, monkeypatch):
    adds = count_adds(monkeypatch)
    hnsw_index(emb, M, EF)
    other = emb.copy()
    other[0] = other[1]
    hnsw_index(other, M, EF)
    hnsw_index(emb, 8, EF)
    assert adds == [N, N, N]
    assert len(list((cache / "indexes").glob("hnsw-*.faiss"))) == 3


def test_without_cache_nothing_is_written(cache, emb):
    hnsw_index(emb, M, EF, persist=False)
    assert not (cache / "indexes").exists()


def damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage_garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def damage_payload_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def trailer(path: Path) -> tuple[bytes, dict, bytes]:
    """(payload, trailer fields, magic) of a saved file."""
    data = path.read_bytes()
    length = int(data[-len(MAGIC) - 20:-len(MAGIC)])
    start = len(data) - len(MAGIC) - 20 - length
    return data[:start - 1], json.loads(data[start:start + length]), data[-len(MAGIC):]


def with_trailer(path: Path, payload: bytes, meta: bytes) -> None:
    path.write_bytes(payload + b"\n" + meta + f"{len(meta):020d}".encode() + MAGIC)


def damage_trailer(path: Path) -> None:
    payload, _, _ = trailer(path)
    with_trailer(path, payload, b"{not json")


def damage_cut_payload(path: Path) -> None:
    """The payload shortened, the trailer intact: a copy that lost a block in the middle."""
    payload, meta, _ = trailer(path)
    with_trailer(path, payload[:-4096], json.dumps(meta, sort_keys=True).encode())


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def damage_bare_faiss(path: Path) -> None:
    """A valid faiss file without ragcov's header: never handed to faiss unchecked."""
    index = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
    index.add(embedding_like(N, 5))
    faiss.write_index(index, str(path))


@pytest.mark.parametrize("damage, message", [
    (damage_truncate, "truncated, or not a ragcov HNSW index file"),
    (damage_garbage, "truncated, or not a ragcov HNSW index file"),
    (damage_payload_byte, "checksum"),
    (damage_trailer, "trailer is damaged"),
    (damage_cut_payload, "truncated or padded"),
    (damage_empty, "truncated, or not a ragcov HNSW index file"),
    (damage_bare_faiss, "truncated, or not a ragcov HNSW index file"),
])
def test_damaged_file_is_rebuilt_with_a_warning(cache, emb, queries, monkeypatch, damage, message):
    first = hnsw_index(emb, M, EF)
    expected = search(first, queries)
    damage(index_path(emb))
    adds = count_adds(monkeypatch)
    with pytest.warns(UserWarning, match=f"HNSW index cache .*{message}.*rebuilding it"):
        rebuilt = hnsw_index(emb, M, EF)
    assert adds == [N]
    assert rebuilt.ntotal == N
    # The rebuilt graph may differ from the first (faiss adds in parallel); it still finds
    # the same neighbours at this size and was saved again, soundly.
    assert (search(rebuilt, queries)[1] == expected[1]).mean() > 0.95
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = hnsw_index(emb, M, EF)
    assert adds == [N]
    np.testing.assert_array_equal(search(again, queries)[1], search(rebuilt, queries)[1])


def rewrite(path: Path, index, key: dict) -> None:
    """Save ``index`` under ``path`` with ``key`` in its header (checksum consistent)."""
    hnsw_cache.save_hnsw(path, index, key)


def test_index_of_other_vectors_under_the_right_name_is_rebuilt(cache, emb, monkeypatch):
    """Sound file, right header, wrong content: the stored vectors are checked, not trusted."""
    hnsw_index(emb, M, EF)
    key = hnsw_key(emb, M, faiss.IndexHNSWFlat(DIM, M).hnsw.efConstruction)
    wrong = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
    wrong.add(embedding_like(N, 7))
    rewrite(index_path(emb), wrong, key)
    adds = count_adds(monkeypatch)
    with pytest.warns(UserWarning, match="stored vectors differ from the embeddings"):
        hnsw_index(emb, M, EF)
    assert adds == [N]


@pytest.mark.parametrize("make, message", [
    (lambda e: faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT), "0 vectors for 3000"),
    (lambda e: faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_L2), "not an inner-product index"),
    (lambda e: faiss.IndexHNSWFlat(DIM, 8, faiss.METRIC_INNER_PRODUCT), "built with M = 8"),
    (lambda e: faiss.IndexFlatIP(DIM), "not an HNSW index"),
])
def test_mismatched_index_is_rebuilt(cache, emb, monkeypatch, make, message):
    key = hnsw_key(emb, M, faiss.IndexHNSWFlat(DIM, M).hnsw.efConstruction)
    index = make(emb)
    if message != "0 vectors for 3000":
        index.add(emb)
    rewrite(index_path(emb), index, key)
    adds = count_adds(monkeypatch)
    with pytest.warns(UserWarning, match=message):
        got = hnsw_index(emb, M, EF)
    assert adds == [N]
    assert isinstance(got, faiss.IndexHNSWFlat) and got.ntotal == N


def test_header_for_other_parameters_is_rebuilt(cache, emb, monkeypatch):
    """A file copied over from another faiss version or build parameters."""
    hnsw_index(emb, M, EF)
    path = index_path(emb)
    payload, meta, _ = trailer(path)
    meta["key"]["faiss"] = "0.0.1"
    with_trailer(path, payload, json.dumps(meta, sort_keys=True).encode())
    adds = count_adds(monkeypatch)
    with pytest.warns(UserWarning, match=r"made for other embeddings or parameters \(faiss differ"):
        hnsw_index(emb, M, EF)
    assert adds == [N]


def test_unwritable_cache_warns_and_still_returns_the_index(tmp_path, emb, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(blocker))
    with pytest.warns(UserWarning, match="not saved"):
        index = hnsw_index(emb, M, EF)
    assert index.ntotal == N


def test_save_is_atomic_no_temporary_left(cache, emb):
    hnsw_index(emb, M, EF)
    assert [p.name for p in (cache / "indexes").iterdir()] == [index_path(emb).name]


@pytest.mark.slow
def test_dense_retriever_reuses_the_index_with_identical_results(cache, minilm_path, monkeypatch):
    from ragcov.corpus import Chunk, Corpus
    from ragcov.retrievers.dense import DenseRetriever

    texts = [f"Revenue in quarter {q} of {y} rose by {q * y % 17} percent in segment {s}."
             for q in range(1, 5) for y in range(2000, 2010) for s in "ABC"]
    corpus = Corpus([Chunk(id=f"c{i}", text=t, doc_id=f"d{i % 7}") for i, t in enumerate(texts)])
    queries = ["revenue growth in 2004", "segment B second quarter", "percent rise 2009"]
    first = DenseRetriever(corpus, model=minilm_path, index="hnsw", progress=False)
    adds = count_adds(monkeypatch)
    second = DenseRetriever(corpus, model=minilm_path, index="hnsw", progress=False)
    assert adds == []
    assert second.retrieve(queries, 5) == first.retrieve(queries, 5)


def test_consistent_file_faiss_cannot_read_is_rebuilt(cache, emb, monkeypatch):
    """A trailer whose checksum matches a cut payload (written so by a broken tool): the
    reader's own error becomes the warning, and the index is rebuilt."""
    hnsw_index(emb, M, EF)
    path = index_path(emb)
    payload, meta, _ = trailer(path)
    path.write_bytes(payload[: len(payload) // 2])
    with open(path, "rb") as fh:
        meta["payload_crc32_blocks"] = hnsw_cache.file_digest(fh.fileno(), len(payload) // 2)
    meta["payload_bytes"] = len(payload) // 2
    with_trailer(path, payload[: len(payload) // 2], json.dumps(meta, sort_keys=True).encode())
    adds = count_adds(monkeypatch)
    with pytest.warns(UserWarning, match="faiss cannot read it"):
        index = hnsw_index(emb, M, EF)
    assert adds == [N] and index.ntotal == N
