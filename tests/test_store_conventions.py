"""A store a framework wrote is read as the app meant it: its chunk ids, documents, text.

Real LlamaIndex nodes serialised by LlamaIndex's own ``node_to_metadata_dict`` into a
real local Qdrant folder and a real Chroma folder (vectors here are arbitrary: nothing
is searched, so no model is loaded; the searches are in tests/test_conformance.py).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from ragcov.corpus import load_corpus
from ragcov.errors import RagcovError
from ragcov.stores.payload import llamaindex_embed_text, llamaindex_row

pytest.importorskip("llama_index.core")
pytest_plugins = ["pytester"]


def nodes():
    from llama_index.core.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode

    made = []
    for i in range(6):
        cid, doc = f"c{i}", f"report-{i // 3}"
        made.append(TextNode(id_=str(uuid.uuid5(uuid.NAMESPACE_URL, cid)), text=f"Revenue line {i}.",
                             metadata={"chunk_id": cid, "doc_id": doc, "page": i}))
    # One node of a Document, as VectorStoreIndex.from_documents makes them: its source set.
    source = Document(id_="filing.pdf", text="Whole filing.")
    made.append(TextNode(id_=str(uuid.uuid5(uuid.NAMESPACE_URL, "c6")), text="Net income rose.",
                         metadata={"chunk_id": "c6", "file_name": "filing.pdf"},
                         excluded_embed_metadata_keys=["chunk_id"],
                         relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=source.id_)}))
    return made


def qdrant_folder(tmp_path: Path, payload) -> str:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    client.create_collection("app", vectors_config=models.VectorParams(
        size=4, distance=models.Distance.COSINE))
    client.upsert("app", points=[models.PointStruct(id=n.node_id, vector=[1.0, 0.5, 0.25, i + 1.0],
                                                    payload=payload(n))
                                 for i, n in enumerate(nodes())])
    client.close()
    return f"qdrant://{tmp_path}/qdrant?collection=app&trust=pickle"


def llamaindex_payload(node):
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    return node_to_metadata_dict(node, remove_text=False, flat_metadata=False)


def test_the_embedded_form_is_llamaindex_own() -> None:
    """The text LlamaIndex embeds, rebuilt from the stored node, equals LlamaIndex's own."""
    from llama_index.core.schema import MetadataMode

    for node in nodes():
        stored = json.loads(llamaindex_payload(node)["_node_content"])
        assert llamaindex_embed_text(stored, node.text) == node.get_content(MetadataMode.EMBED)
        row = llamaindex_row("", llamaindex_payload(node))
        assert row.text == node.text
        assert row.embed_text == node.get_content(MetadataMode.EMBED) != node.text
        assert row.framework == "LlamaIndex"


def test_llamaindex_rows_in_qdrant_give_the_apps_ids_documents_and_text(tmp_path: Path) -> None:
    corpus = load_corpus(qdrant_folder(tmp_path, llamaindex_payload))
    # Metadata chunk_id, not the point UUIDs (Qdrant scrolls in point id order).
    assert sorted(corpus.ids) == [f"c{i}" for i in range(7)]
    # The app's doc_id (written over with "None" at the top level), and a Document's id.
    docs = {c.id: c.doc_id for c in corpus}
    assert [docs[f"c{i}"] for i in range(7)] == ["report-0"] * 3 + ["report-1"] * 3 + ["filing.pdf"]
    assert {c.id: c.text for c in corpus} == {n.metadata["chunk_id"]: n.text for n in nodes()}
    first = corpus[corpus.positions["c0"]]
    assert "_node_content" not in first.metadata and first.metadata["page"] == 0
    reading = corpus.reading
    assert (reading.framework, reading.id_key, reading.id_origin) == ("LlamaIndex", "chunk_id", "detected")
    assert "chunk ids from metadata 'chunk_id' (detected)" in reading.describe()
    # The store's own search and vectors speak the app's ids.
    assert corpus.store.search([[1.0, 0.5, 0.25, 1.0]], 1)[0][0][0] == "c0"
    held = corpus.store.stored_vectors(["c1"])[0]  # normalised: the collection is cosine
    assert [x / held[0] for x in held] == pytest.approx([1.0, 0.5, 0.25, 2.0])


def test_an_explicit_id_key_and_the_stores_own_ids(tmp_path: Path) -> None:
    url = qdrant_folder(tmp_path, llamaindex_payload)
    assert sorted(load_corpus(url + "&id_key=store").ids) == sorted(n.node_id for n in nodes())
    assert sorted(load_corpus(url, id_key="store").ids) == sorted(n.node_id for n in nodes())
    named = load_corpus(url, id_key="chunk_id", doc_key="file_name")
    assert named.reading.id_origin == "given"
    assert {c.id: c.doc_id for c in named}["c0"] == "c0"  # no file_name: its own document
    with pytest.raises(RagcovError) as err:
        load_corpus(url + "&id_key=page")  # the last node has no page
    message = str(err.value)
    assert "\n" not in message
    assert "no metadata 'page'" in message
    assert "its metadata keys: chunk_id, doc_id, document_id, file_name, ref_doc_id" in message


def test_a_row_without_the_detected_key_is_one_line(tmp_path: Path) -> None:
    last = max(n.node_id for n in nodes())  # Qdrant scrolls in point id order

    def payload(node):
        data = llamaindex_payload(node)
        if node.node_id == last:
            content = json.loads(data["_node_content"])
            del content["metadata"]["chunk_id"], data["chunk_id"]
            data["_node_content"] = json.dumps(content)
        return data

    with pytest.raises(RagcovError, match=r"has no metadata 'chunk_id' \(which earlier rows have\).*"
                                          r"id_key=store"):
        load_corpus(qdrant_folder(tmp_path, payload))


def test_langchain_rows_in_qdrant_give_the_apps_chunk_ids(tmp_path: Path) -> None:
    corpus = load_corpus(qdrant_folder(tmp_path, lambda n: {
        "page_content": n.text, "metadata": {**n.metadata, "source": n.metadata.get("doc_id")}}))
    assert sorted(corpus.ids) == [f"c{i}" for i in range(7)]
    assert corpus.reading.framework is None and corpus.reading.id_origin == "detected"
    assert corpus[corpus.positions["c1"]].doc_id == "report-0"


def test_llamaindex_rows_in_chroma(tmp_path: Path) -> None:
    chromadb = pytest.importorskip("chromadb")
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    made = nodes()
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    client.create_collection("app").add(
        ids=[n.node_id for n in made], embeddings=[[1.0, 0.0, float(i), 1.0] for i in range(len(made))],
        documents=[n.get_content(metadata_mode=MetadataMode.NONE) for n in made],
        metadatas=[node_to_metadata_dict(n, remove_text=True, flat_metadata=True) for n in made])
    corpus = load_corpus(f"chroma://{tmp_path}/chroma?collection=app")
    assert corpus.ids == [f"c{i}" for i in range(7)]
    assert [c.doc_id for c in corpus][-1] == "filing.pdf"
    assert corpus.texts == [n.text for n in made]
    assert corpus.reading.embed_texts["c6"] == made[-1].get_content(MetadataMode.EMBED)


# Never lock the app out ------------------------------------------------------------------
def test_the_app_opens_its_qdrant_store_while_ragcov_holds_it(tmp_path: Path) -> None:
    """Qdrant's local mode admits one client per folder; ragcov reads a copy of it."""
    from qdrant_client import QdrantClient

    url = qdrant_folder(tmp_path, llamaindex_payload)
    corpus = load_corpus(url)
    app = QdrantClient(path=str(tmp_path / "qdrant"))  # refused while another client has it open
    assert app.count("app").count == 7
    app.close()
    assert corpus.store.search([[1.0, 0.5, 0.25, 1.0]], 1)[0][0][0] == "c0"  # ragcov's still searches


APP_TESTS = '''
from qdrant_client import QdrantClient

def test_the_app_searches_its_own_store(ragcov_retriever):
    assert ragcov_retriever("Revenue line 3.", 1)[0][0] == "c3"  # ragcov has read the store
    client = QdrantClient(path={folder!r})
    assert client.count("app").count == 7
    client.close()
'''


def test_under_the_plugin_with_the_store_as_corpus_the_apps_tests_open_their_store(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """docs/ci.md's store recipe: the plugin's corpus is the app's store URL."""
    url = qdrant_folder(tmp_path, llamaindex_payload)
    pytester.makepyfile(test_app=APP_TESTS.format(folder=str(tmp_path / "qdrant")))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ragcov", "--ragcov-corpus", url,
                                           "--ragcov-retriever", "bm25", "--ragcov-k", "1")
    result.assert_outcomes(passed=1)


def test_the_app_opens_its_milvus_lite_store_while_ragcov_holds_it(tmp_path: Path) -> None:
    """Milvus Lite admits one process per store; ragcov reads a copy, so the app (here, another
    process, as a test runner's worker is) opens its own."""
    import subprocess
    import sys

    pytest.importorskip("pymilvus")
    path = tmp_path / "app.db"
    # Built by another process: Milvus Lite keeps a store locked by the process that opened it.
    build = subprocess.run([sys.executable, "-c", f"""
from pymilvus import MilvusClient
client = MilvusClient({str(path)!r})
client.create_collection("app", dimension=3)
client.insert("app", [{{"id": i, "vector": [1.0, float(i), 0.5], "text": f"Revenue line {{i}}.",
                       "chunk_id": f"c{{i}}"}} for i in range(4)])
client.close()
"""], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-500:]
    corpus = load_corpus(f"milvus://{path}?collection=app")
    assert sorted(corpus.ids) == ["c0", "c1", "c2", "c3"]
    app = subprocess.run([sys.executable, "-c", "from pymilvus import MilvusClient; "
                          f"c = MilvusClient({str(path)!r}); c.load_collection('app'); "
                          "print(len(c.query('app', filter='id >= 0', output_fields=['chunk_id'])))"],
                         capture_output=True, text=True, timeout=300)
    assert app.returncode == 0 and app.stdout.strip() == "4", app.stderr[-500:]
    assert corpus.store.search([[1.0, 3.0, 0.5]], 1)[0][0][0] == "c3"
