"""What a report counts per document, decided once per document: scoping, chunk
positions, each document's missing chunks and the duplicate groups, each checked
against a plain per-chunk recount (the rules as the docs state them) on random
corpora, so the array code that replaced the loops cannot drift from them."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcov.matrix import CoverageMatrix
from ragcov.metrics import duplicate_groups
from ragcov.scope import ReportScope, Scoped, apply_scope
from ragcov.summary import positions_in_documents, summarize

DOCS = ["a/x.md", "a/y.md", "b/x.md", "b/z.pdf", "c.txt"]
TEXTS = ["", "ok", "short", "Table of contents", "revenue grew 4%", "revenue grew 4%", "ok"]


@st.composite
def corpora(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 25))
    docs = [draw(st.sampled_from(DOCS)) for _ in range(n)]
    texts = [draw(st.sampled_from(TEXTS)) for _ in range(n)]
    positions = [draw(st.one_of(st.none(), st.integers(0, 4))) for _ in range(n)]
    n_q = draw(st.integers(0, 6))
    hits = [sorted(draw(st.sets(st.integers(0, n - 1), max_size=3))) for _ in range(n_q)]
    return docs, texts, positions, hits


def _matrix(docs, hits) -> CoverageMatrix:  # type: ignore[no-untyped-def]
    rows = [i for i, h in enumerate(hits) for _ in h]
    cols = [c for h in hits for c in h]
    ranks = [r for h in hits for r in range(1, len(h) + 1)]
    return CoverageMatrix.from_triples(
        np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(ranks),
        np.ones(len(rows)), query_ids=[f"q{i}" for i in range(len(hits))],
        chunk_ids=[f"c{j}" for j in range(len(docs))], doc_ids=docs, k=3)


def _recount_positions(docs, ids, positions):  # type: ignore[no-untyped-def]
    """A document keeps its recorded positions when every chunk has one, all distinct;
    otherwise its chunks count 0, 1, 2... in corpus order."""
    out = [0] * len(docs)
    for d in dict.fromkeys(docs):
        cols = [j for j, e in enumerate(docs) if e == d]
        given = [positions.get(ids[j]) for j in cols] if positions else []
        ok = bool(given) and None not in given and len(set(given)) == len(given)
        for n, j in enumerate(cols):
            out[j] = given[n] if ok else n
    return out


@settings(max_examples=300, deadline=None)
@given(corpora(), st.booleans())
def test_positions_are_the_recount(corpus, recorded: bool) -> None:  # type: ignore[no-untyped-def]
    docs, _, positions, _ = corpus
    ids = [f"c{j}" for j in range(len(docs))]
    given = {ids[j]: p for j, p in enumerate(positions) if p is not None} if recorded else None
    assert positions_in_documents(docs, ids, given).tolist() == _recount_positions(docs, ids, given)


globs = st.lists(st.sampled_from(["a/*", "b/x.md", "*.pdf", "c*", "none"]), max_size=2).map(tuple)


@settings(max_examples=300, deadline=None)
@given(corpora(), globs, globs, globs, st.sampled_from([0, 3, 6]),
       st.lists(st.sampled_from([r"^Table", r"\d%"]), max_size=1).map(tuple))
def test_scope_is_the_per_chunk_recount(corpus, include, omit, exclude_docs, min_chars,  # type: ignore[no-untyped-def]
                                        exclude) -> None:
    docs, texts, _, hits = corpus
    m = _matrix(docs, hits)
    ids = m.chunk_ids
    scope = ReportScope(include=include, omit=omit, exclude_docs=exclude_docs,
                        min_chunk_chars=min_chars, exclude=exclude)
    by_id = dict(zip(ids, texts))
    # The recount: every chunk read in turn, as the rules are written in docs/ci.md.
    keep, excluded, omitted = [], [], set()
    for j, (cid, doc) in enumerate(zip(ids, docs)):
        if (include and not any(fnmatchcase(doc, g) for g in include)) or \
                any(fnmatchcase(doc, g) for g in omit):
            omitted.add(doc)
            continue
        glob = next((g for g in exclude_docs if fnmatchcase(doc, g)), None)
        text = by_id[cid]
        if glob is not None:
            excluded.append((cid, doc, f"exclude_docs: {glob}", j))
        elif min_chars and len(text.strip()) < min_chars:
            excluded.append((cid, doc, f"min_chunk_chars: {len(text.strip())} < {min_chars}", j))
        elif any(re.search(p, text, re.MULTILINE) for p in exclude):
            rx = next(p for p in exclude if re.search(p, text, re.MULTILINE))
            excluded.append((cid, doc, f"exclude: {rx}", j))
        else:
            keep.append(j)
    try:
        scoped = apply_scope(m, by_id, {}, scope)
    except Exception as exc:  # nothing left: the same refusal
        assert not keep, exc
        return
    assert scoped.columns.tolist() == keep
    assert [(e.chunk_id, e.doc_id, e.reason, e.column) for e in scoped.excluded] == excluded
    assert scoped.omitted_documents == len(omitted)
    assert scoped.matrix.chunk_ids == [ids[j] for j in keep]


@settings(max_examples=200, deadline=None)
@given(corpora())
def test_each_documents_missing_chunks_are_the_recount(corpus) -> None:  # type: ignore[no-untyped-def]
    docs, _, positions, hits = corpus
    m = _matrix(docs, hits)
    given = {m.chunk_ids[j]: p for j, p in enumerate(positions) if p is not None}
    s = summarize(m, positions=given, jaccard=False)
    covered = {c for h in hits for c in h}
    pos = _recount_positions(docs, m.chunk_ids, given)
    want = [(d, docs.count(d), sum(1 for j, e in enumerate(docs) if e == d and j in covered),
             [m.chunk_ids[j] for j, e in enumerate(docs) if e == d and j not in covered],
             [pos[j] for j, e in enumerate(docs) if e == d and j not in covered])
            for d in dict.fromkeys(docs)]
    assert [(x.doc_id, x.chunks, x.covered, x.missing_chunks, x.missing_positions)
            for x in s.documents] == want
    assert s.covered == len(covered) and s.chunks == len(docs)


@settings(max_examples=200, deadline=None)
@given(corpora())
def test_duplicate_groups_are_the_recount(corpus) -> None:  # type: ignore[no-untyped-def]
    docs, texts, _, hits = corpus
    m = _matrix(docs, hits)
    covered = {c for h in hits for c in h}
    groups = {}
    for j, t in enumerate(texts):
        if t:
            groups.setdefault(t, []).append(j)
    want = [([m.chunk_ids[j] for j in g], list(dict.fromkeys(docs[j] for j in g)),
             sum(j in covered for j in g)) for g in groups.values() if len(g) > 1]
    got = duplicate_groups(m, dict(zip(m.chunk_ids, texts)))
    assert [(g.chunk_ids, g.doc_ids, g.covered) for g in got] == want


def test_a_summary_is_made_once_per_set_of_options() -> None:
    m = _matrix(DOCS[:3], [[0, 1]])
    scoped = Scoped(m, {}, {})
    first = scoped.summary(jaccard=False)
    assert scoped.summary(jaccard=False) is first
    assert scoped.summary() is not first and scoped.summary() is scoped.summary()
