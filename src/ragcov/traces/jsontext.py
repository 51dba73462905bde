"""Every top-level JSON value of a span file, with its line, read without holding it all.

Span exports are large (a collector's file exporter appends one OTLP export per
line for as long as it runs), so a file whose lines are each one JSON value is
read line by line: memory holds one line, not the file. A file that is not laid
out so (one pretty-printed document, console exporters' objects one after
another) is decoded from the first line that is not whole, as one text; lines
are counted as the decoder moves on, never from the start again.

Lines are decoded by orjson, which builds the same values as :mod:`json` faster.
A line orjson refuses or would read another way is given to :mod:`json` before it
counts as not whole, so what json reads (NaN, integers past 64 bits, lone surrogate
escapes) is read the same, and every error message is json's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.files import _SURROGATE_ESCAPE, _refuse_lone_surrogates, loads_json, read_text


def iter_json_values(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Every top-level JSON value in the file with its line: one document, JSON
    lines, or pretty-printed objects one after another (as console exporters write)."""
    read_text(path) if not os.path.isfile(path) else None  # the usual missing-file error
    try:
        with open(path, encoding="utf-8-sig", newline="\n") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    value = loads_json(line, path, lineno)
                except json.JSONDecodeError:
                    yield from _from_text(path, lineno)
                    return
                yield lineno, value
    except UnicodeDecodeError:
        read_text(path)  # raises the located error
        raise


class NotLines(Exception):
    """A part of a file holds a line that is not one whole JSON value: the file is not
    laid out one value per line, and is read whole instead (:func:`iter_json_values`)."""


def iter_json_lines(data: bytes, first: bool) -> Iterator[tuple[int, Any]]:
    """The values of the lines of ``data`` (one part of a JSON-lines file, cut after a
    newline, for a worker), each with its line counted from 1 at the part's start;
    ``first``: the part starts the file (a byte-order mark is skipped).

    Decoded as :func:`iter_json_values` decodes a line; :class:`NotLines` when a line
    is not a whole value (the caller then reads the whole file as one text, where a
    malformed line gets its error at its place in the file).
    """
    if first and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = loads_json(line, "", lineno)
        except (UnicodeDecodeError, json.JSONDecodeError, InputFormatError) as exc:
            # A lone surrogate too: the whole file is read here, where it gets its line.
            raise NotLines(f"line {lineno} of the part") from exc
        yield lineno, value


def _from_text(path: str | os.PathLike[str], first_line: int) -> Iterator[tuple[int, Any]]:
    """The values from line ``first_line`` on, decoded back to back from the text."""
    text = read_text(path)
    pos = 0
    for _ in range(first_line - 1):
        pos = text.index("\n", pos) + 1
    line = first_line
    counted = pos
    decoder = json.JSONDecoder()
    escapes = _SURROGATE_ESCAPE.search(text, pos) is not None
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
        if escapes:
            _refuse_lone_surrogates(value, path, line)
        yield line, value
