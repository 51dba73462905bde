"""Built-in lexical retriever: BM25 over the chunks, with bm25s (sparse-matrix scoring)."""

from __future__ import annotations

import itertools
import math
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ragcov.analyzer import SNOWBALL, corpus_language, terms
from ragcov.corpus import Corpus
from ragcov.errors import RagcovError
from ragcov.retrievers.base import Ranked
from ragcov.retrievers.bm25_kernel import top_k as compiled_top_k
from ragcov.retrievers.bm25_kernel import usable as compiled_usable
from ragcov.user_warnings import RetrievalWarning, warn

# Queries named in one warning; the rest of a batch is counted.
NAMED_QUERIES = 5
# Words shorter than this (alphabetic scripts) are not indexed: bm25s's default pattern
# (scikit-learn's ``\b\w\w+\b``) keeps two characters or more.
MIN_CHARS = 2
_BLOCK = 1 << 22  # index entries scored at a time


class BM25Retriever:
    def __init__(self, corpus: Corpus, k1: float = 1.5, b: float = 0.75,
                 stopwords: str | None = "en", progress: bool = True,
                 stemmer: str | None = "auto") -> None:
        try:  # its stopword lists; the index is scored as bm25s scores it (term_scores)
            import bm25s  # noqa: F401
        except ImportError as exc:
            raise RagcovError("the bm25 retriever needs bm25s: pip install 'ragcov[bm25]'") from exc
        self.corpus = corpus
        self.k1, self.b, self.stopwords = k1, b, stopwords
        self._stop = _stopword_set(stopwords)
        self.stemmer = resolve_stemmer(stemmer, corpus.texts)
        self._stem = _snowball(self.stemmer)
        # Ids in first-seen order, as bm25s.tokenize numbers them. Each text's words are
        # numbered as they are cut and kept as one flat array of 32-bit ids: kept as Python
        # lists (one int object per word), 1M chunks of 40 words were 1.8 GB at the peak.
        numbers: defaultdict[str, int] = defaultdict()
        numbers.default_factory = numbers.__len__
        number = numbers.__getitem__
        flat = array("i")
        lengths = array("q")
        for ws in _each_text_words(corpus.texts, self._stop, self._stem):
            flat.extend(map(number, ws))
            lengths.append(len(ws))
        self.vocab: dict[str, int] = dict(numbers)
        if not self.vocab:
            # bm25s would fail with "max() arg is an empty sequence".
            raise RagcovError(
                f"the bm25 retriever found no word to index in the corpus ({len(corpus)} "
                f"chunk{'s' if len(corpus) != 1 else ''}): every chunk is empty, punctuation "
                f"or {'stopwords' if stopwords else 'symbols'}; use another retriever")
        self._ids = corpus.ids
        # A (term x chunk) CSR matrix of per-term scores, bm25s's eager index: a batch of
        # queries is then one sparse product, scored as bm25s scores one query.
        self._postings = term_scores(np.frombuffer(flat, dtype=np.int32),
                                     np.frombuffer(lengths, dtype=np.int64), len(self.vocab),
                                     k1, b)
        del flat, lengths
        # A zero term score adds nothing to any sum; the compiled top-k needs every
        # stored score positive (as bm25s's default idf makes them) to track chunks.
        self._postings.eliminate_zeros()
        self._positive = bool(self._postings.nnz == 0 or self._postings.data.min() > 0)

    def fingerprint(self) -> dict[str, Any]:
        fp = {"kind": "bm25", "model": f"bm25s(k1={self.k1},b={self.b})", "index": "sparse",
              "stopwords": self.stopwords, "chunking": self.corpus.chunking}
        if self.stemmer is not None:  # absent where none stems: English runs keep their fingerprint
            fp["stemmer"] = self.stemmer
        return fp

    def retrieve(self, texts: Sequence[str], k: int) -> list[Ranked]:
        if not texts:
            return []
        kk = min(k, len(self._ids))
        tokens = _words(texts, self._stop, self._stem)
        wordless = [text for text, query_tokens in zip(texts, tokens) if not query_tokens]
        if wordless:
            _warn_wordless(wordless)
        # A query with no word to match retrieves nothing (bm25s cannot score it).
        known = self.vocab.get
        token_ids = [[i for i in map(known, ws) if i is not None] for ws in tokens]
        if self._positive and compiled_usable(len(texts), len(self._ids)):
            return self._compiled_top_k(token_ids, kk)
        return self._top_k(self._scores(token_ids), kk)

    def _compiled_top_k(self, token_ids: list[list[int]], k: int) -> list[Ranked]:
        """The same top-k as ``_top_k(_scores(...))``, scored and ranked by the numba kernel."""
        indptr, flat = _packed(token_ids)
        docs, scores = compiled_top_k(indptr, flat, self._postings, k)
        ids = self._ids
        return [[(ids[d], s) for d, s in zip(row_d, row_s) if d >= 0]
                for row_d, row_s in zip(docs.tolist(), scores.tolist())]

    def _scores(self, token_ids: list[list[int]]) -> sp.csr_matrix:
        """(query x chunk) BM25 scores of a batch, zeros left out, as bm25s computes them.

        Each query row keeps its tokens in query order, repeats included, and the product
        adds each chunk's term scores in that order in float32: bit for bit the sum
        ``bm25s.BM25.get_scores`` makes, so ties and scores are the same. A chunk sharing
        no term with the query is absent, never scored 0, and costs nothing: a batch costs
        its queries' postings, not queries x chunks.
        """
        indptr, flat = _packed(token_ids)
        queries = sp.csr_matrix((np.ones(flat.size, dtype=self._postings.dtype), flat, indptr),
                                shape=(len(token_ids), self._postings.shape[0]))
        return queries @ self._postings

    def _top_k(self, scores: sp.csr_matrix, k: int) -> list[Ranked]:
        """Per row, the top-k by score, ties by corpus order, as the dense retriever breaks them.

        bm25s's own top-k returns tied chunks in an order that changes with the corpus
        layout, and ties are common (duplicate boilerplate chunks), so which one counts as
        covered would not be reproducible.

        Vectorised over the batch: each row is cut into k slices; the smallest of the
        slices' maxima is k distinct scores' minimum, so at most the row's k-th score.
        Only scores at or above it (a few per row) are sorted, and none of the top-k, nor
        any chunk tying the k-th, is left out.
        """
        n = scores.shape[0]
        data = scores.data.astype(np.float32, copy=False)
        counts = np.diff(scores.indptr)
        floor = np.zeros(n, dtype=np.float32)
        long = np.flatnonzero(counts > k)
        if long.size:
            start, size = scores.indptr[long][:, None], counts[long][:, None]
            # Per long row: the k slice starts, then the row's end (so no slice runs
            # into the next row); the maximum after each end is computed and ignored.
            cuts = np.hstack([start + size * np.arange(k) // k, start + size]).ravel()
            maxima = np.maximum.reduceat(np.append(data, np.float32(0)), cuts)
            floor[long] = maxima.reshape(long.size, k + 1)[:, :k].min(axis=1)
        # A chunk sharing no term with the query was not retrieved: no score above 0.
        keep = (data >= np.repeat(floor, counts)) & (data > 0)
        kept = np.add.reduceat(np.append(keep, False), scores.indptr[:-1]) * (counts > 0)
        rows = np.repeat(np.arange(n), kept)
        cols, data = scores.indices[keep], data[keep]
        # One sort key per hit: a positive float32's bits grow with its value, so
        # (~bits << 32 | chunk) sorts by score descending, then corpus order, exactly.
        keys = ((~data.view(np.uint32)).astype(np.uint64) << np.uint64(32)) | \
            cols.astype(np.uint64)
        order = np.lexsort((keys, rows))
        rows, keys = rows[order], keys[order]
        first = np.searchsorted(rows, np.arange(n + 1))
        top = np.arange(rows.size) - first[rows] < k
        rows, keys = rows[top], keys[top]
        cols = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64).tolist()
        vals = (~(keys >> np.uint64(32)).astype(np.uint32)).view(np.float32).tolist()
        bounds = np.searchsorted(rows, np.arange(n + 1)).tolist()
        ids = self._ids
        return [[(ids[c], v) for c, v in zip(cols[bounds[i]:bounds[i + 1]],
                                             vals[bounds[i]:bounds[i + 1]])] for i in range(n)]


def term_scores(flat: np.ndarray, lengths: np.ndarray, n_terms: int, k1: float, b: float
                ) -> sp.csr_matrix:
    """(term x chunk) BM25 scores of a tokenised corpus (``flat``: every chunk's term ids
    in turn, ``lengths``: how many are each chunk's), bit for bit bm25s's default index
    (``BM25(k1, b).index``, Lucene's idf and term weight, float32 scores).

    bm25s counts each chunk's terms with a Counter and scores them chunk by chunk; here
    the counts are one sparse sum and the scores a few array operations, in the same
    float64 steps bm25s takes (its idf by ``math.log``, one call per distinct document
    frequency), so each stored float32 is the same. ``tests/test_bm25.py`` compares the
    two indexes.
    """
    n_docs = lengths.size
    doc = np.repeat(np.arange(n_docs, dtype=np.int32), lengths)
    # Counted as integers (a float32 sum stops counting past 2^24 repeats), made float32
    # where bm25s makes its counts float32.
    counts = sp.csr_matrix((np.ones(flat.size, dtype=np.int32), (flat, doc)),
                           shape=(n_terms, n_docs))
    del doc
    counts.sum_duplicates()  # one entry per (term, chunk): the term's count in the chunk
    df = np.diff(counts.indptr)
    values, where = np.unique(df, return_inverse=True)
    idf = np.asarray([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) if d else 0.0
                      for d in values.tolist()], dtype=np.float32)[where]
    idf = np.repeat(idf, df)  # each entry's term's idf
    avg = np.asarray(lengths, dtype=np.float64).mean()
    # Per chunk, k1 * ((1 - b) + b * l_d / l_avg), as bm25s computes it for each chunk.
    norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / avg)
    tally = counts.data
    scores = tally.view(np.float32)  # each block's scores written over its counts, once read
    for start in range(0, tally.size, _BLOCK):  # in blocks: float64 temporaries stay small
        part = slice(start, start + _BLOCK)
        tf = tally[part].astype(np.float32).astype(np.float64)
        scores[part] = idf[part].astype(np.float64) * (tf / (norm[counts.indices[part]] + tf))
    counts.data = scores
    return counts


def _packed(token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each query's term ids, in order, as CSR row pointers and one flat array."""
    lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int64,
                       count=int(indptr[-1]))
    return indptr, flat


def _stopword_set(stopwords: str | None) -> frozenset[str]:
    from bm25s.tokenization import _infer_stopwords

    return frozenset(_infer_stopwords(stopwords))


def resolve_stemmer(stemmer: str | None, texts: Sequence[str], named: str | None = None
                    ) -> str | None:
    """The Snowball stemmer BM25 uses: ``auto`` picks the corpus's language's where one
    exists (Russian 91.5% -> 98.2% hit rate on XQuAD, Arabic 93.0% -> 97.3%: see
    docs/languages.md) and PyStemmer is installed; English is not stemmed, so English
    runs rank as bm25s does by default and as every earlier recording did. ``none``
    (or None) never stems; a Snowball name (``russian``) always does. ``named``: the
    setting the value came from, said first in an error (``RAGCOV_STEMMER: ...``)."""
    if stemmer is None or stemmer == "none":
        return None
    if stemmer == "auto":
        lang, share = corpus_language(texts)
        name = SNOWBALL.get(lang or "")
        if name is None or lang == "en" or share < 0.5:
            return None
        try:
            import Stemmer  # noqa: F401
        except ImportError:
            return None
        return name
    said = f"{named}: " if named else ""
    try:
        import Stemmer
    except ImportError as exc:
        raise RagcovError(f"{said}the stemmer {stemmer!r} needs PyStemmer: pip install "
                          "'ragcov[bm25]'") from exc
    if stemmer not in Stemmer.algorithms():
        raise RagcovError(f"{said}unknown stemmer {stemmer!r}: expected auto, none or one of "
                          f"{', '.join(Stemmer.algorithms())}")
    return stemmer


def _snowball(name: str | None) -> Any:
    if name is None:
        return None
    import Stemmer

    return Stemmer.Stemmer(name)


def _words(texts: Sequence[str], stop: frozenset[str], stem: Any = None) -> list[list[str]]:
    """Each text's words by the house text rule (:mod:`ragcov.analyzer`), stopwords left
    out. On English text these are ``bm25s.tokenize(texts, return_ids=False)``'s tokens,
    the same words in the same order (``tests/test_bm25.py`` checks it); unlike bm25s's
    pattern, the rule keeps combining marks inside words (Hindi, Thai) and cuts Chinese,
    Japanese and Thai text, written without spaces, into bigrams. bm25s rebuilds its
    stopword set once per text, which made tokenising a corpus and its probes a fifth of
    a probe run: the set is built once here."""
    return list(_each_text_words(texts, stop, stem))


def _each_text_words(texts: Sequence[str], stop: frozenset[str], stem: Any = None
                     ) -> Iterator[list[str]]:
    """:func:`_words`, one text at a time."""
    if stem is None:
        return (terms(text, stop, MIN_CHARS) for text in texts)
    return (stem.stemWords(terms(text, stop, MIN_CHARS)) for text in texts)


def _warn_wordless(texts: list[str]) -> None:
    """Say which queries BM25 could not match on: they are recorded with no chunk, and a
    suite full of them would otherwise look like a retriever that finds nothing."""
    shown = ", ".join(repr(t if len(t) <= 60 else t[:57] + "...") for t in texts[:NAMED_QUERIES])
    more = f" and {len(texts) - NAMED_QUERIES} more" if len(texts) > NAMED_QUERIES else ""
    n = len(texts)
    warn(f"bm25: {n} quer{'ies have' if n != 1 else 'y has'} no word to match (only stopwords, "
         f"punctuation or nothing) and retrieve{'s' if n == 1 else ''} no chunk: {shown}{more}",
         RetrievalWarning)
