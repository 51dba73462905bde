"""The corpus: chunks with stable string ids.

Chunk ids are what every other file refers to, so they must not depend on list
positions: ids given in the input are kept; chunks cut from plain-text files get
``<document>#<n>``, or with ``chunk_ids="content"`` ``<document>@<start>-<stop>:<hash8>``
(see :func:`content_chunk_id`). Each chunk's content hash is recorded so a changed
corpus is detected (the corpus hash covers ids, document ids and content, in order).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragcov import fields
from ragcov.collector import cyclic_gc_paused
from ragcov.errors import InputFormatError, RagcovError
from ragcov.fields import (
    CHUNK_DOC_KEYS,
    CHUNK_ID_KEYS,
    CHUNK_TEXT_KEYS,
    VERSION_KEYS,
    FieldError,
    located,
)
from ragcov.files import first_key, iter_jsonl, read_text, text_hash
from ragcov.stores.base import AppIds, Reading, chunk_columns
from ragcov.stores.urls import is_store_url, open_store, parse_store_url
from ragcov.textcov import SPLIT, TextSpans, locate

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 100
#: How ragcov names the chunks it splits: ``position`` (``DOC#N``, what every file before
#: the choice existed holds) or ``content`` (``DOC@START-STOP:HASH8``).
CHUNK_ID_SCHEMES = ("position", "content")
POSITION_IDS, CONTENT_IDS = CHUNK_ID_SCHEMES
SHOW_DUPLICATES = 20  # ids listed in a duplicate-id error
SHOW_REPEATS = 5      # of which this many with their lines


def repeated_ids_message(kind: str, repeats: Sequence[tuple[str, int, int]],
                         unit: str = "line") -> str:
    """``duplicate <kind> ids: a, b (a: line 3 repeats line 1; ...)``.

    ``repeats`` holds ``(id, where, first)`` for the first repeat of each id, in file
    order; ``where`` and ``first`` are line numbers (``unit="line"``) or list
    positions (``unit="item"``).
    """
    ids = [cid for cid, _, _ in repeats]
    shown = ", ".join(ids[:SHOW_DUPLICATES])
    more = "" if len(ids) <= SHOW_DUPLICATES else f" (and {len(ids) - SHOW_DUPLICATES} more)"
    lines = "; ".join(f"{cid}: {unit} {where} repeats {unit} {first}"
                      for cid, where, first in repeats[:SHOW_REPEATS])
    if len(repeats) > SHOW_REPEATS:
        lines += "; ..."
    return f"duplicate {kind} ids: {shown}{more} ({lines})"


def corpus_digest(chunks: Iterable[tuple[str, str, str]]) -> str:
    """The corpus hash a data file records: (chunk id, document id, content hash) rows in order.

    Document ids take part: per-document reports group chunks by them, so data
    recorded under one mapping must not mix with data recorded under another.
    """
    h = hashlib.sha256()
    for row in chunks:
        h.update(b"\0".join(part.encode("utf-8") for part in row) + b"\n")
    return h.hexdigest()[:24]


@dataclass(slots=True)
class Chunk:
    """One retrievable unit. ``position`` is its index within its document."""

    id: str
    text: str
    doc_id: str
    position: int = 0
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    hash: str = ""

    def __post_init__(self) -> None:
        if not self.hash:
            self.hash = text_hash(self.text)


class Corpus(Sequence[Chunk]):
    """An ordered, id-indexed collection of chunks.

    ``chunking`` describes how the chunks were made (it is part of the retriever
    fingerprint and of the embedding-cache key).
    """

    def __init__(self, chunks: Iterable[Chunk], chunking: dict[str, Any] | None = None,
                 source: str | None = None) -> None:
        self.chunks: list[Chunk] = list(chunks)
        self.chunking: dict[str, Any] = dict(chunking or {"method": "given"})
        self.source = source
        self.store: Any = None  # the open store when the chunks were read from one
        # Each chunk's span in its document's text: known when ragcov split the documents,
        # located when they were given beside the chunks (--documents); else None.
        self.text_spans: TextSpans | None = None
        self.reading: Any = None  # how a store's rows were read (ragcov.stores.base.Reading)
        # One dict of every id at C speed; the ids repeated are looked for only when the
        # dict came out shorter than the list.
        index = dict(zip([c.id for c in self.chunks], range(len(self.chunks))))
        dupes: list[str] = []
        if len(index) != len(self.chunks):
            seen: set[str] = set()
            for chunk in self.chunks:
                if chunk.id in seen:
                    dupes.append(chunk.id)
                seen.add(chunk.id)
        if dupes:
            distinct = sorted(set(dupes))
            more = "" if len(distinct) <= 20 else f" (and {len(distinct) - 20} more)"
            raise RagcovError(f"{source + ': ' if source else ''}duplicate chunk ids: "
                              f"{', '.join(distinct[:20])}{more}")
        self._index = index
        self.positions: Mapping[str, int] = MappingProxyType(index)  # id → position, read-only
        self._hash: str | None = None

    # Sequence protocol -------------------------------------------------------
    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i):  # type: ignore[override]
        return self.chunks[i]

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._index

    # Lookups -----------------------------------------------------------------
    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.chunks]

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    def index_of(self, chunk_id: str) -> int:
        return self._index[chunk_id]

    def positions_of(self, chunk_ids: Iterable[str]) -> list[int]:
        """Each id's position (KeyError for an id not in the corpus), at the dict's own
        speed: a lookup through the read-only ``positions`` view costs about twice as
        much, 1 s of a million-retrieval import."""
        return list(map(self._index.__getitem__, chunk_ids))

    def get(self, chunk_id: str) -> Chunk:
        return self.chunks[self._index[chunk_id]]

    def unknown(self, chunk_ids: Iterable[str]) -> list[str]:
        """The ids among ``chunk_ids`` that are not in this corpus, in first-seen order."""
        return list(dict.fromkeys(c for c in chunk_ids if c not in self._index))

    @property
    def hash(self) -> str:
        """A digest of ids, document ids and contents in order: equal hashes mean the same corpus."""
        self._hash = self._hash or corpus_digest((c.id, c.doc_id, c.hash) for c in self.chunks)
        return self._hash

    def documents(self) -> dict[str, list[Chunk]]:
        docs: dict[str, list[Chunk]] = {}
        for c in self.chunks:
            docs.setdefault(c.doc_id, []).append(c)
        return docs

    def __repr__(self) -> str:
        return f"Corpus({len(self)} chunks, {len(self.documents())} documents, hash={self.hash})"

    # Constructors --------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        documents: Iterable[tuple[str, str]] | dict[str, str],
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        titles: dict[str, str] | None = None,
        source: str | None = None,
        chunk_ids: str | None = None,
    ) -> Corpus:
        """Chunk whole documents ``(doc_id, text)`` into ``<doc_id>#<n>`` chunks, or into
        :func:`content_chunk_id` ones with ``chunk_ids="content"``."""
        scheme = check_chunk_ids(chunk_ids)
        items = documents.items() if isinstance(documents, dict) else documents
        splitter = make_splitter(chunk_size, chunk_overlap)
        chunks: list[Chunk] = []
        texts: dict[str, str] = {}
        spans: dict[str, tuple[int, int]] = {}
        for doc_id, text in items:
            texts[doc_id] = text
            # The splitter's own offsets (characters): each chunk's place is known, not searched.
            for n, (start, piece) in enumerate(splitter.chunk_indices(text)):
                digest = text_hash(piece)
                stop = start + len(piece)
                cid = (f"{doc_id}#{n}" if scheme == POSITION_IDS
                       else content_chunk_id(doc_id, start, stop, digest))
                spans[cid] = (start, stop)
                chunks.append(Chunk(id=cid, text=piece, doc_id=doc_id, position=n,
                                    title=(titles or {}).get(doc_id), hash=digest))
        corpus = cls(chunks, chunking=chunking_descriptor(chunk_size, chunk_overlap, scheme),
                     source=source)
        corpus.text_spans = TextSpans(texts, spans, SPLIT)
        return corpus

    def with_documents(self, documents: Mapping[str, str]) -> Corpus:
        """Place each chunk in its document's text (``documents``: id -> text), for text
        coverage of a corpus chunked elsewhere; what cannot be placed is kept as such."""
        self.text_spans = locate(documents, ((c.id, c.doc_id, c.text) for c in self.chunks))
        return self


def chunking_descriptor(chunk_size: int, chunk_overlap: int,
                        chunk_ids: str = POSITION_IDS) -> dict[str, Any]:
    """How the chunks were cut and named. Position ids add no key, so a fingerprint
    recorded before the choice existed is the same one today (``--append`` still fits)."""
    described: dict[str, Any] = {"method": "semantic-text-splitter", "unit": "characters",
                                 "size": chunk_size, "overlap": chunk_overlap}
    if chunk_ids != POSITION_IDS:
        described["ids"] = chunk_ids
    return described


def content_chunk_id(doc_id: str, start: int, stop: int, digest: str) -> str:
    """``<doc_id>@<start>-<stop>:<first 8 hex digits of the text's SHA-256>``.

    Made of what the chunk is, not of where it falls in a list: the same text at the
    same character span of the same document has the same id on any machine and after
    any re-chunk that leaves it whole, and any other chunk has another. The span makes
    it unique (two equal passages of one document lie at two spans; one span is one
    chunk); the hash makes an edited document rename the chunks whose text changed
    even where their offsets did not.
    """
    return f"{doc_id}@{start}-{stop}:{digest[:8]}"


def check_chunk_ids(chunk_ids: str | None) -> str:
    """The id scheme named, ``position`` when none is; anything else is refused."""
    if chunk_ids is None:
        return POSITION_IDS
    if chunk_ids not in CHUNK_ID_SCHEMES:
        raise RagcovError(f"--chunk-ids must be {' or '.join(CHUNK_ID_SCHEMES)}, got {chunk_ids!r}")
    return chunk_ids


def make_splitter(chunk_size: int, chunk_overlap: int):
    """A character-budget splitter that prefers paragraph, sentence, then word boundaries.

    semantic-text-splitter is a maintained Rust library with no heavy dependencies;
    it packs the largest semantic units that fit, so chunks end on natural breaks.
    """
    if chunk_size < 1:
        raise RagcovError(f"chunk size must be at least 1, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise RagcovError(
            f"chunk overlap must be at least 0 and less than the chunk size ({chunk_size}), "
            f"got {chunk_overlap}"
        )
    from semantic_text_splitter import MarkdownSplitter

    return MarkdownSplitter(chunk_size, overlap=chunk_overlap, trim=True)


def read_chunks_jsonl(path: str | os.PathLike[str]) -> Corpus:
    """Chunks given one per JSONL line (BEIR ``corpus.jsonl`` included).

    A repeated chunk id is an error located at the line that repeats it.
    """
    chunks: list[Chunk] = []
    positions: dict[str, int] = {}
    first_line: dict[str, int] = {}
    repeats: list[tuple[str, int, int]] = []
    repeated: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        raw_id = first_key(obj, CHUNK_ID_KEYS)
        if raw_id is None:
            hint = ("; this line is a whole document (a document id and its text): give --split "
                    "to chunk the documents" if first_key(obj, CHUNK_DOC_KEYS) is not None else "")
            keys = ", ".join(CHUNK_ID_KEYS)
            raise InputFormatError(path, lineno, f"no chunk id (expected one of {keys}){hint}")
        cid = located(fields.parse_id, raw_id, path, lineno, "chunk id")
        if cid not in first_line:
            first_line[cid] = lineno
        elif cid not in repeated:
            repeated.add(cid)
            repeats.append((cid, lineno, first_line[cid]))
        text = first_key(obj, CHUNK_TEXT_KEYS)
        if not isinstance(text, str):
            raise InputFormatError(path, lineno,
                                   f"no chunk text (expected one of {', '.join(CHUNK_TEXT_KEYS)})")
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        for key in VERSION_KEYS:  # a version given beside the text is the chunk's, as in metadata
            if obj.get(key) is not None and key not in metadata:
                metadata = {**metadata, key: obj[key]}
        doc = first_key(obj, CHUNK_DOC_KEYS)
        if doc is None:
            doc = first_key(metadata, CHUNK_DOC_KEYS)
        doc_id = cid if doc is None else located(fields.parse_doc_id, doc, path, lineno, "document id")
        pos = obj.get("position")
        if not isinstance(pos, int):
            pos = positions.get(doc_id, 0)
        positions[doc_id] = pos + 1
        chunks.append(Chunk(id=cid, text=text, doc_id=doc_id, position=pos, metadata=metadata,
                            title=located(fields.parse_title, obj.get("title"), path, lineno, "title")))
    if repeats:
        raise InputFormatError(path, repeats[0][1], repeated_ids_message("chunk", repeats))
    return Corpus(chunks, chunking={"method": "given"}, source=str(path))


def read_text_folder(path: str | os.PathLike[str], chunk_size: int = DEFAULT_CHUNK_SIZE,
                     chunk_overlap: int = DEFAULT_CHUNK_OVERLAP, chunk_ids: str | None = None) -> Corpus:
    """Every .txt/.md file under ``path`` is a document, chunked; its relative path is its id."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    docs = [(f.relative_to(root).as_posix(), read_text(f)) for f in files]
    return Corpus.from_documents(docs, chunk_size, chunk_overlap, source=str(path),
                                 chunk_ids=chunk_ids)


def read_documents_jsonl(path: str | os.PathLike[str], chunk_size: int = DEFAULT_CHUNK_SIZE,
                        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
                        chunk_ids: str | None = None) -> Corpus:
    """Whole documents one per JSONL line (same keys as chunks), chunked here."""
    docs, titles = read_documents(path)
    return Corpus.from_documents(docs, chunk_size, chunk_overlap, titles=titles, source=str(path),
                                 chunk_ids=chunk_ids)


def read_documents(path: str | os.PathLike[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """``(doc id, text)`` of whole documents one per JSONL line, and their titles.

    A document id given twice is an error at the line that repeats it: two texts for
    one document would place its chunks in whichever came last.
    """
    docs: list[tuple[str, str]] = []
    titles: dict[str, str] = {}
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        doc = first_key(obj, CHUNK_DOC_KEYS + CHUNK_ID_KEYS)  # the first that is not null
        if doc is None:
            raise InputFormatError(path, lineno, "no document id (expected one of "
                                   f"{', '.join(CHUNK_DOC_KEYS + CHUNK_ID_KEYS)})")
        text = first_key(obj, CHUNK_TEXT_KEYS)
        if not isinstance(text, str):
            raise InputFormatError(
                path, lineno, f"no document text (expected one of {', '.join(CHUNK_TEXT_KEYS)})")
        doc_id = located(fields.parse_doc_id, doc, path, lineno, "document id")
        if doc_id in seen:
            raise InputFormatError(path, lineno, f"document id {doc_id!r} repeats line {seen[doc_id]}")
        seen[doc_id] = lineno
        docs.append((doc_id, text))
        if title := located(fields.parse_title, obj.get("title"), path, lineno, "title"):
            titles[doc_id] = title
    return docs, titles


def store_chunks(store: Any, doc_key: str | None = None, id_key: str | None = None,
                 reading: Reading | None = None) -> Iterator[Chunk]:
    """The store's rows as chunks, a page at a time: each page's fields are read column by
    column (:func:`ragcov.stores.base.chunk_columns`) and its texts hashed in one pass, and
    the chunks made from the columns, with no mapping of fields per row."""
    for page in chunk_columns(store, doc_key, id_key, reading):
        yield from map(Chunk, page.ids, page.texts, page.doc_ids, page.positions, page.titles,
                       page.metadata, map(text_hash, page.texts))


def read_store(source: str | os.PathLike[str], doc_key: str | None = None,
               id_key: str | None = None) -> Corpus:
    """A store's chunks with the app's ids, paged; the open store stays on for ``--retriever store``.

    ``id_key``/``doc_key`` name the metadata keys of the chunk id and the document (also
    ``?id_key=``/``?doc_key=`` in the URL; the arguments win); see
    :func:`ragcov.stores.base.chunk_columns` for what is found without them.
    """
    params = parse_store_url(source).params
    store = open_store(source)
    # A store URL may name them (pgvector's ?doc= too).
    doc_key = doc_key or params.get("doc_key") or getattr(store, "doc_key", None)
    id_key = id_key or params.get("id_key")
    reading = Reading()
    try:
        with cyclic_gc_paused():  # a chunk, a dict and a hash per row: no cycles to look for
            corpus = Corpus(store_chunks(store, doc_key, id_key, reading),
                            chunking={"method": "store", **store.describe()}, source=store.url)
    except FieldError as exc:  # a stored value that cannot be what it names
        raise RagcovError(f"{store.url}: {exc}") from None
    corpus.store = AppIds(store, reading.to_app) if reading.to_app else store
    corpus.reading = reading
    return corpus


def splits_documents(path: str | os.PathLike[str], split: bool = False) -> bool:
    """Whether :func:`load_corpus` cuts this corpus's documents itself (and so names its
    chunks), as against reading chunks that come with their ids."""
    if is_store_url(path):
        return False
    p = Path(path)
    if p.is_dir():
        return not (p / "corpus.jsonl").is_file()
    suffix = p.suffix.lower()
    return suffix in TEXT_SUFFIXES or (split and suffix in (".jsonl", ".ndjson"))


def load_corpus(path: str | os.PathLike[str], chunk_size: int = DEFAULT_CHUNK_SIZE,
                chunk_overlap: int = DEFAULT_CHUNK_OVERLAP, split: bool = False,
                doc_key: str | None = None,
                documents: str | os.PathLike[str] | None = None, id_key: str | None = None,
                chunk_ids: str | None = None) -> Corpus:
    """Chunks from a .jsonl (``split``: of documents, chunked here), BEIR folder, text files or store URL.

    ``documents`` (whole documents, JSONL) places chunks made elsewhere in their
    documents' text, for text coverage. ``chunk_ids`` names the chunks ragcov splits
    (``position``, the default, or ``content``); chunks given with their ids keep them.
    """
    scheme = check_chunk_ids(chunk_ids)
    p = Path(path)
    if is_store_url(path):
        corpus = read_store(path, doc_key, id_key)
    elif not p.exists():
        raise RagcovError(f"{p}: no such file or directory")
    elif p.is_dir():
        if (p / "corpus.jsonl").is_file():
            corpus = read_chunks_jsonl(p / "corpus.jsonl")
        else:
            corpus = read_text_folder(p, chunk_size, chunk_overlap, scheme)
    elif p.suffix.lower() in (".jsonl", ".ndjson"):
        corpus = (read_documents_jsonl(p, chunk_size, chunk_overlap, scheme) if split
                  else read_chunks_jsonl(p))
    elif p.suffix.lower() in TEXT_SUFFIXES:
        corpus = Corpus.from_documents([(p.name, read_text(p))], chunk_size, chunk_overlap,
                                       source=str(p), chunk_ids=scheme)
    else:
        raise RagcovError(
            f"{p}: unsupported corpus (expected a .jsonl of chunks, a BEIR folder with "
            "corpus.jsonl, or a folder of .txt/.md files)"
        )
    if scheme != POSITION_IDS and corpus.chunking.get("ids") != scheme:
        raise RagcovError(f"--chunk-ids {scheme} names the chunks ragcov splits (--split, a folder "
                          f"of .txt/.md files); {corpus.source}'s chunks come with their own ids")
    if len(corpus) == 0:
        raise RagcovError(f"{corpus.source}: the corpus is empty (no chunks); chunk coverage is undefined")
    if documents is not None:
        if corpus.text_spans is not None and corpus.text_spans.method == SPLIT:
            raise RagcovError("--documents places chunks made elsewhere in their documents; "
                              "ragcov split these documents itself and knows each chunk's place")
        if not Path(documents).is_file():
            raise RagcovError(f"{documents}: no such file (--documents takes a JSONL of whole "
                              "documents)")
        corpus.with_documents(dict(read_documents(documents)[0]))
    return corpus
