"""Where the dense retriever embeds: --device, --dtype, batches on a GPU, and the cache.

Most of it runs on any machine: the spelling of the options, what ``auto`` resolves to
and what it imports to find out, the refusals (one line, exit 1, nothing written), the
cache keys of each precision, the batch sizes and the GPU encode loop (length order,
out-of-memory halving) driven by a labelled fake encoder. What needs a real GPU is
marked ``gpu`` and skipped, with the reason, where PyTorch sees no CUDA device.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import cli
from ragcov.corpus import Chunk, Corpus
from ragcov.errors import RagcovError
from ragcov.retrievers import hardware
from ragcov.retrievers.embedding_cache import (
    embedding_cache_key,
    embedding_cache_path,
    load_cached_embeddings,
    save_embeddings,
)
from ragcov.retrievers.hardware import (
    Batches,
    CudaState,
    Placement,
    batch_size_for,
    cache_variant,
    check_device,
    check_dtype,
    is_out_of_memory,
    parse_torch_build,
    resolve_placement,
    slice_size,
)

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30


# ----------------------------------------------------------------- spelling
@pytest.mark.parametrize("given, expected", [
    (None, "auto"), ("auto", "auto"), ("CPU", "cpu"), (" cuda ", "cuda"), ("cuda:0", "cuda:0"),
    ("cuda:12", "cuda:12"), ("mps", "mps")])
def test_device_spellings(given: str | None, expected: str) -> None:
    assert check_device(given) == expected


@pytest.mark.parametrize("given", ["gpu", "cuda:", "cuda:x", "cpu:0", "mps:1", "cuda0", "", "tpu"])
def test_unknown_devices_are_named(given: str) -> None:
    with pytest.raises(RagcovError, match=rf"unknown --device '{given}': expected auto, cpu, cuda, "
                                          r"cuda:N or mps"):
        check_device(given)


def test_dtype_spellings() -> None:
    assert [check_dtype(d) for d in (None, "AUTO", "fp32", "fp16", "bf16")] == [
        "auto", "auto", "fp32", "fp16", "bf16"]
    with pytest.raises(RagcovError, match="unknown --dtype 'half'"):
        check_dtype("half")


# --------------------------------------------------------- what auto costs
CPU_BUILD = "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\n" \
            "git_version = 'abc'\nhip: Optional[str] = None\n"
CUDA_BUILD = "__version__ = '2.5.1+cu121'\ncuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n"
ROCM_BUILD = "__version__ = '2.5.1+rocm6.2'\ncuda = None\nhip = '6.2.41133'\n"


def test_the_torch_build_is_read_from_its_version_file() -> None:
    assert parse_torch_build(CPU_BUILD) == {"cuda": None, "hip": None}
    assert parse_torch_build(CUDA_BUILD) == {"cuda": "12.1", "hip": None}
    assert parse_torch_build(ROCM_BUILD) == {"cuda": None, "hip": "6.2.41133"}
    assert parse_torch_build("__version__ = '1.0'\n") is None  # says nothing: torch is asked


def test_auto_asks_torch_only_where_a_gpu_may_be(monkeypatch) -> None:
    """A CPU-only build (off a Mac) or no NVIDIA driver on Linux: no accelerator, known
    without importing torch; a CUDA build with a driver, or a Mac: torch must be asked."""
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    for text, nodes, possible in [(CPU_BUILD, True, False), (CUDA_BUILD, False, False),
                                  (CUDA_BUILD, True, True), (ROCM_BUILD, False, True),
                                  ("unreadable", False, True)]:
        monkeypatch.setattr(hardware, "_torch_build", lambda t=text: parse_torch_build(t))
        monkeypatch.setattr(hardware, "_nvidia_nodes", lambda n=nodes: n)
        assert hardware.accelerator_possible() is possible, (text, nodes)
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(hardware, "_torch_build", lambda: parse_torch_build(CPU_BUILD))
    assert hardware.accelerator_possible() is True  # MPS: only torch can tell


@pytest.mark.skipif(hardware.accelerator_possible(), reason="this machine may have a GPU: auto "
                    "asks torch here, as it should")
def test_auto_on_a_machine_without_gpu_never_imports_torch(minilm_path: str) -> None:
    """The ONNX path's start-up stays torch-free with --device auto (what --append pays)."""
    code = ("import sys, json\nfrom ragcov.retrievers.hardware import resolve_placement\n"
            f"p = resolve_placement('auto', 'auto', None, {minilm_path!r})\n"
            "print(json.dumps([p.device, p.dtype, 'torch' in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    assert json.loads(out) == ["cpu", "fp32", False]


# ------------------------------------------------------------------ refusals
@pytest.fixture
def city_run(tmp_path: Path, city_corpus_file: Path, monkeypatch) -> list[str]:
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "capital of Japan"}\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    return ["run", "--corpus", str(city_corpus_file), "--queries", "q.jsonl"]


def _refused(capsys, args: list[str], tmp_path: Path) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 1, err
    # One error line (probe names the recorded retriever it takes before it).
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("ragcov: probing through")]
    assert len(lines) == 1 and lines[0].startswith("ragcov: error: "), err
    assert not (tmp_path / ".ragcov").exists() and not (tmp_path / "cache").exists()
    return lines[0]


def test_cuda_where_there_is_none_is_one_line_and_writes_nothing(capsys, city_run, tmp_path) -> None:
    if hardware.cuda_state().count > 0:
        pytest.skip("this machine has a CUDA device")
    line = _refused(capsys, [*city_run, "--device", "cuda"], tmp_path)
    assert line.startswith("ragcov: error: --device cuda: no CUDA device here: ")
    assert line.endswith("; use --device auto or cpu")
    # The reason is said: a CPU-only build here, else no driver or hidden GPUs.
    assert any(why in line for why in ("CPU-only build", "CUDA_VISIBLE_DEVICES", "no CUDA device or driver"))
    for command in ("index", "probe", "generate"):
        args = ["--corpus", city_run[2], "--device", "cuda:1"]
        assert "--device cuda:1: no CUDA device here" in _refused(capsys, [command, *args], tmp_path)


def test_a_gpu_the_machine_lacks_is_named(monkeypatch) -> None:
    # A labelled fake: the state PyTorch reports on a one-GPU machine, which this one may not be.
    monkeypatch.setattr(hardware, "cuda_state", lambda asked="cuda": CudaState(1, names=("fake",)))
    with pytest.raises(RagcovError) as caught:
        resolve_placement("cuda:7", "auto", None, "unused")
    assert str(caught.value) == "--device cuda:7: this machine has 1 CUDA device (cuda:0)"
    monkeypatch.setattr(hardware, "cuda_state", lambda asked="cuda": CudaState(2, names=("a", "b")))
    assert resolve_placement("cuda", "auto", None, "unused") == Placement(
        "cuda:0", "fp32", "torch", "cuda", ("cuda:0", "cuda:1"))
    assert resolve_placement("cuda:1", "fp16", None, "unused") == Placement(
        "cuda:1", "fp16", "torch", "cuda:1")
    with pytest.raises(RagcovError, match=r"--backend onnx runs on the CPU only: --device cuda "
                                          r"needs --backend torch"):
        resolve_placement("cuda", "auto", "onnx", "unused")


@pytest.mark.skipif(platform.system() == "Darwin", reason="on a Mac MPS may be there")
def test_mps_off_a_mac(capsys, city_run, tmp_path) -> None:
    line = _refused(capsys, [*city_run, "--device", "mps"], tmp_path)
    assert line == (f"ragcov: error: --device mps: Apple's MPS exists only on macOS (this is "
                    f"{platform.system()}); use --device auto or cpu")


def test_reduced_precision_on_the_cpu_is_refused(capsys, city_run, tmp_path) -> None:
    line = _refused(capsys, [*city_run, "--device", "cpu", "--dtype", "fp16"], tmp_path)
    assert line.startswith("ragcov: error: --dtype fp16 needs a CUDA device and the encoder runs "
                           "on cpu")
    line = _refused(capsys, [*city_run, "--retriever", "bm25", "--dtype", "bf16"], tmp_path)
    assert line == "ragcov: error: --dtype bf16 is a setting of the dense retriever, not of --retriever bm25"
    line = _refused(capsys, [*city_run, "--device", "tpu"], tmp_path)
    assert line == "ragcov: error: unknown --device 'tpu': expected auto, cpu, cuda, cuda:N or mps"


def test_the_config_file_device_reaches_run(capsys, city_run, tmp_path) -> None:
    (tmp_path / "ragcov.toml").write_text('device = "tpu"\n')
    assert "unknown --device 'tpu'" in _refused(capsys, city_run, tmp_path)
    (tmp_path / "ragcov.toml").write_text('[index]\ndevice = "cuda:x"\n')
    assert "unknown --device 'cuda:x'" in _refused(capsys, ["index", "--corpus", city_run[2]], tmp_path)


def test_every_command_that_embeds_has_the_options(capsys) -> None:
    for command in ("run", "probe", "generate", "index"):
        code, out, _ = cli(capsys, command, "--help")
        assert code == 0 and "--device" in out and "--dtype" in out, command
    code, out, _ = cli(capsys, "report", "--help")
    assert "--device" not in out and "--dtype" not in out


# ------------------------------------------------------------ cache entries
def _corpus() -> Corpus:
    return Corpus([Chunk(id=f"c{i}", doc_id="d", text=t, position=i)
                   for i, t in enumerate(["alpha", "beta", "gamma"])])


def test_each_precision_has_its_own_cache_entry() -> None:
    variants = {(b, d): cache_variant(b, d) for b in ("torch", "onnx") for d in ("fp32", "fp16", "bf16")}
    # fp32 is one entry whoever computed it; int8 and each reduced precision are their own.
    assert variants[("torch", "fp32")] == variants[("onnx", "fp32")] == ""
    assert {variants[("torch", "fp16")], variants[("torch", "bf16")], cache_variant("onnx-int8", "fp32")} \
        == {"fp16", "bf16", "onnx-int8"}
    keys = {embedding_cache_key(_corpus(), "sha256:m", v) for v in ("", "fp16", "bf16", "onnx-int8")}
    assert len({embedding_cache_path(k) for k in keys}) == 4


def test_an_fp16_vector_never_stands_in_for_an_fp32_one() -> None:
    """fp16 vectors in their own entry are not found under fp32's key, and the same file
    copied over fp32's entry is refused by the key written inside it."""
    corpus = _corpus()
    rng = np.random.default_rng(0)
    fp32 = rng.standard_normal((3, 8)).astype(np.float32)
    fp32 /= np.linalg.norm(fp32, axis=1, keepdims=True)
    fp16 = fp32.astype(np.float16).astype(np.float32)  # what an fp16 encoder gives, stored as float32
    fp16 /= np.linalg.norm(fp16, axis=1, keepdims=True)
    assert not np.array_equal(fp16, fp32)
    key16, key32 = (embedding_cache_key(corpus, "sha256:m", v) for v in ("fp16", ""))
    path16, path32 = embedding_cache_path(key16), embedding_cache_path(key32)
    path16.parent.mkdir(parents=True, exist_ok=True)
    save_embeddings(path16, fp16, key16)
    assert load_cached_embeddings(path32, 3, 8, key=key32) is None  # no entry: embed in fp32
    np.testing.assert_array_equal(load_cached_embeddings(path16, 3, 8, key=key16), fp16)
    path32.write_bytes(path16.read_bytes())
    with pytest.warns(UserWarning, match="written for another corpus, model, chunking or precision"):
        assert load_cached_embeddings(path32, 3, 8, key=key32) is None
    # Nor for another model's fp32 entry.
    other = embedding_cache_key(corpus, "sha256:n", "")
    embedding_cache_path(other).write_bytes(path16.read_bytes())
    with pytest.warns(UserWarning, match="written for another"):
        assert load_cached_embeddings(embedding_cache_path(other), 3, 8, key=other) is None


# ----------------------------------------------------------------- batches
def test_batch_sizes_follow_the_device() -> None:
    cpu = Placement("cpu", "fp32", "onnx")
    gpu = Placement("cuda:0", "fp32", "torch")
    assert batch_size_for(cpu) == batch_size_for(Placement("mps", "fp32", "torch")) == 64
    assert [batch_size_for(gpu, free) for free in (80 * GIB, 8 * GIB, 5 * GIB, 1 * GIB)] == [
        256, 256, 128, 64]
    assert slice_size(cpu, 64, 1024) == 1024  # the slices cached CPU vectors were made in
    assert slice_size(gpu, 256, 1024) == 4096 and slice_size(gpu, 100, 1024) == 2048


def test_out_of_memory_is_recognised_by_class_and_by_message() -> None:
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    assert not is_out_of_memory(MemoryError())  # the host's memory: not a batch problem
    torch = pytest.importorskip("torch")
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("any text"))


class FakeGpuEncoder:
    """A labelled fake: an encoder 'on a GPU' that raises PyTorch's CUDA out-of-memory error
    for batches above ``fits``, a failure no CPU can produce. Its vectors come from the text
    (its length and first letter), in float16 as an fp16 model returns them."""

    def __init__(self, fits: int) -> None:
        self.fits, self.calls = fits, []

    def get_sentence_embedding_dimension(self) -> int:
        return 3

    def encode(self, texts, batch_size, **_):
        import torch

        self.calls.append((len(texts), batch_size))
        if batch_size > self.fits:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return np.array([[len(t), ord(t[0]) % 7 + 1, 3.0] for t in texts], dtype=np.float16)


def _expected(texts: list[str]) -> np.ndarray:
    raw = np.array([[len(t), ord(t[0]) % 7 + 1, 3.0] for t in texts], dtype=np.float16).astype(np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_out_of_memory_halves_the_batch_says_so_once_and_goes_on() -> None:
    from ragcov.retrievers.dense import encode

    pytest.importorskip("torch")
    texts = [("x" * (i % 37 + 1)) + chr(97 + i % 26) for i in range(5000)]
    encoder = FakeGpuEncoder(fits=40)
    encoder.ragcov_placement = Placement("cuda:0", "fp16", "torch")
    encoder.ragcov_batches = Batches(256, "cuda:0")
    with pytest.warns(UserWarning) as caught:
        out = encode(encoder, texts, progress=False)
    messages = [str(w.message) for w in caught]
    assert messages == ["cuda:0 ran out of memory at a batch of 256 texts: halving the batch until "
                        "it fits, and going on"]
    assert encoder.ragcov_batches.size == 32  # 256 -> 128 -> 64 -> 32, and kept
    assert [b for _, b in encoder.calls[:4]] == [256, 128, 64, 32]
    assert {b for _, b in encoder.calls[4:]} == {32}
    # Slices of 16 first batches (4,096 texts), in order of length, longest first.
    assert [n for n, _ in encoder.calls] == [4096] * 4 + [5000 - 4096]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _expected(texts), rtol=0, atol=1e-6)  # each row its own text's
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_a_model_that_does_not_fit_at_all_is_one_line() -> None:
    from ragcov.retrievers.dense import encode

    pytest.importorskip("torch")
    encoder = FakeGpuEncoder(fits=0)
    encoder.ragcov_placement = Placement("cuda:0", "fp32", "torch")
    encoder.ragcov_batches = Batches(4, "cuda:0")
    with pytest.warns(UserWarning), pytest.raises(RagcovError) as caught:
        encode(encoder, ["a", "b"], progress=False)
    assert str(caught.value) == ("cuda:0 ran out of memory even at a batch of 1 text: the model does "
                                 "not fit there; use another --device or a smaller model")


def test_other_errors_pass_through_untouched() -> None:
    def broken(size: int) -> None:
        raise ValueError("not a memory problem")

    with pytest.raises(ValueError, match="not a memory problem"):
        Batches(64, "cuda:0").run(broken)


# ------------------------------------------------------------- the record
def test_where_a_run_embedded_is_recorded_apart_from_the_fingerprint(tmp_path: Path,
                                                                     city_corpus_file: Path) -> None:
    from ragcov import api
    from ragcov.data import CoverageData
    from ragcov.retrievers.hardware import HARDWARE, encoder_line, record_hardware, record_places

    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "capital"}\n')
    path = tmp_path / "d.ragcov"
    api.run(city_corpus_file, tmp_path / "q.jsonl", retriever="bm25", k=2, data_file=path,
            progress=False)
    data = CoverageData(path)
    assert data.annotation(HARDWARE) is None  # BM25 embeds nothing
    gpu = Placement("cuda:0", "fp32", "torch", "auto")
    record_hardware(data, gpu)
    record_hardware(data, gpu, append=True)  # the same place again: listed once
    record_places(data, [{"device": "cpu", "backend": "onnx", "dtype": "fp32"}], append=True)
    assert data.annotation(HARDWARE) == [{"device": "cuda:0", "backend": "torch", "dtype": "fp32"},
                                         {"device": "cpu", "backend": "onnx", "dtype": "fp32"}]
    assert "device" not in json.dumps(data.meta().retriever)

    class Dense:
        placement = Placement("cuda:0", "fp16", "torch", pool=("cuda:0", "cuda:1"))
        batch_size = 64
        encoder = type("E", (), {"ragcov_batches": Batches(256, "cuda:0")})()

    assert encoder_line(Dense()) == "ragcov: embedding on cuda:0, cuda:1 (torch, fp16), batch 256"
    assert encoder_line(object()) is None


def test_a_dask_worker_resolves_its_own_device(minilm_path: str) -> None:
    from ragcov.distributed import _worker_placement

    spec = {"device": "auto", "dtype": "auto", "asked_backend": None, "backend": "onnx"}
    place = _worker_placement(spec, minilm_path)
    if place.accelerated:  # a GPU worker: PyTorch on its GPU, whatever the driver chose
        assert place.backend == "torch"
    else:  # a CPU worker: the driver's backend, so its vectors are a local run's
        assert (place.device, place.backend) == ("cpu", "onnx")


# --------------------------------------------------------------- real GPUs
@pytest.mark.gpu
@pytest.mark.slow
def test_reduced_precision_keeps_the_top_k_of_fp32(minilm_path: str) -> None:
    """fp16 and bf16 top-5 identical to fp32's for at least 99% of the bundled sample's
    questions over all its chunks (issue 37: checked, not assumed)."""
    from ragcov.corpus import load_corpus
    from ragcov.retrievers.dense import DenseRetriever
    from ragcov.suite import load_suite

    sample = ROOT / "src" / "ragcov" / "data_sample"
    corpus = load_corpus(sample / "finqa_pages.jsonl", split=True)
    questions = load_suite(sample / "finqa_questions.jsonl").texts
    tops = {}
    for dtype in ("fp32", "fp16", "bf16"):
        try:
            r = DenseRetriever(corpus, model=minilm_path, device="cuda", dtype=dtype,
                               progress=False, use_cache=False)
        except RagcovError as exc:
            if dtype == "bf16" and "bfloat16" in str(exc):
                continue  # a GPU without bf16: said in one line, checked in the test above
            raise
        assert r.placement.device.startswith("cuda") and r.fingerprint().get("precision") == (
            None if dtype == "fp32" else dtype)
        tops[dtype] = [[cid for cid, _ in row] for row in r.retrieve(questions, 5)]
    for dtype in set(tops) - {"fp32"}:
        same = np.mean([a == b for a, b in zip(tops[dtype], tops["fp32"])])
        assert same >= 0.99, (dtype, same)


@pytest.mark.gpu
@pytest.mark.slow
def test_a_run_on_the_gpu_is_recorded_and_matches_the_cpu(capsys, city_run, tmp_path) -> None:
    from ragcov.data import CoverageData

    code, _, err = cli(capsys, *city_run, "--device", "cuda", "--data-file", "gpu.ragcov")
    assert code == 0, err
    assert "ragcov: embedding on cuda:0" in err
    code, _, err = cli(capsys, *city_run, "--device", "cpu", "--data-file", "cpu.ragcov")
    assert code == 0, err
    gpu, cpu = CoverageData(tmp_path / "gpu.ragcov"), CoverageData(tmp_path / "cpu.ragcov")
    assert gpu.annotation("hardware")[0]["device"] == "cuda:0"
    assert gpu.meta().retriever == cpu.meta().retriever  # fp32 on either: one retriever
    assert gpu.matrix().chunk_ids == cpu.matrix().chunk_ids


@pytest.mark.slow
def test_int8_says_what_it_costs_in_recall_once_per_data_file(capsys, city_run, tmp_path,
                                                              minilm_path: str) -> None:
    """`--backend onnx-int8` stays opt-in and prints its recall@k against fp32, measured
    here by hand too: the share of fp32's exact top k found in int8's."""
    from ragcov.corpus import load_corpus
    from ragcov.data import CoverageData
    from ragcov.retrievers.dense import encode, exact_search, load_encoder
    from ragcov.suite import load_suite

    questions = ["capital of Japan", "what powers a cell", "dividends per share", "German capital",
                 "sugar from sunlight", "debt and interest"]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n"
                                              for i, q in enumerate(questions)))
    args = [*city_run, "--backend", "onnx-int8", "--k", "3"]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    recorded = CoverageData(tmp_path / ".ragcov").annotation("precision_recall")
    assert (recorded["vectors"], recorded["k"], recorded["sample"]) == ("onnx-int8", 3, 6)
    assert (f"ragcov: onnx-int8 vectors: recall@3 against fp32 {recorded['recall_at_k']:.3f} on 6 of "
            "the suite's queries") in err
    assert "ragcov: embedding on cpu (onnx-int8, int8), batch 64" in err
    texts = load_corpus(city_run[2]).texts
    queries = load_suite(tmp_path / "q.jsonl").texts
    tops = []
    for place in (Placement("cpu", "fp32", "onnx-int8"), Placement("cpu", "fp32", "onnx")):
        encoder = load_encoder(minilm_path, placement=place)
        tops.append(exact_search(encode(encoder, texts, progress=False),
                                 encode(encoder, queries, progress=False), 3)[1])
    by_hand = np.mean([len(set(a) & set(b)) / 3 for a, b in zip(*tops)])
    assert recorded["recall_at_k"] == pytest.approx(by_hand)
    # An append keeps the figure and does not pay for it again; fp32 says nothing.
    with (tmp_path / "q.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "q9", "question": "Spanish capital"}) + "\n")
    code, _, err = cli(capsys, *args, "--append")
    assert code == 0 and "recall@" not in err, err
    code, _, err = cli(capsys, *city_run, "--data-file", "fp32.ragcov", "--backend", "onnx")
    assert code == 0 and "recall@" not in err
    assert CoverageData(tmp_path / "fp32.ragcov").annotation("precision_recall") is None


@pytest.mark.slow  # imports sentence-transformers
def test_the_installed_sentence_transformers_takes_a_pool() -> None:
    """Several GPUs embed a corpus through sentence-transformers' own pool, by the keyword
    its encode takes; an encoder without one embeds on the first GPU alone."""
    st_module = pytest.importorskip("sentence_transformers")
    assert hardware._takes_a_pool(st_module.SentenceTransformer)
    assert not hardware._takes_a_pool(FakeGpuEncoder(fits=8))


@pytest.mark.gpu
@pytest.mark.slow
def test_several_gpus_embed_a_corpus_as_one_gpu_does(minilm_path: str) -> None:
    import torch

    from ragcov.retrievers.dense import encode, load_encoder

    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two CUDA devices; this machine has {torch.cuda.device_count()}")
    texts = [f"chunk {i}: revenue rose by {i % 97} percent in the quarter" for i in range(25_000)]
    pooled = resolve_placement("cuda", "fp32", None, minilm_path)
    assert len(pooled.pool) == torch.cuda.device_count()
    one = resolve_placement("cuda:0", "fp32", None, minilm_path)
    many = encode(load_encoder(minilm_path, placement=pooled), texts, progress=False)
    single = encode(load_encoder(minilm_path, placement=one), texts, progress=False)
    np.testing.assert_allclose(many, single, atol=1e-4)
