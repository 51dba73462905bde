"""Every language a corpus is written in: XQuAD's twelve parallel sets through BM25.

XQuAD (../shared/datasets/xquad, CC BY-SA 4.0) is the same 240 Wikipedia paragraphs and
1,190 questions in twelve languages. One chunk per paragraph (the article is the
document), each question's relevant chunk its own paragraph, built-in BM25, k=5:

1. **Hit rate** (the relevant paragraph in the top 5) with ragcov's text rule
   (ragcov.analyzer, the corpus's Snowball stemmer where one exists), against the
   baseline measured in the same run: bm25s's default tokenizer (``\\b\\w\\w+\\b``,
   English stopwords, no stemmer), which is what the built-in BM25 used before.
   "ratio" is ragcov's hit rate over the baseline's. Aims: every language >= 91%,
   Chinese and Thai >= 97%, Hindi >= 95%.
2. With every eighth question as the suite (149 questions, so some paragraphs stay
   untested): `ragcov probe` over the same BM25, counting probes built from no word
   (aim: 0 for every language's paragraphs) and unreachable chunks, and
   `report --reachable`'s coverage against what the probes show reachable.
3. `ragcov topics --vectors tfidf`: the share of topics whose label's first word is
   in the corpus's own script (for the languages not written in Latin script; aim:
   >= 90%).

    benchmarks/run --only languages            # all twelve (a few minutes)
    benchmarks/run --only languages --tiny     # en, zh, th, hi: hit rates only
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import row

ROOT = Path(__file__).resolve().parents[1]
XQUAD = Path(os.environ.get("RAGCOV_XQUAD", ROOT.parent / "shared" / "datasets" / "xquad"))
LANGUAGES = ("en", "ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
TINY = ("en", "zh", "th", "hi")
MODES = ("tiny", "quick", "full")
K = 5
# The script a language's topic labels should be written in (Latin-script ones are not
# told apart from stray English words by their script, so they are not scored).
NATIVE_SCRIPT = {"ar": "Arabic", "el": "Greek", "hi": "Devanagari", "ru": "Cyrillic",
                 "th": "Thai", "zh": "Han"}
AIM = {"zh": 97.0, "th": 97.0, "hi": 95.0}


def load(lang: str) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(chunks, questions, question id -> its paragraph's chunk id)."""
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    chunks, questions, relevant = [], [], {}
    for a, article in enumerate(data["data"]):
        for p, para in enumerate(article["paragraphs"]):
            cid = f"a{a:02d}-p{p}"
            chunks.append({"id": cid, "doc_id": f"a{a:02d}", "text": para["context"]})
            for qa in para["qas"]:
                questions.append({"id": qa["id"], "text": qa["question"]})
                relevant[qa["id"]] = cid
    return chunks, questions, relevant


def hit_rate(ranked: list[list[str]], questions: list[dict], relevant: dict[str, str]) -> float:
    return 100.0 * sum(relevant[q["id"]] in r for q, r in zip(questions, ranked)) / len(questions)


def ragcov_bm25(chunks: list[dict], questions: list[dict]) -> list[list[str]]:
    from ragcov.corpus import Chunk, Corpus
    from ragcov.retrievers.bm25 import BM25Retriever

    corpus = Corpus([Chunk(id=c["id"], text=c["text"], doc_id=c["doc_id"]) for c in chunks])
    r = BM25Retriever(corpus, progress=False)
    return [[cid for cid, _ in hits] for hits in r.retrieve([q["text"] for q in questions], K)]


def baseline_bm25(chunks: list[dict], questions: list[dict]) -> list[list[str]]:
    """bm25s as its README runs it: its own tokenizer and English stopwords."""
    import bm25s

    model = bm25s.BM25()
    model.index(bm25s.tokenize([c["text"] for c in chunks], stopwords="en", show_progress=False),
                show_progress=False)
    ids = [c["id"] for c in chunks]
    out = []
    for q in questions:
        toks = bm25s.tokenize([q["text"]], stopwords="en", show_progress=False)
        if not toks.vocab:
            out.append([])
            continue
        docs, _ = model.retrieve(toks, k=K, show_progress=False)
        out.append([ids[i] for i in docs[0]])
    return out


def _ragcov(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=folder, capture_output=True,
                          text=True, env=dict(os.environ, NO_COLOR="1", COLUMNS="120"))


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")


def probe_and_topics(lang: str, chunks: list[dict], questions: list[dict]) -> dict:
    """Probe, --reachable and topics over a suite of every eighth question."""
    from ragcov.analyzer import script_of

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        _write(folder / "chunks.jsonl", chunks)
        _write(folder / "queries.jsonl", questions[::8])
        steps = [("run", "--corpus", "chunks.jsonl", "--queries", "queries.jsonl", "--retriever",
                  "bm25", "--k", str(K)),
                 ("probe", "--corpus", "chunks.jsonl", "--retriever", "bm25"),
                 ("json", "-o", "report.json"),
                 ("json", "--reachable", "-o", "reachable.json"),
                 ("topics", "--corpus", "chunks.jsonl", "--vectors", "tfidf", "--format", "json",
                  "-o", "topics.json")]
        for step in steps:
            done = _ragcov(folder, *step)
            if done.returncode != 0:
                raise RuntimeError(f"ragcov {' '.join(step)}: {done.stderr.strip()[-300:]}")
        with sqlite3.connect(folder / ".ragcov") as con:
            wordless = con.execute("SELECT COUNT(*) FROM probes WHERE kind = 'none'").fetchone()[0]
        totals = json.loads((folder / "report.json").read_text())["totals"]
        reach = json.loads((folder / "reachable.json").read_text())["totals"]
        topics = json.loads((folder / "topics.json").read_text())
    labels = [t.get("label", "") for t in topics.get("topics", [])]
    native = None
    if lang in NATIVE_SCRIPT and labels:
        firsts = [lab.split(", ")[0] for lab in labels]
        native = 100.0 * sum(any(ch.isalpha() and script_of(ch) == NATIVE_SCRIPT[lang] for ch in w)
                             for w in firsts) / len(firsts)
    return {"coverage": 100.0 * totals["chunk_coverage"], "wordless_probes": wordless,
            "unreachable": totals.get("unreachable_chunks"),
            "reachable_coverage": 100.0 * reach["chunk_coverage"],
            "of_reachable": 100.0 * (totals.get("coverage_of_reachable") or 0.0),
            "topics": len(labels), "native_labels": native,
            "first_label": labels[0] if labels else ""}


def main(mode: str = "full") -> list[dict]:
    if not XQUAD.exists():
        return [row(f"languages: no XQuAD at {XQUAD}", None, note="set RAGCOV_XQUAD")]
    rows = []
    for lang in TINY if mode == "tiny" else LANGUAGES:
        chunks, questions, relevant = load(lang)
        t = time.perf_counter()
        ours = hit_rate(ragcov_bm25(chunks, questions), questions, relevant)
        seconds = time.perf_counter() - t
        t = time.perf_counter()
        theirs = hit_rate(baseline_bm25(chunks, questions), questions, relevant)
        base_seconds = time.perf_counter() - t
        aim = AIM.get(lang, 91.0)
        extra: dict = {"hit_rate": ours, "baseline_hit_rate": theirs}
        note = f"hit rate {ours:.1f}% (bm25s tokenizer {theirs:.1f}%)"
        if mode != "tiny":
            p = probe_and_topics(lang, chunks, questions)
            extra.update(p)
            note += (f"; 1/8 suite: CC {p['coverage']:.1f}%, --reachable {p['reachable_coverage']:.1f}%"
                     f" (of reachable {p['of_reachable']:.1f}%), probes without words "
                     f"{p['wordless_probes']}, unreachable {p['unreachable']}; {p['topics']} topics")
            if p["native_labels"] is not None:
                note += f", {p['native_labels']:.0f}% labelled in {NATIVE_SCRIPT[lang]}"
        rows.append(row(f"languages: XQuAD {lang} BM25 k=5", seconds, base_seconds, note=note,
                        aim=f"hit rate >= {aim:.0f}%", met=ours >= aim, ratio=ours / theirs,
                        **extra))
    return rows


if __name__ == "__main__":
    for r in main(sys.argv[1] if len(sys.argv) > 1 else "full"):
        print(r["name"], "|", r["note"], "|", r["aim"], "met" if r["met"] else "NOT met")
