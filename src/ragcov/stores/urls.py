"""Store URLs: which engine, where, which collection; and the registry that opens them.

``chroma:///abs/path?collection=docs`` names a folder on disk (``chroma://rel/path``
a relative one); ``chroma+http://127.0.0.1:8000?collection=docs`` a server;
``postgresql://USER@HOST:PORT/DB?table=T`` a pgvector table (``postgres://`` and
SQLAlchemy's ``postgresql+psycopg://`` too, as applications write them). A
LlamaIndex storage folder is also recognised by the files in it, without a scheme.
A LangChain ``FAISS.save_local`` folder is recognised only to refuse it: reading it
unpickles ``index.pkl``, so it opens only as ``faiss:///PATH?trust=pickle``.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from ragcov.errors import RagcovError
from ragcov.redaction import redact_url

if TYPE_CHECKING:
    from ragcov.stores.base import VectorStore

SERVER_SCHEMES = {"chroma", "qdrant", "milvus"}
POSTGRES_SCHEMES = {"postgresql", "postgres"}
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
FAISS_FILES = ("index.faiss", "index.pkl")
LLAMAINDEX_FILES = ("docstore.json", "index_store.json")


@dataclass(slots=True)
class StoreURL:
    """A parsed store URL: ``path`` for a store on disk, ``server`` (``http://h:p``) for one running."""

    scheme: str
    url: str
    path: str | None = None
    server: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    def param(self, *names: str) -> str | None:
        for name in names:
            if self.params.get(name):
                return self.params[name]
        return None


def _opener(module: str, name: str) -> Callable[[StoreURL], VectorStore]:
    """The factory of one engine: its module (and client) is imported only when it is opened."""
    def open_engine(url: StoreURL) -> VectorStore:
        return getattr(importlib.import_module(module), name)(url)
    return open_engine


# scheme -> factory, the same style as the retriever registry
# (:data:`ragcov.retrievers.factory.RETRIEVERS`); ``+http``/``+https`` variants reach a server.
REGISTRY: dict[str, Callable[[StoreURL], VectorStore]] = {
    "chroma": _opener("ragcov.stores.chroma", "ChromaStore"),
    "qdrant": _opener("ragcov.stores.qdrant", "QdrantStore"),
    "lancedb": _opener("ragcov.stores.lancedb", "LanceDBStore"),
    "milvus": _opener("ragcov.stores.milvus", "MilvusStore"),
    "faiss": _opener("ragcov.stores.faiss", "FAISSStore"),
    "llamaindex": _opener("ragcov.stores.llamaindex", "LlamaIndexStore"),
    "postgresql": _opener("ragcov.stores.pgvector", "PgVectorStore"),
    "postgres": _opener("ragcov.stores.pgvector", "PgVectorStore"),
}


def detected_scheme(path: Path) -> str | None:
    """``faiss`` or ``llamaindex`` for a folder those libraries saved, else None.

    ``faiss`` is only ever an answer for the error that says how to opt in
    (:func:`parse_store_url`): it is never opened from detection.
    """
    if path.is_dir():
        if all((path / f).is_file() for f in FAISS_FILES):
            return "faiss"
        if all((path / f).is_file() for f in LLAMAINDEX_FILES):
            return "llamaindex"
    return None


def is_store_url(source: str | os.PathLike[str]) -> bool:
    """``scheme://...`` (not ``C:/...``), or a folder FAISS or LlamaIndex saved."""
    text = os.fspath(source)
    if URL.match(text):
        return True
    return detected_scheme(Path(text)) is not None


def parse_store_url(source: str | os.PathLike[str]) -> StoreURL:
    """Parse a store URL (or a detected folder); an unknown scheme is a one-line error."""
    text = os.fspath(source)
    detected = detected_scheme(Path(text)) if ":" not in text.split("/", 1)[0] else None
    if detected == "faiss":
        # Recognising a folder must never choose a reader that runs code from it.

        require_trust(StoreURL(scheme="faiss", url=f"faiss://{Path(text).resolve()}"),
                      f"{text} is a LangChain FAISS folder: reading it unpickles index.pkl")
    if detected:
        return StoreURL(scheme=detected, url=text, path=text)
    parts = urlsplit(text)
    scheme, _, transport = parts.scheme.lower().partition("+")
    if scheme not in REGISTRY:
        known = ", ".join(f"{s}://" for s in REGISTRY)
        # A mistyped database URL may carry a password: the message shows the URL without it.
        raise RagcovError(f"{redact_url(text) if parts.netloc else text}: unknown store scheme "
                          f"{parts.scheme + '://'!r} "
                          f"(expected one of {known}, or a file or folder)")
    params = dict(parse_qsl(parts.query))
    if scheme in POSTGRES_SCHEMES:
        # A connection string, not a path: libpq reads host, socket and credentials from it.
        return StoreURL(scheme=scheme, url=text, server=text, params=params)
    if transport:
        if transport not in ("http", "https") or scheme not in SERVER_SCHEMES:
            raise RagcovError(f"{text}: unknown store scheme {parts.scheme!r} "
                              f"(servers: {', '.join(s + '+http://' for s in sorted(SERVER_SCHEMES))})")
        if not parts.netloc:
            raise RagcovError(f"{text}: no host:port after {parts.scheme}://")
        return StoreURL(scheme=scheme, url=text, server=f"{transport}://{parts.netloc}",
                        params=params)
    path = parts.netloc + parts.path  # chroma:///abs and chroma://relative
    if not path:
        raise RagcovError(f"{text}: no path (expected {scheme}:///PATH or {scheme}://RELATIVE/PATH)")
    if not Path(path).exists():
        raise RagcovError(f"{text}: no such store ({path}: no such file or directory)")
    return StoreURL(scheme=scheme, url=text, path=path, params=params)


def open_store(source: str | os.PathLike[str], doc_key: str | None = None) -> VectorStore:
    """Open the store a URL names, importing only that engine's client."""
    parsed = parse_store_url(source)
    opener = REGISTRY[parsed.scheme]
    try:
        return opener(parsed)
    except RagcovError:
        raise
    except Exception as exc:  # noqa: BLE001 - each client raises its own kind for "no server"
        # The client's own words, on one line; the address is shown without any credentials.
        # A damaged local store (a chroma.sqlite3 that is not a database) is the same case.
        words = " ".join(str(exc).split())[:300] or type(exc).__name__
        if parsed.server:
            raise RagcovError(f"{parsed.scheme}+{public_address(parsed.server)}: cannot read the "
                              f"{parsed.scheme} server ({words})") from None
        raise RagcovError(f"{parsed.path}: cannot read the {parsed.scheme} store ({words})") from None


def public_address(server: str) -> str:
    parts = urlsplit(server)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}"


# A URL's own checks, before any client opens the store it names.
TRUST_PARAM, TRUST_PICKLE = "trust", "pickle"


def require_trust(url: StoreURL, what: str) -> None:
    """Refuse, in one line that says how to opt in, to open a store whose reading unpickles.

    Unpickling runs whatever code the file names, so a corpus folder from anywhere
    else could run a command on this machine. Only ``trust=pickle`` in the URL, typed
    by the user for this store, says the folder is theirs.
    """
    if url.params.get(TRUST_PARAM) == TRUST_PICKLE:
        return
    raise RagcovError(f"{url.url}: {what}, which runs any code the file holds, so it is not "
                      f"opened unless you trust it: if this store is yours, use "
                      f"--corpus '{with_param(url.url, TRUST_PARAM, TRUST_PICKLE)}'")


def local_folder(url: StoreURL, marker: str, what: str) -> None:
    """Refuse a path that is not already such a store: its client would make one there.

    Chroma and Qdrant create their files in any folder they are pointed at; a run
    that reads a store must leave a mistyped path as it found it.
    """
    folder = Path(url.path or "")
    if not folder.is_dir():
        raise RagcovError(f"{url.url}: {folder} is not a folder ({what} is a folder)")
    if not (folder / marker).is_file():
        raise RagcovError(f"{url.url}: {folder} is not {what} (no {marker} in it); "
                          "ragcov reads stores and never makes one")


def with_param(url: str, name: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{name}={value}"


COPY_TRIES = 3


def folder_state(path: Path, pattern: str = "*", skip: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """Each file under ``path`` matching ``pattern`` (a file itself, when ``path`` is one)
    with its size and modification time: two equal states bracket a read no write landed in."""
    import fnmatch

    if path.is_file():
        files = [path]
    else:
        files = sorted(f for f in path.rglob(pattern) if f.is_file()
                       and not any(fnmatch.fnmatch(f.name, s) for s in skip))
    state = []
    for f in files:
        try:
            st = f.stat()
        except OSError:  # removed while listed: a write
            state.append((str(f), None, None))
            continue
        state.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(state)


def changed_while_read(url: str, tries: int = 1) -> RagcovError:
    """The one line for a store written while ragcov read it: never a torn read."""
    again = f" ({tries} tries)" if tries > 1 else ""
    return RagcovError(f"{url}: the store changed while ragcov read it{again}: the app is writing "
                       "it; read it again when its writes are done (ragcov reads one consistent "
                       "state or none)")


def _copy(source: Path, target: Path, skip: tuple[str, ...]) -> None:
    import shutil

    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(*skip))
    else:
        shutil.copy2(source, target)


def private_copy(url: StoreURL, owner: object, skip: tuple[str, ...] = ()) -> str:
    """A copy of a local store (folder or file) that ``owner`` reads instead of the original.

    Qdrant's local mode and Milvus Lite lock their store for one client as long as it is
    open, and a run keeps its store open to search it: the app's own tests, run beside
    ragcov (the pytest plugin with the store URL as corpus), could not open their store.
    The copy is ragcov's alone, taken when the store is opened (the store as the app left
    it), and removed when ``owner`` is; ``skip`` names lock files not to copy.
    """
    import shutil
    import tempfile
    import weakref

    source = Path(url.path or "")
    scratch = tempfile.mkdtemp(prefix="ragcov-store-")
    target = Path(scratch) / source.name
    # A copy taken while the app writes may hold half a write: the store's files are
    # compared before and after, and a copy a write landed in is taken again.
    for _ in range(COPY_TRIES):
        before = folder_state(source, skip=skip)
        try:
            _copy(source, target, skip)
        except OSError as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise RagcovError(f"{url.url}: cannot copy the store to read it without locking it "
                              f"({exc})") from None
        if folder_state(source, skip=skip) == before:
            break
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
        raise changed_while_read(url.url, COPY_TRIES)
    weakref.finalize(owner, shutil.rmtree, scratch, True)
    return str(target)
