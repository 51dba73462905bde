"""The ONNX Runtime encoder: PyTorch's top-k from a graph exported once, cached, and run without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import cli
from ragcov.errors import RagcovError

pytest.importorskip("onnxruntime")

TESTS = Path(__file__).resolve().parent


# ------------------------------------------------------------------ no model needed
def test_unknown_backend_is_one_line_error(tmp_path: Path, city_corpus_file: Path, capsys) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "question": "capital of France"}\n', encoding="utf-8")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
                       "--retriever", "bm25", "--backend", "gpu", "--data-file", str(tmp_path / "d"))
    assert code == 1
    assert err.strip().splitlines() == ["ragcov: error: unknown backend 'gpu': expected one of "
                                        "torch, onnx, onnx-int8"]


def test_backend_is_a_tool_ragcov_setting(tmp_path: Path, city_corpus_file: Path, capsys,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "capital of France"}\n',
                                      encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.ragcov]\nbackend = "onnx-fp16"\n',
                                             encoding="utf-8")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl",
                       "--retriever", "bm25", "-q")
    assert code == 1
    assert "unknown backend 'onnx-fp16'" in err and len(err.strip().splitlines()) == 1


def test_int8_on_dask_is_refused_before_a_cluster_starts(city_corpus, tmp_path: Path) -> None:
    """Its embeddings would land in the fp32 cache entry the sharded path reads."""
    pytest.importorskip("dask.distributed")
    from ragcov.distributed import measure_dask
    from ragcov.suite import Query, Suite

    with pytest.raises(RagcovError, match="onnx-int8 is not available with --engine dask"):
        measure_dask(city_corpus, Suite([Query("q1", "capital of France")]), "dense",
                     data_file=tmp_path / "d.ragcov", backend="onnx-int8")
    assert not (tmp_path / "d.ragcov").exists()


def _st_folder(root: Path, modules: list[dict], pooling: dict, st_cfg: dict | None = None) -> Path:
    root.mkdir()
    (root / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling), encoding="utf-8")
    (root / "config.json").write_text(json.dumps({"hidden_size": 8, "max_position_embeddings": 512}),
                                      encoding="utf-8")
    (root / "sentence_bert_config.json").write_text(json.dumps(st_cfg or {"max_seq_length": 128}),
                                                    encoding="utf-8")
    (root / "tokenizer.json").write_text("{}", encoding="utf-8")
    return root


_TRANSFORMER = {"path": "", "type": "sentence_transformers.models.Transformer"}
_POOLING = {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
_NORMALIZE = {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}


def test_layout_follows_the_models_own_pooling_and_length(tmp_path: Path) -> None:
    from ragcov.retrievers.onnx_encoder import read_layout

    cls_model = _st_folder(tmp_path / "cls", [_TRANSFORMER, _POOLING],
                           {"word_embedding_dimension": 8, "pooling_mode_cls_token": True},
                           {"max_seq_length": 77, "do_lower_case": True})
    layout = read_layout(str(cls_model))
    assert (layout.pooling, layout.normalize, layout.max_seq_length, layout.dimension,
            layout.lower_case) == (("cls_token",), False, 77, 8, True)
    mean_norm = _st_folder(tmp_path / "mean", [_TRANSFORMER, _POOLING, _NORMALIZE],
                           {"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True})
    layout = read_layout(str(mean_norm))
    assert (layout.pooling, layout.normalize, layout.dimension) == (
        ("max_tokens", "mean_tokens"), True, 16)
    newer_form = _st_folder(tmp_path / "newer", [_TRANSFORMER, _POOLING],
                            {"word_embedding_dimension": 8, "pooling_mode": "cls"})
    assert read_layout(str(newer_form)).pooling == ("cls_token",)


def test_a_model_onnx_cannot_reproduce_is_refused_and_the_default_stays_torch(tmp_path: Path) -> None:
    from ragcov.retrievers.onnx_encoder import read_layout, resolve_backend

    dense_head = _st_folder(tmp_path / "dense", [_TRANSFORMER, _POOLING, {
        "path": "2_Dense", "type": "sentence_transformers.models.Dense"}],
        {"pooling_mode_mean_tokens": True})
    with pytest.raises(RagcovError, match="supports Transformer, Pooling and Normalize only"):
        read_layout(str(dense_head))
    assert resolve_backend(None, str(dense_head)) == "torch"
    weighted = _st_folder(tmp_path / "weighted", [_TRANSFORMER, _POOLING],
                          {"pooling_mode_weightedmean_tokens": True})
    with pytest.raises(RagcovError, match="not supported by the onnx backend"):
        read_layout(str(weighted))
    assert resolve_backend("onnx", str(weighted)) == "onnx"  # asked for: the load says why


# ------------------------------------------------------------------- with MiniLM
@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture
def in_cache(onnx_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(onnx_cache))
    return onnx_cache


#: The equality and recall tests run on the sample's first 30 pages (172 chunks) and all of
#: its questions; RAGCOV_ONNX_FULL_SAMPLE=1 runs them on all 1,184 chunks, as the figures in
#: docs/performance.md were measured (about 4 more minutes of encoding on 2 cores).
FULL_SAMPLE = bool(os.environ.get("RAGCOV_ONNX_FULL_SAMPLE"))
SAMPLE_PAGES = 30


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    from ragcov.corpus import load_corpus
    from ragcov.demo import sample_path
    from ragcov.suite import load_suite

    pages = sample_path("finqa_pages.jsonl")
    if not FULL_SAMPLE:
        sliced = tmp_path_factory.mktemp("sample") / "pages.jsonl"
        sliced.write_text("".join(pages.read_text(encoding="utf-8").splitlines(True)[:SAMPLE_PAGES]),
                          encoding="utf-8")
        pages = sliced
    return load_corpus(pages, split=True), load_suite(sample_path("finqa_questions.jsonl"))


@pytest.fixture(scope="module")
def sample_embeddings(sample, minilm_path: str, minilm_vectors, onnx_cache: Path
                      ) -> dict[str, np.ndarray]:
    """The sample's chunks embedded on each backend (ONNX's with the cache off, 2 threads)."""
    from ragcov.retrievers.dense import encode
    from ragcov.retrievers.onnx_encoder import OnnxEncoder

    corpus, _ = sample
    before = os.environ.get("RAGCOV_CACHE_DIR")
    os.environ["RAGCOV_CACHE_DIR"] = str(onnx_cache)
    try:
        encoders = {"onnx": OnnxEncoder(minilm_path), "onnx-int8": OnnxEncoder(minilm_path, int8=True)}
        embedded = {name: encode(enc, corpus.texts, progress=False, threads=2)
                    for name, enc in encoders.items()}
        return {"torch": minilm_vectors(corpus.texts), **embedded}
    finally:
        if before is None:
            os.environ.pop("RAGCOV_CACHE_DIR")
        else:
            os.environ["RAGCOV_CACHE_DIR"] = before


def _record(path: Path, corpus, suite, emb: np.ndarray, minilm_path: str, backend: str) -> Path:
    from ragcov.api import measure
    from ragcov.retrievers.dense import DenseRetriever

    r = DenseRetriever(corpus, model=minilm_path, embeddings=emb, backend=backend, progress=False,
                       threads=2)
    measure(corpus, suite, r, k=5, data_file=path, progress=False)
    return path


@pytest.mark.slow
def test_fp32_onnx_gives_torchs_top_k_on_the_bundled_sample(sample, sample_embeddings, minilm_path,
                                                           in_cache, tmp_path: Path) -> None:
    sys.path.insert(0, str(TESTS))
    from test_distributed import assert_same_up_to_near_ties

    corpus, suite = sample
    diff = float(np.abs(sample_embeddings["onnx"] - sample_embeddings["torch"]).max())
    print(f"max |onnx - torch| over {len(corpus)} chunk embeddings: {diff:.1e}")
    assert diff < 1e-4
    a = _record(tmp_path / "torch.ragcov", corpus, suite, sample_embeddings["torch"], minilm_path,
                "torch")
    b = _record(tmp_path / "onnx.ragcov", corpus, suite, sample_embeddings["onnx"], minilm_path,
                "onnx")
    # Float rounding apart: the same hits, ranks differing only among near-tied chunks.
    differing = assert_same_up_to_near_ties(a, b, tol=1e-5)
    print(f"{differing} of {len(suite)} queries differ at all (near-ties only)")


@pytest.mark.slow
def test_int8_recall_at_5_against_fp32(sample, sample_embeddings, minilm_path, in_cache) -> None:
    from ragcov.retrievers.dense import encode, exact_search, load_encoder

    corpus, suite = sample
    queries = [q.text for q in suite][:200]
    q32 = encode(load_encoder(minilm_path, backend="onnx"), queries, progress=False, threads=2)
    q8 = encode(load_encoder(minilm_path, backend="onnx-int8"), queries, progress=False, threads=2)
    _, top32 = exact_search(sample_embeddings["onnx"], q32, 5)
    _, top8 = exact_search(sample_embeddings["onnx-int8"], q8, 5)
    recall = float(np.mean([len(set(a) & set(b)) / 5 for a, b in zip(top32, top8)]))
    print(f"int8 recall@5 against fp32 over {len(queries)} sample questions: {recall:.3f}")
    assert recall >= 0.8


@pytest.mark.slow
def test_int8_is_fingerprinted_and_fp32_onnx_is_torchs_twin(sample, sample_embeddings, minilm_path,
                                                             in_cache) -> None:
    from ragcov.retrievers.dense import DenseRetriever

    corpus, _ = sample
    fps = {b: DenseRetriever(corpus, model=minilm_path, embeddings=sample_embeddings[b], backend=b,
                             progress=False).fingerprint() for b in ("torch", "onnx", "onnx-int8")}
    assert fps["torch"] == fps["onnx"] and "backend" not in fps["onnx"]
    assert fps["onnx-int8"] == {**fps["onnx"], "backend": "onnx-int8"}


@pytest.mark.slow
def test_export_is_cached_reused_and_re_exported_when_damaged(minilm_path: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from ragcov.retrievers import onnx_encoder
    from ragcov.retrievers.onnx_encoder import OnnxEncoder

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path))
    exports: list[Path] = []
    real_export = onnx_encoder._export_fp32
    monkeypatch.setattr(onnx_encoder, "_export_fp32",
                        lambda layout, target: exports.append(target) or real_export(layout, target))
    texts = ["Net revenue rose 4% on higher volumes.", "Debt matures in 2019."]
    first = OnnxEncoder(minilm_path)
    reference = first.encode(texts, normalize_embeddings=True)
    assert len(exports) == 1 and first.path.is_file() and first.path.parent.parent == tmp_path / "onnx"

    again = OnnxEncoder(minilm_path)  # a second load: the cached graph, no export
    assert len(exports) == 1 and again.path == first.path
    np.testing.assert_array_equal(again.encode(texts, normalize_embeddings=True), reference)

    data = first.path.read_bytes()
    first.path.write_bytes(data[: len(data) // 2])  # a torn write / a damaged disk
    with pytest.warns(UserWarning, match="ONNX export cache .*exporting it again"):
        healed = OnnxEncoder(minilm_path)
    assert len(exports) == 2
    np.testing.assert_allclose(healed.encode(texts, normalize_embeddings=True), reference, atol=1e-6)


@pytest.mark.slow
def test_a_run_on_the_cached_onnx_export_never_imports_torch(minilm_path: str, tmp_path: Path,
                                                             city_corpus_file: Path) -> None:
    env = {**os.environ, "RAGCOV_CACHE_DIR": str(tmp_path / "cache")}
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "question": "capital of France"}\n', encoding="utf-8")
    script = (
        "import sys\n"
        "from ragcov.cli import main\n"
        "try:\n"
        f"    main(['run', '--corpus', {str(city_corpus_file)!r}, '--queries', {str(queries)!r},\n"
        f"          '--model', {minilm_path!r}, '--data-file', sys.argv[1], '-q'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('torch imported' if 'torch' in sys.modules else 'no torch')\n"
    )

    def run(data: str, *extra: str) -> str:
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / data), *extra], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run("first.ragcov") == "torch imported"  # the one export needs torch
    assert run("second.ragcov") == "no torch"


@pytest.mark.slow
def test_store_queries_on_onnx_match_torch_and_int8_is_recorded(sample, sample_embeddings, in_cache,
                                                                tmp_path: Path, capsys) -> None:
    """--retriever store: the queries' encoder is the backend's; fp32 the same run, int8 named."""
    chromadb = pytest.importorskip("chromadb")
    from ragcov.data import CoverageData

    corpus, _ = sample
    n = 200  # a slice of the sample keeps the store small
    col = chromadb.PersistentClient(path=str(tmp_path / "db")).create_collection(
        "finqa", configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=corpus.ids[:n], documents=corpus.texts[:n],
            embeddings=sample_embeddings["torch"][:n].tolist(),
            metadatas=[{"doc_id": c.doc_id} for c in list(corpus)[:n]])
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "question": t}) + "\n" for i, t in enumerate(
        ["net revenue growth", "long-term debt maturities", "share repurchases", "pension plan assets",
         "cash flows from operations"])), encoding="utf-8")
    runs = {}
    for backend in ("torch", "onnx", "onnx-int8"):
        data = tmp_path / f"{backend}.ragcov"
        code, _, err = cli(capsys, "run", "--corpus", f"chroma://{tmp_path / 'db'}?collection=finqa",
                           "--queries", str(queries), "--backend", backend, "-k", "5",
                           "--data-file", str(data), "-q")
        assert code == 0, err
        runs[backend] = CoverageData(data)
    fps = {b: d.meta().retriever for b, d in runs.items()}
    assert fps["torch"] == fps["onnx"] and "backend" not in fps["onnx"]
    assert fps["onnx-int8"]["backend"] == "onnx-int8"
    hits = {b: [d.matrix().retrieved(row) for row in range(5)] for b, d in runs.items()}
    assert hits["onnx"] == hits["torch"]


@pytest.mark.slow
def test_one_string_gives_one_vector_as_sentence_transformers_does(minilm_path: str) -> None:
    """LangChain and LlamaIndex embedding classes pass one string; the ONNX encoder answers
    with one vector, as ``SentenceTransformer.encode`` does."""
    from ragcov.retrievers.dense import load_encoder

    enc = load_encoder(minilm_path, backend="onnx")
    one = enc.encode("capital of Japan", normalize_embeddings=True)
    many = enc.encode(["capital of Japan"], normalize_embeddings=True)
    assert one.shape == (many.shape[1],) and np.allclose(one, many[0])
