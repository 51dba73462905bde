"""The ``ragcov`` command line: thin typer commands over :mod:`ragcov.api`.

``app`` registers every command (``app.py``); ``main`` runs it and turns expected
failures into one line (``main.py``); one module per command group parses options
and prints, and the options shared by several commands live in ``options.py``.
"""

from __future__ import annotations

from ragcov.cli.commands import app
from ragcov.cli.entry import main

__all__ = ["app", "main"]
