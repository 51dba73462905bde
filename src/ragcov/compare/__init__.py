"""Comparing recordings: ``ragcov diff`` (two runs) and ``ragcov gap`` (tests against traffic).

* :mod:`ragcov.compare.recording`: a data file read whole into flat arrays, fast
  (SQLite aggregates the columns, NumPy parses them), and the comparability check;
* :mod:`ragcov.compare.diff`: what changed between two recordings;
* :mod:`ragcov.compare.gap`: what production retrieves that the tests never do;
* :mod:`ragcov.compare.render` and :mod:`ragcov.compare.jsondoc`: text, markdown and
  the versioned JSON documents.
"""
