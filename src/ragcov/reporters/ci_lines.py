"""Documents as files and chunks as lines: the mapping the CI formats share.

CI widgets (GitLab, Jenkins, Azure DevOps, Codecov) understand files made of
lines. A document becomes a file named by its id and each chunk that counts a line:
its line number is its position within the document plus one (line numbers start
at 1; positions at 0), and its hits are the number of queries that retrieved it.
Excluded chunks are not lines, as coverage.py writes no line for excluded code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragcov.matrix import CoverageMatrix
from ragcov.scope import Scoped
from ragcov.summary import document_positions


@dataclass(frozen=True)
class FileLines:
    name: str                       # the document id
    lines: list[tuple[int, int]]    # (line number, hits), by line number

    @property
    def valid(self) -> int:
        return len(self.lines)

    @property
    def covered(self) -> int:
        return sum(1 for _, hits in self.lines if hits > 0)

    @property
    def rate(self) -> float:
        return self.covered / self.valid if self.valid else 0.0


def file_lines(scoped: Scoped) -> list[FileLines]:
    """One entry per document, in corpus order, with its chunks as numbered lines."""
    m: CoverageMatrix = scoped.matrix
    pos = document_positions(m, scoped.positions)
    freq = m.chunk_frequencies()
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for j, doc in enumerate(m.doc_ids):
        by_doc.setdefault(str(doc), []).append((int(pos[j]) + 1, int(freq[j])))
    return [FileLines(doc, sorted(lines)) for doc, lines in by_doc.items()]
