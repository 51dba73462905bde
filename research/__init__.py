"""ragcov's research harness: the paper's research questions, reproduced on real data.

Not part of the installed library (like coverage.py's ``lab/``): it lives with the
repository, is run from its root as ``python -m research rq1|rq2|rq3|generation``, and
imports only ragcov's public modules. See research/README.md and docs/results.md.

Modules: :mod:`research.datasets` (FinQA, ConvFinQA, PubMedQA and BEIR loaders),
:mod:`research.common` (dataset -> corpus -> retriever -> hit matrix, tables and plots),
:mod:`research.rq1`, :mod:`research.rq2`, :mod:`research.rq3` and
:mod:`research.generation` (the runners), :mod:`research.cli` (the command line).
"""
