"""The BM25 retriever: bm25s's scores, ties broken by corpus order (as dense does)."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.corpus import Chunk, Corpus, load_corpus
from ragcov.retrievers import bm25_kernel
from ragcov.retrievers.bm25 import BM25Retriever

PAGES = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample" / "finqa_pages.jsonl"


def corpus_of(texts: list[str]) -> Corpus:
    return Corpus([Chunk(id=f"c{i}", text=t, doc_id=f"d{i}") for i, t in enumerate(texts)])


def bm25s_of(retriever: BM25Retriever) -> bm25s.BM25:
    """bm25s's own index of the retriever's words (its text rule, stopwords and stemmer),
    built by bm25s: the reference every score here is compared with."""
    from ragcov.retrievers.bm25 import _each_text_words

    words = list(_each_text_words(retriever.corpus.texts, retriever._stop, retriever._stem))
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in ws] for ws in words]
    model = bm25s.BM25(k1=retriever.k1, b=retriever.b)
    model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    return model


def test_tied_chunks_are_taken_in_corpus_order():
    # Every third chunk is the same sentence: ten chunks tie for the query's top score.
    texts = ["revenue grew" if i % 3 == 0 else f"other words number {i}" for i in range(30)]
    ranked = BM25Retriever(corpus_of(texts), stemmer="none").retrieve(["revenue"], 5)[0]
    assert [cid for cid, _ in ranked] == ["c0", "c3", "c6", "c9", "c12"]
    # The same chunks in reverse order: the earliest (now the highest ids) win.
    flipped = BM25Retriever(corpus_of(texts[::-1]), stemmer="none").retrieve(["revenue"], 5)[0]
    assert [cid for cid, _ in flipped] == ["c2", "c5", "c8", "c11", "c14"]


def test_chunks_sharing_no_term_are_not_retrieved():
    ranked = BM25Retriever(corpus_of(["alpha beta", "gamma delta", "alpha"])).retrieve(
        ["alpha", "zzz"], 3)
    assert [c for c, _ in ranked[0]] == ["c2", "c0"]  # shorter document scores higher
    assert ranked[1] == []


def test_scores_and_sets_agree_with_bm25s_where_nothing_ties():
    corpus = load_corpus(PAGES, split=True)
    retriever = BM25Retriever(corpus)
    questions = ["What was the net revenue in 2012?", "operating cash flow change",
                 "goodwill impairment charge", "dividends paid per share"]
    ours = retriever.retrieve(questions, 10)
    tokens = bm25s.tokenize(questions, stopwords="en", show_progress=False)
    docs, scores = bm25s_of(retriever).retrieve(tokens, k=11, show_progress=False, n_threads=1)
    for row, d, s in zip(ours, docs, scores):
        if np.isclose(s[9], s[10]):  # a tie at the 10th place: bm25s's pick is arbitrary
            continue
        assert {c for c, _ in row} == {corpus.ids[int(j)] for j in d[:10]}
        assert [sc for _, sc in row] == sorted((float(x) for x in s[:10]), reverse=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax"]), min_size=3,
                max_size=25), st.integers(1, 8))
def test_top_k_is_the_sort_by_score_then_position(words: list[str], k: int):
    texts = [f"{w} {w if i % 2 else 'filler'}" for i, w in enumerate(words)]
    retriever = BM25Retriever(corpus_of(texts), stemmer="none")
    ranked = retriever.retrieve(["revenue profit"], k)[0]
    scores = np.asarray(bm25s_of(retriever).get_scores(["revenue", "profit"]), dtype=np.float64)
    expected = sorted((i for i in range(len(texts)) if scores[i] > 0),
                      key=lambda i: (-scores[i], i))[:k]
    assert [c for c, _ in ranked] == [f"c{i}" for i in expected]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax", "cash",
                                          "debt"]), min_size=1, max_size=6),
                min_size=3, max_size=30),
       st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax", "cash",
                                          "debt", "unknown"]), min_size=1, max_size=8),
                min_size=1, max_size=6))
def test_batched_scores_are_bm25s_scores_bit_for_bit(docs: list[list[str]],
                                                     queries: list[list[str]]):
    """One sparse product per batch adds the same float32 terms in the same order as
    bm25s scores one query: equal bit for bit, repeated and unknown words included."""
    retriever = BM25Retriever(corpus_of([" ".join(d) for d in docs]), stopwords=None, stemmer="none")
    theirs = bm25s_of(retriever)
    ids = [theirs.get_tokens_ids(q) for q in queries]
    batched = retriever._scores(ids).toarray()
    for row, q in zip(batched, ids):
        expected = theirs.get_scores(q) if q else np.zeros(len(docs), np.float32)
        assert np.array_equal(row, expected)


# Words drawn so that chunks repeat and tie: few distinct words, stopwords, digits,
# punctuation, case and non-ASCII letters, as real chunks hold them.
WORDS = st.sampled_from(["revenue", "Revenue", "cost", "the", "and", "of", "2019", "x", "a1",
                         "Über", "straße", "naïve", "cash-flow", "debt.", "(net)", "42", "é"])
TEXTS = st.lists(WORDS, max_size=12).map(" ".join)


@pytest.mark.parametrize(("question", "chunks"), [
    # Chinese has no spaces: bm25s's pattern makes each sentence one token, and the
    # question (another sentence) matches nothing; bigrams match its words.
    ("黑豹队的防守丢了多少分？", ["黑豹队的防守只丢了308分。", "野马队赢得了超级碗。"]),
    # Thai: the same, with grapheme clusters.
    ("ทีมใดชนะ", ["ทีมเดนเวอร์ชนะการแข่งขัน", "สนามกีฬาอยู่ในแคลิฟอร์เนีย"]),
    # Hindi: bm25s's \w stops at each vowel sign, so words break into scraps.
    ("सुपर बाउल किसने जीता", ["डेनवर ब्रोंकोस ने सुपर बाउल जीता", "स्टेडियम कैलिफोर्निया में है"]),
])
def test_spaceless_and_marked_scripts_retrieve_the_chunk_that_shares_their_words(
        question: str, chunks: list[str]) -> None:
    top = BM25Retriever(corpus_of(chunks), progress=False).retrieve([question], 2)[0]
    assert top and top[0][0] == "c0"


@settings(max_examples=80, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=20), st.sampled_from(["en", None]))
def test_tokens_and_index_are_bm25s_own(texts: list[str], stopwords: str | None):
    """ragcov tokenises with its own text rule and bm25s's stopwords (bm25s's tokenize is
    slow on a large corpus): on Latin-script text that is bm25s's pattern over the
    casefolded text (straße is strasse), so the same vocabulary and index."""
    from ragcov.analyzer import fold
    from ragcov.retrievers.bm25 import _stopword_set, _words

    texts = [fold(t) for t in texts]
    expected = bm25s.tokenize(texts, stopwords=stopwords, return_ids=False, show_progress=False)
    assert _words(texts, _stopword_set(stopwords)) == [list(t) for t in expected]
    if not any(expected):
        return
    ours = BM25Retriever(corpus_of(texts), stopwords=stopwords, stemmer="none")
    theirs = bm25s.BM25()
    theirs.index(bm25s.tokenize(texts, stopwords=stopwords, show_progress=False),
                 show_progress=False)
    # bm25s names an empty word after the index is built (no chunk holds it, no row scores it).
    assert ours.vocab == {w: i for w, i in theirs.vocab_dict.items() if w != ""}
    # bm25s keeps (chunk x term) by column: the same three arrays as ragcov's rows of terms,
    # the zeros ragcov leaves out (a term in every chunk of a one-chunk corpus) aside.
    sc = theirs.scores
    expected = sp.csr_matrix((sc["data"], sc["indices"], sc["indptr"]),
                             shape=(len(sc["indptr"]) - 1, sc["num_docs"]))
    expected.eliminate_zeros()
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(ours._postings, key), getattr(expected, key))
    assert ours._postings.dtype == np.float32


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax"]),
                         min_size=1, max_size=4), min_size=1, max_size=40),
       st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax", "none"]),
                         min_size=1, max_size=5), min_size=1, max_size=8),
       st.integers(1, 12))
def test_batched_top_k_is_the_full_sort_with_ties_by_position(
        docs: list[list[str]], queries: list[list[str]], k: int):
    """The vectorised top-k keeps only scores at or above a per-row floor before sorting;
    on corpora full of tied chunks it must still be the full sort of every score by
    score descending, then corpus position (and nothing scoring 0)."""
    retriever = BM25Retriever(corpus_of([" ".join(d) for d in docs]), stopwords=None, stemmer="none")
    ranked = retriever.retrieve([" ".join(q) for q in queries], k)
    for q, row in zip(queries, ranked):
        theirs = bm25s_of(retriever)
        scores = theirs.get_scores(theirs.get_tokens_ids(q)) \
            if theirs.get_tokens_ids(q) else np.zeros(len(docs), np.float32)
        expected = sorted((i for i in range(len(docs)) if scores[i] > 0),
                          key=lambda i: (-scores[i], i))[:k]
        assert [c for c, _ in row] == [f"c{i}" for i in expected]
        assert [s for _, s in row] == [float(scores[i]) for i in expected]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax", "cash"]),
                         min_size=1, max_size=5), min_size=1, max_size=60),
       st.lists(st.lists(st.sampled_from(["revenue", "cost", "profit", "loss", "tax", "none"]),
                         min_size=0, max_size=6), min_size=1, max_size=12),
       st.integers(1, 12))
def test_the_compiled_top_k_is_the_sparse_products_bit_for_bit(
        docs: list[list[str]], queries: list[list[str]], k: int):
    """The numba kernel a large batch uses: the same chunks, the same float32 scores and
    the same tie order as the sparse product on corpora full of ties (repeated query
    words, queries with no word in the vocabulary, k above the corpus size)."""
    if bm25_kernel.kernel() is None:
        pytest.skip("numba is not installed (pip install 'ragcov[fast]')")
    retriever = BM25Retriever(corpus_of([" ".join(d) for d in docs]), stopwords=None, stemmer="none")
    vocab = retriever.vocab
    token_ids = [[vocab[w] for w in q if w in vocab] for q in queries]
    kk = min(k, len(docs))
    assert retriever._compiled_top_k(token_ids, kk) == \
        retriever._top_k(retriever._scores(token_ids), kk)


@pytest.mark.filterwarnings("ignore:bm25. .* no word to match")
def test_a_large_batch_takes_the_compiled_path_and_ranks_as_the_sparse_product():
    """On the sample, a batch past MIN_PAIRS goes through the kernel: the same top-10."""
    if bm25_kernel.kernel() is None:
        pytest.skip("numba is not installed (pip install 'ragcov[fast]')")
    corpus = load_corpus(PAGES, split=True)
    retriever = BM25Retriever(corpus)
    texts = [c.text[:300] for c in corpus.chunks] * (bm25_kernel.MIN_PAIRS // len(corpus) ** 2 + 1)
    assert bm25_kernel.usable(len(texts), len(corpus))
    vocab = retriever.vocab
    from ragcov.retrievers.bm25 import _words
    token_ids = [[vocab[w] for w in ws if w in vocab] for ws in _words(texts, retriever._stop)]
    assert retriever.retrieve(texts, 10) == retriever._top_k(retriever._scores(token_ids), 10)


@pytest.mark.slow
def test_a_word_repeated_past_float32s_whole_numbers_is_counted_as_bm25s_counts_it():
    """2^24 + 3 repeats of one word in a chunk: a float32 sum stops counting at 2^24, and
    bm25s counts integers before making them float32; the scores agree bit for bit."""
    from ragcov.retrievers.bm25 import term_scores

    repeats = (1 << 24) + 3
    ids = [[0] * repeats + [1], [1, 2], [2]]
    theirs = bm25s.BM25()
    theirs.index(bm25s.tokenization.Tokenized(ids=ids, vocab={"a": 0, "b": 1, "c": 2}),
                 show_progress=False)
    flat = np.concatenate([np.asarray(d, dtype=np.int32) for d in ids])
    ours = term_scores(flat, np.asarray([len(d) for d in ids], dtype=np.int64), 3, 1.5, 0.75)
    sc = theirs.scores
    expected = sp.csr_matrix((sc["data"], sc["indices"], sc["indptr"]), shape=(3, 3))
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(ours, key), getattr(expected, key))
