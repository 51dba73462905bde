"""Command modules beyond the core ones in :mod:`ragcov.cli`.

Each module here registers its commands on ``ragcov.cli.app`` when imported;
``ragcov.cli`` imports every module in this package. Keep heavy imports inside
the command functions so ``ragcov --help`` stays fast.
"""
