"""Reachability: why a chunk is uncovered, and whether a test could ever cover it.

* :mod:`ragcov.reachability.selfquery`: probes built from each chunk's own text;
* :mod:`ragcov.reachability.audit`: statuses (covered, untested, unreachable), what
  displaced each unreachable chunk and why, hubs, and lost gold.

The probes themselves are stored by :mod:`ragcov.data.probes`.
"""

from ragcov.reachability.audit import COVERED, STATUSES, UNREACHABLE, UNTESTED, Reachability, audit

__all__ = ["COVERED", "STATUSES", "UNREACHABLE", "UNTESTED", "Reachability", "audit"]
