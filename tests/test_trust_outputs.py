"""Where outputs land: devices and FIFOs, ``-o -``, inputs never overwritten, symlinks.

Every case runs the real command line over real files: a FIFO made here and read by
a thread, symlinks, a data file made read-only (root dropping its override of permission bits) or
immutable (``chattr +i``), and a real HTTP retriever on 127.0.0.1 that counts the
requests it is sent.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import cli

TESTS_QUERIES = [
    {"id": "q-fr", "question": "What is the capital of France?"},
    {"id": "q-de", "question": "Which city is Germany's capital?"},
    {"id": "q-plants", "question": "How do plants make sugar from sunlight?"},
]
TRAFFIC_QUERIES = [
    {"id": "t-jp", "question": "What is the capital of Japan?"},
    {"id": "t-div", "question": "quarterly dividends per share"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def ok(capsys, *args: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    return out


@pytest.fixture
def work(tmp_path: Path, monkeypatch, city_corpus_file: Path) -> Path:
    """tests.ragcov and traffic.ragcov recorded with bm25 over corpus.jsonl, plus qrels."""
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "queries.jsonl", TESTS_QUERIES)
    write_jsonl(tmp_path / "traffic.jsonl", TRAFFIC_QUERIES)
    write_jsonl(tmp_path / "qrels.jsonl", [{"query_id": "q-fr", "doc_id": "asia"},
                                           {"query_id": "q-de", "doc_id": "europe"}])
    return tmp_path


def record(capsys, work: Path, name: str = "tests", queries: str = "queries.jsonl",
           *extra: str) -> Path:
    ok(capsys, "run", "--corpus", str(work / "corpus.jsonl"), "--queries", str(work / queries),
       "--retriever", "bm25", "--k", "2", "--data-file", str(work / f"{name}.ragcov"), "-q",
       *extra)
    return work / f"{name}.ragcov"


@pytest.fixture
def recorded(capsys, work: Path) -> Path:
    record(capsys, work)
    record(capsys, work, "traffic", "traffic.jsonl")
    return work


def leftovers(folder: Path) -> list[str]:
    """Temporaries or set-aside versions a writer left beside its target."""
    return sorted(p.name for p in folder.iterdir()
                  if p.name.startswith(".") and p.name.endswith((".tmp", ".old")))


# Each command that takes -o, as (argv before the output, the option naming the output).
REPORTS = {
    "json": ["json"],
    "xml": ["xml"],
    "lcov": ["lcov"],
    "badge": ["badge"],
    "select": ["select"],
    "diff": ["diff", "tests.ragcov", "traffic.ragcov", "--format", "json"],
    "gap": ["gap", "--tests", "tests.ragcov", "--traffic", "traffic.ragcov", "--format", "json"],
    "faults": ["faults", "--qrels", "qrels.jsonl"],
}
DATA_FILE_COMMANDS = {"json", "xml", "lcov", "badge", "select", "faults"}


def report_argv(name: str, output: str, option: str = "-o") -> list[str]:
    argv = list(REPORTS[name])
    if name in DATA_FILE_COMMANDS:
        argv += ["--data-file", "tests.ragcov"]
    return [*argv, option, output]


# ---------------------------------------------------------------- devices, FIFOs, stdout
class FifoReader:
    """A real FIFO in the test's folder, drained by a thread as a pipe's reader would."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:
            self.data = fh.read()

    def result(self) -> bytes:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "nobody ever opened the FIFO for writing"
        return self.data


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_output_to_a_fifo_is_written_through_not_replaced(capsys, recorded: Path, name: str) -> None:
    fifo = FifoReader(recorded / "pipe")
    ok(capsys, *report_argv(name, "pipe"))
    body = fifo.result().decode()
    assert stat.S_ISFIFO(os.lstat(recorded / "pipe").st_mode)  # still the FIFO, not a file
    assert body.strip(), "the report never reached the reader"
    if name not in ("xml", "lcov", "badge"):
        json.loads(body)
    assert leftovers(recorded) == []


def test_select_suite_out_to_a_fifo(capsys, recorded: Path) -> None:
    fifo = FifoReader(recorded / "pipe")
    ok(capsys, "select", "--data-file", "tests.ragcov", "-o", "order.json", "--suite-out", "pipe")
    suite = [json.loads(line) for line in fifo.result().decode().splitlines()]
    assert {q["id"] for q in suite} == {q["id"] for q in TESTS_QUERIES}
    assert stat.S_ISFIFO(os.lstat(recorded / "pipe").st_mode)


@pytest.fixture
def no_rename_over_special_files(monkeypatch) -> None:
    """A guard, not a fake: any rename onto a non-regular file fails the test instead of
    happening, so a regression can never replace the machine's /dev/null."""
    real_replace = os.replace

    def guarded(src, dst, *args, **kwargs):
        try:
            mode = os.stat(dst).st_mode
        except OSError:
            mode = stat.S_IFREG
        assert stat.S_ISREG(mode) or stat.S_ISDIR(mode), f"rename over the special file {dst}"
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", guarded)


@pytest.mark.parametrize("name", ["json", "xml", "lcov", "badge", "select"])
def test_dev_null_stays_a_character_device(capsys, recorded: Path, no_rename_over_special_files,
                                           name: str) -> None:
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    ok(capsys, *report_argv(name, "/dev/null"))
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert (after.st_mode & 0o777) == (before.st_mode & 0o777)


def test_data_file_on_a_device_is_refused(capsys, work: Path, no_rename_over_special_files) -> None:
    code, _, err = cli(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl",
                       "--retriever", "bm25", "--data-file", "/dev/null")
    assert code == 1 and "/dev/null: is not a regular file" in err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_stdout_into_a_pipe(recorded: Path) -> None:
    """/dev/stdout is a link into /proc whose target has no path: the kernel's stat decides."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-m", "ragcov", "xml", "--data-file", "tests.ragcov",
                           "-o", "/dev/stdout"], cwd=recorded, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<?xml") and "</coverage>" in done.stdout
    assert leftovers(recorded) == []


@pytest.mark.parametrize("args", [["json", "--data-file", "tests.ragcov"],
                                  ["select", "--data-file", "tests.ragcov"]], ids=["json", "select"])
def test_dev_stdout_holds_the_report_alone(recorded: Path, args: list[str]) -> None:
    """The account ("Wrote ...") goes to stderr when the output is the stdout stream itself."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-m", "ragcov", *args, "-o", "/dev/stdout"],
                          cwd=recorded, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_dash_writes_the_report_to_stdout(capsys, recorded: Path, name: str) -> None:
    out = ok(capsys, *report_argv(name, "-"))
    if name in ("xml", "badge"):
        assert out.lstrip().startswith("<")
    elif name == "lcov":
        assert "end_of_record" in out
    else:
        json.loads(out)  # nothing but the report on stdout: the account went to stderr
    assert not (recorded / "-").exists()


def test_select_suite_out_dash(capsys, recorded: Path) -> None:
    out = ok(capsys, "select", "--data-file", "tests.ragcov", "-o", "order.json",
             "--suite-out", "-")
    assert {json.loads(line)["id"] for line in out.splitlines()} == {q["id"] for q in TESTS_QUERIES}
    assert json.loads((recorded / "order.json").read_text())["pool_size"] == 3


def test_select_never_writes_the_cut_suite_over_the_pools_query_files(capsys,
                                                                     recorded: Path) -> None:
    before = (recorded / "queries.jsonl").read_bytes()
    write_jsonl(recorded / "more.jsonl", [{"id": "q-more", "text": "capital of Spain"}])
    record(capsys, recorded, "tests", "more.jsonl", "--append")  # a second file, appended
    for pool_file in ("queries.jsonl", "./more.jsonl"):
        code, _, err = cli(capsys, "select", "--data-file", "tests.ragcov", "--budget", "1",
                           "--suite-out", pool_file)
        assert code == 1, err
        assert err.strip().splitlines() == [f"ragcov: error: {Path(pool_file)}: is a query file "
                                            "tests.ragcov was recorded from; refusing to overwrite "
                                            "it (choose another output path)"]
        assert not (recorded / "order.json").exists()
    assert (recorded / "queries.jsonl").read_bytes() == before
    ok(capsys, "select", "--data-file", "tests.ragcov", "--budget", "1", "--suite-out", "cut.jsonl")
    assert len((recorded / "cut.jsonl").read_text().splitlines()) == 1


def test_select_order_and_suite_both_on_stdout_is_refused(capsys, recorded: Path) -> None:
    code, out, err = cli(capsys, "select", "--data-file", "tests.ragcov", "-o", "-",
                         "--suite-out", "-")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == ["ragcov: error: -: stdout given for two outputs (also as "
                                        "-); give one of them a file path"]


# ---------------------------------------------------------------- outputs that are inputs
def _cases() -> list[tuple[str, str, str]]:
    """(command, option, what the output is): every output aimed at something it reads."""
    cases = []
    for name in sorted(REPORTS):
        first = "traffic.ragcov" if name in ("diff", "gap") else "tests.ragcov"
        cases.append((name, "-o", first))                 # its own input
        cases.append((name, "-o", "corpus.jsonl"))        # the corpus the input recorded
        # the suite a data-file input was recorded from: the user's own file
        cases.append((name, "-o", "traffic.jsonl" if name in ("diff", "gap") else "queries.jsonl"))
    for name in ("json", "xml", "lcov", "badge", "select", "faults"):
        cases.append((name, "-o", "other.ragcov"))        # any ragcov data file
    cases += [("select", "--suite-out", "corpus.jsonl"), ("select", "--suite-out", "tests.ragcov"),
              ("faults", "-o", "qrels.jsonl"), ("select", "-o", "link-to-data"),
              ("xml", "-o", "hardlink.ragcov"),
              # what lives beside a data file while it is written: its writers' lock, journals
              ("select", "-o", "tests.ragcov-lock"), ("json", "-o", "other.ragcov-journal"),
              ("xml", "-o", "tests.ragcov-wal")]
    return cases


@pytest.mark.parametrize("name, option, target", _cases())
def test_output_over_an_input_is_refused(capsys, recorded: Path, name: str, option: str,
                                         target: str) -> None:
    record(capsys, recorded, "other")
    (recorded / "link-to-data").symlink_to(recorded / "tests.ragcov")
    os.link(recorded / "tests.ragcov", recorded / "hardlink.ragcov")
    before = {p.name: p.read_bytes() for p in recorded.iterdir() if p.is_file()}
    argv = report_argv(name, target, option)
    if option == "--suite-out":
        argv += ["-o", "order.json"]
    code, out, err = cli(capsys, *argv)
    assert code == 1, out
    assert err.startswith(f"ragcov: error: {target}: is ") and "refusing to overwrite" in err
    assert len(err.strip().splitlines()) == 1
    after = {p.name: p.read_bytes() for p in recorded.iterdir() if p.is_file()}
    assert after == before  # nothing written, nothing destroyed
    assert (recorded / "link-to-data").is_symlink()


def test_generate_output_over_the_corpus_is_refused(capsys, recorded: Path) -> None:
    before = (recorded / "corpus.jsonl").read_bytes()
    code, _, err = cli(capsys, "generate", "--corpus", "corpus.jsonl", "--retriever", "bm25",
                       "--data-file", "gen.ragcov", "-o", "corpus.jsonl", "--budget", "1")
    assert code == 1 and "corpus.jsonl: is an input of this command" in err
    assert (recorded / "corpus.jsonl").read_bytes() == before


def test_an_output_inside_a_corpus_folder_is_refused(capsys, work: Path) -> None:
    docs = work / "docs"
    docs.mkdir()
    (docs / "paris.txt").write_text("Paris is the capital of France.\n", encoding="utf-8")
    (docs / "tokyo.txt").write_text("Tokyo is the capital of Japan.\n", encoding="utf-8")
    ok(capsys, "run", "--corpus", "docs", "--queries", "queries.jsonl", "--retriever", "bm25",
       "--k", "1", "-q")
    code, _, err = cli(capsys, "xml", "-o", "docs/tokyo.txt")
    assert code == 1 and "docs/tokyo.txt: is a file of the corpus .ragcov was recorded from" in err
    assert (docs / "tokyo.txt").read_text() == "Tokyo is the capital of Japan.\n"
    ok(capsys, "xml", "-o", "elsewhere.xml")  # an ordinary output is still written


def test_an_ordinary_existing_report_is_still_replaced(capsys, recorded: Path) -> None:
    (recorded / "cov.json").write_text("old", encoding="utf-8")
    ok(capsys, "json", "--data-file", "tests.ragcov", "-o", "cov.json")
    assert json.loads((recorded / "cov.json").read_text())["totals"]["queries"] == 3


def test_one_path_for_two_outputs_is_refused(capsys, recorded: Path) -> None:
    code, _, err = cli(capsys, "select", "--data-file", "tests.ragcov", "-o", "x.json",
                       "--suite-out", "x.json")
    assert code == 1 and "x.json: given for two outputs" in err
    assert not (recorded / "x.json").exists()


def test_report_through_a_symlink_keeps_the_link(capsys, recorded: Path) -> None:
    (recorded / "reports").mkdir()
    (recorded / "reports" / "cov.json").write_text("old", encoding="utf-8")
    (recorded / "cov.json").symlink_to(recorded / "reports" / "cov.json")
    ok(capsys, "json", "--data-file", "tests.ragcov", "-o", "cov.json")
    assert (recorded / "cov.json").is_symlink()
    assert json.loads((recorded / "reports" / "cov.json").read_text())["totals"]["queries"] == 3
    assert leftovers(recorded) == [] and leftovers(recorded / "reports") == []


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator:
    """chattr +i on paths, undone after the test; skipped where inode flags cannot be set."""
    made: list[Path] = []

    def set_immutable(path: Path) -> None:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i needs root and a filesystem with inode flags")
        made.append(path)

    yield set_immutable
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_immutable_report_is_refused_before_any_work(capsys, recorded: Path, immutable) -> None:
    (recorded / "cov.xml").write_text("old", encoding="utf-8")
    immutable(recorded / "cov.xml")
    code, _, err = cli(capsys, "xml", "--data-file", "tests.ragcov", "-o", "cov.xml")
    assert code == 1
    assert err.strip() == ("ragcov: error: cov.xml: is immutable (chattr +i); refusing to change "
                           "it (choose another output path)")
    assert (recorded / "cov.xml").read_text() == "old"


def test_unwritable_folder_is_named_never_a_temporary(capsys, recorded: Path, immutable) -> None:
    """Root writes anywhere but an immutable folder: the error names the path given."""
    (recorded / "locked").mkdir()
    immutable(recorded / "locked")
    code, _, err = cli(capsys, "lcov", "--data-file", "tests.ragcov", "-o", "locked/cov.lcov")
    assert code == 1 and err.startswith("ragcov: error: locked/cov.lcov: cannot write in ")
    assert ".tmp" not in err
    # The same at the moment of writing, for a caller that skipped the check.
    from ragcov.errors import RagcovError
    from ragcov.files import write_text_atomic

    with pytest.raises(RagcovError, match=r"^locked/cov.lcov: cannot write in .*locked") as exc:
        write_text_atomic(Path("locked/cov.lcov"), "x")
    assert ".tmp" not in str(exc.value)


def test_html_in_an_unwritable_folder_is_named_never_a_temporary(capsys, recorded: Path,
                                                                 immutable) -> None:
    (recorded / "locked").mkdir()
    immutable(recorded / "locked")
    code, _, err = cli(capsys, "html", "--data-file", "tests.ragcov", "-d", "locked/site")
    assert code == 1, err
    assert err.strip().splitlines() == [f"ragcov: error: locked/site: cannot write in "
                                        f"{(recorded / 'locked').resolve()} (operation not permitted)"]
    assert list((recorded / "locked").iterdir()) == []


# ---------------------------------------------------------------- directories
def test_select_into_a_directory_names_the_path_given(capsys, recorded: Path) -> None:
    (recorded / "out").mkdir()
    code, _, err = cli(capsys, "select", "--data-file", "tests.ragcov", "-o", "out")
    assert code == 1
    assert err.strip() == "ragcov: error: out: is a directory; give a file path"
    assert ".tmp" not in err and list((recorded / "out").iterdir()) == []


# ---------------------------------------------------------------- symlinked data files
@pytest.mark.parametrize("append", [False, True])
def test_symlinked_data_file_is_written_through(capsys, work: Path, append: bool) -> None:
    store = work / "store"
    store.mkdir()
    record(capsys, work, "real", "traffic.jsonl")
    shutil.move(work / "real.ragcov", store / "real.ragcov")
    (work / "link.ragcov").symlink_to(store / "real.ragcov")
    ok(capsys, "run", "--corpus", "corpus.jsonl", "--queries", "queries.jsonl", "--retriever",
       "bm25", "--k", "2", "--data-file", "link.ragcov", "-q", *(["--append"] if append else []))
    assert (work / "link.ragcov").is_symlink()
    assert os.readlink(work / "link.ragcov") == str(store / "real.ragcov")
    from ragcov.data import CoverageData

    expected = {"q-fr", "q-de", "q-plants"} | ({"t-jp", "t-div"} if append else set())
    assert set(CoverageData(store / "real.ragcov").query_texts()) == expected
    assert leftovers(work) == [] and leftovers(store) == []


def test_symlinked_html_directory_is_written_through(capsys, recorded: Path) -> None:
    site = recorded / "sites" / "current"
    site.parent.mkdir()
    ok(capsys, "html", "--data-file", "tests.ragcov", "-d", str(site))
    (recorded / "htmlcov").symlink_to(site)
    # What an earlier version left: the link itself set aside by a writer now dead.
    (recorded / ".htmlcov.999999999-x.old").symlink_to(site)
    ok(capsys, "html", "--data-file", "tests.ragcov", "-d", "htmlcov", "--title", "Second")
    assert (recorded / "htmlcov").is_symlink()
    assert "Second" in (site / "index.html").read_text(encoding="utf-8")
    assert leftovers(recorded) == [] and leftovers(site.parent) == []


# ---------------------------------------------------------------- writability before retrieval
class CountingRetriever:
    """A real HTTP retriever on 127.0.0.1 that answers every query with one chunk."""

    def __init__(self) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests += 1
                data = json.dumps({"results": [{"id": "paris", "score": 1.0}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/search"


@pytest.fixture
def retriever_server() -> Iterator[CountingRetriever]:
    pytest.importorskip("httpx")
    srv = CountingRetriever()
    thread = threading.Thread(target=srv.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture
def run_dir(tmp_path: Path, city_corpus_file: Path) -> Iterator[Path]:
    write_jsonl(tmp_path / "queries.jsonl", TESTS_QUERIES)
    yield tmp_path
    subprocess.run(["chattr", "-i", str(tmp_path / "cov.ragcov")], capture_output=True)


def _without_dac_override() -> None:
    """In the child before exec: root without CAP_DAC_OVERRIDE obeys permission bits.

    Dropped from the bounding set, so the exec'd interpreter never holds it; the
    interpreter itself (under /root) stays reachable, as root owns that folder.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(24, 1, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_DAC_OVERRIDE
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_cli(folder: Path, url: str, *extra: str, bits_bind_root: bool = False,
            ) -> subprocess.CompletedProcess:
    """``ragcov run`` in a child process; ``bits_bind_root``: as root, without DAC override."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in [str(Path(__file__).resolve().parents[1] / "src"),
                    os.environ.get("PYTHONPATH", "")] if p),
           "RAGCOV_CACHE_DIR": str(folder / "cache")}
    drop = bits_bind_root and os.geteuid() == 0
    try:
        return subprocess.run(
            [sys.executable, "-m", "ragcov", "run", "--corpus", "corpus.jsonl", "--queries",
             "queries.jsonl", "--retriever", url, "--k", "1", "--data-file", "cov.ragcov", "-q",
             *extra], cwd=folder, env=env, capture_output=True, text=True, timeout=120,
            preexec_fn=_without_dac_override if drop else None)
    except subprocess.SubprocessError as exc:  # the preexec_fn failed: no CAP_SETPCAP here
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE for the child: {exc}")


@pytest.mark.parametrize("append", [True, False])
def test_read_only_data_file_is_refused_before_any_request(retriever_server, run_dir: Path,
                                                           append: bool) -> None:
    first = run_cli(run_dir, retriever_server.url)
    assert first.returncode == 0, first.stderr
    sent = retriever_server.requests
    before = (run_dir / "cov.ragcov").read_bytes()
    os.chmod(run_dir / "cov.ragcov", 0o444)
    # Root passes permission bits: as root the run is made without that privilege.
    rerun = run_cli(run_dir, retriever_server.url, *(["--append"] if append else []),
                    bits_bind_root=True)
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert retriever_server.requests == sent  # not one request before the refusal
    assert rerun.stderr.strip() == ("ragcov: error: cov.ragcov: is read-only; refusing to change "
                                    "it (make it writable or choose another --data-file)")
    assert (run_dir / "cov.ragcov").read_bytes() == before
    assert leftovers(run_dir) == []


@pytest.mark.parametrize("append", [True, False])
def test_immutable_data_file_is_refused_before_any_request(retriever_server, run_dir: Path,
                                                           append: bool) -> None:
    first = run_cli(run_dir, retriever_server.url)
    assert first.returncode == 0, first.stderr
    if subprocess.run(["chattr", "+i", str(run_dir / "cov.ragcov")],
                      capture_output=True).returncode != 0:
        pytest.skip("chattr +i needs root and a filesystem with inode flags")
    sent = retriever_server.requests
    rerun = run_cli(run_dir, retriever_server.url, *(["--append"] if append else []))
    assert rerun.returncode == 1
    assert retriever_server.requests == sent
    assert rerun.stderr.strip() == ("ragcov: error: cov.ragcov: is immutable (chattr +i); refusing "
                                    "to change it (make it writable or choose another --data-file)")
    assert ".tmp" not in rerun.stderr and leftovers(run_dir) == []
