"""Exclusions and include/omit: out of the denominator, listed apart, the same in every report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli
from ragcov.errors import RagcovError
from ragcov.scope import ReportScope, load_scoped
from report_samples import EXCLUDED, FULL_TOTAL, SCOPE_FLAGS, SCOPED_TOTAL, write_sample


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_sample(tmp_path)


def test_excluded_chunks_leave_the_denominator_and_are_listed_with_the_reason(sample, capsys):
    code, out, err = cli(capsys, "json", "-o", "-", *SCOPE_FLAGS)
    assert code == 0, err
    doc = json.loads(out)
    chunks, covered = SCOPED_TOTAL
    assert (doc["totals"]["chunks"], doc["totals"]["covered_chunks"]) == (chunks, covered)
    assert doc["totals"]["chunk_coverage"] == pytest.approx(4 / 8)
    assert doc["totals"]["excluded_chunks"] == 4
    assert {c: e["reason"] for c, e in doc["excluded"].items()} == EXCLUDED
    assert set(doc["chunks"]).isdisjoint(EXCLUDED)
    assert doc["documents"]["guide"]["excluded_chunks"] == 2
    assert "legal/terms" not in doc["documents"]  # every chunk of it excluded
    # A retrieval of an excluded chunk is not counted: q5 now retrieved only faq#0.
    assert doc["queries"]["q5"]["retrieved"] == ["faq#0"]
    assert doc["scope"]["min_chunk_chars"] == 10


def test_report_shows_an_excluded_column_and_line(sample, capsys):
    code, out, _ = cli(capsys, "report", *SCOPE_FLAGS)
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["Document", "Chunks", "Covered", "Missing", "Excluded", "Cover"]
    total = next(line for line in lines if line.startswith("TOTAL")).split()
    assert total == ["TOTAL", "8", "4", "4", "4", "50%"]
    assert ("Excluded: 4 chunks (1 exclude, 1 min_chunk_chars, 2 exclude_docs), not counted"
            in out)
    code, out, _ = cli(capsys, "report")
    assert "Excluded" not in out  # no column when nothing is excluded
    assert next(li for li in out.splitlines() if li.startswith("TOTAL")).split()[1:4] == [
        str(FULL_TOTAL[0]), str(FULL_TOTAL[1]), str(FULL_TOTAL[0] - FULL_TOTAL[1])]


def test_every_report_agrees_on_the_scoped_total(sample, capsys, tmp_path: Path):
    code, total, _ = cli(capsys, "report", "--format", "total", *SCOPE_FLAGS)
    assert code == 0 and total.strip() == "50.00"
    cli(capsys, "xml", "-o", "cov.xml", *SCOPE_FLAGS)
    xml = (tmp_path / "cov.xml").read_text()
    assert 'lines-valid="8"' in xml and 'lines-covered="4"' in xml
    assert "legal" not in xml  # excluded chunks are no lines; an all-excluded document no file
    cli(capsys, "lcov", "-o", "cov.info", *SCOPE_FLAGS)
    info = (tmp_path / "cov.info").read_text()
    assert sum(int(li[3:]) for li in info.splitlines() if li.startswith("LF:")) == 8
    code, _, err = cli(capsys, "html", "-d", "site", *SCOPE_FLAGS)
    assert code == 0, err
    assert 'id="total-cc">50%<' in (tmp_path / "site" / "index.html").read_text()


def test_settings_in_pyproject_apply_to_every_report(sample, capsys, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragcov]\nexclude = ["^Table of contents"]\nmin_chunk_chars = 10\n'
        'exclude_docs = ["legal/*"]\n', encoding="utf-8")
    code, total, err = cli(capsys, "report", "--format", "total")
    assert code == 0, err
    assert total.strip() == "50.00"
    code, out, _ = cli(capsys, "json", "-o", "-")
    assert {c: e["reason"] for c, e in json.loads(out)["excluded"].items()} == EXCLUDED


@pytest.mark.parametrize(("flags", "docs", "total"), [
    (["--include", "guide"], {"guide"}, (8, 4)),           # guide#0,1,3,5 covered
    (["--omit", "legal/*"], {"guide", "faq"}, (10, 5)),    # + faq#0
    (["--include", "*", "--omit", "g*", "--omit", "f*"], {"legal/terms"}, (2, 1)),
    # coverage.py's habit: several globs in one value, comma-separated
    (["--include", "*", "--omit", "g*, f*"], {"legal/terms"}, (2, 1)),
    (["--include", "guide,faq"], {"guide", "faq"}, (10, 5)),
])
def test_include_and_omit_choose_the_documents_reported(sample, capsys, flags, docs, total):
    code, out, _ = cli(capsys, "json", "-o", "-", *flags)
    assert code == 0
    doc = json.loads(out)
    assert set(doc["documents"]) == docs
    assert (doc["totals"]["chunks"], doc["totals"]["covered_chunks"]) == total
    assert doc["excluded"] == {}  # omitted documents are not reported at all


def test_nothing_left_and_a_bad_regex_are_one_line_errors(sample, capsys):
    code, _, err = cli(capsys, "report", "--include", "nope*")
    assert code == 1 and "no document matches --include/--omit" in err
    code, _, err = cli(capsys, "report", "--exclude", ".")
    assert code == 1 and "every chunk is excluded" in err
    code, _, err = cli(capsys, "report", "--exclude", "(")
    assert code == 1 and "'(' is not a regular expression" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(RagcovError, match="min_chunk_chars must be 0 or more"):
        load_scoped(sample, ReportScope(min_chunk_chars=-1))


def test_exclude_matches_per_line_as_coverage_py_does(sample):
    # "^No warranty" is the start of a line: matched with ^ in multi-line mode.
    scoped = load_scoped(sample, ReportScope(exclude=("^No warranty", "given\\.$")))
    assert [e.chunk_id for e in scoped.excluded] == ["legal/terms#1"]
    assert scoped.excluded[0].reason == "exclude: ^No warranty"


def test_globs_split_on_commas_wherever_a_scope_is_made() -> None:
    """The api, the plugin and config lists build ReportScope: each reads "a,b" as two globs."""
    from ragcov.scope import ReportScope

    scope = ReportScope(include=("guide, faq",), omit=("legal/*,",), exclude_docs=("x*,y*", "z"))
    assert (scope.include, scope.omit, scope.exclude_docs) == (
        ("guide", "faq"), ("legal/*",), ("x*", "y*", "z"))
    assert ReportScope(exclude=("a{1,2}",)).exclude == ("a{1,2}",)  # a regex stays whole
