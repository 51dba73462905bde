"""lcov tracefile (``.info``): what Codecov, Coveralls and genhtml read.

One record per document: ``SF:`` the document id, ``DA:<line>,<hits>`` per chunk
(see :mod:`ragcov.reporters.ci_lines`), ``LF``/``LH`` lines found and hit, then
``end_of_record``. A document id holding a line break or another control
character cannot be written in this line-based format and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragcov.controls import refuse_controls
from ragcov.reporters.ci_lines import FileLines


def lcov_tracefile(files: Sequence[FileLines], test_name: str = "") -> str:
    out: list[str] = []
    refuse_controls(test_name, "test name", "lcov")
    for f in files:
        out.append(f"TN:{test_name}")
        out.append(f"SF:{refuse_controls(f.name, 'document id', 'lcov')}")
        out += [f"DA:{number},{hits}" for number, hits in f.lines]
        out += [f"LF:{f.valid}", f"LH:{f.covered}", "end_of_record"]
    return "\n".join(out) + "\n"
