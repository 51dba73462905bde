"""A symlink planted at a path ragcov writes: the file it points at is never touched.

The rule (docs/reliability.md, "Links"): in ragcov's cache, where ragcov names every file
and makes no link, no symlink is followed; at a path the user named, a link the user made
is written through (as an editor does, documented since the first round) and a link
another user made (planted in a shared folder) is refused. Each case plants a link at one
path a command writes, pointing at a victim file, and checks the victim is byte-identical
and the refusal one line (a cache: one warning, and the run goes on).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from helpers import cli
from ragcov.errors import RagcovError
from ragcov.files import atomic_path, cache_dir, write_text_atomic

VICTIM = "precious: not ragcov's\n"
OTHER_USER = 65534  # nobody


def _victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    victim = tmp_path / name
    victim.write_text(VICTIM, encoding="utf-8")
    return victim


def _plant(link: Path, victim: Path, uid: int | None = None) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    if uid is not None:
        os.lchown(link, uid, uid)
    return link


def _untouched(victim: Path, link: Path | None = None) -> None:
    assert victim.read_text(encoding="utf-8") == VICTIM
    if link is not None:
        assert link.is_symlink() and os.path.realpath(link) == str(victim)


as_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a link owned by another user needs root")


# ------------------------------------------------------------------ the cache: never followed
def test_a_dense_run_never_writes_model_digests_through_a_planted_link(
        tmp_path: Path, city_corpus_file: Path, minilm_path: str, capsys, monkeypatch) -> None:
    """The reported case: model-digests.json as a link to any file was replaced by the
    digest JSON, exit 0, no word."""
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    victim = _victim(tmp_path)
    link = _plant(tmp_path / "cache" / "model-digests.json", victim)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "capital of France"}) + "\n")
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
                       "--retriever", "dense", "--model", minilm_path, "-k", "2",
                       "--data-file", str(tmp_path / ".ragcov"), "-q")
    assert code == 0, err
    _untouched(victim, link)
    assert err.splitlines() == [f"ragcov: warning: model digests not saved: {link}: is a symbolic "
                                "link in ragcov's cache, where ragcov makes none; refusing to "
                                "write through it (remove it)"]


def _embedding_entry() -> Path:
    from ragcov.retrievers.embedding_cache import embedding_cache_path

    return embedding_cache_path("some corpus and model")


def _hnsw_entry() -> Path:
    from ragcov.retrievers.hnsw_cache import hnsw_cache_path

    return hnsw_cache_path({"vectors": "v", "m": 16})


def _onnx_entry() -> Path:
    return cache_dir() / "onnx" / "some-model-opset17-v1" / "model.onnx"


def _digests_entry() -> Path:
    from ragcov.retrievers.model_identity import _known_path

    return _known_path()


def _gguf_entry() -> Path:
    return cache_dir() / "models" / "gemma-3-270m.gguf"


CACHE_FILES = {"embeddings": _embedding_entry, "hnsw": _hnsw_entry, "onnx": _onnx_entry,
               "digests": _digests_entry, "gguf": _gguf_entry}


@pytest.mark.parametrize("entry", sorted(CACHE_FILES))
@pytest.mark.parametrize("where", ["file", "folder"])
def test_the_one_writer_follows_no_link_in_the_cache(tmp_path: Path, monkeypatch, entry: str,
                                                     where: str) -> None:
    """Every cache file (embeddings, HNSW graph, ONNX export, model digests, the assembled
    GGUF) is written by ``atomic_path``; a link at the file, or at a folder between it and
    the cache, is refused, even one the user made (ragcov makes none there)."""
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    path = CACHE_FILES[entry]()
    victim = _victim(tmp_path)
    if where == "file":
        link = _plant(path, victim)
        planted = link
    else:  # the folder holding the entry, linked to the victim's folder
        (tmp_path / "elsewhere").mkdir()
        victim = _victim(tmp_path / "elsewhere", path.name)
        planted = path.parent if path.parent != cache_dir() else None
        if planted is None:
            pytest.skip("the entry lies in the cache folder itself, which may be a link")
        _plant(planted, tmp_path / "elsewhere")
        link = None
    with pytest.raises(RagcovError) as info, atomic_path(path) as tmp:
        tmp.write_text("new", encoding="utf-8")
    assert str(info.value) == (f"{planted}: is a symbolic link in ragcov's cache, where ragcov "
                               "makes none; refusing to write through it (remove it)")
    _untouched(victim, link)


def test_the_cache_folder_itself_may_be_a_link(tmp_path: Path, monkeypatch) -> None:
    """Moving the cache to another disk with a link is the user's choice."""
    (tmp_path / "disk").mkdir()
    _plant(tmp_path / "cache", tmp_path / "disk")
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    write_text_atomic(cache_dir() / "model-digests.json", "{}")
    assert (tmp_path / "disk" / "model-digests.json").read_text() == "{}"


def test_a_cache_name_that_is_not_a_regular_file_is_not_replaced(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    fifo = _embedding_entry()
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO with no reader blocks a writer
    try:
        with pytest.raises(RagcovError, match="is not a regular file, so not ragcov's"):
            write_text_atomic(fifo, "x")  # the ONNX export's metadata is written so
        assert os.read(reader, 10) == b""
    finally:
        os.close(reader)
    assert fifo.exists() and not fifo.is_file()


def test_embedding_and_hnsw_caches_say_it_once_and_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    faiss = pytest.importorskip("faiss")
    from ragcov.retrievers import hnsw_cache
    from ragcov.retrievers.embedding_cache import save_embeddings

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    victim = _victim(tmp_path)
    emb = np.eye(4, dtype=np.float32)
    entry = _plant(_embedding_entry(), victim)
    with pytest.warns(UserWarning, match="not saved .*is a symbolic link in ragcov's cache"):
        save_embeddings(entry, emb, "some corpus and model")
    _untouched(victim, entry)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((64, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    key = hnsw_cache.hnsw_key(vectors, 8, faiss.IndexHNSWFlat(8, 8).hnsw.efConstruction)
    graph = _plant(hnsw_cache.hnsw_cache_path(key), victim)
    with pytest.warns(UserWarning, match="HNSW index cache .*is a symbolic link in ragcov's cache"):
        index = hnsw_cache.hnsw_index(vectors, 8, 16)
    assert index.ntotal == 64
    _untouched(victim, graph)


# ------------------------------------------------------------- outputs the user named
@pytest.fixture
def recorded(tmp_path: Path, city_corpus_file: Path, capsys) -> Path:
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n" for i, q in
                               enumerate(["capital of France", "what powers a cell"])))
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
                       "--retriever", "bm25", "-k", "2", "--data-file", str(tmp_path / ".ragcov"), "-q")
    assert code == 0, err
    return tmp_path / ".ragcov"


def _outputs(tmp_path: Path, corpus: Path, data: Path) -> dict[str, tuple[str, list[str]]]:
    """Each output a command writes at a path the user names: (the path, the command)."""
    run = ["--corpus", str(corpus), "--retriever", "bm25"]
    d = ["--data-file", str(data)]
    queries = str(tmp_path / "q.jsonl")
    return {
        "run --data-file": ("new.ragcov", ["run", *run, "--queries", queries, "-k", "2",
                                           "--data-file", "{}"]),
        "json -o": ("r.json", ["json", *d, "-o", "{}"]),
        "xml -o": ("c.xml", ["xml", *d, "-o", "{}"]),
        "lcov -o": ("c.lcov", ["lcov", *d, "-o", "{}"]),
        "badge -o": ("b.svg", ["badge", *d, "-o", "{}"]),
        "select -o": ("order.json", ["select", *d, "-o", "{}"]),
        "select --suite-out": ("cut.jsonl", ["select", *d, "-o", "o.json", "--suite-out", "{}"]),
        "faults -o": ("f.json", ["faults", *d, "--qrels", str(tmp_path / "qrels.jsonl"), "-o", "{}"]),
        "probe --drafts-out": ("drafts.jsonl", ["probe", *run, *d, "--drafts-out", "{}"]),
        "topics -o": ("t.txt", ["topics", *d, "-o", "{}"]),
        "diff -o": ("d.txt", ["diff", str(data), str(data), "-o", "{}"]),
        "generate -o": ("gen.jsonl", ["generate", *run, "-k", "2", "--budget", "1", "-o", "{}",
                                      "--data-file", "gen.ragcov", "-q"]),
        "generate --ragas": ("ragas.json", ["generate", *run, "-k", "2", "--budget", "1",
                                            "-o", "g2.jsonl", "--data-file", "g2.ragcov",
                                            "--ragas", "{}", "-q"]),
        "html -d": ("site", ["html", *d, "-d", "{}"]),
        "diff --html": ("dsite", ["diff", str(data), str(data), "--html", "{}"]),
    }


OUTPUTS = list(_outputs(Path("."), Path("c"), Path("d")))


@as_root
@pytest.mark.parametrize("output", OUTPUTS)
def test_a_link_another_user_planted_at_an_output_is_refused(
        tmp_path: Path, city_corpus_file: Path, recorded: Path, capsys, monkeypatch,
        output: str) -> None:
    (tmp_path / "qrels.jsonl").write_text(json.dumps({"query_id": "q0", "chunk_id": "paris"}) + "\n")
    name, args = _outputs(tmp_path, city_corpus_file, recorded)[output]
    if name in ("site", "dsite"):  # a folder: the link points at another folder
        (tmp_path / "theirs").mkdir()
        victim = _victim(tmp_path / "theirs", "index.html")
        target = tmp_path / "theirs"
    else:
        victim = target = _victim(tmp_path)
    link = _plant(tmp_path / name, target, uid=OTHER_USER)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *[a.replace("{}", str(link)) for a in args])
    assert code == 1, (out, err)
    assert err == (f"ragcov: error: {link}: is a symbolic link made by another user "
                   f"(uid {OTHER_USER}); refusing to write through it\n")
    _untouched(victim)
    assert link.is_symlink() and os.path.realpath(link) == str(target)
    assert not list(victim.parent.glob(".*.tmp")), "a temporary was left beside the target"


@as_root
def test_a_link_the_user_made_at_an_output_is_still_written_through(
        tmp_path: Path, recorded: Path, capsys) -> None:
    """The documented rule for outputs stays: the link's target replaced, the link kept."""
    victim = _victim(tmp_path, "mine.json")
    link = _plant(tmp_path / "r.json", victim)
    assert cli(capsys, "json", "--data-file", str(recorded), "-o", str(link))[0] == 0
    assert json.loads(victim.read_text())["meta"] and link.is_symlink()


def test_a_link_at_the_lock_file_is_refused(tmp_path: Path, recorded: Path, city_corpus_file: Path,
                                            capsys) -> None:
    """``DATA-lock`` is ragcov's own name: opened without following a link, which would
    create or open whatever it points at."""
    victim = _victim(tmp_path)
    link = _plant(tmp_path / ".ragcov-lock", victim)
    code, _, err = cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries",
                       str(tmp_path / "q.jsonl"), "--retriever", "bm25", "-k", "2", "--append",
                       "--data-file", str(recorded), "-q")
    assert code == 1
    assert err == (f"ragcov: error: {link}: is a symbolic link, and ragcov's lock file never is "
                   "one; refusing to open it (remove it)\n")
    _untouched(victim, link)


def test_generate_never_cuts_a_file_that_is_not_its_journal(tmp_path: Path, city_corpus_file: Path,
                                                            capsys) -> None:
    """Resuming cut an unfinished last line from any ``-o`` file before reading it: a file
    given by mistake (or a link's target) lost its last line, then was refused."""
    other = tmp_path / "notes.jsonl"
    other.write_text('{"note": 1}\nhalf a line', encoding="utf-8")
    before = other.read_bytes()
    code, _, err = cli(capsys, "generate", "--corpus", str(city_corpus_file), "--retriever", "bm25",
                       "-k", "2", "--budget", "1", "-o", str(other), "--data-file",
                       str(tmp_path / "g.ragcov"), "-q")
    assert code == 1 and err.count("\n") == 1 and "not a ragcov generation record" in err, err
    assert other.read_bytes() == before


@as_root
@pytest.mark.parametrize("page", ["diff", "drift"])
def test_a_planted_link_inside_a_site_folder_is_not_followed(
        tmp_path: Path, city_corpus_file: Path, recorded: Path, capsys, page: str) -> None:
    """The diff and drift pages add the stylesheet and the marker to a site that lacks them:
    a dangling link another user left at ``style.css`` created its target, anywhere."""
    site = tmp_path / "site"
    assert cli(capsys, "html", "--data-file", str(recorded), "-d", str(site))[0] == 0
    (site / "style.css").unlink()
    aimed = tmp_path / "elsewhere" / "created.css"
    aimed.parent.mkdir()
    link = _plant(site / "style.css", aimed, uid=OTHER_USER)
    if page == "diff":
        args = ["diff", str(recorded), str(recorded), "--html", str(site)]
    else:
        args = ["drift", "--corpus", str(city_corpus_file), "--queries", str(tmp_path / "q.jsonl"),
                "--retriever", "bm25", "-k", "2", "--data-file", str(tmp_path / "drift.ragcov"),
                "--html", str(site), "-q"]
    code, _, err = cli(capsys, *args)
    assert code == 1 and err.splitlines()[-1] == (
        f"ragcov: error: {link}: is a symbolic link made by another user (uid {OTHER_USER}); "
        "refusing to write through it"), err
    assert not aimed.exists()


def test_model_digests_behind_a_planted_link_are_not_trusted(tmp_path: Path, monkeypatch) -> None:
    """A digests file is trusted for files it names by path, size, mtime and inode: one
    planted behind a link could give a model another model's digest."""
    from ragcov.retrievers.model_identity import folder_digest

    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    honest = folder_digest(model)
    known = json.loads((cache_dir() / "model-digests.json").read_text())
    forged = {where: {**entry, "sha256": "0" * 64} for where, entry in known.items()}
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    (cache_dir() / "model-digests.json").unlink()
    _plant(cache_dir() / "model-digests.json", tmp_path / "forged.json")
    with pytest.warns(UserWarning, match="model digests not saved"):
        assert folder_digest(model) == honest
