"""The distractors relation's chunks: from ``--distractors FILE``, or the bundled ones.

Distractors must come from an unrelated corpus: chunks of the corpus itself would be
duplicates (the ``duplicate`` relation's business), not distractors. The bundled
default is 330 abstract sections of PubMedQA (biomedical, MIT licence, notice beside
the file in ``ragcov/data_sample``), unrelated to the bundled FinQA pages; for a
biomedical corpus give ``--distractors`` a file from another field.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ragcov.corpus import Corpus, load_corpus
from ragcov.errors import RagcovError
from ragcov.fields import CHUNK_ID_KEYS
from ragcov.files import first_key, iter_jsonl
from ragcov.redaction import redact_url
from ragcov.stores.urls import is_store_url

BUNDLED = "pubmedqa_distractors.jsonl"


def bundled_distractors() -> Path:
    return Path(str(resources.files("ragcov") / "data_sample" / BUNDLED))


def check_distractor_path(path: str | os.PathLike[str], corpus: str | os.PathLike[str]) -> None:
    """Refuse the corpus's own file before anything is loaded."""
    if is_store_url(path):  # a store's chunks: checked by their texts once read
        return
    p = Path(path)
    if not p.exists():
        raise RagcovError(f"{p}: no such file or directory (--distractors)")
    try:
        same = Path(corpus).exists() and p.resolve() == Path(corpus).resolve()
    except OSError:
        same = False
    if same:
        raise RagcovError(f"{p}: --distractors is the corpus itself; distractors must come from "
                          "an unrelated corpus")


def _documents(path: Path) -> bool:
    """A JSONL file of whole documents (a document id and text, no chunk id)."""
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        return False
    for _, obj in iter_jsonl(path):
        return first_key(obj, CHUNK_ID_KEYS) is None
    return False


def load_distractors(path: str | os.PathLike[str] | None, corpus: Corpus, chunk_size: int,
                     chunk_overlap: int) -> tuple[Corpus, str, list[str]]:
    """The distractor chunks, where they came from, and notes for the report.

    A file of chunks is read as chunks; a file of whole documents is chunked as the
    corpus's documents are (``--chunk-size``, ``--chunk-overlap``). Texts the corpus
    holds too are left out; when that is most of them, the file is the corpus itself.
    """
    p = bundled_distractors() if path is None else path
    # Recorded in the data file and printed: a store URL's password never is.
    source = ("bundled PubMedQA sample" if path is None
              else redact_url(str(path)) if is_store_url(path) else str(path))
    split = not is_store_url(p) and _documents(Path(p))
    distractors = load_corpus(p, chunk_size=chunk_size, chunk_overlap=chunk_overlap, split=split)
    own = {c.hash for c in corpus}
    shared = [c for c in distractors if c.hash in own]
    if len(shared) * 2 >= len(distractors):
        hint = (" (the bundled distractors are PubMedQA abstracts: give --distractors a corpus "
                "from another field)" if path is None else "")
        raise RagcovError(f"{source}: the distractors are the corpus itself ({len(shared)} of "
                          f"{len(distractors)} distractor texts are chunks of the corpus); "
                          f"distractors must come from an unrelated corpus{hint}")
    notes = []
    if shared:
        distractors = Corpus([c for c in distractors if c.hash not in own],
                             chunking=distractors.chunking, source=distractors.source)
        notes.append(f"{len(shared)} distractor texts the corpus also holds were left out")
    return distractors, source, notes
