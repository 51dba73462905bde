"""RQ3 (docs/method.md §6, §9): do coverage-guided orders reveal distinct faults earlier?

One pool is retrieved once; every order is a permutation of its rows. Failures
come from the dataset's relevance labels (``hit`` = 0, or ``context_relevance``
below a threshold); faults are the failing queries grouped by Jaccard > tau; each
order gets APFD, and NAPFD on budgeted prefixes (the first B tests, faults not
revealed counting as in NAPFD, see :mod:`ragcov.faults`).

Orders compared, all oracle-free (none looks at the labels):

* the paper's three: ``coverage`` (greedy, random after saturation), ``random``
  and ``overlap``, each over ``repeats`` seeds;
* research orders, tried because the held-back check (docs/method.md §9) found greedy
  defers failures: ``coverage-reset`` (the "additional" rule),
  ``coverage-lowconf`` (the same greedy gain at every step, but ties and the
  post-saturation tail go to the query whose best retrieval score is lowest:
  coverage's exploration is kept exactly, only the choice among equals changes),
  ``dissimilar`` (farthest-first on the Jaccard distance of retrieved *sets*:
  a new combination of popular chunks counts as new behaviour, which greedy on
  chunks ignores), and ``lowconf`` (ascending best score alone, the signal
  without coverage), and ``interleave`` (coverage and lowconf picks in turn,
  each skipping what the other already took).

* probe and margin orders (:mod:`ragcov.selection.fault`, ``PROBED``): hub exposure
  from self-query probes (:mod:`~research.rq3.probes`), the rank-1 to rank-k score
  margin, and their combinations with low confidence, each as coverage's tie-break,
  as a bonus on its gain and as a share of its picks.

Because every research order gives up some of coverage's exploration, the
tests each order needs to reach 50% and 80% of the pool's coverage are
reported beside its APFD.

Explanations written beside the APFD table: fault multiplicity per tau, the
failure rate in each fifth of each order, and the popularity and retrieval score
of failing against passing queries.

One module per job: :mod:`~research.rq3.design` (failure definitions, taus, budgets,
the paper's claim), :mod:`~research.rq3.orders` (the orders), :mod:`~research.rq3.stats`
(A12, Mann–Whitney, summaries), :mod:`~research.rq3.runner` (``run_rq3``: the tables),
:mod:`~research.rq3.report` (the Markdown) and :mod:`~research.rq3.plots` (the figures).
"""

from __future__ import annotations

from research.rq3.design import (
    DEFAULT_BUDGETS,
    DEFAULT_METRICS,
    DEFAULT_TAUS,
    PAPER_IMPROVEMENT,
    FailureDef,
    parse_failure_defs,
    parse_floats,
)
from research.rq3.orders import (
    BASELINES,
    RESEARCH,
    build_orders,
    confidence_priority,
    dissimilar_order,
    greedy_order,
    interleave,
    top_scores,
)
from research.rq3.runner import RQ3Result, dataset_qrels, run_rq3
from research.rq3.stats import a12, mann_whitney_p

__all__ = [
    "BASELINES",
    "DEFAULT_BUDGETS",
    "DEFAULT_METRICS",
    "DEFAULT_TAUS",
    "PAPER_IMPROVEMENT",
    "RESEARCH",
    "FailureDef",
    "RQ3Result",
    "a12",
    "build_orders",
    "confidence_priority",
    "dataset_qrels",
    "dissimilar_order",
    "greedy_order",
    "interleave",
    "mann_whitney_p",
    "parse_failure_defs",
    "parse_floats",
    "run_rq3",
    "top_scores",
]
