"""A model is known by its content, not by its name (docs/reliability.md, "Models by content").

A model fine-tuned and saved again at the same path, or another model at the same
relative path, kept the name: cached corpus vectors of the old model were searched with
the new model's query vectors (23% reported where a fresh cache gave 35%), and
``--append``, ``combine`` and ``probe`` took the two models for one retriever.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from helpers import cli
from ragcov.data.schema import check_compatible, new_meta, read_meta, same_retriever
from ragcov.errors import RagcovError

SAMPLE = Path(__file__).resolve().parent.parent / "src" / "ragcov" / "data_sample"


def _copy_model(minilm_path: str, to: Path) -> Path:
    shutil.copytree(minilm_path, to)
    return to


def _shuffle_token_embeddings(folder: Path, seed: int = 0) -> None:
    """Save the model again with its token embedding rows permuted: same files, same shapes,
    same config, other vectors (as a fine-tune saved over the old folder would be)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(path)
    name = next(k for k in tensors if "word_embeddings" in k)
    perm = torch.randperm(tensors[name].shape[0], generator=torch.Generator().manual_seed(seed))
    tensors[name] = tensors[name][perm].contiguous()
    save_file(tensors, path, metadata={"format": "pt"})


# ------------------------------------------------------------------------- identity (fast)
def test_two_folders_at_the_same_relative_path_are_two_models(minilm_path: str, tmp_path: Path,
                                                               monkeypatch) -> None:
    from ragcov.retrievers import model_identity
    from ragcov.retrievers.model_identity import identify_model

    for where in ("one", "two"):
        _copy_model(minilm_path, tmp_path / where / "m")
    _shuffle_token_embeddings(tmp_path / "two" / "m")
    seen = {}
    for where in ("one", "two"):
        monkeypatch.chdir(tmp_path / where)
        seen[where] = identify_model("./m", "./m")
    one, two = seen["one"], seen["two"]
    assert one.name == two.name == "./m"
    assert one.digest and two.digest and one.digest != two.digest
    assert one.path == str((tmp_path / "one" / "m").resolve())
    assert one.fingerprint() != two.fingerprint()
    assert not same_retriever({"kind": "dense", **one.fingerprint()}, {"kind": "dense", **two.fingerprint()})

    # A warm run stats the files and hashes nothing; a file saved again is hashed again.
    hashed: list[Path] = []
    real = model_identity._file_sha256
    monkeypatch.setattr(model_identity, "_file_sha256", lambda p: hashed.append(p) or real(p))
    monkeypatch.chdir(tmp_path / "one")
    assert identify_model("./m", "./m") == one
    assert hashed == []
    _shuffle_token_embeddings(tmp_path / "one" / "m", seed=1)
    again = identify_model("./m", "./m")
    assert [p.name for p in hashed] == ["model.safetensors"]
    assert again.digest not in (one.digest, two.digest)


def test_the_same_model_in_two_folders_is_one_model(minilm_path: str, tmp_path: Path) -> None:
    """The folder is recorded to say where the model was, not compared: two checkouts of one
    model are one retriever (CI and a laptop combine their shards)."""
    from ragcov.retrievers.model_identity import identify_model

    a = identify_model("m", str(_copy_model(minilm_path, tmp_path / "a")))
    b = identify_model("m", str(_copy_model(minilm_path, tmp_path / "b")))
    assert a.digest == b.digest and a.path != b.path
    assert same_retriever({"kind": "dense", **a.fingerprint()}, {"kind": "dense", **b.fingerprint()})
    # a README or licence edited is not another model
    (tmp_path / "b" / "README.md").write_text("notes", encoding="utf-8")
    assert identify_model("m", str(tmp_path / "b")).digest == a.digest


def test_a_recording_without_a_model_digest_compares_by_name_and_says_so() -> None:
    old = {"kind": "dense", "model": "./m", "index": "flat"}
    new = {**old, "model_digest": "sha256:aa", "model_path": "/x/m"}
    other = {**old, "model_digest": "sha256:bb", "model_path": "/x/m"}
    with pytest.warns(UserWarning, match=r"old\.ragcov: its model './m' is known only by name"):
        assert same_retriever(old, new, "old.ragcov", "this run")
    assert not same_retriever(new, other)
    with pytest.raises(RagcovError, match=r"the embedding model './m' differs in content \(sha256:aa in "
                                          r"a, sha256:bb in b\): another model was saved at that"):
        check_compatible(new_meta(5, new, "h"), 5, "h", other, "a", "b")


def test_an_older_data_file_is_read_and_its_model_named_known_by_name_only(capsys, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "doc_id": "d", "text": f"text number {i}"}) + "\n"
                              for i in range(4)), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "text number 2"}) + "\n", encoding="utf-8")
    data = tmp_path / "old.ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(queries),
                       "--retriever", "bm25", "-k", "2", "--data-file", str(data), "-q")
    assert code == 0, err
    con = sqlite3.connect(data)  # as a dense run of an older ragcov recorded it: a name, no digest
    con.execute("UPDATE meta SET value = ? WHERE key = 'retriever'",
                (json.dumps({"kind": "dense", "model": "./m", "index": "flat", "similarity": "cosine"}),))
    con.commit()
    con.close()
    code, out, err = cli(capsys, "report", "--data-file", str(data))
    assert code == 0, err
    assert out.splitlines()[0] == ("retriever: dense (m, model known by name only), k=2; workload ceiling "
                                   "50% (1 query x k=2 of 4 chunks)")
    with sqlite3.connect(data) as con:
        assert read_meta(con, data).retriever["model"] == "./m"


# ------------------------------------------------------------------- end to end (the model)
def _write_suite(folder: Path) -> tuple[Path, Path, Path]:
    pages = (SAMPLE / "finqa_pages.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    questions = (SAMPLE / "finqa_questions.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "pages.jsonl").write_text("\n".join(pages) + "\n", encoding="utf-8")
    (folder / "q1.jsonl").write_text("\n".join(questions[:20]) + "\n", encoding="utf-8")
    (folder / "q2.jsonl").write_text("\n".join(questions[20:40]) + "\n", encoding="utf-8")
    return folder / "pages.jsonl", folder / "q1.jsonl", folder / "q2.jsonl"


def _total(capsys, data: Path) -> str:
    code, out, err = cli(capsys, "report", "--format", "total", "--data-file", str(data))
    assert code == 0, err
    return out.strip()


@pytest.mark.slow
def test_a_model_saved_again_at_the_same_path_gives_the_fresh_cache_number(
        minilm_path: str, tmp_path: Path, monkeypatch, capsys) -> None:
    pages, q1, q2 = _write_suite(tmp_path)
    _copy_model(minilm_path, tmp_path / "m")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "cache"))
    run = ["run", "--corpus", str(pages), "--split", "--retriever", "dense", "--model", "./m",
           "--backend", "torch", "-k", "3", "-q"]

    def record(queries: Path, data: str, *extra: str) -> Path:
        code, _, err = cli(capsys, *run, "--queries", str(queries), "--data-file", data, *extra)
        assert code == 0, err
        return tmp_path / data

    before = record(q1, "before.ragcov")
    record(q1, "shards", "-p")  # a shard of the first model (first 20 questions)
    _shuffle_token_embeddings(tmp_path / "m")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        after = record(q1, "after.ragcov")
    monkeypatch.setenv("RAGCOV_CACHE_DIR", str(tmp_path / "fresh-cache"))
    fresh = record(q1, "fresh.ragcov")
    # Before the fix the second run reused the first model's cached corpus vectors: the
    # number moved away from the fresh cache's, with no warning.
    assert _total(capsys, after) == _total(capsys, fresh)
    assert _total(capsys, after) != _total(capsys, before)
    digests = {json.loads(cli(capsys, "json", "--data-file", str(p), "-o", "-")[1])["meta"]["retriever"]
               ["model_digest"] for p in (before, after)}
    assert len(digests) == 2

    # Appending the new model's questions to the old model's file is refused, and so is
    # combining shards of the two models that share no question.
    code, _, err = cli(capsys, *run, "--queries", str(q2), "--data-file", str(before), "--append")
    assert code == 1 and "the embedding model './m' differs in content" in err
    shards = next(tmp_path.glob("shards.*"))
    record(q2, "shards", "-p")  # a shard of the second model (the next 20 questions)
    code, _, err = cli(capsys, "combine", *map(str, sorted(tmp_path.glob("shards.*"))),
                       "-o", str(tmp_path / "all.ragcov"))
    assert code == 1 and "differs in content" in err, err
    assert shards.exists() and not (tmp_path / "all.ragcov").exists()


def test_one_model_spelled_two_ways_is_one_retriever() -> None:
    """./m, m/, $PWD/m, a link to m: one content, one retriever (CI's absolute path and a
    laptop's ./m combine); the spelling stays in the file to say which was used."""
    a = {"kind": "dense", "model": "./m", "model_digest": "sha256:aa", "model_path": "/x/m"}
    b = {"kind": "dense", "model": "/ci/m", "model_digest": "sha256:aa", "model_path": "/ci/m"}
    assert same_retriever(a, b)
    assert not same_retriever(a, {**b, "model_digest": "sha256:bb"})


def test_a_linked_module_folder_and_a_file_rewritten_with_its_old_time_are_seen(
        minilm_path: str, tmp_path: Path) -> None:
    """A symlinked 1_Pooling switched to another pooling, and a config rewritten in place with
    its size and mtime put back, each change the digest (rglob did not follow links, and the
    stamp had no ctime)."""
    import os

    from ragcov.retrievers.model_identity import identify_model

    model = _copy_model(minilm_path, tmp_path / "m")
    pooling = tmp_path / "pool_mean"
    shutil.move(str(model / "1_Pooling"), pooling)
    shutil.copytree(pooling, tmp_path / "pool_cls")
    config = json.loads((pooling / "config.json").read_text())
    cls = {**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}
    (tmp_path / "pool_cls" / "config.json").write_text(json.dumps(cls))
    (model / "1_Pooling").symlink_to(pooling)
    mean = identify_model("m", str(model)).digest
    (model / "1_Pooling").unlink()
    (model / "1_Pooling").symlink_to(tmp_path / "pool_cls")
    assert identify_model("m", str(model)).digest != mean
    # in place, same size, the old mtime restored
    target = tmp_path / "pool_cls" / "config.json"
    before = target.stat()
    text = target.read_text()
    swapped = text.replace("384", "385")  # same size, another model
    assert len(swapped) == len(text) and swapped != text
    digest = identify_model("m", str(model)).digest
    target.write_text(swapped)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert identify_model("m", str(model)).digest != digest
