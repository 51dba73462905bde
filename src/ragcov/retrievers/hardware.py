"""Where the dense retriever's encoder runs: the device, its precision and its batch.

``--device auto`` (the default) takes CUDA when PyTorch sees a GPU, then Apple's MPS,
then the CPU. Asking PyTorch means importing it, seconds that the ONNX encoder on a CPU
otherwise never pays (and most of what a one-query ``--append`` costs), so ``auto``
first asks cheaper questions that can only answer "no accelerator here": no torch
installed, a CPU-only torch build (its ``version.py`` names no CUDA or ROCm) on a
machine that is not a Mac, or a Linux machine with no NVIDIA device nodes. Only when a
GPU may be there is torch imported and asked.

On a GPU the encoder is PyTorch's (ONNX Runtime stays the CPU path), in fp32 unless
``--dtype`` asks for fp16 or bf16: reduced precision changes the vectors, so it is
never chosen silently (docs/performance.md has the measurement behind that), it is
recorded in the retriever fingerprint and its vectors are cached apart. Batches on a
GPU are sized from the device's free memory and halved, with one warning, when CUDA
runs out of memory; on the CPU they stay at 64, the size the cached vectors and the
bit-for-bit agreement of local and Dask runs were made with.

A device error (``--device cuda`` with no GPU, ``cuda:7`` on a one-GPU machine, ``mps``
off a Mac, ``--dtype fp16`` on the CPU) is one line, raised before the corpus is read.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError

DEVICES = "auto, cpu, cuda, cuda:N or mps"
DTYPES = ("auto", "fp32", "fp16", "bf16")
# The batch on the CPU: what every cached embedding and the local/Dask agreement assume.
CPU_BATCH = 64
# On a GPU: the largest batch tried (the bare library measured 256 faster than 64 on an
# H200), scaled down on a device with little free memory; an OOM halves it.
GPU_BATCH = 256
# Below this many texts a pool of one process per GPU costs more than it saves.
POOL_MIN_TEXTS = 20_000
_DEVICE = re.compile(r"(auto|cpu|mps|cuda)(?::(\d+))?")
_GIB = 1 << 30


@dataclass(frozen=True)
class Placement:
    """Where an encoder runs and how: what ``--device``/``--dtype``/``--backend`` resolved to."""

    device: str  # cpu, cuda:N or mps
    dtype: str  # fp32, fp16 or bf16
    backend: str  # torch, onnx or onnx-int8
    asked: str = "auto"  # --device as given
    # Every GPU the corpus is embedded on (one process each) when more than one is used.
    pool: tuple[str, ...] = field(default=())

    @property
    def accelerated(self) -> bool:
        return self.device != "cpu"

    @property
    def precision(self) -> str:
        """What the vectors are computed in: int8 weights on ``onnx-int8``, else the dtype."""
        return "int8" if self.backend == "onnx-int8" else self.dtype

    def describe(self) -> str:
        where = ", ".join(self.pool) if self.pool else self.device
        return f"{where} ({self.backend}, {self.precision})"

    def record(self) -> dict[str, Any]:
        """The data file's annotation of one run (never part of the fingerprint)."""
        out: dict[str, Any] = {"device": self.device, "backend": self.backend,
                               "dtype": self.precision}
        if self.pool:
            out["pool"] = list(self.pool)
        return out


CPU_FP32 = Placement("cpu", "fp32", "torch", "cpu")


def check_device(device: str | None) -> str:
    """``device`` as asked (``auto`` for None), its spelling checked before any work."""
    value = "auto" if device is None else str(device).strip().lower()
    m = _DEVICE.fullmatch(value)
    if m is None or (m.group(2) is not None and m.group(1) != "cuda"):
        raise RagcovError(f"unknown --device {device!r}: expected {DEVICES}")
    return value


def check_dtype(dtype: str | None) -> str:
    value = "auto" if dtype is None else str(dtype).strip().lower()
    if value not in DTYPES:
        raise RagcovError(f"unknown --dtype {dtype!r}: expected {', '.join(DTYPES)}")
    return value


def check_settings(kind: str, device: str | None, dtype: str | None) -> bool:
    """The spelling of ``--device`` and ``--dtype`` for a run with retriever ``kind``;
    whether that retriever embeds (dense, and a store's query encoder).

    ``--device`` is where a retriever embeds: a GPU asked of one that embeds nothing
    (BM25, an HTTP endpoint, the user's own) would be ignored in silence, and a run on a
    machine with no GPU would look like it ran on one, so it is refused as ``--dtype``
    is (``auto`` and ``cpu`` pass: they ask for nothing it lacks). ``--dtype`` is the
    dense retriever's alone: a store's query encoder runs in fp32, as its vectors were
    made, so asking another retriever for fp16 is refused rather than ignored."""
    place = check_device(device)
    asked = check_dtype(dtype)
    embeds = kind in ("dense", "store")
    if not embeds and place not in ("auto", "cpu"):
        raise RagcovError(f"--device {place} is where the dense retriever or a store's query "
                          f"encoder embeds; --retriever {kind} embeds nothing (leave --device "
                          "out, or auto)")
    if kind != "dense" and asked not in ("auto", "fp32"):
        raise RagcovError(f"--dtype {asked} is a setting of the dense retriever, not of "
                          f"--retriever {kind}")
    return embeds


def cache_variant(backend: str, dtype: str) -> str:
    """What the embedding cache key's ``variant`` says of the vectors' making.

    fp32 vectors are one entry whoever made them (ONNX or torch, CPU or GPU: the same
    top-k up to float rounding); int8 weights and fp16/bf16 arithmetic give other
    vectors, each cached under its own name, so neither can stand in for fp32's.
    """
    if backend == "onnx-int8":
        return "onnx-int8"
    return "" if dtype == "fp32" else dtype


# ------------------------------------------------------------------- what is there
def _torch_build() -> dict[str, str | None] | None:
    """The CUDA and ROCm versions torch was built for, read from its ``version.py``
    without importing torch; None when torch is absent or the file says nothing clear."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        return parse_torch_build(path.read_text(encoding="utf-8"))
    except OSError:
        return None


def parse_torch_build(text: str) -> dict[str, str | None] | None:
    """``cuda`` and ``hip`` of a torch ``version.py`` (``cuda: Optional[str] = '12.1'``)."""
    found: dict[str, str | None] = {}
    for name in ("cuda", "hip"):
        m = re.search(rf"^{name}\s*(?::[^=\n]*)?=\s*(.+?)\s*$", text, re.MULTILINE)
        if m is None:
            return None
        raw = m.group(1)
        found[name] = None if raw == "None" else raw.strip("'\"")
    return found


def _nvidia_nodes() -> bool:
    """Whether this Linux machine shows an NVIDIA driver (device nodes, or WSL's GPU)."""
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia",
                                             "/dev/dxg"))


def accelerator_possible() -> bool:
    """False only when no GPU can be there, known without importing torch."""
    import platform

    if importlib.util.find_spec("torch") is None:
        return False
    if platform.system() == "Darwin":
        return True  # MPS: only torch can tell
    build = _torch_build()
    if build is None:
        return True  # cannot tell: ask torch
    if build["cuda"] is None and build["hip"] is None:
        return False  # a CPU-only build
    if build["hip"] is None and sys.platform.startswith("linux") and not _nvidia_nodes():
        return False
    return True


@dataclass(frozen=True)
class CudaState:
    """What PyTorch says of CUDA here: how many devices, and why none when there are none."""

    count: int
    why_none: str = ""
    names: tuple[str, ...] = ()
    free: tuple[int, ...] = ()  # bytes free on each device, when asked


def _torch(asked: str) -> Any:
    try:
        import torch
    except ImportError as exc:
        raise RagcovError(f"--device {asked} needs PyTorch: pip install 'ragcov[dense]' "
                          "(a CUDA build of torch for a GPU)") from exc
    return torch


def cuda_state(asked: str = "cuda") -> CudaState:
    """CUDA as this process's PyTorch sees it (``CUDA_VISIBLE_DEVICES`` applied)."""
    torch = _torch(asked)
    if not torch.cuda.is_available():
        return CudaState(0, _why_no_cuda(torch))
    n = int(torch.cuda.device_count())
    return CudaState(n, names=tuple(str(torch.cuda.get_device_name(i)) for i in range(n)))


def _why_no_cuda(torch: Any) -> str:
    version = getattr(torch, "version", None)
    if getattr(version, "cuda", None) is None and getattr(version, "hip", None) is None:
        return f"this PyTorch ({torch.__version__}) is a CPU-only build"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    return "PyTorch finds no CUDA device or driver (torch.cuda.is_available() is false)"


def mps_state() -> str:
    """Why Apple's MPS cannot be used here, or "" when it can."""
    import platform

    if platform.system() != "Darwin":
        return f"Apple's MPS exists only on macOS (this is {platform.system() or 'not macOS'})"
    torch = _torch("mps")
    backend = getattr(getattr(torch, "backends", None), "mps", None)
    if backend is None or not backend.is_available():
        return ("torch.backends.mps.is_available() is false (MPS needs Apple silicon, "
                "macOS 12.3 or later and a PyTorch built with it)")
    return ""


def resolve_device(asked: str) -> tuple[str, tuple[str, ...]]:
    """The device ``asked`` means here, and the GPUs a corpus is spread over (several
    visible GPUs and ``auto`` or ``cuda``: all of them; ``cuda:N``: that one alone)."""
    asked = check_device(asked)
    if asked == "cpu":
        return "cpu", ()
    if asked == "auto":
        if not accelerator_possible():
            return "cpu", ()
        state = cuda_state("auto")
        if state.count:
            return "cuda:0", _pool(state.count)
        return ("mps", ()) if not mps_state() else ("cpu", ())
    if asked == "mps":
        reason = mps_state()
        if reason:
            raise RagcovError(f"--device mps: {reason}; use --device auto or cpu")
        return "mps", ()
    state = cuda_state(asked)
    if not state.count:
        raise RagcovError(f"--device {asked}: no CUDA device here: {state.why_none}; "
                          "use --device auto or cpu")
    if asked == "cuda":
        return "cuda:0", _pool(state.count)
    index = int(asked.split(":")[1])
    if index >= state.count:
        have = ", ".join(f"cuda:{i}" for i in range(state.count))
        raise RagcovError(f"--device {asked}: this machine has {state.count} CUDA "
                          f"device{'s' if state.count > 1 else ''} ({have})")
    return asked, ()


def _pool(count: int) -> tuple[str, ...]:
    return tuple(f"cuda:{i}" for i in range(count)) if count > 1 else ()


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto`` is fp32 on every device (see docs/performance.md); fp16 and bf16 need CUDA,
    bf16 a GPU that computes in it."""
    dtype = check_dtype(dtype)
    if dtype in ("auto", "fp32"):
        return "fp32"
    if not device.startswith("cuda"):
        raise RagcovError(f"--dtype {dtype} needs a CUDA device and the encoder runs on {device}: "
                          "reduced precision is a GPU setting (on the CPU, --backend onnx-int8 "
                          "is the faster option, with its recall printed)")
    if dtype == "bf16":
        torch = _torch(device)
        if not torch.cuda.is_bf16_supported():
            raise RagcovError(f"--dtype bf16: {device} ({torch.cuda.get_device_name(device)}) "
                              "does not compute in bfloat16; use fp16 or fp32")
    return dtype


def resolve_placement(device: str | None, dtype: str | None, backend: str | None,
                      source: str) -> Placement:
    """Device, precision and backend for the model at ``source``, every error raised now.

    An asked-for ONNX backend is the CPU's: with ``auto`` it keeps the encoder on the
    CPU, with a GPU named it is refused. On an accelerator the backend is PyTorch.
    """
    from ragcov.retrievers.onnx_encoder import check_backend, resolve_backend

    asked = check_device(device)
    wanted = check_dtype(dtype)
    check_backend(backend)
    if backend in ("onnx", "onnx-int8"):
        if asked not in ("auto", "cpu"):
            raise RagcovError(f"--backend {backend} runs on the CPU only: --device {asked} "
                              "needs --backend torch (or leave --backend out)")
        where, pool = "cpu", ()
    else:
        where, pool = resolve_device(asked)
    precision = resolve_dtype(wanted, where)  # refused before the model folder is read
    resolved = resolve_backend(backend, source) if where == "cpu" else "torch"
    return Placement(where, precision, resolved, asked, pool)


# ------------------------------------------------------------------------ batches
def batch_size_for(placement: Placement, free_bytes: int | None = None) -> int:
    """The batch an encode runs with on ``placement``'s device.

    CPU and MPS: 64. CUDA: 256 with at least 8 GiB free, 128 with 4, else 64 (a batch of
    256 MiniLM-sized texts of 256 tokens needs well under 1 GiB; larger models need
    more, and an out-of-memory error halves the batch anyway).
    """
    if not placement.device.startswith("cuda"):
        return CPU_BATCH
    if free_bytes is None:
        free_bytes = _free_memory(placement.device)
    if free_bytes is None or free_bytes >= 8 * _GIB:
        return GPU_BATCH
    return GPU_BATCH // 2 if free_bytes >= 4 * _GIB else GPU_BATCH // 4


def _free_memory(device: str) -> int | None:
    try:
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    except Exception:  # noqa: BLE001 - any failure: no figure, the default batch and OOM halving
        return None


def slice_size(placement: Placement | None, batch: int, unit: int) -> int:
    """Texts handed to the encoder at once: ``unit`` on the CPU (the slices the cached
    vectors were made in), on a GPU enough for 16 batches, in whole units."""
    if placement is None or not placement.accelerated:
        return unit
    return max(unit, -(-batch * 16 // unit) * unit)


def is_out_of_memory(exc: BaseException) -> bool:
    """A GPU out-of-memory error (CUDA's own class, or older torch's and MPS's RuntimeError)."""
    torch = sys.modules.get("torch")
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None) if torch else None
    if isinstance(oom, type) and isinstance(exc, oom):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("CUDA out of memory" in text
                                              or "MPS backend out of memory" in text)


def free_cached_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()


class Batches:
    """The batch an encoder on a GPU runs with: halved on every out-of-memory error and
    kept halved for the rest of the process; said once."""

    def __init__(self, size: int, device: str) -> None:
        self.size, self.device, self.first = size, device, size

    def run(self, call: Any) -> Any:
        """``call(batch_size)``, again at half the batch for as long as the GPU runs out."""
        while True:
            try:
                return call(self.size)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                free_cached_memory()
                if self.size <= 1:
                    raise RagcovError(f"{self.device} ran out of memory even at a batch of 1 text: "
                                      "the model does not fit there; use another --device "
                                      "or a smaller model") from None
                if self.size == self.first:
                    from ragcov.user_warnings import warn

                    warn(f"{self.device} ran out of memory at a batch of {self.size} texts: "
                         "halving the batch until it fits, and going on")
                self.size //= 2


@contextlib.contextmanager
def encoder_pool(encoder: Any, placement: Placement | None, n_texts: int) -> Iterator[Any]:
    """One process per GPU for a large encode when several GPUs are used (sentence-transformers'
    own pool); None otherwise."""
    if placement is None or not placement.pool or n_texts < POOL_MIN_TEXTS \
            or not _takes_a_pool(encoder):
        yield None
        return
    pool = encoder.start_multi_process_pool(list(placement.pool))
    try:
        yield pool
    finally:
        encoder.stop_multi_process_pool(pool)
        encoder.to(placement.device)  # the pool leaves the model on the CPU


# ------------------------------------------------------------------ what a run says
#: The data file's annotation (``x:hardware``): every distinct place this file's queries
#: were embedded, in order of first use. An annotation, not the fingerprint: fp32 vectors
#: from a GPU and from a CPU agree up to float rounding, so such runs may be appended
#: and combined; the precision, which changes the vectors, is in the fingerprint.
HARDWARE = "hardware"


def encoder_line(retriever: Any) -> str | None:
    """The run header's line saying where queries (and a new corpus) are embedded."""
    placement = getattr(retriever, "placement", None)
    if not isinstance(placement, Placement):
        return None
    batches = getattr(getattr(retriever, "encoder", None), "ragcov_batches", None)
    size = batches.size if batches is not None else getattr(retriever, "batch_size", CPU_BATCH)
    return f"ragcov: embedding on {placement.describe()}, batch {size}"


def record_hardware(data: Any, placement: Any, append: bool = False) -> None:
    """Add ``placement`` to the data file's ``hardware`` annotation (nothing for retrievers
    that embed nothing); an append that used a place already listed writes nothing."""
    if isinstance(placement, Placement):
        record_places(data, [placement.record()], append)


def record_places(data: Any, places: list[dict[str, Any]], append: bool = False) -> None:
    known = data.annotation(HARDWARE) if append else None
    listed = list(known) if isinstance(known, list) else []
    before = len(listed)
    for place in places:
        if place not in listed:
            listed.append(place)
    if len(listed) > before or not append:
        data.annotate(HARDWARE, listed)


#: The data file's annotation of the measured recall@k of int8, fp16 or bf16 vectors
#: against fp32's (``DenseRetriever.measure_precision_recall``).
PRECISION_RECALL = "precision_recall"


def precision_recall_line(retriever: Any, suite: Any, k: int, data: Any,
                          append: bool = False) -> str | None:
    """Measure, record and say what vectors other than fp32's cost in recall@k; once per
    data file (an append to a file that has the figure keeps it)."""
    measure = getattr(retriever, "measure_precision_recall", None)
    if measure is None or (append and data.annotation(PRECISION_RECALL) is not None):
        return None
    found = measure(suite.texts, k=k)
    if found is None:
        return None
    data.annotate(PRECISION_RECALL, found)
    return (f"ragcov: {found['vectors']} vectors: recall@{found['k']} against fp32 "
            f"{found['recall_at_k']:.3f} on {found['sample']} of the suite's queries")


def _takes_a_pool(encoder: Any) -> bool:
    """Whether ``encoder.encode`` runs on a pool (sentence-transformers 5 and later);
    an older one embeds on the first GPU alone."""
    import inspect

    if not hasattr(encoder, "start_multi_process_pool"):
        return False
    try:
        return "pool" in inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):
        return False
