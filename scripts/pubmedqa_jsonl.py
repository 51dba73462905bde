"""PubMedQA PQA-L as ragcov JSONL: abstract sections as chunks, the human questions as a suite.

    PYTHONPATH=. python scripts/pubmedqa_jsonl.py PATH/TO/pubmedqa OUT_DIR [--abstracts N]
    PYTHONPATH=. python scripts/pubmedqa_jsonl.py PATH/TO/pubmedqa --bundle

The first form writes OUT_DIR/pubmedqa_contexts.jsonl (one chunk per abstract section,
``PMID#n``, its abstract the document) and OUT_DIR/pubmedqa_questions.jsonl, from the
first N abstracts in the file (all of them by default): the corpus and suite of the
PubMedQA figures in docs/drift.md. ``--bundle`` writes the first 100 abstracts' sections
into src/ragcov/data_sample/pubmedqa_distractors.jsonl with the PubMedQA MIT licence
beside it: the distractors ``ragcov drift`` adds when no ``--distractors`` is given
(biomedical text, unrelated to the bundled FinQA pages).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from research.datasets import load_pubmedqa

BUNDLE = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"
BUNDLED_ABSTRACTS = 100


def write(src: str, out: Path, abstracts: int | None, prefix: str = "",
          contexts_name: str = "pubmedqa_contexts.jsonl", questions: bool = True) -> None:
    ds = load_pubmedqa(src)
    keep = list(ds.documents)[:abstracts] if abstracts else list(ds.documents)
    wanted = set(keep)
    out.mkdir(parents=True, exist_ok=True)
    assert ds.chunks is not None
    n = 0
    with open(out / contexts_name, "w", encoding="utf-8") as fh:
        for c in ds.chunks:
            if c.doc_id in wanted:
                fh.write(json.dumps({"id": prefix + c.id, "doc_id": prefix + c.doc_id,
                                     "text": c.text}, ensure_ascii=False) + "\n")
                n += 1
    if questions:
        with open(out / "pubmedqa_questions.jsonl", "w", encoding="utf-8") as fh:
            for q in ds.queries:
                if q.metadata["doc_id"] in wanted:
                    fh.write(json.dumps({"id": q.id, "question": q.text,
                                         "doc_id": q.metadata["doc_id"]}, ensure_ascii=False) + "\n")
    print(f"{len(keep)} abstracts, {n} sections -> {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", help="the folder holding ori_pqal.json")
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--abstracts", type=int, default=None)
    parser.add_argument("--bundle", action="store_true")
    args = parser.parse_args()
    if args.bundle:
        write(args.src, BUNDLE, BUNDLED_ABSTRACTS, prefix="pubmedqa:",
              contexts_name="pubmedqa_distractors.jsonl", questions=False)
        licence = Path(args.src) / "LICENSE"
        (BUNDLE / "LICENSE-PubMedQA.txt").write_text(
            "The file pubmedqa_distractors.jsonl in this folder holds the abstract sections of\n"
            f"the first {BUNDLED_ABSTRACTS} abstracts of PubMedQA PQA-L (ori_pqal.json), one chunk "
            "per section.\n\nPubMedQA: Jin et al., \"PubMedQA: A Dataset for Biomedical Research "
            "Question\nAnswering\", EMNLP 2019. https://github.com/pubmedqa/pubmedqa\n\n"
            + licence.read_text(encoding="utf-8"), encoding="utf-8")
    elif args.out is None:
        parser.error("give OUT_DIR, or --bundle")
    else:
        write(args.src, args.out, args.abstracts)


if __name__ == "__main__":
    main()
