"""APFD of an order of the suite over its faults, and the order files it is measured on.

**APFD** of an order of n tests over m faults is the area under the curve
"fraction of faults revealed" against "fraction of tests run":

    APFD = p - (sum of TF_i over revealed faults) / (n * m) + p / (2n)

with TF_i the 1-based position of the first test revealing fault i and p the
fraction of the m faults the order reveals. When the order reveals every fault
(p = 1) this is the usual ``1 - (TF_1+...+TF_m)/(n*m) + 1/(2n)``; when it does
not (a budgeted prefix, an order over part of the suite) it is NAPFD (Qu et
al., 2007): an unrevealed fault adds no area. With m = 0 (nothing fails) or
n = 0 (an empty order) there is nothing to measure and APFD is undefined:
``None`` in Python, ``null`` in JSON, never a made-up 0 or 1.

Faults are numbered per query row by :func:`ragcov.faults.fault_of_row`; everything
here is a plain function of numpy arrays.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragcov.errors import RagcovError
from ragcov.files import load_json
from ragcov.matrix import CoverageMatrix


def first_reveals(order: Sequence[int] | np.ndarray, fault_of: np.ndarray,
                  n_faults: int | None = None) -> np.ndarray:
    """TF_i: the 1-based position in ``order`` of the first test revealing fault i (0 = never)."""
    order = np.asarray(order, dtype=np.int64)
    fault_of = np.asarray(fault_of, dtype=np.int64)
    m = int(fault_of.max(initial=-1)) + 1 if n_faults is None else n_faults
    tf = np.zeros(m, dtype=np.int64)
    if order.size == 0 or m == 0:
        return tf
    seq = fault_of[order]
    hit = seq >= 0
    faults, first = np.unique(seq[hit], return_index=True)
    tf[faults] = np.flatnonzero(hit)[first] + 1
    return tf


def apfd(order: Sequence[int] | np.ndarray, fault_of: np.ndarray,
         n_faults: int | None = None) -> float | None:
    """APFD (NAPFD when the order misses faults); ``None`` when n = 0 or m = 0.

    ``fault_of`` maps each query row to its fault index (-1: passes or unlabelled);
    ``n_faults`` is m, the faults of the whole suite (default: inferred from
    ``fault_of``). A row may appear in ``order`` once.
    """
    order = np.asarray(order, dtype=np.int64)
    n = int(order.size)
    if n and np.unique(order).size != n:
        raise RagcovError("an order lists the same test twice")
    tf = first_reveals(order, fault_of, n_faults)
    m = int(tf.size)
    if n == 0 or m == 0:
        return None
    revealed = tf > 0
    p = float(np.count_nonzero(revealed)) / m
    return p - float(tf[revealed].sum()) / (n * m) + p / (2.0 * n)


def failure_rate_by_segment(order: Sequence[int] | np.ndarray, failing: np.ndarray,
                            segments: int = 5) -> list[float]:
    """Share of failing tests in each of ``segments`` equal slices of the order."""
    order = np.asarray(order, dtype=np.int64)
    parts = np.array_split(np.asarray(failing, dtype=bool)[order], segments)
    return [float(p.mean()) if p.size else math.nan for p in parts]


# ---------------------------------------------------------------------- order files
def load_order(path: str | os.PathLike[str], m: CoverageMatrix) -> np.ndarray:
    """Rows of an order.json (``ragcov select``'s ``{"order": [query ids], ...}``)."""
    p = Path(path)
    data = load_json(p)
    ids = data.get("order") if isinstance(data, dict) else data
    if not isinstance(ids, list) or not all(isinstance(q, str) for q in ids):
        raise RagcovError(f"{p}: expected {{\"order\": [query ids]}}")
    row_of = m.row_of()
    unknown = [q for q in ids if q not in row_of]
    if unknown:
        raise RagcovError(f"{p}: {len(unknown)} query ids not in the data file "
                          f"(first: {unknown[0]!r})")
    if len(set(ids)) != len(ids):
        raise RagcovError(f"{p}: lists the same query more than once")
    return np.array([row_of[q] for q in ids], dtype=np.int64)


def order_names(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """File stems as names; the full paths when stems collide."""
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [str(p) for p in paths]
