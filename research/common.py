"""Plumbing every experiment shares: dataset -> corpus -> retriever -> hit matrix, and outputs.

An experiment is described by an :class:`ExperimentSetup` (which dataset, where
its files are, which retriever and k) so the tables it writes can say exactly
what produced them. Tables go out as Markdown, CSV and JSON side by side (the
Markdown for people, the CSV/JSON for re-analysis), every file written
atomically; plots use matplotlib's Agg backend so they render without a display.
"""

from __future__ import annotations

import csv
import io
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcov.corpus import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from ragcov.errors import RagcovError
from ragcov.files import atomic_path, write_json_atomic, write_text_atomic

if TYPE_CHECKING:
    from ragcov.corpus import Corpus
    from ragcov.matrix import CoverageMatrix
    from research.datasets import Dataset


@dataclass
class ExperimentSetup:
    dataset: str                       # finqa | convfinqa | pubmedqa | path of a BEIR folder
    data: str | os.PathLike[str] | None = None
    retriever: str = "dense"
    model: str | None = None
    k: int = 5
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    progress: bool = True

    @property
    def dataset_name(self) -> str:
        from research.datasets import NAMED

        if self.dataset in NAMED:
            return self.dataset
        return Path(self.dataset).name or "dataset"

    @property
    def label(self) -> str:
        return f"{self.dataset_name}-{self.retriever_label}-k{self.k}"

    @property
    def retriever_label(self) -> str:
        if self.retriever in ("dense", "bm25"):
            return self.retriever
        return "custom"

    def default_out(self, rq: str) -> Path:
        return Path("results") / f"{rq}-{self.label}"

    def describe(self) -> dict[str, Any]:
        return {"dataset": self.dataset_name, "data": None if self.data is None else str(self.data),
                "retriever": self.retriever, "model": self.model, "k": self.k,
                "chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}


@dataclass
class Prepared:
    dataset: Dataset
    corpus: Corpus
    matrix: CoverageMatrix
    retriever_fingerprint: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def prepare(setup: ExperimentSetup) -> Prepared:
    """Load the dataset, chunk it, run its whole query pool through the retriever."""
    from ragcov.api import measure
    from ragcov.retrieval import validate_k
    from ragcov.retrievers import make_retriever
    from research.datasets import load_dataset

    validate_k(setup.k)
    t0 = time.perf_counter()
    ds = load_dataset(setup.dataset, setup.data)
    corpus = ds.corpus(setup.chunk_size, setup.chunk_overlap)
    if len(corpus) == 0:
        raise RagcovError(f"{setup.dataset}: the corpus is empty")
    suite = ds.suite()
    if len(suite) == 0:
        raise RagcovError(f"{setup.dataset}: the dataset has no queries")
    r = make_retriever(setup.retriever, corpus, model=setup.model, progress=setup.progress)
    m = measure(corpus, suite, r, k=setup.k, progress=setup.progress)
    return Prepared(ds, corpus, m, r.fingerprint(), time.perf_counter() - t0)


def environment() -> dict[str, Any]:
    from ragcov import __version__

    return {"ragcov": __version__, "python": platform.python_version(),
            "machine": platform.machine(), "cpus": os.cpu_count()}


# Tables ----------------------------------------------------------------------------
def _cell(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:  # NaN
            return "–"
        return f"{v:.{digits}g}" if abs(v) < 1e-3 and v != 0 else f"{v:.{digits}f}"
    return str(v).replace("|", "\\|")


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                   headers: Sequence[str] | None = None, digits: int = 3) -> str:
    if not rows:
        return ""
    columns = list(columns or rows[0].keys())
    headers = list(headers or columns)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c), digits) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    buf = io.StringIO()
    columns = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in columns})
    return buf.getvalue()


def write_tables(out_dir: Path, stem: str, rows: Sequence[dict[str, Any]], markdown: str,
                 document: dict[str, Any], columns: Sequence[str] | None = None) -> list[Path]:
    """``stem.md``, ``stem.csv`` and ``stem.json`` in ``out_dir``, each written atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.md", out_dir / f"{stem}.csv", out_dir / f"{stem}.json"]
    write_text_atomic(paths[0], markdown.rstrip() + "\n")
    write_text_atomic(paths[1], csv_text(rows, columns))
    write_json_atomic(paths[2], document)
    return paths


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on installed extras
        raise RagcovError("plots need matplotlib: pip install 'ragcov[experiments]'") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    return path
