"""Control characters in ids and texts: escaped on a terminal, refused in XML and lcov.

Chunk and document ids come from users' data and from services. Printed raw, an id
holding ``ESC]0;...`` retitles the terminal and one holding ``ESC[2J`` clears it;
XML 1.0 cannot carry most control characters at all, not even as references; and
a line-based file such as lcov's is split by them. Every terminal line ragcov
prints goes through :func:`escape_controls`; the file writers refuse with
:func:`refuse_controls`.
"""

from __future__ import annotations

import re

from ragcov.errors import RagcovError

# C0 and C1 controls and DEL; line and paragraph separators; the bidirectional
# embeddings, overrides and isolates (they reorder what a terminal shows); lone
# surrogates, which no UTF-8 stream can carry; U+FFFE and U+FFFF, which XML refuses.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff\ufffe\uffff]")
# What a terminal shows as nothing, though it is in the id: zero-width spaces and joiners,
# the directional marks, the word joiner and the byte-order mark. "a\u200bb" prints as
# "ab" and is another id; escaped, the difference shows. Files carry them as they are.
INVISIBLE = re.compile("[\u061c\u200b-\u200f\u2060\ufeff]")
SHOWN = re.compile(CONTROL.pattern[:-1] + INVISIBLE.pattern[1:-1] + "]")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with each control or invisible character written as ``\\x1b`` or ``\\u200b``; those in
    ``keep`` (the line breaks of a multi-line report) stay."""
    if SHOWN.search(text) is None:
        return text
    return SHOWN.sub(lambda m: m.group() if m.group() in keep else _escaped(m.group()), text)


#: Formats that carry ids and texts as data, each under its own rule: JSON and JSON lines
#: escape C0 controls themselves (and keep the others as the text they are), XML and lcov
#: refuse them (:func:`refuse_controls`), an SVG badge holds only a label and a number,
#: and a list of pytest node ids must name the tests as pytest does. Every other format
#: (text, Markdown, anything new) is for people and is escaped by :func:`shown`.
DATA_FORMATS = frozenset({"json", "jsonl", "xml", "lcov", "svg", "node-ids"})


def shown(text: str, fmt: str) -> str:
    """``text`` as a report in ``fmt`` is written: escaped unless ``fmt`` is a data format.

    The one place a rendered report passes on its way to stdout or a file, so a renderer
    that forgets to escape a cell (or a new command that never heard of escaping) still
    prints ``\\u202e`` rather than an override that reorders what a reader sees. Line
    breaks and tabs of the report stay."""
    return text if fmt in DATA_FORMATS else escape_controls(text, keep="\n\t")


def refuse_controls(text: str, what: str, fmt: str) -> str:
    """``text`` itself, or a one-line error naming ``what`` when ``fmt`` cannot carry it."""
    found = CONTROL.search(text)
    if found is not None:
        raise RagcovError(f"{what} '{escape_controls(text)}' holds the control character "
                          f"U+{ord(found.group()):04X}, which {fmt} cannot carry; rename it "
                          "or leave this format out")
    return text
