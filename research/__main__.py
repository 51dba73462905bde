"""``python -m research``: run from the repository root."""

from research.cli import main

main()
