"""User-facing errors.

Anything raised as :class:`RagcovError` is the user's input or environment being
wrong, not a bug: the CLI prints its message and exits 1 without a traceback.
"""

from __future__ import annotations


class RagcovError(Exception):
    """A problem with the user's input, files or settings."""


class InputFormatError(RagcovError):
    """A malformed record, located by file and line so it can be fixed."""

    def __init__(self, path: object, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
