"""The metamorphic relations: the copy of the corpus each one builds, and its verdict per test.

A relation says how a test's top-k must (not) move when the corpus changes in a given
way; it needs no label and no judge. Each relation here is a plan of one or more
copies of the corpus (:class:`Plan`) and a judge that compares a test's top-k on the
corpus itself (its baseline) with its top-k on the copy (:class:`Outcome`):

==============  ======================================  ====================================
relation        copy                                    violated when
==============  ======================================  ====================================
identity        the corpus, unchanged                   the top-k set changes
noise           OCR-like noise in every chunk           the top-k set changes
format:FORM     tables as rows/markdown/csv;            the top-k set changes
                whitespace; upper case
stale           an updated version beside each old      the old version ranks above the new
                one (or the corpus's own versions)      (or the new is not retrieved)
distractors     chunks of an unrelated corpus added     a distractor displaces a chunk
duplicate       each chunk copied once                  a copy displaces more than one
==============  ======================================  ====================================

For the two that add chunks, a test's own chunks reordered by the corpus's changed
statistics (no added chunk took their place) are recorded beside the verdict
(``reordered``) and reported as their own figure, never as a violation.

Chunk ids are kept across a copy, so "the same chunk" is the same id before and after;
added chunks get ids of their own (``ID@drift-v2``, ``ID@drift-copy``,
``drift-distractor:ID``). Positions (``int``) are the corpus's chunk positions, which
are the data file's chunk idx.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragcov.corpus import Chunk, Corpus
from ragcov.drift.transforms import (
    FORMATS,
    TABLE_FORMATS,
    chunk_rng,
    colour,
    has_number,
    has_table,
    ocr_noise,
    reformat,
    updated_version,
)
from ragcov.drift.versions import Versions
from ragcov.errors import RagcovError
from ragcov.fields import Ranked

#: What a user names with ``--relation``; ``format`` stands for all its forms.
RELATION_NAMES = ("identity", "noise", "format", "stale", "distractors", "duplicate")
DEFAULT_RELATIONS = ("noise", "format", "stale", "distractors", "duplicate")
NEW_VERSION = "@drift-v2"
COPY_SUFFIX = "@drift-copy"
DISTRACTOR_PREFIX = "drift-distractor:"


@dataclass(frozen=True)
class Kind:
    """How a relation's per-test value reads and aggregates."""

    measure: str        # what the value is, in a table header
    worst: str          # "low" (a Jaccard: the lowest is worst) or "high"
    combine: str        # across a test's rows in several copies: "min", "max" or "sum"


KINDS = {
    "same": Kind("mean Jaccard", "low", "min"),
    "displaced": Kind("mean displaced", "high", "max"),
    "stale": Kind("old above new", "high", "sum"),
    "versions": Kind("superseded retrieved", "high", "sum"),
}


def kind_of(relation: str) -> str:
    if relation in ("identity", "noise") or relation.startswith("format:"):
        return "same"
    if relation in ("distractors", "duplicate"):
        return "displaced"
    if relation == "stale:versions":
        return "versions"
    return "stale"


def expand_relations(given: Sequence[str]) -> list[str]:
    """``--relation`` values (repeatable, comma-separated) as relation names, in the
    canonical order; ``format`` is every form, ``format:csv`` one of them."""
    names: list[str] = []
    for value in given:
        for name in (p.strip() for p in str(value).split(",")):
            if not name:
                continue
            if name == "format":
                names += [f"format:{f}" for f in FORMATS]
            elif name.startswith("format:") and name[7:] in FORMATS or name in RELATION_NAMES:
                names.append(name)
            else:
                forms = ", ".join(f"format:{f}" for f in FORMATS)
                raise RagcovError(f"unknown relation {name!r}: expected "
                                  f"{', '.join(RELATION_NAMES)} (or one form: {forms})")
    order = ["identity", "noise", *(f"format:{f}" for f in FORMATS), "stale", "distractors",
             "duplicate"]
    return [n for n in order if n in set(names)]


@dataclass
class Copy:
    """A transformed corpus and what was done to make it."""

    corpus: Corpus
    changed: int = 0
    added: int = 0
    #: original position -> the id of the chunk added for it (a new version, a copy)
    twins: dict[int, str] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """One test on one copy: its value, its verdict, the baseline chunks it looked at
    (``seen``) and those that broke (lost, or outranked by their old version)."""

    value: float
    violated: bool
    seen: list[int]
    broke: list[int]
    extra: dict[str, Any] = field(default_factory=dict)

    def detail(self) -> dict[str, Any]:
        return {"seen": self.seen, "broke": self.broke, **self.extra}


Judge = Callable[[Copy, list[int], Ranked], "Outcome | None"]


@dataclass
class Plan:
    """One copy to build, search at ``depth`` and judge; ``build`` None: no copy (the
    corpus's own versions are judged on the baseline itself)."""

    name: str
    relation: str
    depth: int
    build: Callable[[], Copy] | None
    judge: Judge
    detail: dict[str, Any] = field(default_factory=dict)


# --- building copies -----------------------------------------------------------------------

def _copy(corpus: Corpus, chunks: list[Chunk]) -> Corpus:
    return Corpus(chunks, chunking=corpus.chunking, source=None)


def _changed_chunk(c: Chunk, text: str) -> Chunk:
    return Chunk(id=c.id, text=text, doc_id=c.doc_id, position=c.position, title=c.title,
                 metadata=c.metadata)


def transformed(corpus: Corpus, edit: Callable[[Chunk], str]) -> Copy:
    """Every chunk through ``edit``; ids, documents and order kept."""
    chunks, changed = [], 0
    for c in corpus:
        text = edit(c)
        if text != c.text:
            changed += 1
            chunks.append(_changed_chunk(c, text))
        else:
            chunks.append(c)
    return Copy(_copy(corpus, chunks), changed=changed)


def noise_copy(corpus: Corpus, rate: float, seed: int) -> Copy:
    _say_unknown_scripts(corpus)
    return transformed(corpus, lambda c: ocr_noise(c.text, rate, chunk_rng(seed, "noise", c.id)))


def _say_unknown_scripts(corpus: Corpus) -> None:
    """The noise relation misreads letters by the confusions it knows (Latin, Cyrillic,
    Greek, Arabic, Hebrew, Devanagari, Thai, Han, kana); in another script its letters are
    only dropped, and a low violation rate there is no sign of robustness to a scanner."""
    from ragcov.drift.transforms import scripts_without_confusions
    from ragcov.user_warnings import RetrievalWarning, warn

    unknown = scripts_without_confusions(corpus.texts)
    if unknown:
        shown = ", ".join(f"{s} {round(100 * v)}%" for s, v in unknown.items())
        warn(f"drift noise: no scanner confusions are known for {shown} of this corpus's "
             "letters: there the relation only drops characters or breaks words across lines, "
             "so its rate says little "
             "about OCR noise in that script (docs/languages.md)", RetrievalWarning)


def format_copy(corpus: Corpus, form: str) -> Copy:
    return transformed(corpus, lambda c: reformat(c.text, form))


def with_added(corpus: Corpus, added: list[Chunk], twins: dict[int, str] | None = None,
               detail: dict[str, Any] | None = None) -> Copy:
    """The corpus with ``added`` after its own chunks: a new version or a copy is added
    last, as a re-ingestion appends it, so a retriever that breaks ties by corpus order
    favours the old chunk, and the relation says whether scores do better."""
    return Copy(_copy(corpus, [*corpus.chunks, *added]), added=len(added), twins=twins or {},
                detail=detail or {})


def stale_copy(corpus: Corpus, group: list[int], seed: int) -> Copy:
    added, twins = [], {}
    for i in group:
        c = corpus[i]
        new_id = c.id + NEW_VERSION
        added.append(Chunk(id=new_id, text=updated_version(c.text, chunk_rng(seed, "stale", c.id)),
                           doc_id=c.doc_id, position=c.position, title=c.title))
        twins[i] = new_id
    return with_added(corpus, added, twins, {"chunks": group})


def duplicate_copy(corpus: Corpus, group: list[int]) -> Copy:
    added, twins = [], {}
    for i in group:
        c = corpus[i]
        added.append(Chunk(id=c.id + COPY_SUFFIX, text=c.text, doc_id=c.doc_id,
                           position=c.position, title=c.title, metadata=c.metadata))
        twins[i] = c.id + COPY_SUFFIX
    return with_added(corpus, added, twins, {"chunks": group})


def distractor_copy(corpus: Corpus, distractors: Corpus) -> Copy:
    added = [Chunk(id=DISTRACTOR_PREFIX + c.id, text=c.text,
                   doc_id=DISTRACTOR_PREFIX + c.doc_id, position=c.position, title=c.title)
             for c in distractors]
    return with_added(corpus, added, detail={"distractors": len(added)})


def unique_id_check(corpus: Corpus) -> None:
    """Ids the copies add must not be ids the corpus already holds (a corpus made by an
    earlier drift run's copy, say): refused in one line, before any work."""
    for c in corpus:
        if c.id.endswith((NEW_VERSION, COPY_SUFFIX)) or c.id.startswith(DISTRACTOR_PREFIX):
            raise RagcovError(f"chunk id {c.id!r} is spelt like the chunks `ragcov drift` adds "
                              f"({NEW_VERSION}, {COPY_SUFFIX}, {DISTRACTOR_PREFIX}); the copies "
                              "could not tell them apart")


# --- judging -------------------------------------------------------------------------------

def _positions(corpus: Corpus, ranked: Ranked, k: int) -> list[int]:
    """The top-k of a copy as positions of the original corpus; -1 for an added chunk."""
    get = corpus.positions.get
    return [get(cid, -1) for cid, _ in ranked[:k]]


def judge_same(base: Corpus, k: int) -> Judge:
    """identity, noise, format: the top-k set must not change."""
    def judge(copy: Copy, seen: list[int], ranked: Ranked) -> Outcome:
        after = _positions(base, ranked, k)
        kept = set(after) - {-1}
        lost = [c for c in seen if c not in kept]
        before = set(seen)
        union = len(before | kept) + after.count(-1)
        jaccard = len(before & kept) / union if union else 1.0
        return Outcome(jaccard, jaccard < 1.0, list(seen), lost)
    return judge


def judge_displaced(base: Corpus, k: int, bound: int) -> Judge:
    """distractors (bound 0) and duplicate (bound 1): at most ``bound`` of a test's chunks
    displaced by the chunks the copy added (a distractor, a copy entering its top-k).

    Adding chunks also changes a corpus's statistics (BM25's document frequencies and
    lengths, a hybrid's sparse half), which can reorder the corpus's own chunks with no
    added chunk anywhere near the top-k. That is no displacement, and it is kept apart
    as ``reordered``: the copy's ranking of the corpus's own chunks (searched at 2k, so a
    top-k of them is there whatever entered) tells the two apart. The chunks ranked just
    below where the added ones pushed them were displaced by them; a chunk that is not
    even among the corpus's own top-k of the copy was reordered by the statistics.
    """
    def judge(copy: Copy, seen: list[int], ranked: Ranked) -> Outcome:
        get = base.positions.get
        entered = [cid for cid, _ in ranked[:k] if get(cid) is None]
        own = [p for p in (get(cid, -1) for cid, _ in ranked) if p >= 0]
        pushed = set(own[k - len(entered):k])
        if len(own) < k:
            # Fewer than k of the corpus's own chunks in the list: the added chunks took the
            # rest of it, and a chunk of the test's not in it is below them (theirs to answer).
            pushed |= set(seen) - set(own)
        lost = [c for c in seen if c in pushed]
        reordered = [c for c in seen if c not in set(own[:k]) and c not in pushed]
        extra: dict[str, Any] = {"reordered": reordered}
        if bound == 0:
            extra["by"] = [cid for cid in entered if cid.startswith(DISTRACTOR_PREFIX)]
        else:
            # The one slot a copy may take is no break: only a violation's losses count.
            extra["copied"] = [c for c in seen if c in copy.twins]
            extra["lost"] = lost
        violated = len(lost) > bound
        return Outcome(float(len(lost)), violated, list(seen), lost if violated else [], extra)
    return judge


def judge_stale(base: Corpus, k: int) -> Judge:
    """stale: a test that retrieved a chunk must rank its new version at least as high as
    the old. Only tests one of whose chunks this copy updated are judged."""
    def judge(copy: Copy, seen: list[int], ranked: Ranked) -> Outcome | None:
        updated = [c for c in seen if c in copy.twins]
        if not updated:
            return None
        rank = {cid: r for r, (cid, _) in enumerate(ranked, start=1)}
        score = dict(ranked)
        broke, pairs = [], []
        for c in updated:
            old_id, new_id = base[c].id, copy.twins[c]
            old, new = rank.get(old_id), rank.get(new_id)
            # Equal scores: the retriever cannot tell the versions apart, and its tie rule
            # (corpus order, the old version first) decides.
            tie = old is not None and new is not None and score[old_id] is not None and \
                score[old_id] == score[new_id]
            pairs.append([c, old, new, tie])
            if new is None or (old is not None and old < new):
                broke.append(c)
        return Outcome(float(len(broke)), bool(broke), updated, broke, {"pairs": pairs})
    return judge


def judge_versions(versions: Versions) -> Judge:
    """The corpus's own versions: a test retrieving a superseded chunk must rank the
    chunk that replaced it higher (it violates when the current one is below or absent)."""
    def judge(copy: Copy, seen: list[int], ranked: Ranked) -> Outcome:
        rank = {c: r for r, c in enumerate(seen, start=1)}
        stale = [c for c in seen if c in versions.current]
        broke, found = [], []
        for c in stale:
            current = versions.current[c]
            now = rank.get(current) if current >= 0 else None
            found.append([c, rank[c], current, now])
            if now is None or now > rank[c]:
                broke.append(c)
        return Outcome(float(len(stale)), bool(broke), stale, broke, {"superseded": found})
    return judge


# --- the plan --------------------------------------------------------------------------------

def plan(corpus: Corpus, relations: Sequence[str], baseline: Sequence[list[int]], k: int,
         seed: int, noise_rate: float, distractors: Corpus | None,
         versions: Versions | None) -> list[Plan]:
    """Every copy the relations need, in order; nothing is built until a plan's turn."""
    plans: list[Plan] = []
    covered = sorted({c for top in baseline for c in top})
    for relation in relations:
        if relation == "identity":
            plans.append(Plan("identity", relation, k, lambda: Copy(_copy(corpus, corpus.chunks)),
                              judge_same(corpus, k)))
        elif relation == "noise":
            plans.append(Plan("noise", relation, k, lambda: noise_copy(corpus, noise_rate, seed),
                              judge_same(corpus, k), {"rate": noise_rate}))
        elif relation.startswith("format:"):
            form = relation.split(":", 1)[1]
            plans.append(Plan(relation, relation, k,
                              lambda form=form: format_copy(corpus, form),  # type: ignore[misc]
                              judge_same(corpus, k)))
        elif relation == "stale" and versions is not None:
            plans.append(Plan("stale:versions", "stale:versions", k, None, judge_versions(versions),
                              {"key": versions.key, "superseded": len(versions.current)}))
        elif relation == "stale":
            eligible = [c for c in covered if has_number(corpus[c].text)]
            for n, group in enumerate(colour(baseline, eligible)):
                plans.append(Plan(f"stale#{n}", relation, 2 * k,
                                  lambda g=group: stale_copy(corpus, g, seed),  # type: ignore[misc]
                                  judge_stale(corpus, k), {"chunks": len(group)}))
        elif relation == "distractors":
            assert distractors is not None
            plans.append(Plan("distractors", relation, 2 * k,
                              lambda: distractor_copy(corpus, distractors),
                              judge_displaced(corpus, k, 0), {"distractors": len(distractors)}))
        elif relation == "duplicate":
            for n, group in enumerate(colour(baseline, covered)):
                plans.append(Plan(f"duplicate#{n}", relation, 2 * k,
                                  lambda g=group: duplicate_copy(corpus, g),  # type: ignore[misc]
                                  judge_displaced(corpus, k, 1), {"chunks": len(group)}))
    return plans


def tables_in(corpus: Corpus) -> int:
    """How many chunks hold a Markdown table (what the table forms rewrite)."""
    return sum(1 for c in corpus if has_table(c.text))


__all__ = ["RELATION_NAMES", "DEFAULT_RELATIONS", "TABLE_FORMATS", "plan", "expand_relations",
           "tables_in", "kind_of", "KINDS", "Copy", "Outcome", "Plan"]
