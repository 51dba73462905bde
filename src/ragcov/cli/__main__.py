"""``python -m ragcov.cli``: the same as the ``ragcov`` command."""

from ragcov.cli import main

main()
