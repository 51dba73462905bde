"""Where a chunk is lost, on real indexes with defects planted: ragcov's exact check against
an independent numpy recount.

Each store holds the same real-text vectors: sentences of the bundled FinQA sample,
embedded once by MiniLM (the session's ``minilm_vectors``). A graph built with tiny
settings (the built-in HNSW with M 2 and efSearch 1, a Chroma collection with
max_neighbors 2 and ef_search 1, pgvector HNSW searched with ``hnsw.ef_search`` 1)
hides chunks; an exact index (FAISS flat, pgvector with no ANN index) and generous
settings hide none. The recount reads the data file with sqlite3 and scores the probe
texts against the stored vectors with numpy, a whole score matrix at a time.

Probes are run on a seeded sample of the chunks (the same one in every store, so their
texts are embedded once here); every chunk can still be reached by a sampled probe.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import ragcov
from helpers import cli
from ragcov.reachability.selfquery import sentences

pytestmark = pytest.mark.slow

SAMPLE = Path(ragcov.__file__).parent / "data_sample"
N_CHUNKS = 400
N_QUERIES = 15
K = 5
PROBED = 80      # --sample: chunks whose own probes are run
MARGIN = 1e-4    # scores this close to the top-k boundary may go either way between encoders


@pytest.fixture(scope="module")
def lost(tmp_path_factory: pytest.TempPathFactory, minilm_path: str, minilm_vectors) -> dict:
    """Sentence chunks of the sample, their MiniLM vectors, a suite, and the dense cache
    filled with those vectors (so ``--retriever dense`` embeds no chunk again)."""
    from ragcov.corpus import load_corpus
    from ragcov.retrievers.dense import DEFAULT_MODEL
    from ragcov.retrievers.embedding_cache import (
        embedding_cache_key,
        embedding_cache_path,
        save_embeddings,
    )
    from ragcov.retrievers.model_identity import identify_model

    folder = tmp_path_factory.mktemp("lost")
    rows, seen = [], set()
    for line in (SAMPLE / "finqa_pages.jsonl").read_text(encoding="utf-8").splitlines():
        page = json.loads(line)
        for s in sentences(page["text"]):
            if 6 <= len(s.split()) <= 40 and s not in seen and len(rows) < N_CHUNKS:
                seen.add(s)
                rows.append({"id": f"s{len(rows):04d}", "doc_id": page["doc_id"], "text": s})
    chunks = folder / "chunks.jsonl"
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    corpus = load_corpus(chunks)
    vectors = minilm_vectors(corpus.texts).astype(np.float32)
    key = embedding_cache_key(corpus, identify_model(DEFAULT_MODEL, minilm_path).cache_key, "")
    save_embeddings(embedding_cache_path(key), vectors, key)
    questions = [json.loads(x) for x in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    suite = folder / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in questions[:N_QUERIES]), encoding="utf-8")
    return {"folder": folder, "chunks": chunks, "corpus": corpus, "vectors": vectors,
            "suite": suite, "model": minilm_path, "encode": minilm_vectors}


def run_and_probe(capsys, corpus: str, data: Path, lost: dict, *extra: str) -> tuple[dict, str]:
    """``ragcov run`` then ``ragcov probe --sample``: the JSON report and probe's stderr."""
    code, _, err = cli(capsys, "run", "--corpus", corpus, "--queries", str(lost["suite"]),
                       "-k", str(K), "--data-file", str(data), "-q", *extra)
    assert code == 0, err
    out_json = data.with_suffix(".json")
    code, _, err = cli(capsys, "probe", "--corpus", corpus, "--data-file", str(data),
                       "--sample", str(PROBED), "--format", "json", "-o", str(out_json), *extra)
    assert code == 0, err
    return json.loads(out_json.read_text()), err


def recount(data: Path, lost: dict, vectors: np.ndarray) -> dict:
    """Hidden chunks and recall from the rows and a numpy score matrix: the chunks some
    probe's exact top-k holds clear of ties (by more than MARGIN, or less: both bounds),
    that no probe's index list holds and no test retrieves."""
    con = sqlite3.connect(data)
    ids = [r[0] for r in con.execute("SELECT id FROM chunks ORDER BY idx")]
    probes = con.execute("SELECT idx, text, chunk_idx FROM probes WHERE text != '' ORDER BY idx"
                         ).fetchall()
    reached = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM probe_hits")}
    tested = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM hits")}
    lists: dict[int, set[int]] = {}
    for p, c in con.execute("SELECT probe_idx, chunk_idx FROM probe_hits"):
        lists.setdefault(p, set()).add(c)
    probed = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM probes")}
    con.close()
    q = lost["encode"]([t for _, t, _ in probes]).astype(np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = q @ v.T                                    # every probe against every chunk
    top = -np.sort(-scores, axis=1)
    boundary = top[:, K]                                # the best score outside the top k
    strict = {int(c) for c in np.argwhere(scores > boundary[:, None] + MARGIN)[:, 1]}
    lax = {int(c) for c in np.argwhere(scores > boundary[:, None] - MARGIN)[:, 1]}
    unreachable = probed - reached - tested
    found = sum(sum(1 for c in lists.get(p, ()) if scores[i, c] >= top[i, K - 1] - MARGIN)
                for i, (p, _t, _c) in enumerate(probes))
    return {"ids": ids, "strict": {ids[c] for c in unreachable & strict},
            "lax": {ids[c] for c in unreachable & lax}, "unreachable": {ids[c] for c in unreachable},
            "recall": found / (K * len(probes))}


def hidden(doc: dict) -> set[str]:
    return {c["chunk_id"] for c in doc["chunks"] if c.get("lost_at") == "index"}


def check_against_recount(doc: dict, data: Path, lost: dict, expect_hidden: bool) -> dict:
    again = recount(data, lost, lost["vectors"])
    got = hidden(doc)
    assert again["strict"] <= got <= again["lax"], (got ^ again["strict"])
    assert len(again["lax"] - again["strict"]) <= 2  # the tie margin decides almost nothing
    if expect_hidden:
        assert got
        assert doc["totals"]["index_recall"]["probes"] == pytest.approx(again["recall"], abs=0.01)
    else:
        assert got == set() and again["lax"] == set()
    # Every unreachable chunk has its stage; none is made up for a reachable one.
    lost_at = {c["chunk_id"]: c.get("lost_at") for c in doc["chunks"]}
    assert {cid for cid, where in lost_at.items() if where} == again["unreachable"]
    assert doc["totals"]["index_hidden_chunks"] == len(got)
    return again


def test_builtin_hnsw_tiny_hides_and_generous_does_not(capsys, lost: dict) -> None:
    folder = lost["folder"]
    docs = {}
    for name, m, ef in (("tiny", "2", "1"), ("generous", "32", "400")):
        data = folder / f"hnsw-{name}.ragcov"
        docs[name], err = run_and_probe(capsys, str(lost["chunks"]), data, lost, "--retriever", "dense",
                                        "--model", lost["model"], "--index", "hnsw",
                                        "--hnsw-m", m, "--hnsw-ef-search", ef)
        check_against_recount(docs[name], data, lost, expect_hidden=name == "tiny")
        exact = docs[name]["totals"]["exact_check"]
        assert exact["settings"] == {"M": int(m), "efConstruction": 40, "efSearch": int(ef)}
        assert "exact check: every probe and test also searched exactly" in err
    assert docs["tiny"]["totals"]["index_recall"]["tests"] < 1.0
    assert docs["generous"]["totals"]["index_recall"]["probes"] == 1.0
    assert "--hnsw-ef-search (now 1)" in docs["tiny"]["totals"]["exact_check"]["remedy"]


def test_diff_and_html_show_the_index_change(capsys, lost: dict, tmp_path: Path) -> None:
    """The tiny graph against the generous one: every chunk the tiny graph hid and the
    generous one reaches is rescued; the HTML corpus map marks exactly the hidden chunks."""
    folder = lost["folder"]
    tiny, generous = folder / "hnsw-tiny.ragcov", folder / "hnsw-generous.ragcov"
    if not (tiny.exists() and generous.exists()):
        pytest.skip("needs test_builtin_hnsw_tiny_hides_and_generous_does_not first")
    code, out, err = cli(capsys, "diff", str(tiny), str(generous), "--allow-different-retriever",
                         "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    tiny_doc = json.loads(tiny.with_suffix(".json").read_text())
    gen_doc = json.loads(generous.with_suffix(".json").read_text())
    reachable_after = {c["chunk_id"] for c in gen_doc["chunks"]
                       if c["status"] in ("covered", "untested")}
    assert set(d["index_rescued"]) == hidden(tiny_doc) & reachable_after
    assert d["became_index_hidden"] == []
    assert d["index_recall"]["head"]["probes"] == 1.0
    code, _, err = cli(capsys, "html", "--data-file", str(tiny), "-d", str(tmp_path / "html"))
    assert code == 0, err
    page = (tmp_path / "html" / "index.html").read_text()
    marked = page.split('id="corpus-map-data">', 1)[1].split("</script>", 1)[0]
    cells = json.loads(marked)["docs"]
    by_doc: dict[str, list[str]] = {}
    for c in tiny_doc["chunks"]:
        by_doc.setdefault(c["doc_id"], []).append(c["chunk_id"])
    fours = {by_doc[d["d"]][i] for d in cells for i, code in enumerate(d["c"]) if code == 4}
    assert fours == hidden(tiny_doc)
    assert 'id="index-hidden"' in page and "hidden by the index" in page


def _chroma(path: Path, name: str, lost: dict, hnsw: dict) -> str:
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    col = client.create_collection(name, configuration={"hnsw": {"space": "cosine", **hnsw}},
                                   embedding_function=None)
    corpus = lost["corpus"]
    for i in range(0, len(corpus), 300):
        col.add(ids=corpus.ids[i:i + 300], documents=corpus.texts[i:i + 300],
                embeddings=lost["vectors"][i:i + 300].tolist(),
                metadatas=[{"doc_id": c.doc_id} for c in corpus.chunks[i:i + 300]])
    return f"chroma://{path}?collection={name}"


def test_chroma_tiny_graph_hides_and_generous_does_not(capsys, lost: dict, tmp_path: Path) -> None:
    for name, hnsw, expect in (
            ("tiny", {"max_neighbors": 2, "ef_construction": 4, "ef_search": 1}, True),
            ("generous", {"max_neighbors": 32, "ef_construction": 200, "ef_search": 400}, False)):
        url = _chroma(tmp_path / name, f"lost-{name}", lost, hnsw)
        data = tmp_path / f"{name}.ragcov"
        doc, err = run_and_probe(capsys, url, data, lost, "--retriever", "store", "--model", lost["model"])
        check_against_recount(doc, data, lost, expect_hidden=expect)
        settings = doc["totals"]["exact_check"]["settings"]
        assert settings["ef_search"] == hnsw["ef_search"]
        assert settings["max_neighbors (M)"] == hnsw["max_neighbors"]
        assert "chroma's stored vectors" in doc["totals"]["exact_check"]["source"]
        if expect:
            assert "collection.modify(configuration={'hnsw': {'ef_search'" in \
                doc["totals"]["exact_check"]["remedy"]


def _faiss(folder: Path, lost: dict, idmap: bool = False) -> str:
    import faiss
    from langchain_community.vectorstores import FAISS
    from langchain_core.embeddings import FakeEmbeddings

    corpus = lost["corpus"]
    store = FAISS.from_embeddings(list(zip(corpus.texts, lost["vectors"].tolist())),
                                  FakeEmbeddings(size=lost["vectors"].shape[1]),
                                  metadatas=[{"source": c.doc_id} for c in corpus], ids=corpus.ids)
    if idmap:  # positions as ids, but an index kind that cannot give its vectors back
        wrapped = faiss.IndexIDMap(faiss.IndexFlatL2(lost["vectors"].shape[1]))
        wrapped.add_with_ids(lost["vectors"], np.arange(len(corpus), dtype=np.int64))
        store.index = wrapped
    store.save_local(str(folder))
    return f"faiss://{folder}?trust=pickle"


def test_exact_indexes_have_full_recall_and_hide_nothing(capsys, pg, lost: dict,
                                                         tmp_path: Path) -> None:
    """FAISS flat and a pgvector table without an ANN index: recall 1.0, nothing hidden."""
    pg.create_database("lostflat")
    _pg_table(pg, "lostflat", lost)
    for name, url in (("faiss", _faiss(tmp_path / "faiss", lost)),
                      ("pgvector", pg.url("lostflat", "table=chunks"))):
        data = tmp_path / f"{name}.ragcov"
        doc, _ = run_and_probe(capsys, url, data, lost, "--retriever", "store", "--model", lost["model"])
        check_against_recount(doc, data, lost, expect_hidden=False)
        t = doc["totals"]
        assert t["index_recall"]["probes"] == 1.0 and t["index_recall"]["tests"] == 1.0
        assert t["exact_check"]["index"] == "flat" and t["index_hidden_chunks"] == 0


def _pg_table(pg, db: str, lost: dict) -> None:
    corpus = lost["corpus"]
    with pg.connect(db) as con:
        con.execute(f"CREATE TABLE chunks (id text PRIMARY KEY, doc_id text, document text, "
                    f"embedding vector({lost['vectors'].shape[1]}))")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO chunks VALUES (%s, %s, %s, %s::vector)", [
                (c.id, c.doc_id, c.text, "[" + ",".join(repr(float(x)) for x in v) + "]")
                for c, v in zip(corpus, lost["vectors"])])


def test_pgvector_hnsw_with_ef_search_1_hides_chunks(capsys, pg, lost: dict, tmp_path: Path
                                                     ) -> None:
    """The database's own settings: an HNSW index (m 2, ef_construction 4), searched with
    hnsw.ef_search = 1, and seq scans off so the planner uses the index as it does on a
    table too large to scan."""
    pg.create_database("losthnsw")
    _pg_table(pg, "losthnsw", lost)
    with pg.connect("losthnsw") as con:
        con.execute("CREATE INDEX chunks_hnsw ON chunks USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 2, ef_construction = 4)")
        con.execute("ALTER DATABASE losthnsw SET hnsw.ef_search = 1")
        con.execute("ALTER DATABASE losthnsw SET enable_seqscan = off")
    data = tmp_path / "pg.ragcov"
    doc, _ = run_and_probe(capsys, pg.url("losthnsw", "table=chunks"), data, lost, "--retriever",
                           "store", "--model", lost["model"])
    check_against_recount(doc, data, lost, expect_hidden=True)
    exact = doc["totals"]["exact_check"]
    assert exact["index"] == "hnsw" and exact["settings"]["hnsw.ef_search"] == "1"
    assert exact["settings"]["m"] == "2" and "SET hnsw.ef_search" in exact["remedy"]


def test_a_store_whose_vectors_cannot_be_read_says_so(capsys, lost: dict, tmp_path: Path) -> None:
    url = _faiss(tmp_path / "faiss", lost, idmap=True)
    data = tmp_path / "idmap.ragcov"
    doc, err = run_and_probe(capsys, url, data, lost, "--retriever", "store", "--model", lost["model"])
    lines = [line for line in err.splitlines() if "exact check" in line]
    assert lines == ["ragcov: exact check skipped: the IndexIDMap index cannot give its vectors "
                     "back as stored (ragcov reads them from flat, HNSW-flat and IVF-flat "
                     "indexes; a quantised or id-mapped index keeps codes or other ids); "
                     "unreachable chunks get no cause (embedding or index) and no index recall "
                     "is reported"]
    t = doc["totals"]
    assert t["index_recall"]["tests"] is None and t["index_recall"]["probes"] is None
    assert t["exact_check"]["checked"] is False and t["index_hidden_chunks"] == 0
    assert all("lost_at" not in c for c in doc["chunks"])
    code, _, err = cli(capsys, "report", "--data-file", str(data), "--min-index-recall", "50")
    assert code == 1 and "IndexIDMap index cannot give its vectors back" in err
