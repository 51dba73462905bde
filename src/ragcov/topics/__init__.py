"""Coverage by topic: the corpus's chunks clustered into subjects, and each subject's coverage.

``vectors`` (which chunk vectors: a dense run's cached embeddings, a store's, or
TF-IDF), ``fit`` (k-means, c-TF-IDF labels, the corpus map), ``build`` (make the
data file's topics or keep the stored ones) and ``coverage`` (the per-topic table,
its order, the ``--min-topic-coverage`` gate, the per-topic diff). Topics are stored
by :mod:`ragcov.data.topics`; the api verbs are ``fit_topics`` and ``topic_coverage``.
"""
