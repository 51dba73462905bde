"""pgvector as the corpus and the retriever, on a real PostgreSQL server with pgvector.

The server is started on 127.0.0.1 for the session (tests/pg_server.py) and stopped after.
The chunks are the bundled FinQA sample; the covered set and every query's ranking must be
what pgvector itself returns for ``ORDER BY embedding <op> q LIMIT k``, asked here in SQL.
The superuser has a password that the URL carries: it must never reach a message, the
terminal or the data file.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

import pg_server
from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.data import CoverageData
from ragcov.errors import RagcovError
from ragcov.stores import open_store

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "ragcov" / "data_sample"
K = 3
N_PAGES = 30
N_QUERIES = 25
DIM = 16
OPERATORS = {"cosine": "<=>", "l2": "<->", "inner": "<#>"}


def secret_forms(server: pg_server.PgServer) -> list[str]:
    return [server.password, quote(server.password, safe=""), quote(server.password)]


def literal(v) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


@pytest.fixture(scope="module")
def finqa(pg, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The sample's chunks in a plain table (id, doc_id, content, embedding), with seeded vectors."""
    work = tmp_path_factory.mktemp("pg-finqa")
    pages = work / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    corpus = load_corpus(pages, split=True)
    queries = [json.loads(x) for x in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    queries = queries[:N_QUERIES]
    suite = work / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in queries))
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(corpus), DIM))
    qvectors = rng.normal(size=(len(queries), DIM))
    pg.create_database("finqa")
    with pg.connect("finqa") as con:
        con.execute(f"CREATE TABLE chunks (id text PRIMARY KEY, doc_id text, content text, "
                    f"embedding vector({DIM}))")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO chunks VALUES (%s, %s, %s, %s::vector)",
                            [(c.id, c.doc_id, c.text, literal(v)) for c, v in zip(corpus, vectors)])
    return {"ids": corpus.ids, "texts": corpus.texts, "docs": [c.doc_id for c in corpus],
            "suite": suite, "qvectors": qvectors}


def sql_top_k(pg, db: str, table: str, q, k: int, op: str = "<=>", where: str = "") -> list[str]:
    with pg.connect(db) as con:
        rows = con.execute(f"SELECT id FROM {table} {where} ORDER BY embedding {op} %s::vector LIMIT %s",
                           (literal(q), k)).fetchall()
    return [str(r[0]) for r in rows]


def test_table_is_read_with_its_own_ids_and_documents(pg, finqa: dict) -> None:
    corpus = load_corpus(pg.url("finqa", "table=chunks&text=content"))
    by_id = {c.id: c for c in corpus}
    assert sorted(by_id) == sorted(finqa["ids"])
    assert [by_id[i].text for i in finqa["ids"]] == finqa["texts"]
    assert [by_id[i].doc_id for i in finqa["ids"]] == finqa["docs"]  # doc_id column found


def test_chunks_come_through_a_server_side_cursor_in_pages(pg, finqa: dict) -> None:
    store = open_store(pg.url("finqa", "table=chunks&text=content"))
    rows = store.iter_chunks(page_size=7)
    first = next(rows)
    cursors = store.conn.execute("SELECT name FROM pg_cursors").fetchall()
    rest = list(rows)
    assert ("ragcov_chunks",) in cursors  # a named (server-side) cursor, not one big reply
    assert [first.id, *(r.id for r in rest)] == sorted(finqa["ids"])


@pytest.mark.parametrize("distance", sorted(OPERATORS))
def test_search_is_pgvectors_own_top_k(pg, finqa: dict, distance: str) -> None:
    store = open_store(pg.url("finqa", f"table=chunks&text=content&distance={distance}"))
    got = store.search(finqa["qvectors"].tolist(), K)
    for q, ranked in zip(finqa["qvectors"], got):
        assert [cid for cid, _ in ranked] == sql_top_k(pg, "finqa", "chunks", q, K, OPERATORS[distance])
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True)  # higher is nearer, in pgvector's order


def test_covered_set_equals_pgvectors_top_k_through_the_api(pg, finqa: dict, tmp_path: Path) -> None:
    """ragcov's measure over the store's search records exactly pgvector's top-k per query.

    The query vectors are the seeded ones (no model is loaded here); the CLI path with a real
    embedding model is test_store_retriever_with_minilm below.
    """
    from ragcov.api import measure
    from ragcov.suite import load_suite

    url = pg.url("finqa", "table=chunks&text=content")
    corpus = load_corpus(url)
    suite = load_suite(finqa["suite"])
    vectors = dict(zip([q.id for q in suite], finqa["qvectors"].tolist()))
    by_text = {q.text: vectors[q.id] for q in suite}

    class SeededStoreSearch:
        def retrieve(self, texts, k):
            return corpus.store.search([by_text[t] for t in texts], k)

        def fingerprint(self):
            return {"kind": "store", **corpus.store.describe()}

    m = measure(corpus, suite, SeededStoreSearch(), k=K, data_file=tmp_path / "pg.ragcov",
                progress=False)
    m = CoverageData(tmp_path / "pg.ragcov").matrix()
    for row, qid in enumerate(m.query_ids):
        expected = sql_top_k(pg, "finqa", "chunks", vectors[qid], K)
        assert [m.chunk_ids[c] for c in m.retrieved(row)] == expected
    covered = {cid for cid, hit in zip(m.chunk_ids, m.covered()) if hit}
    union = {cid for q in finqa["qvectors"] for cid in sql_top_k(pg, "finqa", "chunks", q, K)}
    assert covered == union and 0 < len(covered) < len(finqa["ids"])


def test_password_never_in_output_or_data_file(capsys, pg, finqa: dict, tmp_path: Path) -> None:
    url = pg.url("finqa", "table=chunks&text=content")
    data = tmp_path / "pg.ragcov"
    code, out, err = cli(capsys, "run", "--corpus", url, "--queries", str(finqa["suite"]),
                         "--retriever", "bm25", "-k", str(K), "--data-file", str(data))
    assert code == 0, err
    code2, out2, err2 = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code2 == 0, err2
    raw = data.read_bytes()
    for secret in secret_forms(pg):
        assert secret not in out + err + out2 + err2
        assert secret.encode() not in raw
    chunking = CoverageData(data).meta().retriever["chunking"]
    assert chunking["url"] == f"postgresql://127.0.0.1:{pg.port}/finqa?table=chunks&text=content"
    assert chunking["store"] == "pgvector"


@pytest.mark.parametrize("query, shown", [
    ("table=nosuch", "no table 'nosuch'"),
    ("table=chunks&text=body", "has no column 'body'"),
    ("table=chunks&text=content&distance=dot", "unknown distance 'dot'"),
])
def test_bad_table_or_column_is_one_line_without_the_password(capsys, pg, finqa: dict,
                                                               query: str, shown: str) -> None:
    code, out, err = cli(capsys, "run", "--corpus", pg.url("finqa", query), "--queries",
                         str(finqa["suite"]), "--retriever", "bm25")
    assert code == 1
    assert shown in err and len(err.strip().splitlines()) == 1, err
    assert "chunks" in err or "nosuch" not in query  # the tables that are there are named
    for secret in secret_forms(pg):
        assert secret not in out + err


def test_wrong_password_or_database_is_one_line_without_it(capsys, pg, finqa: dict) -> None:
    wrong = pg.url("finqa", "table=chunks").replace(quote(pg.password, safe=""), "Wr0ng-pw%2Fsecret")
    code, _, err = cli(capsys, "run", "--corpus", wrong, "--queries", str(finqa["suite"]),
                       "--retriever", "bm25")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "password authentication failed" in err
    assert "Wr0ng" not in err
    code, _, err = cli(capsys, "run", "--corpus", pg.url("nosuchdb", "table=chunks"), "--queries",
                       str(finqa["suite"]), "--retriever", "bm25")
    assert code == 1 and 'database "nosuchdb" does not exist' in err, err
    for secret in secret_forms(pg):
        assert secret not in err
    # the password as a libpq parameter instead of in the authority
    as_param = (f"postgresql://postgres@127.0.0.1:{pg.port}/finqa?table=nosuch"
                f"&password={quote(pg.password, safe='')}")
    code, _, err = cli(capsys, "run", "--corpus", as_param, "--queries", str(finqa["suite"]),
                       "--retriever", "bm25")
    assert code == 1 and "no table 'nosuch'" in err and "password=%2A%2A%2A" in err, err
    for secret in secret_forms(pg):
        assert secret not in err


def test_reading_never_writes(pg, finqa: dict) -> None:
    store = open_store(pg.url("finqa", "table=chunks&text=content"))
    list(store.iter_chunks())
    import psycopg

    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        store.conn.execute("CREATE TABLE written_by_ragcov (x int)")


def langchain_tables(pg, db: str, community: bool = False) -> dict[str, list[tuple]]:
    """The tables LangChain's PGVector creates (langchain-postgres; ``community``: the older class)."""
    pg.create_database(db)
    rows: dict[str, list[tuple]] = {}
    rng = np.random.default_rng(11)
    id_columns = "uuid uuid PRIMARY KEY, custom_id varchar" if community else "id varchar PRIMARY KEY"
    with pg.connect(db) as con:
        con.execute("CREATE TABLE langchain_pg_collection (uuid uuid PRIMARY KEY, name varchar "
                    "NOT NULL UNIQUE, cmetadata json)")
        con.execute(f"CREATE TABLE langchain_pg_embedding ({id_columns}, collection_id uuid "
                    "REFERENCES langchain_pg_collection(uuid) ON DELETE CASCADE, embedding vector, "
                    "document varchar, cmetadata jsonb)")
        for name, n in (("finqa", 6), ("other", 3)):
            cid = uuid.uuid4()
            con.execute("INSERT INTO langchain_pg_collection VALUES (%s, %s, '{}')", (cid, name))
            rows[name] = []
            for i in range(n):
                chunk_id = f"{name}-{i}"
                meta = json.dumps({"source": f"{name}/doc{i // 2}.pdf", "page": i})
                values = (chunk_id, cid, literal(rng.normal(size=DIM)), f"text {i} of {name}", meta)
                if community:
                    con.execute("INSERT INTO langchain_pg_embedding VALUES (%s, %s, %s, %s::vector, "
                                "%s, %s::jsonb)", (uuid.uuid4(), *values))
                else:
                    con.execute("INSERT INTO langchain_pg_embedding VALUES (%s, %s, %s::vector, %s, "
                                "%s::jsonb)", values)
                rows[name].append(values)
    return rows


@pytest.mark.parametrize("community", [False, True], ids=["langchain-postgres", "langchain-community"])
def test_langchain_table_is_read_with_the_defaults(pg, community: bool) -> None:
    db = "lc_community" if community else "lc_postgres"
    rows = langchain_tables(pg, db, community)
    corpus = load_corpus(pg.url(db, "collection=finqa"))
    assert [c.id for c in corpus] == [r[0] for r in rows["finqa"]]  # id (custom_id) in id order
    assert [c.text for c in corpus] == [r[3] for r in rows["finqa"]]
    assert [c.doc_id for c in corpus] == [f"finqa/doc{i // 2}.pdf" for i in range(6)]  # cmetadata
    assert [c.position for c in corpus] == [0, 1, 0, 1, 0, 1]
    assert corpus[0].metadata["page"] == 0
    # the other collection's rows are never searched either
    q = np.random.default_rng(3).normal(size=DIM)
    ranked = corpus.store.search([q.tolist()], 10)[0]
    assert {cid for cid, _ in ranked} == {r[0] for r in rows["finqa"]}
    with pytest.raises(RagcovError, match=r"no collection named.*finqa, other"):
        load_corpus(pg.url(db))
    with pytest.raises(RagcovError, match=r"no collection 'nosuch'.*finqa, other"):
        load_corpus(pg.url(db, "collection=nosuch"))


def test_sqlalchemy_url_and_doc_option(pg, finqa: dict) -> None:
    """``postgresql+psycopg://`` as LangChain apps write it; ``?doc=`` names the document column."""
    url = pg.url("finqa", "table=chunks&text=content&doc=id", scheme="postgresql+psycopg")
    corpus = load_corpus(url)
    assert all(c.doc_id == c.id for c in corpus)
    assert corpus.source == f"postgresql+psycopg://127.0.0.1:{pg.port}/finqa?table=chunks&text=content&doc=id"


def test_stored_vectors_are_exposed_for_the_model_check(pg, finqa: dict) -> None:
    store = open_store(pg.url("finqa", "table=chunks&text=content"))
    ids = finqa["ids"][:5]
    vectors = store.stored_vectors([*ids, "no-such-id"])
    assert len(vectors) == 6 and vectors[-1] is None
    assert all(len(v) == DIM for v in vectors[:5])
    with pg.connect("finqa") as con:
        first = con.execute("SELECT embedding::text FROM chunks WHERE id = %s", (ids[0],)).fetchone()
    assert vectors[0] == pytest.approx(json.loads(first[0]))


@pytest.mark.slow
def test_store_retriever_with_minilm(capsys, pg, tmp_path: Path, minilm_path: str,
                                     minilm_vectors) -> None:
    """``ragcov run --retriever store``: the queries embedded with the model, searched by pgvector."""
    pages = tmp_path / "pages.jsonl"
    pages.write_text("".join((SAMPLE / "finqa_pages.jsonl").read_text().splitlines(True)[:N_PAGES]))
    corpus = load_corpus(pages, split=True)
    queries = [json.loads(x) for x in (SAMPLE / "finqa_questions.jsonl").read_text().splitlines()]
    queries = queries[:N_QUERIES]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": q["id"], "query": q["question"]}) + "\n"
                             for q in queries))
    vectors = minilm_vectors(corpus.texts)
    qvectors = minilm_vectors([q["question"] for q in queries])
    pg.create_database("minilm")
    with pg.connect("minilm") as con:
        con.execute("CREATE TABLE chunks (id text PRIMARY KEY, doc_id text, document text, "
                    f"embedding vector({vectors.shape[1]}))")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO chunks VALUES (%s, %s, %s, %s::vector)",
                            [(c.id, c.doc_id, c.text, literal(v)) for c, v in zip(corpus, vectors)])
    data = tmp_path / "store.ragcov"
    code, out, err = cli(capsys, "run", "--corpus", pg.url("minilm", "table=chunks"), "--queries",
                         str(suite), "--retriever", "store", "--model", minilm_path, "-k", str(K),
                         "--data-file", str(data))
    assert code == 0, err
    m = CoverageData(data).matrix()
    qrow = {qid: i for i, qid in enumerate(m.query_ids)}
    for q, qv in zip(queries, qvectors):
        got = [m.chunk_ids[c] for c in m.retrieved(qrow[q["id"]])]
        assert got == sql_top_k(pg, "minilm", "chunks", qv, K)
    fingerprint = CoverageData(data).meta().retriever
    assert fingerprint["url"] == f"postgresql://127.0.0.1:{pg.port}/minilm?table=chunks"
    for secret in secret_forms(pg):
        assert secret not in out + err and secret.encode() not in data.read_bytes()


def test_langchain_postgres_pgvector_is_read_and_searched_as_it_searches(pg, finqa: dict) -> None:
    """The table the real langchain-postgres ``PGVector`` writes: defaults read it, and the
    store's search returns what ``PGVector.similarity_search_by_vector`` returns."""
    pytest.importorskip("langchain_postgres", reason="langchain-postgres is not installed")
    from langchain_core.embeddings import DeterministicFakeEmbedding  # hashes text to a vector
    from langchain_postgres import PGVector

    pg.create_database("lc_real")
    embeddings = DeterministicFakeEmbedding(size=DIM)
    connection = pg.url("lc_real", scheme="postgresql+psycopg")
    app = PGVector(embeddings=embeddings, connection=connection, collection_name="finqa")
    app.add_texts(finqa["texts"], metadatas=[{"source": d} for d in finqa["docs"]], ids=finqa["ids"])
    PGVector(embeddings=embeddings, connection=connection, collection_name="other").add_texts(
        ["not in finqa"], ids=["other-0"])
    corpus = load_corpus(pg.url("lc_real", "collection=finqa"))
    by_id = {c.id: c for c in corpus}
    assert sorted(by_id) == sorted(finqa["ids"])
    assert [by_id[i].doc_id for i in finqa["ids"]] == finqa["docs"]  # cmetadata's source
    assert [by_id[i].text for i in finqa["ids"]] == finqa["texts"]
    questions = [json.loads(x)["query"] for x in finqa["suite"].read_text().splitlines()]
    for question in questions:
        qv = embeddings.embed_query(question)
        expected = [d.id for d in app.similarity_search_by_vector(qv, k=K)]
        assert [cid for cid, _ in corpus.store.search([qv], K)[0]] == expected


def test_llamaindex_pgvectorstore_table_is_read_with_its_node_ids(pg, finqa: dict) -> None:
    """LlamaIndex's ``PGVectorStore`` keeps its nodes in ``data_<name>`` (``id`` a serial number,
    ``node_id``, ``text``, ``metadata_``, ``embedding``): ``?table=data_<name>`` alone reads
    the node ids its retriever returns, their documents and text, and searches as it does."""
    pytest.importorskip("llama_index.vector_stores.postgres")
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery
    from llama_index.vector_stores.postgres import PGVectorStore

    pg.create_database("li_pg")
    rng = np.random.default_rng(11)
    nodes = [TextNode(id_=str(uuid.uuid5(uuid.NAMESPACE_URL, cid)), text=text, metadata={"page": i},
                      embedding=rng.normal(size=DIM).tolist(),
                      relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)})
             for i, (cid, text, doc) in enumerate(zip(finqa["ids"], finqa["texts"], finqa["docs"]))]
    app = PGVectorStore.from_params(connection_string=pg.url("li_pg", scheme="postgresql+psycopg"),
                                    async_connection_string=pg.url("li_pg", scheme="postgresql+psycopg"),
                                    table_name="app", embed_dim=DIM)
    app.add(nodes)
    corpus = load_corpus(pg.url("li_pg", "table=data_app"))
    by_id = {c.id: c for c in corpus}
    assert sorted(by_id) == sorted(n.node_id for n in nodes)  # node_id, not the serial id
    assert [by_id[n.node_id].doc_id for n in nodes] == finqa["docs"]  # the node's source document
    assert [by_id[n.node_id].text for n in nodes] == finqa["texts"]
    assert by_id[nodes[3].node_id].metadata["page"] == 3  # metadata_ is the metadata
    for qv in rng.normal(size=(5, DIM)):
        expected = app.query(VectorStoreQuery(query_embedding=qv.tolist(), similarity_top_k=K)).ids
        assert [cid for cid, _ in corpus.store.search([qv.tolist()], K)[0]] == expected
    app.client.dispose()
