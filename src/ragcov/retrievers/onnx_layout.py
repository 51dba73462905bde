"""What sentence-transformers does around a model's transformer, read from the model's folder.

The ONNX encoder runs only the transformer; tokenisation limits, pooling and
normalisation must be the model's own for its embeddings to be the model's. They are
read from ``modules.json``, the pooling module's ``config.json`` and
``sentence_bert_config.json``; a model with a module the encoder cannot reproduce (a
Dense head, weighted-mean pooling, ...) is refused with the reason, never approximated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError
from ragcov.retrievers.model_identity import folder_digest, local_folder

_HOOKS_SUPPORTED = ("Transformer", "Pooling", "Normalize")


@dataclass(frozen=True)
class ModelLayout:
    """What sentence-transformers would do around the transformer, read from its folder."""

    folder: Path            # the sentence-transformers folder
    transformer: Path       # the transformer's own folder (config.json, weights)
    tokenizer_file: Path
    max_seq_length: int
    pooling: tuple[str, ...]  # in sentence-transformers' concatenation order
    normalize: bool
    dimension: int
    lower_case: bool = False

    def fingerprint(self) -> str:
        """The model's content digest: a model saved again, or another one copied in with
        its old files' times, never reuses an old export."""
        return folder_digest(self.folder).split(":", 1)[-1]


def read_layout(source: str) -> ModelLayout:
    """The model's layout, or RagcovError saying why ONNX cannot serve it (torch still can)."""
    folder = local_folder(source)
    if folder is None:
        raise RagcovError(f"embedding model {source!r} is not on this machine as a folder; "
                          "the onnx backend exports only local models")
    modules_file = folder / "modules.json"
    if modules_file.is_file():
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
    else:  # a plain transformers folder: sentence-transformers adds mean pooling
        modules = [{"path": "", "type": "sentence_transformers.models.Transformer"},
                   {"path": "", "type": "sentence_transformers.models.Pooling"}]
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if not kinds or kinds[0] != "Transformer" or any(k not in _HOOKS_SUPPORTED for k in kinds) \
            or kinds.count("Pooling") != 1:
        raise RagcovError(f"embedding model {source!r} has modules {kinds}: the onnx backend "
                          "supports Transformer, Pooling and Normalize only (use --backend torch)")
    transformer = folder / str(modules[0].get("path") or "")
    pooling_dir = folder / str(modules[kinds.index("Pooling")].get("path") or "")
    pool_cfg: dict[str, Any] = {}
    if (pooling_dir / "config.json").is_file() and pooling_dir != transformer:
        pool_cfg = json.loads((pooling_dir / "config.json").read_text(encoding="utf-8"))
    else:
        pool_cfg = {"pooling_mode_mean_tokens": True}
    if "pooling_mode" in pool_cfg:  # the newer form: one name or a list of names
        named = pool_cfg["pooling_mode"]
        short = {"cls": "cls_token", "max": "max_tokens", "mean": "mean_tokens",
                 "weightedmean": "weightedmean_tokens"}
        for name in [named] if isinstance(named, str) else list(named):
            pool_cfg[f"pooling_mode_{short.get(name, name)}"] = True
    modes = tuple(m for m in ("cls_token", "max_tokens", "mean_tokens", "mean_sqrt_len_tokens")
                  if pool_cfg.get(f"pooling_mode_{m}"))
    unsupported = [m for m in ("weightedmean_tokens", "lasttoken") if pool_cfg.get(f"pooling_mode_{m}")]
    if unsupported or not modes or pool_cfg.get("include_prompt") is False:
        raise RagcovError(f"embedding model {source!r}: pooling {unsupported or pool_cfg} is not "
                          "supported by the onnx backend (use --backend torch)")
    st_cfg: dict[str, Any] = {}
    for name in ("sentence_bert_config.json", "sentence_roberta_config.json"):
        if (transformer / name).is_file():
            st_cfg = json.loads((transformer / name).read_text(encoding="utf-8"))
            break
    model_cfg = json.loads((transformer / "config.json").read_text(encoding="utf-8"))
    tok_cfg_file = transformer / "tokenizer_config.json"
    tok_cfg = json.loads(tok_cfg_file.read_text(encoding="utf-8")) if tok_cfg_file.is_file() else {}
    limits = [v for v in (st_cfg.get("max_seq_length"), tok_cfg.get("model_max_length"),
                          model_cfg.get("max_position_embeddings")) if isinstance(v, int) and v > 0]
    # sentence-transformers: its own max_seq_length when set, else the smaller of the
    # tokenizer's and the model's limits.
    max_len = st_cfg.get("max_seq_length") if st_cfg.get("max_seq_length") else min(limits, default=512)
    tokenizer_file = transformer / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise RagcovError(f"embedding model {source!r} has no tokenizer.json: the onnx backend "
                          "needs a fast tokenizer (use --backend torch)")
    hidden = int(pool_cfg.get("word_embedding_dimension") or model_cfg.get("hidden_size") or 0)
    return ModelLayout(folder=folder, transformer=transformer, tokenizer_file=tokenizer_file,
                       max_seq_length=int(max_len), pooling=modes, normalize="Normalize" in kinds,
                       dimension=hidden * len(modes), lower_case=bool(st_cfg.get("do_lower_case")))
