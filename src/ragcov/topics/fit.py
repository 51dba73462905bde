"""Chunks into topics: k-means on the chunk vectors, c-TF-IDF labels, a 2-D corpus map.

Why k-means (scikit-learn's ``KMeans``, 10 restarts, fitted on at most
:data:`FIT_SAMPLE` chunks and every chunk then given its nearest centre), measured
in docs/topics.md:

* every chunk gets a topic. A coverage report must account for every chunk;
  HDBSCAN left 43% to 91% of the chunks as noise on the sample's and PubMedQA's
  vectors, or, with a smaller minimum cluster size, put PubMedQA in two clusters;
* ``--topics N`` means N, and a seed makes the same topics again;
* it stays fast: on PubMedQA's 3,358 MiniLM vectors HDBSCAN took 12 times as long as
  k-means, and 100,000 chunks are clustered and labelled in well under a minute;
* restarts, not minibatches: ``MiniBatchKMeans`` is faster but its topics move more
  with the seed (adjusted Rand index between two seeds 0.34 against 0.58 on the
  sample's MiniLM vectors at 20 topics).

N, when not given, is the candidate with the highest mean cosine silhouette on a
sample, from 8 to 30 topics averaging at least :data:`MIN_TOPIC_CHUNKS` chunks
(:func:`choose_topic_count`).
Labels are class-based TF-IDF (as BERTopic's): a topic's chunks are read as one
document, and a term weighs by its frequency there against its frequency in all
topics, so a label names what sets the topic apart, not what every chunk says.
scikit-learn is imported here, inside the functions, and only by the commands that
cluster (``ragcov topics``); reading stored topics never loads it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ragcov.errors import RagcovError
from ragcov.topics.terms import Mapper, TermCounts, local_map, term_counts

#: KMeans is fitted on at most this many chunks (a seeded sample); the rest take their
#: nearest centre. Centres from 20,000 chunks of 100,000 are the same subjects.
FIT_SAMPLE = 20_000
#: Candidate N are scored on at most this many chunks.
SEARCH_SAMPLE = 3_000
CANDIDATES = (2, 3, 4, 6, 8, 10, 12, 15, 20, 25, 30)
#: Chosen automatically, topics average at least this many chunks ...
MIN_TOPIC_CHUNKS = 10
#: ... and there are at least this many topics once the corpus has 240 chunks.
MIN_TOPICS = 8
#: The search for N draws from this seed, whatever --seed: N depends on the data only.
SEARCH_SEED = 0
RESTARTS = 10
SEARCH_RESTARTS = 3
#: Terms kept per topic; the label is the first LABEL_TERMS of them.
TERMS = 10
LABEL_TERMS = 3
#: TF-IDF vectors are reduced to this many dimensions (LSA) before clustering.
LSA_DIMENSIONS = 100
#: The map's projection is fitted on at most this many chunks.
MAP_SAMPLE = 5_000


@dataclass
class Fitted:
    """A clustering: per chunk its topic (from 1, largest topic first), and per topic its
    terms and its most central chunk (a position)."""

    assignment: np.ndarray            # int64, per chunk, 1..N
    terms: list[list[str]]            # per topic, most distinctive first
    central: list[int]                # per topic, the chunk nearest its centre
    xy: np.ndarray                    # (n, 2) in [0, 1]: the corpus map
    candidates: dict[int, float] = field(default_factory=dict)  # auto N: N -> silhouette

    @property
    def n_topics(self) -> int:
        return len(self.terms)


def require_sklearn() -> None:
    """Clustering needs scikit-learn (the ``topics`` extra): one line that says how to get it."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise RagcovError("ragcov topics needs scikit-learn: pip install 'ragcov[topics]'") from None


def check_topic_count(n_topics: int | None, n_chunks: int, where: str) -> None:
    """Refuse an impossible request in one line, before any vector is read."""
    if n_chunks == 0:
        raise RagcovError(f"{where}: the corpus holds no chunks; there is nothing to cluster")
    if n_topics is None:
        return
    if isinstance(n_topics, bool) or not isinstance(n_topics, (int, np.integer)):
        raise RagcovError(f"--topics must be a whole number of topics, got {n_topics!r}")
    if n_topics < 1:
        raise RagcovError(f"--topics must be at least 1, got {n_topics}")
    if n_topics > n_chunks:
        raise RagcovError(f"--topics {n_topics} is more topics than the {n_chunks} chunk(s) of "
                          f"{where}; give at most {n_chunks}")


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and OpenMP on one thread while topics are made.

    The same topics on every machine: a BLAS sum splits its work by the thread count,
    and the last bits of the sample's LSA vectors moved with it (2e-4 between one and
    two threads), enough for k-means to put 220 of its 1,184 chunks in other topics.
    And speed on a shared runner: k-means on OpenMP threads that spin while the cores
    are busy elsewhere ran several times slower than on one thread.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def extra_stopwords(texts: Sequence[str]) -> frozenset[str]:
    """The stopwords of the corpus's own language (stopwordsiso, where a list exists), left
    out of topics beside :func:`ragcov.tfidf.words`' English ones, so a German topic is not
    labelled "der, und, die"."""
    from ragcov.analyzer import corpus_language, stopwords_for

    lang, share = corpus_language(texts)
    return stopwords_for(lang) if lang != "en" and share >= 0.5 else frozenset()


def corpus_terms(texts: Sequence[str], mapper: Mapper = local_map) -> TermCounts:
    """The words topics are made of and labelled by, counted per chunk: the house text rule
    (:func:`ragcov.tfidf.words`), less :func:`extra_stopwords`."""
    return term_counts(texts, extra_stopwords(texts), mapper)


def tfidf_vectors(texts: Sequence[str], seed: int = 0, terms: TermCounts | None = None) -> np.ndarray:
    """Unit rows of the chunks' TF-IDF reduced by LSA: what a BM25 run's topics cluster.

    Words are ragcov's own (:func:`corpus_terms`: the BM25 retriever's vocabulary rule,
    stopwords out), sublinear term frequency as in LSA practice. ``terms``: the chunks'
    counts when the caller has them (the labels read the same table).
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer

    terms = terms if terms is not None else corpus_terms(texts)
    if not terms.vocab:
        raise RagcovError("no chunk holds a word to cluster on (TF-IDF); use --vectors dense "
                          "or a corpus with text")
    x = TfidfTransformer(sublinear_tf=True).fit_transform(terms.counts.astype(np.float32))
    dims = min(LSA_DIMENSIONS, x.shape[1] - 1, x.shape[0] - 1)
    with one_thread(), warnings.catch_warnings():
        # Chunks that are all one text have no variance: scikit-learn's explained-variance
        # ratio (unused here) divides 0 by 0 and says so ("invalid value encountered in
        # divide"); the vectors are right, and a user has nothing to do about the notice.
        warnings.simplefilter("ignore", RuntimeWarning)
        z = (TruncatedSVD(dims, random_state=seed).fit_transform(x) if dims >= 2
             else x.toarray()).astype(np.float32)
    return _unit_rows(z)


def _unit_rows(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def fit(vectors: np.ndarray, texts: Sequence[str], n_topics: int | None = None,
        seed: int = 0, terms: TermCounts | None = None, mapper: Mapper = local_map) -> Fitted:
    """Cluster ``vectors`` (one row per chunk, in corpus order) into topics.

    Deterministic for a given ``seed``: the samples, the restarts and the projection
    all draw from it, and topics are numbered by size (ties: the first chunk). ``terms``:
    the chunks' word counts when the caller has them, else counted through ``mapper``
    (here, or on Dask workers: the same counts).
    """
    n = len(vectors)
    check_topic_count(n_topics, n, "the data file")
    if len(texts) != n:
        raise RagcovError(f"{len(texts)} chunk texts for {n} vectors")
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(v).all():
        raise RagcovError("the chunk vectors hold NaN or infinite values; rebuild them "
                          "(`ragcov index`) or use --vectors tfidf")
    rng = np.random.default_rng(seed)
    candidates: dict[int, float] = {}
    with one_thread():
        if n_topics is None:
            n_topics, candidates = choose_topic_count(v)
        raw = _kmeans(v, n_topics, seed, rng)
        assignment, order = _number_by_size(raw)
        central = _central(v, assignment, len(order))
        xy = map_positions(v, assignment, seed)
    terms = terms if terms is not None else corpus_terms(texts, mapper)
    return Fitted(assignment=assignment, terms=class_terms(texts, assignment, len(order), terms=terms),
                  central=central, xy=xy, candidates=candidates)


def _sample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    return np.arange(n) if n <= size else np.sort(rng.choice(n, size, replace=False))


def _kmeans(v: np.ndarray, k: int, seed: int, rng: np.random.Generator) -> np.ndarray:
    """Per chunk, its centre's number: KMeans fitted on a sample, every chunk assigned."""
    if k == 1:
        return np.zeros(len(v), dtype=np.int64)
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    rows = _sample(len(v), FIT_SAMPLE, rng)
    with warnings.catch_warnings():
        # Fewer distinct vectors than topics: the empty topics are dropped below.
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(k, n_init=RESTARTS, random_state=seed).fit(v[rows])
    if rows.size == len(v):
        return km.labels_.astype(np.int64)
    return np.concatenate([km.predict(v[a:a + 50_000]) for a in range(0, len(v), 50_000)]
                          ).astype(np.int64)


def _number_by_size(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Topics numbered 1..N, largest first (ties: the one whose first chunk comes first);
    centres no chunk took are dropped."""
    sizes = np.bincount(raw)
    used = np.flatnonzero(sizes)
    first = np.full(sizes.size, len(raw), dtype=np.int64)
    np.minimum.at(first, raw, np.arange(len(raw)))
    order = used[np.lexsort((first[used], -sizes[used]))]
    number = np.zeros(sizes.size, dtype=np.int64)
    number[order] = np.arange(1, order.size + 1)
    return number[raw], order


def _central(v: np.ndarray, assignment: np.ndarray, n_topics: int) -> list[int]:
    """Per topic, the chunk most similar to its mean direction (cosine; ties: corpus order)."""
    out = []
    for t in range(1, n_topics + 1):
        rows = np.flatnonzero(assignment == t)
        centre = v[rows].mean(axis=0)
        norm = float(np.linalg.norm(centre))
        if norm == 0:
            out.append(int(rows[0]))
            continue
        out.append(int(rows[np.argmax(v[rows] @ (centre / norm))]))
    return out


def choose_topic_count(v: np.ndarray) -> tuple[int, dict[int, float]]:
    """N with the best mean cosine silhouette on a sample (ties: the smaller N).

    Candidates run from :data:`MIN_TOPICS` (fewer for a small corpus, down to 2) to
    30, and only those whose topics average :data:`MIN_TOPIC_CHUNKS` chunks or more:
    a coverage figure over a handful of chunks says little. The floor is there
    because the silhouette of text embeddings is highest for two or three broad
    splits (the sample's MiniLM vectors peak at 2: its table pages against its prose),
    and a report of two topics names no subject. The search draws from a fixed seed,
    so N is the data's: two ``--seed`` values give the same N.
    """
    n = len(v)
    top = max(2, n // MIN_TOPIC_CHUNKS)
    floor = max(2, min(MIN_TOPICS, n // (3 * MIN_TOPIC_CHUNKS)))
    cands = [c for c in CANDIDATES if floor <= c <= top and c < n]
    if not cands:
        return 1, {}  # two chunks or fewer
    sample = v[_sample(n, SEARCH_SAMPLE, np.random.default_rng(SEARCH_SEED))]
    tried = [c for c in cands if c < len(sample)]
    # Here, not on Dask workers: a fixed-size sample (seconds at any corpus size), where a
    # fresh worker would first spend longer importing scikit-learn.
    found = [candidate_silhouette(sample, c) for c in tried]
    scores = {c: s for c, s in zip(tried, found) if s is not None}
    if not scores:
        return 1, {}
    best = max(scores.values())
    return min(c for c, s in scores.items() if s == best), scores


def candidate_silhouette(sample: np.ndarray, c: int) -> float | None:
    """The mean cosine silhouette of ``c`` topics on the search sample (None: every sampled
    chunk the same vector)."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import silhouette_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = KMeans(c, n_init=SEARCH_RESTARTS, random_state=SEARCH_SEED).fit_predict(sample)
    if np.unique(labels).size < 2:
        return None
    return round(float(silhouette_score(sample, labels, metric="cosine")), 4)


def class_terms(texts: Sequence[str], assignment: np.ndarray, n_topics: int,
                top: int = TERMS, terms: TermCounts | None = None) -> list[list[str]]:
    """Per topic, its most distinctive terms by class-based TF-IDF.

    ``W(t, c) = tf(t, c) / |c| * log(1 + A / f(t))``: the term's share of the topic's
    words, against ``A`` (the mean number of words per topic) over the term's count in
    all topics. Ties go to the term first in alphabetical order.
    """
    import scipy.sparse as sp

    terms = terms if terms is not None else corpus_terms(texts)
    if not terms.vocab:  # no chunk holds a word: topics without terms
        return [[] for _ in range(n_topics)]
    vocab = np.asarray(terms.vocab, dtype=object)
    onehot = sp.csr_matrix((np.ones(len(assignment)), (assignment - 1, np.arange(len(assignment)))),
                           shape=(n_topics, len(assignment)))
    per_topic = np.asarray((onehot @ terms.counts).todense(), dtype=np.float64)
    return weighted_terms(per_topic, vocab, top)


def weighted_terms(per_topic: np.ndarray, vocab: np.ndarray, top: int = TERMS) -> list[list[str]]:
    """The c-TF-IDF ranking of :func:`class_terms`, from a (topics x terms) count table."""
    words_per_topic = per_topic.sum(axis=1, keepdims=True)
    tf = per_topic / np.where(words_per_topic > 0, words_per_topic, 1.0)
    mean_words = per_topic.sum() / max(1, per_topic.shape[0])
    freq = per_topic.sum(axis=0)
    idf = np.log1p(mean_words / np.where(freq > 0, freq, 1.0))
    weight = tf * idf
    out = []
    for t in range(per_topic.shape[0]):
        present = np.flatnonzero(per_topic[t] > 0)
        # Highest weight first; equal weights in alphabetical order (vocab is sorted).
        ranked = present[np.lexsort((present, -weight[t, present]))]
        out.append([str(w) for w in vocab[ranked[:top]]])
    return out


def map_positions(v: np.ndarray, assignment: np.ndarray, seed: int) -> np.ndarray:
    """Each chunk's place on the corpus map, in [0, 1]².

    Topics are laid out by how alike they are (metric MDS of the cosine distances
    between their centres), and each chunk sits around its topic's place, where its
    own offset from the centre falls on the two main axes of all such offsets
    (principal components fitted on a sample). One projection of every chunk
    (PCA, LDA) piles most topics into one blob; this keeps each topic readable.
    """
    n = len(v)
    n_topics = int(assignment.max()) if n else 0
    if n < 2 or v.shape[1] < 2:
        return np.full((n, 2), 0.5)
    from sklearn.decomposition import PCA

    centres = np.stack([v[assignment == t].mean(axis=0) for t in range(1, n_topics + 1)])
    places = _topic_places(centres, seed)
    rows = _sample(n, MAP_SAMPLE, np.random.default_rng([seed, 2]))
    offsets = v - centres[assignment - 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all offsets zero: no axes, every chunk on its place
        local = PCA(2, random_state=seed).fit(offsets[rows]).transform(offsets)
    local = np.nan_to_num(np.asarray(local, dtype=np.float64))
    # Each topic's spread scaled to one disc: its 95th-percentile offset on the rim.
    reach = np.zeros(n_topics + 1)
    norms = np.linalg.norm(local, axis=1)
    for t in range(1, n_topics + 1):
        mine = norms[assignment == t]
        reach[t] = np.percentile(mine, 95) if mine.size else 0.0
    scale = np.where(reach[assignment] > 0, 1.0 / np.where(reach[assignment] > 0,
                                                            reach[assignment], 1.0), 0.0)
    local = local * scale[:, None]
    rim = np.linalg.norm(local, axis=1, keepdims=True)
    local = np.where(rim > 1.0, local / np.where(rim > 0, rim, 1.0), local)
    radius = _disc_radius(places)
    return np.clip(places[assignment - 1] + radius * local, 0.0, 1.0)


def _topic_places(centres: np.ndarray, seed: int) -> np.ndarray:
    """Each topic's place in [0.1, 0.9]²: alike topics near each other."""
    k = len(centres)
    if k == 1:
        return np.array([[0.5, 0.5]])
    if k == 2:
        return np.array([[0.3, 0.5], [0.7, 0.5]])
    from sklearn.manifold import MDS

    unit = centres / np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
    distance = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    np.fill_diagonal(distance, 0.0)
    distance = (distance + distance.T) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's notices about MDS defaults
        xy = MDS(n_components=2, metric=True, dissimilarity="precomputed", random_state=seed,
                 n_init=4, normalized_stress="auto").fit_transform(distance)
    low, high = xy.min(axis=0), xy.max(axis=0)
    span = np.where(high - low > 0, high - low, 1.0)
    return 0.1 + 0.8 * (xy - low) / span


def _disc_radius(places: np.ndarray) -> float:
    """A topic's disc: half the median distance to its nearest neighbour, within bounds."""
    if len(places) < 2:
        return 0.4
    d = np.linalg.norm(places[:, None, :] - places[None, :, :], axis=2)
    np.fill_diagonal(d, np.inf)
    return float(np.clip(0.5 * np.median(d.min(axis=1)), 0.03, 0.2))
