"""Every reporter's output on the bundled sample, for the byte-identity check.

A refactor of the house must not change one byte a user sees: ``test_sample_outputs``
compares what the commands write today with ``tests/golden/sample/``, written by this
script from a known-good commit. Creation timestamps and the temporary folder's name are
the only parts normalised away. BM25 keeps the run fast and free of float noise between
machines; the reporters downstream of the data file do not know which retriever ran.

    python tests/sample_outputs.py --update    # rewrite the golden files (review the diff!)
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "sample"

# ISO-8601 instants and "YYYY-MM-DD HH:MM" forms that reports stamp at creation.
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z|\s?UTC)?")
_EPOCH = re.compile(r'(timestamp="|"created_unix": )\d+(\.\d+)?')


def _sample(name: str) -> str:
    return str(resources.files("ragcov") / "data_sample" / name)


def _ragcov(cwd: Path, *args: str) -> None:
    """Run one command; keep its stdout, its stderr (when any) and its exit status."""
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
    env.pop("RAGCOV_FILE", None)
    env.pop("RAGCOV_RCFILE", None)
    done = subprocess.run([sys.executable, "-m", "ragcov", *args], cwd=cwd, env=env,
                          check=False, capture_output=True)
    out = cwd / "out" / _name(args)
    out.write_bytes(done.stdout + f"[exit {done.returncode}]\n".encode())
    if done.stderr:
        out.with_suffix(".err").write_bytes(done.stderr)


def _name(args: tuple[str, ...]) -> str:
    words = (Path(a).name if "/" in a else a.strip("-") for a in args)
    return "stdout-" + "_".join(words)[:90] + ".txt"


def normalise(data: bytes, tmp: Path) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    text = text.replace(str(tmp), "TMP")
    text = _STAMP.sub("TIMESTAMP", text)
    text = _EPOCH.sub(r"\1EPOCH", text)
    return text.encode("utf-8", errors="surrogateescape")


def write_outputs(tmp: Path) -> dict[str, bytes]:
    """Run the commands in ``tmp``; every file they wrote, normalised, by relative path."""
    (tmp / "out").mkdir()
    pages, questions = _sample("finqa_pages.jsonl"), _sample("finqa_questions.jsonl")
    head = tmp / "head.jsonl"
    lines = Path(questions).read_text(encoding="utf-8").splitlines(keepends=True)
    head.write_text("".join(lines[:150]), encoding="utf-8")
    run = ("run", "--corpus", pages, "--split", "--retriever", "bm25", "-k", "5", "-q")
    _ragcov(tmp, *run, "--queries", questions, "--data-file", "all.ragcov")
    _ragcov(tmp, *run, "--queries", str(head), "--data-file", "head.ragcov")
    for args in (
        ("report",), ("report", "--show-missing"), ("report", "--format", "markdown"),
        ("report", "--format", "total"), ("report", "--sort", "cover", "--skip-covered"),
        ("report", "--omit", "*_2009*", "--min-chunk-chars", "200"), ("report", "--redundant"),
        ("json", "-o", "out/report.json"),
        ("json", "--no-pretty", "--gini-over", "corpus", "-o", "out/compact.json"),
        ("xml", "-o", "out/coverage.xml"), ("lcov", "-o", "out/coverage.lcov"),
        ("badge", "-o", "out/badge.svg"), ("html", "-d", "out/html"),
        ("select", "-o", "out/order.json", "--seed", "1"),
    ):
        _ragcov(tmp, *args, "--data-file", "all.ragcov")
    for fmt in ("text", "markdown", "json"):
        _ragcov(tmp, "diff", "head.ragcov", "all.ragcov", "--format", fmt)
    _ragcov(tmp, "diff", "head.ragcov", "all.ragcov", "--html", "out/diff.html")
    _ragcov(tmp, "gap", "--tests", "head.ragcov", "--traffic", "all.ragcov")
    _ragcov(tmp, "gap", "--tests", "head.ragcov", "--traffic", "all.ragcov", "--format", "json")
    _ragcov(tmp, "probe", "--corpus", pages, "--split", "--retriever", "bm25",
            "--data-file", "all.ragcov")
    for args in (("report", "--reachable"), ("json", "--reachable", "-o", "out/reach.json"),
                 ("html", "--reachable", "-d", "out/html-reach"), ("json", "-o", "out/probed.json")):
        _ragcov(tmp, *args, "--data-file", "all.ragcov")
    out = tmp / "out"
    return {str(p.relative_to(out)): normalise(p.read_bytes(), tmp)
            for p in sorted(out.rglob("*")) if p.is_file()}


def _hashed(name: str) -> bool:
    """Kept as hashes, to keep the golden folder small: the 2 x 218 per-document HTML pages
    and the sites' copies of the packaged script and style sheet."""
    return (name.startswith("html") and "/d_" in name) or name.endswith((".js", ".css"))


def golden_view(outputs: dict[str, bytes]) -> dict[str, bytes]:
    """What is stored: small outputs whole, per-document pages in one SHA-256 manifest."""
    view = {n: d for n, d in outputs.items() if not _hashed(n)}
    view["pages.sha256"] = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n"
                                   for n, d in outputs.items() if _hashed(n)).encode()
    return view


def main() -> None:
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as d:
        outputs = golden_view(write_outputs(Path(d)))
    if GOLDEN.exists():
        for old in sorted(GOLDEN.rglob("*"), reverse=True):
            old.unlink() if old.is_file() else old.rmdir()
    for name, data in outputs.items():
        (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
        (GOLDEN / name).write_bytes(data)
    print(f"wrote {len(outputs)} files under {GOLDEN}")


if __name__ == "__main__":
    main()
