"""The dense retriever's encoder on ONNX Runtime: the same sentence-transformers model, exported once.

Importing torch and sentence-transformers and loading the model is most of a short
run's time. The model's transformer is exported once, offline, from the installed model
folder (``torch.onnx.export``, dynamic batch and sequence axes) into the cache beside the
embeddings, keyed by the model's files and the export settings; later runs load the
cached graph and never import torch. Tokenisation (the folder's ``tokenizer.json``, truncated at the model's
``max_seq_length``), pooling and normalisation follow the model's own
sentence-transformers configuration (``modules.json``, ``1_Pooling/config.json``), so
fp32 ONNX gives PyTorch's embeddings up to float rounding. ``onnx-int8`` (dynamic
quantisation of the weights) is faster again but its embeddings differ: it is opt-in
and recorded in the retriever's fingerprint.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir, write_json_atomic
from ragcov.retrievers.onnx_layout import ModelLayout, read_layout
from ragcov.user_warnings import warn

BACKENDS = ("torch", "onnx", "onnx-int8")
OPSET = 17
# Bumped when the export itself changes (wrapper, axes, quantisation settings), so an
# old cached graph is never taken for a new one.
EXPORT_VERSION = 2


def check_backend(backend: str | None) -> str | None:
    if backend is not None and backend not in BACKENDS:
        raise RagcovError(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    return backend


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def default_threads() -> int:
    """The CPUs this process may run on: ONNX Runtime's count when none is pinned."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _cached_export_exists(source: str) -> bool:
    try:
        layout = read_layout(source)
    except (RagcovError, OSError, ValueError):
        return False
    return export_paths(layout, False)[0].is_file()


def resolve_backend(backend: str | None, source: str) -> str:
    """``backend`` when asked for; else onnx where ONNX Runtime can serve this model, else torch.

    fp32 ONNX and torch give the same top-k up to float rounding, so the default may
    fall back to torch silently; an asked-for onnx backend that cannot serve says why.
    """
    check_backend(backend)
    if backend is not None:
        return backend
    if not onnxruntime_available():
        return "torch"
    if _cached_export_exists(source):
        return "onnx"
    if importlib.util.find_spec("onnx") is None or importlib.util.find_spec("torch") is None:
        return "torch"  # cannot export, and nothing exported yet
    if not _export_folder_writable():
        return "torch"  # an export could not be kept: the run goes on without one
    try:
        read_layout(source)
    except (RagcovError, OSError, ValueError):
        return "torch"
    return "onnx"


def _export_folder_writable() -> bool:
    """Whether an export can be written into the cache folder (a read-only or immutable
    folder, or a file where the folder should be, must cost the export, not the run)."""
    folder = cache_dir() / "onnx"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


# ------------------------------------------------------------------------------ the export
def export_paths(layout: ModelLayout, int8: bool) -> tuple[Path, Path]:
    key = f"{layout.fingerprint()}-opset{OPSET}-v{EXPORT_VERSION}"
    folder = cache_dir() / "onnx" / key
    name = "model-int8.onnx" if int8 else "model.onnx"
    return folder / name, folder / f"{name}.json"


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sound(model: Path, meta: Path) -> str | None:
    """Why a cached graph cannot be trusted, or None: its digest must match the one recorded."""
    if not model.is_file() or not meta.is_file():
        return "missing"
    try:
        recorded = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "its record is unreadable"
    if not isinstance(recorded, dict) or recorded.get("sha256") != _file_sha256(model):
        return "its contents do not match the digest recorded when it was written"
    return None


def _export_fp32(layout: ModelLayout, target: Path) -> list[str]:
    """Export the transformer (token embeddings out) with dynamic batch and sequence axes."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise RagcovError("exporting the model for the onnx backend needs torch and transformers: "
                          "pip install 'ragcov[dense]' (or use --backend torch)") from exc
    if importlib.util.find_spec("onnx") is None:
        raise RagcovError("exporting the model for the onnx backend needs the onnx package: "
                          "pip install 'ragcov[onnx]' (or use --backend torch)")
    import inspect
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    # eager attention: the exported graph then keeps the attention mask as an input for any shape.
    model = AutoModel.from_pretrained(str(layout.transformer), attn_implementation="eager").eval()
    accepted = inspect.signature(model.forward).parameters
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs))).last_hidden_state

    sample = {"input_ids": torch.tensor([[101, 7592, 2088, 102], [101, 1037, 102, 0]]),
              "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
              "token_type_ids": torch.zeros((2, 4), dtype=torch.long)}
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["token_embeddings"] = {0: "batch", 1: "sequence"}
    with atomic_path(target) as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(TokenEmbeddings(model), tuple(sample[n] for n in names), str(tmp),
                          input_names=names, output_names=["token_embeddings"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    return names


def _quantize(fp32: Path, target: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise RagcovError("the onnx-int8 backend needs the onnx package: pip install 'ragcov[onnx]'"
                          ) from exc
    import logging

    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # its "consider pre-processing" advice
    try:
        with atomic_path(target) as tmp:
            # Per-channel scales: recall@5 against fp32 0.88 on the bundled sample, 0.75 per tensor.
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.getLogger().setLevel(quiet)


def exported_model(layout: ModelLayout, int8: bool) -> Path:
    """The cached graph for this model and settings, exported (and checked) when needed."""
    model, meta = export_paths(layout, int8)
    problem = _sound(model, meta)
    if problem is None:
        return model
    if problem != "missing":
        warn(f"ONNX export cache {model}: {problem}; exporting it again")
    if int8:
        source = exported_model(layout, False)
        _quantize(source, model)
    else:
        _export_fp32(layout, model)
    write_json_atomic(meta, {"sha256": _file_sha256(model), "opset": OPSET, "int8": int8,
                             "export_version": EXPORT_VERSION, "model": str(layout.folder)})
    return model


# ----------------------------------------------------------------------------- the encoder
class _Hook:
    def __init__(self, hooks: list[Callable[..., None]], fn: Callable[..., None]) -> None:
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class OnnxEncoder:
    """``SentenceTransformer.encode``'s contract on ONNX Runtime, for the calls ragcov makes."""

    def __init__(self, source: str, int8: bool = False) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise RagcovError("the onnx backend needs onnxruntime and tokenizers: "
                              "pip install 'ragcov[onnx]' (or use --backend torch)") from exc
        self._ort = ort
        self.layout = read_layout(source)
        self.backend = "onnx-int8" if int8 else "onnx"
        self.path = exported_model(self.layout, int8)
        tok = Tokenizer.from_file(str(self.layout.tokenizer_file))
        tok.enable_truncation(max_length=self.layout.max_seq_length)
        tok.no_padding()
        self._tokenizer = tok
        self._pad_id = self._pad_token_id()
        self._threads = default_threads()
        self._sessions: dict[int, Any] = {}
        try:
            self._session(self._threads)
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own classes
            warn(f"ONNX export cache {self.path}: cannot be loaded ({type(exc).__name__}); "
                 "exporting it again")
            self.path.unlink(missing_ok=True)
            self.path = exported_model(self.layout, int8)
            self._sessions.clear()
            self._session(self._threads)
        self._inputs = [i.name for i in self._session(self._threads).get_inputs()]
        self._hooks: list[Callable[..., None]] = []

    def _pad_token_id(self) -> int:
        cfg_file = self.layout.transformer / "tokenizer_config.json"
        pad = "[PAD]"
        if cfg_file.is_file():
            cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
            value = cfg.get("pad_token")
            pad = value.get("content", pad) if isinstance(value, dict) else (value or pad)
        found = self._tokenizer.token_to_id(str(pad))
        return int(found) if found is not None else 0

    def _session(self, threads: int) -> Any:
        if threads not in self._sessions:
            opts = self._ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            self._sessions[threads] = self._ort.InferenceSession(
                str(self.path), sess_options=opts, providers=["CPUExecutionProvider"])
        return self._sessions[threads]

    @contextlib.contextmanager
    def pinned_threads(self, n: int) -> Iterator[None]:
        """Encode under ``n`` intra-op threads (one session per count), as torch_threads does for torch."""
        before, self._threads = self._threads, n
        try:
            yield
        finally:
            self._threads = before

    def register_forward_hook(self, fn: Callable[..., None]) -> _Hook:
        """Called after every batch, as a torch module's forward hook is (progress bars use it)."""
        self._hooks.append(fn)
        return _Hook(self._hooks, fn)

    def get_sentence_embedding_dimension(self) -> int:
        return self.layout.dimension

    def _batch(self, texts: list[str]) -> np.ndarray:
        if self.layout.lower_case:  # sentence-transformers lower-cases before its tokenizer
            texts = [t.lower() for t in texts]
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        types = np.zeros((len(texts), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        tokens = self._session(self._threads).run(None, {n: feeds[n] for n in self._inputs})[0]
        features = {"input_ids": ids}
        for hook in list(self._hooks):
            hook(self, (features,), None)
        return self._pool(tokens.astype(np.float32, copy=False), mask)

    def _pool(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[:, :, None].astype(np.float32)
        parts = []
        for mode in self.layout.pooling:
            if mode == "cls_token":
                parts.append(tokens[:, 0])
            elif mode == "max_tokens":
                parts.append(np.where(m > 0, tokens, -1e9).max(axis=1))
            else:
                summed = (tokens * m).sum(axis=1)
                counts = np.clip(m.sum(axis=1), 1e-9, None)
                parts.append(summed / (counts if mode == "mean_tokens" else np.sqrt(counts)))
        return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]

    def encode(self, sentences: Sequence[str], batch_size: int = 32, normalize_embeddings: bool = False,
               convert_to_numpy: bool = True, show_progress_bar: bool = False,
               **_: Any) -> np.ndarray:
        """Batches of similar lengths (as sentence-transformers sorts them), in the input's order out.

        One string gives one vector, as ``SentenceTransformer.encode`` does, so code written
        for sentence-transformers (a LangChain or LlamaIndex embedding class) works as is.
        """
        if isinstance(sentences, str):
            return self.encode([sentences], batch_size=batch_size,
                               normalize_embeddings=normalize_embeddings)[0]
        texts = list(sentences)
        out = np.empty((len(texts), self.layout.dimension), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            pick = order[start:start + batch_size]
            out[pick] = self._batch([texts[int(i)] for i in pick])
        if self.layout.normalize or normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.clip(norms, 1e-12, None)
        return out
