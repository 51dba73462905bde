"""A corpus's term counts, counted once and in shards.

Cutting every chunk into words is the part of ``ragcov topics`` that grows with the
corpus (about 70 µs a chunk, in Python, against a k-means fitted on a fixed-size sample),
and it was done twice: once for the TF-IDF vectors, once for the labels. Both now read
one table, a chunks x terms count matrix, and the table can be counted in shards,
one per task, on this process or on Dask workers (``ragcov topics --engine dask``) with
the same result: each shard numbers its own terms, and the shards are joined on the
sorted vocabulary. Counts are integers, so no order of summing changes them, and every
row keeps its terms in vocabulary order, whichever engine counted it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

#: Chunks per shard: enough shards to keep every worker busy, large enough that a shard's
#: own vocabulary is most of the corpus's and the join stays cheap.
SHARD = 10_000

#: ``mapper(fn, items)``: ``[fn(item) for item in items]``, in order, wherever it runs.
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def local_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [fn(item) for item in items]


@dataclass(frozen=True)
class TermCounts:
    """Per chunk (rows, corpus order) the count of each term (columns, sorted terms)."""

    vocab: list[str]
    counts: sp.csr_matrix  # int32 counts; each row's column indices ascending


def shard_counts(texts: Sequence[str], extra_stopwords: frozenset[str] = frozenset()
                 ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """One shard's counts: its sorted terms, and the CSR arrays (indptr, indices, data)
    of its rows over those terms, indices ascending in each row."""
    from ragcov.tfidf import words

    numbers: defaultdict[str, int] = defaultdict()
    numbers.default_factory = numbers.__len__
    number = numbers.__getitem__
    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    for text in texts:
        found = words(text)
        if extra_stopwords:
            found = [w for w in found if w not in extra_stopwords]
        counted = Counter(map(number, found))
        indices.extend(counted)
        data.extend(counted.values())
        indptr.append(len(indices))
    terms = sorted(numbers)
    renumber = np.empty(len(terms), dtype=np.int32)
    for new, term in enumerate(terms):
        renumber[numbers[term]] = new
    # 32-bit counts and term numbers: half the memory of int64, and a chunk's count of one
    # word, like a shard's vocabulary, stays far below 2**31.
    matrix = sp.csr_matrix((np.asarray(data, dtype=np.int32),
                            renumber[np.asarray(indices, dtype=np.int64)],
                            np.asarray(indptr, dtype=np.int64)), shape=(len(texts), len(terms)))
    matrix.sort_indices()
    return terms, matrix.indptr, matrix.indices, matrix.data


def packed_counts(packed: tuple[str, np.ndarray], extra_stopwords: frozenset[str] = frozenset()
                  ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """:func:`shard_counts` of a shard sent as one string and its texts' lengths: Dask
    serialises a list of strings item by item (6.5 s for 100,000 chunk texts, 52 MB, on the
    2-core machine), one string as one buffer (0.4 s)."""
    joined, lengths = packed
    ends = np.cumsum(lengths).tolist()
    starts = [0, *ends[:-1]]
    return shard_counts([joined[a:b] for a, b in zip(starts, ends)], extra_stopwords)


def _pack(texts: Sequence[str]) -> tuple[str, np.ndarray]:
    return "".join(texts), np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


def term_counts(texts: Sequence[str], extra_stopwords: frozenset[str] = frozenset(),
                mapper: Mapper = local_map, shard: int | None = None) -> TermCounts:
    """The chunks' term counts (the house word rule, ``extra_stopwords`` left out), counted
    shard by shard through ``mapper``; the same table whichever mapper runs the shards."""
    shard = shard or SHARD
    starts = range(0, max(1, len(texts)), shard)
    if mapper is local_map:  # no copy of the texts to pack: the shards are counted here
        parts = [shard_counts(texts[a:a + shard], extra_stopwords) for a in starts]
    else:
        parts = mapper(partial(packed_counts, extra_stopwords=extra_stopwords),
                       [_pack(texts[a:a + shard]) for a in starts])
    vocab = sorted(set().union(*(p[0] for p in parts)))
    place = {term: i for i, term in enumerate(vocab)}
    indptrs, indices, data = [np.zeros(1, dtype=np.int64)], [], []
    offset = 0
    for terms, indptr, idx, values in parts:
        # The shard's sorted terms keep their order among all terms: rows stay ascending.
        to_global = np.fromiter((place[t] for t in terms), dtype=np.int32, count=len(terms))
        indices.append(to_global[idx])
        data.append(values)
        indptrs.append(np.asarray(indptr[1:], dtype=np.int64) + offset)
        offset += int(indptr[-1])
    counts = sp.csr_matrix((np.concatenate(data), np.concatenate(indices), np.concatenate(indptrs)),
                           shape=(len(texts), len(vocab)))
    counts.has_sorted_indices = True
    return TermCounts(vocab, counts)
