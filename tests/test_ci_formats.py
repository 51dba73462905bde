"""Cobertura XML, lcov and the badge, read back by the real consumers CI uses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from helpers import cli
from ragcov.reporters.badge import COLOURS, colour_for, parse_thresholds
from report_samples import FULL_TOTAL, write_sample

DTD = Path(__file__).parent / "coverage-04.dtd"
# The sample's chunk hits, recounted from report_samples.RETRIEVALS: (doc, line) -> hits.
HITS = {("guide", 1): 3, ("guide", 2): 2, ("guide", 3): 0, ("guide", 4): 1, ("guide", 5): 0,
        ("guide", 6): 1, ("guide", 7): 0, ("guide", 8): 0, ("legal/terms", 1): 1,
        ("legal/terms", 2): 0, ("faq", 1): 1, ("faq", 2): 0}


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_sample(tmp_path)


def test_cobertura_is_valid_against_the_dtd_and_holds_the_hand_count(sample, capsys, tmp_path):
    etree = pytest.importorskip("lxml.etree")
    code, _, err = cli(capsys, "xml", "-o", "cov.xml")
    assert code == 0, err
    tree = etree.parse(str(tmp_path / "cov.xml"))
    dtd = etree.DTD(str(DTD))
    assert dtd.validate(tree), dtd.error_log.filter_from_errors()
    root = tree.getroot()
    assert (root.get("lines-valid"), root.get("lines-covered")) == tuple(map(str, FULL_TOTAL))
    assert float(root.get("line-rate")) == pytest.approx(6 / 12, abs=1e-6)
    found = {(c.get("filename"), int(li.get("number"))): int(li.get("hits"))
             for c in root.iter("class") for li in c.iter("line")}
    assert found == HITS
    packages = {p.get("name"): sorted(c.get("filename") for c in p.iter("class"))
                for p in root.iter("package")}
    assert packages == {".": ["faq", "guide"], "legal": ["legal/terms"]}


def test_lcov_tracefile_reads_in_lcov_and_genhtml(sample, capsys, tmp_path):
    code, _, _ = cli(capsys, "lcov", "-o", "cov.info")
    assert code == 0
    text = (tmp_path / "cov.info").read_text()
    # A strict reading of the format: records of TN, SF, DA*, LF, LH, end_of_record.
    records = re.findall(r"TN:.*\nSF:(.+)\n((?:DA:\d+,\d+\n)*)LF:(\d+)\nLH:(\d+)\nend_of_record\n",
                         text)
    assert "".join(f"TN:\nSF:{s}\n{d}LF:{f}\nLH:{h}\nend_of_record\n"
                   for s, d, f, h in records) == text
    found = {(s, int(n)): int(h) for s, d, _, _ in records
             for n, h in re.findall(r"DA:(\d+),(\d+)", d)}
    assert found == HITS
    if not shutil.which("lcov"):
        pytest.skip("lcov not installed (Debian: apt-get install lcov)")
    summary = subprocess.run(["lcov", "--summary", "cov.info"], capture_output=True, text=True,
                             check=True)
    assert "lines......: 50.0% (6 of 12 lines)" in summary.stdout + summary.stderr
    site = subprocess.run(["genhtml", "--no-source", "-o", "lcov-html", "cov.info"],
                          capture_output=True, text=True)
    assert site.returncode == 0, site.stderr
    assert "50.0%" in (tmp_path / "lcov-html" / "index.html").read_text()


@pytest.fixture
def demo_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled demo (BM25: the same data, no model to load)."""
    from ragcov.demo import run_demo

    monkeypatch.chdir(tmp_path)
    from rich.console import Console

    with open("demo.log", "w") as log:
        run_demo(tmp_path, retriever="bm25", console=Console(file=log))
    return tmp_path / ".ragcov"


def test_demo_cobertura_opens_in_pycobertura_and_diff_cover_with_the_report_rate(
        demo_data, capsys, tmp_path):
    pycobertura = pytest.importorskip("pycobertura")
    code, total, _ = cli(capsys, "report", "--data-file", str(demo_data), "--format", "total")
    assert code == 0
    code, _, _ = cli(capsys, "xml", "--data-file", str(demo_data), "-o", "demo.xml")
    assert code == 0
    cov = pycobertura.Cobertura(str(tmp_path / "demo.xml"))
    assert f"{cov.line_rate() * 100:.2f}" == total.strip()
    doc = json.loads(cli(capsys, "json", "--data-file", str(demo_data), "-o", "-")[1])
    assert cov.total_statements() == doc["totals"]["chunks"]
    assert cov.total_misses() == doc["totals"]["chunks"] - doc["totals"]["covered_chunks"]

    # diff-cover measures the lines a change touched: a branch that adds every document
    # as a file of as many lines as it has chunks touches every chunk.
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "base"], check=True)
    (repo / "README").write_text("base\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    subprocess.run([*git, "checkout", "-qb", "change"], check=True)
    root = ElementTree.parse(tmp_path / "demo.xml").getroot()
    for cls in root.iter("class"):
        n = max(int(li.get("number")) for li in cls.iter("line"))
        path = repo / cls.get("filename")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"chunk {i}\n" for i in range(1, n + 1)))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "documents"], check=True)
    shutil.copy(tmp_path / "demo.xml", repo / "demo.xml")
    tool = Path(sys.executable).parent / "diff-cover"
    if not tool.exists():
        pytest.skip("diff-cover is not installed beside this Python")
    run = subprocess.run([str(tool), "demo.xml",
                          "--compare-branch=base", "--json-report", "dc.json"],
                         cwd=repo, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads((repo / "dc.json").read_text())
    lines, missing = report["total_num_lines"], report["total_num_violations"]
    assert lines == doc["totals"]["chunks"]
    assert f"{100 * (lines - missing) / lines:.2f}" == total.strip()


def test_badge_is_svg_with_the_percent_and_the_threshold_colour(sample, capsys, tmp_path):
    code, out, _ = cli(capsys, "badge", "-o", "coverage.svg")
    assert code == 0 and "Wrote badge to coverage.svg" in out
    svg = ElementTree.parse(tmp_path / "coverage.svg").getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    texts = [t.text for t in svg.iterfind(".//s:text", ns)]
    assert "50%" in texts and "chunk coverage" in texts
    fills = {r.get("fill") for r in svg.iterfind(".//s:rect", ns)}
    assert COLOURS[1] in fills  # 50% is yellow with the default 50,75,90
    cli(capsys, "badge", "-o", "coverage.svg", "--thresholds", "60,70,80")
    fills = {r.get("fill") for r in ElementTree.parse(tmp_path / "coverage.svg").getroot()
             .iterfind(".//s:rect", ns)}
    assert COLOURS[0] in fills  # under 60: red
    (tmp_path / "pyproject.toml").write_text('[tool.ragcov.badge]\nthresholds = "10,20,50"\n')
    cli(capsys, "badge", "-o", "coverage.svg")
    assert COLOURS[3] in (tmp_path / "coverage.svg").read_text()
    code, _, err = cli(capsys, "badge", "--thresholds", "90,50,70")
    assert code == 1 and "ascending" in err


@pytest.mark.parametrize(("percent", "band"), [(0, 0), (49.9, 0), (50, 1), (74, 1), (75, 2),
                                               (90, 3), (100, 3)])
def test_colour_bands(percent: float, band: int):
    assert colour_for(percent, parse_thresholds("50,75,90")) == COLOURS[band]
