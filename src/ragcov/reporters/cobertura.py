"""Cobertura XML (coverage-04.dtd), the coverage format CI servers read.

Documents are files (``class`` elements, grouped into ``package`` elements by the
folder part of the document id, as coverage.py groups modules by directory), chunks
are lines (see :mod:`ragcov.reporters.ci_lines`). There are no branches: branch rates
are 0 of 0 and written as 0, as coverage.py writes them without branch measurement.
A document id holding a control character, which XML cannot carry, is refused.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from xml.dom import minidom

from ragcov.controls import refuse_controls
from ragcov.reporters.ci_lines import FileLines

DTD_URL = "http://cobertura.sourceforge.net/xml/coverage-04.dtd"


def _rate(covered: int, valid: int) -> str:
    # Exact enough that a reader's percentage rounds as ``ragcov report`` does.
    return f"{covered / valid:.6g}" if valid else "1"


def package_of(doc_id: str) -> str:
    folder, _, _ = doc_id.rpartition("/")
    return folder.replace("/", ".") if folder else "."


def cobertura_xml(files: Sequence[FileLines], version: str, source: str = ".",
                  timestamp_ms: int | None = None) -> str:
    impl = minidom.getDOMImplementation()
    assert impl is not None
    doctype = impl.createDocumentType("coverage", None, DTD_URL)
    doc = impl.createDocument(None, "coverage", doctype)
    root = doc.documentElement
    valid = sum(f.valid for f in files)
    covered = sum(f.covered for f in files)
    stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    for name, value in (("version", version), ("timestamp", str(stamp)),
                        ("lines-valid", str(valid)), ("lines-covered", str(covered)),
                        ("line-rate", _rate(covered, valid)), ("branches-covered", "0"),
                        ("branches-valid", "0"), ("branch-rate", "0"), ("complexity", "0")):
        root.setAttribute(name, value)
    sources = root.appendChild(doc.createElement("sources"))
    src = sources.appendChild(doc.createElement("source"))
    src.appendChild(doc.createTextNode(refuse_controls(source, "source", "Cobertura XML")))
    packages = root.appendChild(doc.createElement("packages"))
    grouped: dict[str, list[FileLines]] = {}
    for f in files:
        refuse_controls(f.name, "document id", "Cobertura XML")
        grouped.setdefault(package_of(f.name), []).append(f)
    for pkg_name in sorted(grouped):
        members = grouped[pkg_name]
        pkg = packages.appendChild(doc.createElement("package"))
        pkg.setAttribute("name", pkg_name)
        pkg.setAttribute("line-rate", _rate(sum(f.covered for f in members),
                                            sum(f.valid for f in members)))
        pkg.setAttribute("branch-rate", "0")
        pkg.setAttribute("complexity", "0")
        classes = pkg.appendChild(doc.createElement("classes"))
        for f in sorted(members, key=lambda f: f.name):
            cls = classes.appendChild(doc.createElement("class"))
            cls.setAttribute("name", f.name.rpartition("/")[2] or f.name)
            cls.setAttribute("filename", f.name)
            cls.setAttribute("complexity", "0")
            cls.setAttribute("line-rate", _rate(f.covered, f.valid))
            cls.setAttribute("branch-rate", "0")
            cls.appendChild(doc.createElement("methods"))
            lines = cls.appendChild(doc.createElement("lines"))
            for number, hits in f.lines:
                line = lines.appendChild(doc.createElement("line"))
                line.setAttribute("number", str(number))
                line.setAttribute("hits", str(hits))
    return doc.toprettyxml(indent="  ", encoding=None)
