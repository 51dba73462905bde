"""A Run: what a retriever returned for each query of a suite.

The shape follows ranx (plain dicts users already have): query id -> ranked
``(chunk id, score)`` pairs, plus the query texts, ``k`` and the retriever's
fingerprint. Runs come from running a suite through a retriever or from
imported traces; everything downstream works on the same object.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragcov.errors import RagcovError
from ragcov.fields import Ranked


class Distinct(list):  # type: ignore[type-arg]
    """``(id, score)`` pairs already as :meth:`Run.add` keeps them, vouched for by the
    reader that made them: every id a ``str`` and none repeated, every score a finite
    ``float`` or None. ``add`` takes such a list as it is when it fits in k: the columnar
    import hands a million retrievals over without looking at each hit again. Nothing
    checks the promise, so only a reader that has checked it (in columns) makes one; any
    other caller passes a plain list."""


@dataclass
class Run:
    k: int
    retriever: dict[str, Any]
    queries: dict[str, str] = field(default_factory=dict)
    results: dict[str, Ranked] = field(default_factory=dict)
    #: The file the queries were read from, when they came from one: recorded so that no
    #: report (``select --suite-out``, ``gap -o`` ...) is ever written over the suite.
    source: str | None = None

    def __post_init__(self) -> None:
        validate_k(self.k)

    def add(self, query_id: str, text: str, ranked: Iterable[tuple[str, float | None]]) -> None:
        """Record one query's ranked list: cut to its first k, then the first of any
        repeated id kept. In that order: a list ``[a, a, b]`` at k = 2 is the retriever's
        top 2, ``a`` twice; ``b`` ranked third and is not covered by it."""
        if isinstance(ranked, Distinct) and len(ranked) <= self.k:
            self.queries[query_id] = text
            self.results[query_id] = list(ranked)  # a plain list, as every other source's
            return
        seen: set[str] = set()
        kept: Ranked = []
        for n, pair in enumerate(ranked):
            if n == self.k:
                break
            cid, score = pair
            if type(cid) is not str:
                cid = str(cid)
            if cid in seen:
                continue
            seen.add(cid)
            if score is not None:
                if type(score) is not float:
                    score = float(score)
                # The last guard for every source: NaN breaks rankings, inf is not JSON.
                if not math.isfinite(score):
                    raise RagcovError(f"query {query_id!r}: chunk {cid!r} has a score that is "
                                      f"not a finite number ({score!r})")
            # The caller's pair itself when it already is (str, float | None): a large
            # import then holds one tuple per hit, not two.
            kept.append(pair if type(pair) is tuple and pair[0] is cid and pair[1] is score
                        else (cid, score))
        self.queries[query_id] = text
        self.results[query_id] = kept

    def chunk_ids(self) -> list[str]:
        """Distinct retrieved chunk ids in first-seen order (so error messages are stable)."""
        pairs = itertools.chain.from_iterable(self.results.values())
        return list(dict.fromkeys(map(operator.itemgetter(0), pairs)))

    def __len__(self) -> int:
        return len(self.queries)


def validate_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise RagcovError(f"k must be a whole number of at least 1, got {k!r}")
    return k


def warn_if_k_takes_the_corpus(k: int, n_chunks: int) -> None:
    """Warn when the top k is the whole corpus: coverage then says nothing about retrieval
    (a dense retriever returns every chunk, so every run reads 100%)."""
    if 0 < n_chunks <= k:
        from ragcov.user_warnings import RetrievalWarning, warn

        warn(f"k={k} is at least the corpus's {n_chunks} chunk{'s' if n_chunks != 1 else ''}: "
             "every query may retrieve the whole corpus, so coverage says little about the "
             "retriever; choose k well below the number of chunks", RetrievalWarning)


# A mismatch between the retriever's ids and the corpus is judged on this many queries
# (sooner when one query's ids are all unknown), not after the whole suite.
PROBE_QUERIES = 8


def run_retriever(retriever: Any, queries: Sequence[tuple[str, str]], k: int,
                  batch_size: int = 64, progress: bool = True,
                  run: Run | None = None, corpus: Any = None, warn_short: bool = True) -> Run:
    """Retrieve the top-k for each ``(query id, text)`` and collect a Run.

    Queries go to a retriever that batches them (``batches_queries``, true unless
    the retriever says otherwise) in batches so a dense retriever encodes them
    together; one that answers one query at a time (a function, a LangChain or
    LlamaIndex retriever, an HTTP endpoint) gets them one by one, so the progress
    bar moves with every query. With ``corpus`` the ids are checked as they come:
    ids the corpus does not hold stop the run within the first few queries.
    """
    from ragcov.progress import progress_bar

    validate_k(k)
    run = run if run is not None else Run(k=k, retriever=retriever.fingerprint())
    step = batch_size if getattr(retriever, "batches_queries", True) else 1
    check = IdCheck(corpus) if corpus is not None else None
    with progress_bar("Retrieving", total=len(queries), enabled=progress) as advance:
        for start in range(0, len(queries), step):
            batch = queries[start:start + step]
            results = retriever.retrieve([t for _, t in batch], k)
            if len(results) != len(batch):
                raise RagcovError(
                    f"the retriever returned {len(results)} result lists for {len(batch)} queries"
                )
            for (qid, text), ranked in zip(batch, results):
                run.add(qid, text, ranked)
                if check is not None:
                    check.see(run.results[qid], last=start + len(batch) >= len(queries))
            advance(len(batch))
    if warn_short:
        warn_if_short(run, [qid for qid, _ in queries],
                      len(corpus) if corpus is not None and hasattr(corpus, "__len__") else None)
    return run


def warn_if_short(run: Run, query_ids: Sequence[str], n_chunks: int | None = None) -> None:
    """Say once, with counts, when lists came back shorter than k.

    A score threshold, a reranker or MMR returns fewer than k; coverage is then the
    coverage at that depth (3 of k = 5 is a k = 3 number), which the data file records
    per query and every report states beside k. A corpus smaller than k is said
    elsewhere (:func:`warn_if_k_takes_the_corpus`).
    """
    depths = [len(run.results.get(qid, ())) for qid in query_ids]
    short = [d for d in depths if d < run.k]
    if not short or (n_chunks is not None and n_chunks <= run.k):
        return
    from ragcov.user_warnings import RetrievalWarning, warn

    shown = f"depth {min(short)}" if min(short) == max(short) else \
        f"depths {min(short)}-{max(short)}"
    warn(f"the retriever returned fewer than k={run.k} distinct chunks for {len(short)} of "
         f"{len(depths)} queries ({shown}): their coverage is measured at that depth, not at "
         f"k={run.k}; each query's depth is recorded and reports say so beside k",
         RetrievalWarning)


class IdCheck:
    """Stops a run whose retriever returns ids the corpus does not hold, early.

    A retriever over another chunking of the documents, or a store that made up its
    own ids, returns unknown ids from the first query on; finding that out after
    the whole suite (hours with a slow retriever) is the cost this check removes.
    """

    def __init__(self, corpus: Any) -> None:
        self.corpus = corpus
        self.queries = 0
        self.retrieved = 0
        self.unknown: dict[str, None] = {}

    def see(self, ranked: Ranked, last: bool = False) -> None:
        self.queries += 1
        self.retrieved += len(ranked)
        missing = [cid for cid, _ in ranked if cid not in self.corpus]
        self.unknown.update(dict.fromkeys(missing))
        if self.unknown and (last or self.queries >= PROBE_QUERIES
                             or (ranked and len(missing) == len(ranked))):
            raise RagcovError(self.message())

    def message(self) -> str:
        ids = list(self.unknown)
        shown = ", ".join(repr(i) for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
        n = self.queries
        return (f"the retriever returned chunk ids that are not in the corpus: {len(ids)} "
                f"unknown id{'s' if len(ids) != 1 else ''} in the first {n} "
                f"quer{'ies' if n != 1 else 'y'} ({shown}); stopped before the rest of the "
                f"suite. {mismatch_hint(ids, self.corpus)}")


_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)


def mismatch_hint(unknown: Sequence[str], corpus: Any) -> str:
    """The likely cause of unknown ids, judged from what they look like."""
    if unknown and all(_UUID.match(i) for i in unknown):
        return ("They look like ids the vector store generated (UUIDs): add the chunks to the "
                "store with the corpus's ids (LangChain add_documents(..., ids=...), "
                "Document(id=...)), or keep each chunk's id in its metadata under 'id' or "
                "'chunk_id'.")
    docs = {c.doc_id for c in corpus}
    if any(i.rsplit("#", 1)[0] in docs or i.rsplit("-", 1)[0] in docs
           or i.rsplit("@", 1)[0] in docs for i in unknown):
        return ("Their documents are in the corpus but these chunks are not: the store was "
                "split with another splitter, chunk size or overlap than --corpus; give "
                "--corpus the chunks as the store holds them, or the same --chunk-size and "
                "--chunk-overlap with --split.")
    return ("Likely causes: the store was split with another splitter or chunk size than "
            "--corpus (give --corpus the chunks as the store holds them); the vector store "
            "set its own ids (add the chunks with the corpus's ids); or the id is kept under "
            "another metadata key (ragcov reads the item's own id, then metadata 'id' and "
            "'chunk_id').")
