"""What a root run cannot show: read-only folders as an unprivileged user, and two dense runs
sharing one cache at once (docs/reliability.md, "Third round").

Root writes through a folder's permissions, so the trials of read-only folders ran as
root proved nothing about them. These run the command as ``nobody``
(tests/unprivileged_child.py) when the tests run as root, and as the user running them
otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CITY_CHUNKS
from helpers import cli

HERE = Path(__file__).resolve().parent


def _as_nobody(tmp_path: Path, args: list[str], cache: Path, warm_args: list[str]) -> dict:
    """``ragcov ARGS`` as ``nobody`` with ``cache`` as its cache folder."""
    if os.geteuid() != 0:
        pytest.skip("runs as root to drop to nobody; as another user the permission tests of "
                    "test_reliability.py already hold")
    # The checkout and the virtualenv's site-packages are read after the switch: every
    # folder above them must let others in (a clone under a private folder does not).
    for part in {*Path(sys.prefix).resolve().parents, *HERE.parents} - {Path("/")}:
        if not os.stat(part).st_mode & 0o001:
            pytest.skip(f"{part} cannot be entered by nobody (mode "
                        f"{oct(os.stat(part).st_mode & 0o777)}): the checkout or virtualenv "
                        "is private to this user")
    env = {**os.environ, "RAGCOV_CACHE_DIR": str(tmp_path / "warm-cache"),
           "RAGCOV_CACHE_DIR_REAL": str(cache), "PYTHONPATH": os.pathsep.join(
               [str(HERE.parent / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, str(HERE / "unprivileged_child.py"),
                           json.dumps(warm_args), json.dumps(args)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] != -1, result["err"]
    return result


@pytest.fixture
def tmp_path() -> Path:
    """A folder nobody can enter (pytest's own lies under a folder private to root)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ragcov-nobody-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def city(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n" for i, q in
                               enumerate(["capital of Japan", "energy in a cell", "new debt"])))
    for p in (tmp_path, corpus, queries):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return corpus, queries


@pytest.mark.slow
def test_a_read_only_cache_folder_costs_a_rebuild_not_the_run(tmp_path: Path, city, capsys) -> None:
    corpus, queries = city
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)  # root's: nobody may read it, not write it
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    run = ["run", "--corpus", str(corpus), "--queries", str(queries), "--retriever", "dense",
           "-k", "2"]
    # Where the ONNX export cannot be kept the run embeds with torch: the warm-up (as root,
    # which may read the interpreter's own modules) loads what that path imports.
    got = _as_nobody(tmp_path, [*run, "--data-file", str(out / ".ragcov")], cache,
                     [*run, "--backend", "torch", "--data-file", str(tmp_path / "warm.ragcov")])
    assert got["code"] == 0, got["err"]
    assert "embedding cache" in got["err"] and "not saved" in got["err"]
    assert "Traceback" not in got["err"]
    assert list(cache.iterdir()) == []
    # The number is the one a writable cache gives.
    code, total, _ = cli(capsys, "report", "--format", "total", "--data-file", str(out / ".ragcov"))
    _, expected, _ = cli(capsys, "report", "--format", "total", "--data-file",
                         str(tmp_path / "warm.ragcov"))
    assert code == 0 and total == expected


def test_a_read_only_data_file_folder_reads_and_refuses_writes(tmp_path: Path, city, capsys) -> None:
    corpus, queries = city
    folder = tmp_path / "ro"
    folder.mkdir()
    run = ["run", "--corpus", str(corpus), "--queries", str(queries), "--retriever", "bm25",
           "-k", "2", "-q"]
    assert cli(capsys, *run, "--data-file", str(folder / ".ragcov"))[0] == 0
    os.chmod(folder, 0o755)
    os.chmod(folder / ".ragcov", 0o644)
    before = (folder / ".ragcov").read_bytes()
    warm = [*run, "--data-file", str(tmp_path / "warm.ragcov")]
    read = _as_nobody(tmp_path, ["report", "--format", "total", "--data-file",
                                 str(folder / ".ragcov")], tmp_path / "c1", warm)
    _, expected, _ = cli(capsys, "report", "--format", "total", "--data-file", str(folder / ".ragcov"))
    assert read["code"] == 0 and read["out"] == expected, read["err"]
    for target in ("--append", None):
        args = [*run, "--data-file", str(folder / (".ragcov" if target else "new.ragcov"))]
        got = _as_nobody(tmp_path, args + ([target] if target else []), tmp_path / "c2", warm)
        assert got["code"] == 1, got
        lines = got["err"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ragcov: error: ")
        assert "writ" in lines[0] or "permission" in lines[0].lower(), lines[0]
    assert (folder / ".ragcov").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [".ragcov"]


@pytest.mark.slow
def test_two_dense_runs_sharing_one_cache_at_once(tmp_path: Path, city, capsys) -> None:
    """Both embed the corpus and write the same cache entry (and the model's digests, and
    the ONNX export) at once: no torn file, both numbers the solo run's."""
    corpus, queries = city
    env = {**os.environ, "RAGCOV_CACHE_DIR": str(tmp_path / "shared-cache")}
    run = [sys.executable, "-m", "ragcov", "run", "--corpus", str(corpus), "--queries", str(queries),
           "--retriever", "dense", "-k", "2", "-q"]
    procs = [subprocess.Popen([*run, "--data-file", str(tmp_path / f"r{i}.ragcov")], env=env,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert not any("rebuilding" in e or "Traceback" in e for e in errs), errs
    solo = subprocess.run([*run, "--data-file", str(tmp_path / "solo.ragcov")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert solo.returncode == 0 and "rebuilding" not in solo.stderr, solo.stderr
    totals = {cli(capsys, "report", "--format", "total", "--precision", "6", "--data-file",
                  str(tmp_path / name))[1] for name in ("r0.ragcov", "r1.ragcov", "solo.ragcov")}
    assert len(totals) == 1


def test_a_link_root_made_is_written_through_by_another_user(tmp_path: Path, city, capsys) -> None:
    """Root's links are the system's (``/dev/stdout`` -> ``/proc/self/fd/1``): no other
    user can make one, so they are not planted, and any user writes through them (links
    another user made are refused: tests/test_trust_links.py)."""
    corpus, queries = city
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries), "--retriever",
               "bm25", "-k", "2", "-q", "--data-file", str(data))[0] == 0
    os.chmod(data, 0o644)
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    link = out / "report.json"
    link.symlink_to(out / "target.json")  # made by root, as the tests run
    got = _as_nobody(tmp_path, ["json", "--data-file", str(data), "-o", str(link)],
                     tmp_path / "c", ["json", "--data-file", str(data), "-o",
                                      str(tmp_path / "warm.json")])
    assert got["code"] == 0, got["err"]
    assert link.is_symlink() and json.loads((out / "target.json").read_text())["meta"]
