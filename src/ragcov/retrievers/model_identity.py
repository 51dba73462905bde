"""An embedding model known by its content, not by the name it was given.

A name is not an identity: a model fine-tuned and saved again at the same path, or
another model at the same relative path (``./m`` run from another folder), keeps the
name while every vector changes. Cached corpus vectors of the old model searched with
the new model's query vectors give a coverage that is simply wrong, with nothing to
warn of it. So the embedding cache, the HNSW graph beside it and the retriever
fingerprint in the data file (compared by ``--append``, ``combine``, ``diff`` and
``probe``) all take the model's *digest*:

- a folder on disk: the SHA-256 of its weight, tokenizer and config files (names and
  contents). Each file's hash is kept in the cache folder under its absolute path,
  size, modification time and inode, so a warm run stats the files and hashes nothing;
- a hub name found in the Hugging Face cache: the revision (commit) of the snapshot it
  loads from, which names the content as a hash does.

The absolute path goes into the fingerprint too, to tell a reader which folder it was;
it is not compared (the same model in two checkouts is the same model).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcov.destinations import NotOurs
from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir
from ragcov.user_warnings import NotSavedWarning, warn

# What decides a model's vectors: weights, tokenizer, configuration. Not READMEs, licences,
# training logs or pictures, which a user may edit without changing one vector.
_MODEL_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack",
                             ".json", ".txt", ".model", ".onnx", ".gguf", ".npy", ".npz", ".spm"})
_IGNORED_NAMES = frozenset({"readme.txt", "license.txt", "notice.txt", "requirements.txt"})
_BLOCK = 1 << 22
_DIGEST_LEN = 24


@dataclass(frozen=True)
class ModelIdentity:
    """The model a retriever embeds with: its name, its content digest and its folder."""

    name: str
    digest: str | None = None
    path: str | None = None

    def fingerprint(self) -> dict[str, Any]:
        """The model's entries of a retriever fingerprint (``model_path`` is not compared)."""
        fp: dict[str, Any] = {"model": self.name}
        if self.digest:
            fp["model_digest"] = self.digest
        if self.path:
            fp["model_path"] = self.path
        return fp

    @property
    def cache_key(self) -> str:
        """What keys cached vectors: the digest; the name only when no content can be read."""
        return self.digest or f"name:{self.name}"


def identify_model(name: str, source: str) -> ModelIdentity:
    """``name`` as the fingerprint calls it, known by the content of what ``source`` loads.

    Never downloads: a hub name not yet in the local cache is known by name until the
    encoder has fetched it (callers identify after loading).
    """
    folder = _model_folder(source)
    if folder is None:
        return ModelIdentity(name)
    revision = _hub_revision(folder)
    digest = f"hub:{revision}" if revision else folder_digest(folder)
    return ModelIdentity(name, digest, str(folder))


def _model_folder(source: str) -> Path | None:
    path = Path(source).expanduser()
    if path.exists():
        return path.resolve()
    found = local_folder(source)
    return found.resolve() if found is not None else None


def local_folder(source: str) -> Path | None:
    """The model's folder on disk: a path, or a name already in the Hugging Face cache. Never downloads."""
    path = Path(source)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not here": torch loads it its own way
        return None


def _hub_revision(folder: Path) -> str | None:
    """The commit of a Hugging Face cache snapshot (``models--org--name/snapshots/<commit>``)."""
    parts = folder.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        name = parts[-1]
        if len(name) >= 7 and all(c in "0123456789abcdef" for c in name):
            return name
    return None


def model_files(folder: Path) -> list[Path]:
    """The files whose content decides the model's vectors, in a stable order.

    Symlinked folders are followed (a model assembled from linked modules, ``1_Pooling``
    pointing elsewhere, is the model it loads), each real folder once."""
    if folder.is_file():
        return [folder]
    files = []
    seen: set[str] = set()
    for root, dirs, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:  # a link back up the tree
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .git, .cache: not the model
        for name in names:
            path = Path(root) / name
            if name.startswith(".") or path.suffix.lower() not in _MODEL_SUFFIXES \
                    or name.lower() in _IGNORED_NAMES or not path.is_file():
                continue
            files.append(path)
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def folder_digest(folder: Path) -> str:
    """SHA-256 over each model file's path (relative to ``folder``) and content hash."""
    known = _read_known()
    h = hashlib.sha256()
    changed = False
    for path in model_files(folder):
        st = path.stat()
        where = str(path.resolve())
        # ctime too: a file rewritten in place with its old size and mtime put back is new
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = known.get(where)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
            content = entry["sha256"]
        else:
            content = _file_sha256(path)
            known[where] = {"stamp": stamp, "sha256": content}
            changed = True
        rel = path.name if folder.is_file() else path.relative_to(folder).as_posix()
        h.update(f"{rel}\0{content}\n".encode())
    if changed:
        _write_known(known)
    return "sha256:" + h.hexdigest()[:_DIGEST_LEN]


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _known_path() -> Path:
    return cache_dir() / "model-digests.json"


def _read_known() -> dict[str, Any]:
    if os.path.islink(_known_path()):  # planted: its digests would name another model's
        return {}
    try:
        known = json.loads(_known_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # absent, unreadable or damaged: hash again, nothing is trusted from it
    return known if isinstance(known, dict) else {}


def _write_known(known: dict[str, Any]) -> None:
    """Keep the file hashes for the next run; a cache folder that cannot be written only
    costs the next run the hashing again (the digest itself is still right)."""
    try:
        _known_path().parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(_known_path()) as tmp:
            Path(tmp).write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
    except NotOurs as exc:  # a planted link: said, and left alone
        warn(f"model digests not saved: {exc}", NotSavedWarning)
    except (OSError, RagcovError):  # an unwritable folder: atomic_path says so in a RagcovError
        pass
