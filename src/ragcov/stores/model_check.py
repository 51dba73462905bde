"""Is this the model that made a store's vectors? Re-embed a sample of its texts and compare.

A store keeps vectors, and not always the name of the model that made them: a Chroma
collection built by LangChain records no embedding function, chromadb records
``default`` when the vectors were added from outside, FAISS, Qdrant and Milvus record
nothing. Queries embedded with another model are searched in another space, and the
coverage that comes back is noise reported with exit 0. The model that made a vector
gives it back, to rounding, when it re-embeds the same text; another model does not,
even one whose vectors have the same length. So the model is never assumed: a seeded
sample of stored texts is re-embedded with the candidate and compared, vector by
vector, with what the store holds.

Measured on the first 60 FinQA sample pages (319 chunks, the seeded sample of 32):
MiniLM against its own vectors gives a mean cosine of 1.0000 (also stored as float16,
or encoded one text at a time unnormalised); against the same vectors turned by a
random rotation, -0.02; MiniLM's weights with CLS instead of mean pooling, 0.41; MiniLM
cut at 128 tokens instead of 256, 0.955 (long chunks really do embed differently).
The threshold of 0.99 sits between them: storage precision and batching never fall
below it, another model or another setting of the same one does.

:func:`compare_vectors` takes only texts, stored vectors and an encoder, so any store
reader (one over SQL included) can call it; :func:`ragcov.retrievers.store.settle_model` is
the policy the store and dense retrievers apply with it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

SAMPLE_SIZE = 32  # stored texts re-embedded: a second on CPU for MiniLM
SAMPLE_SEED = 0  # the same sample every run, so the verdict is reproducible
MIN_MEAN_COSINE = 0.99

Vector = Sequence[float]


class StoreModelWarning(UserWarning):
    """``--model`` disagrees with the store's vectors: the run goes on, as the user asked."""


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """What comparing ``model``'s embeddings with the stored vectors found.

    ``mean_cosine`` is None when no cosine could be computed: ``problem`` says why
    (different lengths: a disagreement; no stored vectors: ``checked`` is False).
    """

    model: str
    compared: int
    mean_cosine: float | None
    problem: str | None = None
    checked: bool = True
    form: str = "text"  # what was embedded: "text", or a framework's form ("LlamaIndex metadata + text")

    @property
    def agrees(self) -> bool:
        return self.mean_cosine is not None and self.mean_cosine >= MIN_MEAN_COSINE

    @property
    def verdict(self) -> str:
        """What the data file records: stable across runs (the cosine's last digits are not)."""
        if not self.checked:
            return "unchecked"
        return "agrees" if self.agrees else "disagrees"

    def describe(self) -> str:
        if self.mean_cosine is None:
            return self.problem or "nothing compared"
        what = "stored texts" if self.form == "text" else f"stored texts as {self.form}"
        return (f"mean cosine {self.mean_cosine:.4f} between {self.model}'s embeddings of "
                f"{self.compared} {what} and their stored vectors")


def compare_vectors(texts: Sequence[str], stored: Sequence[Vector | None],
                    encode: Callable[[list[str]], Any], model: str) -> ModelCheck:
    """Embed ``texts`` with ``encode`` and compare each with its stored vector.

    Pairs whose text is empty or whose vector the store did not give are skipped.
    """
    import numpy as np

    pairs = [(t, v) for t, v in zip(texts, stored) if t and v is not None and len(v)]
    if not pairs:
        return ModelCheck(model, 0, None, "the store gave no stored vectors to compare with",
                          checked=False)
    held = np.asarray([v for _, v in pairs], dtype=np.float64)
    made = np.asarray(encode([t for t, _ in pairs]), dtype=np.float64)
    if held.ndim != 2 or made.shape[-1] != held.shape[-1]:
        return ModelCheck(model, len(pairs), None,
                          f"{model} makes {made.shape[-1]}-dimensional vectors and the store holds "
                          f"{held.shape[-1]}-dimensional ones")
    norms = np.linalg.norm(held, axis=1) * np.linalg.norm(made, axis=1)
    cosines = np.einsum("ij,ij->i", held, made) / np.where(norms > 0, norms, 1.0)
    return ModelCheck(model, len(pairs), float(cosines.mean()))


def sample_positions(texts: Sequence[str], n: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED) -> list[int]:
    """Up to ``n`` positions of chunks that have text, drawn with a fixed seed, in corpus order."""
    candidates = [i for i, t in enumerate(texts) if t and t.strip()]
    if len(candidates) <= n:
        return candidates
    return sorted(random.Random(seed).sample(candidates, n))
