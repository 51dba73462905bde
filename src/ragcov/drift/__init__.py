"""Metamorphic testing of retrieval under corpus change (``ragcov drift``).

The suite is run again on transformed copies of the corpus (OCR noise, another surface
form, updated versions, unrelated distractors, duplicates), and each metamorphic
relation says how a test's top-k must (not) move: no labels, no LLM judge.

- ``transforms``: the text edits, deterministic by seed and chunk id;
- ``versions``: the versions a corpus carries itself;
- ``relations``: each relation's copies and its verdict per test;
- ``rebuild`` and ``scratch``: the retriever built again on each copy (a store into a
  scratch copy, never in place);
- ``distractors``: the distractor chunks, given or bundled;
- ``engine``: the resumable run; ``summary``: rates, intervals, worst tests and chunks.
"""
