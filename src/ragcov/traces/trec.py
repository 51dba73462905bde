"""TREC run files: ``qid Q0 doc_id rank score tag`` per line.

Each query's list is ordered by score, highest first, ties by rank, because that
is how trec_eval and ranx read a run: the rank column alone is not trusted.
"""

from __future__ import annotations

import os

from ragcov.errors import InputFormatError
from ragcov.files import read_text
from ragcov.traces.records import Item, Trace, parse_score_at


def read_trec(path: str | os.PathLike[str]) -> list[Trace]:
    rows: dict[str, list[tuple[float, int, str]]] = {}
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 6:
            raise InputFormatError(path, lineno, f"expected 6 columns (qid Q0 doc_id rank score "
                                   f"tag), got {len(parts)}")
        qid, _q0, doc_id, rank_s, score_s, _tag = parts
        try:
            rank = int(rank_s)
        except ValueError as exc:
            raise InputFormatError(path, lineno, f"rank {rank_s!r} is not a whole number") \
                from exc
        # A text format: the score column is text. NaN or an infinity is refused (NaN
        # would make the order depend on the line order).
        score = parse_score_at(score_s, path, lineno, f"query {qid!r}, doc {doc_id!r}",
                               text_ok=True)
        assert score is not None  # a column of split() is never empty
        rows.setdefault(qid, []).append((score, rank, doc_id))
        first_line.setdefault(qid, lineno)
    traces = []
    for qid, entries in rows.items():
        entries.sort(key=lambda e: (-e[0], e[1]))
        traces.append(Trace(qid, "", [Item(d, s) for s, _r, d in entries], first_line[qid]))
    return traces
