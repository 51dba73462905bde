"""Dictionary segmenters against the text rule's bigrams, on XQuAD Chinese and Thai.

A one-off comparison for docs/languages.md, not part of ``benchmarks/run``: it needs the
segmenters, which ragcov does not install (``pip install jieba pythainlp``). The same
BM25 (no stemmer), k=5, hit rate of each question's own paragraph, and the time to index
the corpus and answer the questions, both sides in this process:

    python benchmarks/compare_segmenters.py
"""

from __future__ import annotations

import time

from bench_languages import K, hit_rate, load

from ragcov.analyzer import fold
from ragcov.corpus import Chunk, Corpus
from ragcov.retrievers import bm25


def measure(lang: str, segment=None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    chunks, questions, relevant = load(lang)
    corpus = Corpus([Chunk(id=c["id"], text=c["text"], doc_id=c["doc_id"]) for c in chunks])
    rule = bm25._words
    if segment is not None:
        bm25._words = lambda texts, stop, stem=None: [  # type: ignore[assignment]
            [w for w in segment(fold(t)) if any(c.isalnum() for c in w) and w not in stop]
            for t in texts]
    try:
        start = time.perf_counter()
        r = bm25.BM25Retriever(corpus, progress=False, stemmer="none")
        ranked = [[cid for cid, _ in hits] for hits in r.retrieve([q["text"] for q in questions], K)]
        seconds = time.perf_counter() - start
    finally:
        bm25._words = rule
    return hit_rate(ranked, questions, relevant), seconds


def main() -> None:
    import jieba
    from pythainlp.tokenize import word_tokenize

    jieba.setLogLevel(60)
    for lang, name, segment in (("zh", "bigrams", None), ("zh", "jieba search", jieba.lcut_for_search),
                                ("zh", "jieba", jieba.lcut), ("th", "bigrams", None),
                                ("th", "pythainlp newmm", lambda t: word_tokenize(t, engine="newmm"))):
        rate, seconds = measure(lang, segment)
        print(f"{lang} {name:16} hit rate {rate:.1f}%  {seconds:.2f} s")


if __name__ == "__main__":
    main()
