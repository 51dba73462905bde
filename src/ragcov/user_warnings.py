"""Warnings for ragcov's users, placed where they can act on them.

``warnings.warn`` with a fixed ``stacklevel`` points at whichever ragcov line called
it and prints that line (``langchain.py:62: AdapterWarning ... results.append(...)``),
which tells a user nothing. :func:`warn` attributes the warning to the first frame
that is the user's own code (not ragcov, not an installed library): in a script or
a test that is the user's line, which Python and pytest then show; the CLI prints
every warning as one ``ragcov: warning:`` line whatever its location.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from pathlib import Path

_RAGCOV = str(Path(__file__).resolve().parent) + os.sep
_LIBRARIES = tuple({p + os.sep for p in (sysconfig.get_paths().get("purelib"),
                                         sysconfig.get_paths().get("platlib"),
                                         sysconfig.get_paths().get("stdlib")) if p})


class RetrievalWarning(UserWarning):
    """A query or setting that makes a measured coverage say less than it seems."""


class CredentialWarning(UserWarning):
    """A credential the user gave is not sent, because another one takes its place."""


class NotSavedWarning(UserWarning):
    """A cache file was not written (a link planted in the cache, a folder that cannot be
    written): the run goes on, and says so even under ``--quiet``."""


def _ours_or_a_library(filename: str) -> bool:
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    return (path.startswith(_RAGCOV) or path.startswith(_LIBRARIES) or filename.startswith("<")
            or "site-packages" in path)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` from the user's nearest frame."""
    frame = sys._getframe(1)
    while frame is not None and _ours_or_a_library(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:  # no user code on the stack (the CLI, a worker): no line to show
        warnings.warn_explicit(message, category, "ragcov", 0, module="ragcov",
                               registry=_REGISTRY)
        return
    globs = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=globs.get("__name__", "ragcov"),
                           registry=globs.setdefault("__warningregistry__", {}),
                           module_globals=globs)


_REGISTRY: dict[object, bool] = {}
