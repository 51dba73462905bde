"""ranx / pytrec_eval run JSON: ``{qid: {doc_id: score}}``, ordered by score.

The file is one JSON document, often pretty-printed. It is read by a decoder that
keeps each key's line, so a bad score or a repeated id is reported where it is,
and a repeated key (which ``json.loads`` would silently collapse to the last one)
is seen at all.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.files import read_text
from ragcov.traces.records import Item, Trace, parse_id_at, parse_score_at


class _Entries(list[tuple[str, int, Any]]):
    """A JSON object read by :class:`_LocatedJSON`: ``(key, line, value)`` in file order."""


class _LocatedJSON:
    """Decode JSON keeping the line of each key of the outer ``depth`` levels of objects.

    ranx files are one JSON document, often pretty-printed; this lets a bad score
    or a repeated id be reported at its line, and sees repeated keys, which
    ``json.loads`` would silently collapse to the last one.
    """

    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self._pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        """The line of ``pos``, counted on from the last position asked (keys come in order)."""
        if pos >= self._pos:
            self._line += self.text.count("\n", self._pos, pos)
        else:
            self._line = self.text.count("\n", 0, pos) + 1
        self._pos = pos
        return self._line

    def skip(self, pos: int) -> int:
        match = self._WS.match(self.text, pos)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def document(self, depth: int) -> Any:
        value, pos = self.value(self.skip(0), depth)
        pos = self.skip(pos)
        if pos != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, pos)
        return value

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        text = self.text
        if depth == 0 or not text.startswith("{", pos):
            return self.decoder.raw_decode(text, pos)
        entries = _Entries()
        pos = self.skip(pos + 1)
        if text.startswith("}", pos):
            return entries, pos + 1
        while True:
            if not text.startswith('"', pos):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes",
                                           text, pos)
            line = self.line_at(pos)
            key, pos = self.decoder.raw_decode(text, pos)
            pos = self.skip(pos)
            if not text.startswith(":", pos):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            value, pos = self.value(self.skip(pos + 1), depth - 1)
            entries.append((key, line, value))
            pos = self.skip(pos)
            if text.startswith(",", pos):
                pos = self.skip(pos + 1)
            elif text.startswith("}", pos):
                return entries, pos + 1
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


def read_ranx(path: str | os.PathLike[str]) -> list[Trace]:
    located = _LocatedJSON(read_text(path))
    try:
        data = located.document(depth=2)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
    if not isinstance(data, _Entries):
        raise InputFormatError(path, located.line_at(located.skip(0)),
                               "expected a JSON object {query_id: {doc_id: score}}")
    traces = []
    query_line: dict[str, int] = {}
    for qid_raw, qline, docs in data:
        qid = parse_id_at(qid_raw, path, qline, "query id")
        if qid in query_line:
            raise InputFormatError(path, qline, f"query {qid!r} already appeared on line "
                                   f"{query_line[qid]}")
        query_line[qid] = qline
        if not isinstance(docs, _Entries):
            raise InputFormatError(path, qline, f"query {qid!r}: expected an object "
                                   "{doc_id: score}")
        traces.append(Trace(qid, "", _ranked(docs, qid, path), qline))
    return traces


def _ranked(docs: _Entries, qid: str, path: Any) -> list[Item]:
    """One query's documents by score, highest first, ties in file order."""
    scored = []
    doc_line: dict[str, int] = {}
    for n, (doc_raw, dline, score) in enumerate(docs):
        doc_id = parse_id_at(doc_raw, path, dline, f"query {qid!r}, doc id")
        where = f"query {qid!r}, doc {doc_id!r}"
        if doc_id in doc_line:
            raise InputFormatError(path, dline, f"{where} already appeared on line "
                                   f"{doc_line[doc_id]}")
        doc_line[doc_id] = dline
        value = parse_score_at(score, path, dline, where, text_ok=False)
        if value is None:
            raise InputFormatError(path, dline, f"{where}: no score")
        scored.append((-value, n, doc_id, value))
    scored.sort()
    return [Item(d, v) for _neg, _n, d, v in scored]
