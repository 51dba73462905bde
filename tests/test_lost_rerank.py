"""The reranking stage with real models and real traces.

A sentence-transformers CrossEncoder built from the local all-MiniLM-L6-v2 weights: the
checkpoint has no classification head, so one is drawn from a fixed seed. That is no
trained reranker, but it orders candidates reproducibly, which is all the attribution
needs to be shown right: the recount here scores the same pairs with its own
CrossEncoder and checks every final list and every chunk blamed on the reranker.

The traces come from the real OpenInference LlamaIndex instrumentor. LlamaIndex's own
SentenceTransformerRerank reports through the legacy callback manager, which the
instrumentor (openinference-instrumentation-llama-index 4.6) does not turn into spans,
so the reranker here is a node postprocessor that dispatches LlamaIndex's ReRank
events as its LLM rerankers do, around the same CrossEncoder.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CITY_CHUNKS
from helpers import cli

pytestmark = pytest.mark.slow

QUESTIONS = ["Which city sits on the Seine?", "What is the capital of Japan?",
             "How do plants make sugar?", "What did the board declare for shareholders?",
             "Where is the German capital?", "Why did interest expense rise?"]
DEPTH = 4


@pytest.fixture(scope="module")
def cross_encoder(minilm_path: str):
    """The recount's own CrossEncoder: MiniLM's weights, the head drawn from seed 0."""
    import torch
    from sentence_transformers import CrossEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return CrossEncoder(minilm_path, device="cpu")


def _suite(folder: Path) -> Path:
    path = folder / "suite.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n"
                            for i, q in enumerate(QUESTIONS)), encoding="utf-8")
    return path


def test_cross_encoder_stage_is_blamed_for_what_it_drops(capsys, tmp_path: Path,
                                                        city_corpus_file: Path, minilm_path: str,
                                                        cross_encoder) -> None:
    data = tmp_path / ".ragcov"
    common = ["--corpus", str(city_corpus_file), "--retriever", "dense", "--model", minilm_path,
              "--data-file", str(data)]
    code, _, err = cli(capsys, "run", *common, "--queries", str(_suite(tmp_path)), "-k", "1",
                       "--rerank", minilm_path, "--rerank-depth", str(DEPTH), "-q")
    assert code == 0, err
    code, out, err = cli(capsys, "probe", *common, "--format", "json", "-o",
                         str(tmp_path / "reach.json"))
    assert code == 0, err
    assert "has no trained classification head; one is drawn from seed 0" in err
    doc = json.loads((tmp_path / "reach.json").read_text())

    con = sqlite3.connect(data)
    ids = [r[0] for r in con.execute("SELECT id FROM chunks ORDER BY idx")]
    texts = dict(zip(ids, [c["text"] for c in CITY_CHUNKS]))
    probes = dict(con.execute("SELECT idx, text FROM probes WHERE text != ''"))
    first: dict[int, list[str]] = {}
    for row, chunk in con.execute("SELECT row_idx, chunk_idx FROM stage_hits WHERE side = 'probe' "
                                  "AND stage = 'first' ORDER BY row_idx, rank"):
        first.setdefault(row, []).append(ids[chunk])
    final = {row: ids[chunk] for row, chunk in con.execute(
        "SELECT probe_idx, chunk_idx FROM probe_hits WHERE rank = 1")}
    con.close()
    assert set(first) == set(probes) and all(len(v) == DEPTH for v in first.values())
    # Each final list is the first stage ordered by the recount's own CrossEncoder.
    for row, candidates in first.items():
        scores = cross_encoder.predict([(probes[row], texts[c]) for c in candidates])
        assert final[row] == candidates[int(np.argmax(scores))]
    reached_first = {c for v in first.values() for c in v}
    unreachable = {c["chunk_id"] for c in doc["chunks"] if c["status"] == "unreachable"}
    lost_at = {c["chunk_id"]: c.get("lost_at") for c in doc["chunks"] if c.get("lost_at")}
    assert {c for c, w in lost_at.items() if w == "reranker"} == unreachable & reached_first
    # A flat index is exact: whatever the first stage never reached, the embedding lost.
    assert {c for c, w in lost_at.items() if w != "reranker"} == unreachable - reached_first
    assert set(lost_at.values()) <= {"reranker", "embedding"}
    assert doc["totals"]["index_recall"]["probes"] == 1.0
    assert doc["totals"]["lost_at"]["reranker"] == len(unreachable & reached_first) > 0


def test_traced_reranker_spans_give_the_first_stage(capsys, tmp_path: Path, city_corpus_file,
                                                   city_corpus, minilm_path: str,
                                                   cross_encoder) -> None:
    pytest.importorskip("openinference.instrumentation.llama_index")
    sys.path.insert(0, str(Path(__file__).parent / "traces"))
    from instrumented import traced, write_otlp_json
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import NodeWithScore, TextNode

    from helpers import llamaindex_embedding
    from ragcov.retrievers.dense import load_encoder

    dispatcher = get_dispatcher("ragcov_tests.rerank")

    class CrossEncoderRerank(BaseNodePostprocessor):
        top_n: int = 2

        @dispatcher.span
        def _postprocess_nodes(self, nodes, query_bundle=None):
            dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                              model_name="all-MiniLM-L6-v2 (seed-0 head)"))
            scores = cross_encoder.predict([(query_bundle.query_str, n.node.get_content())
                                            for n in nodes])
            order = np.argsort(-np.asarray(scores), kind="stable")[:self.top_n]
            out = [NodeWithScore(node=nodes[i].node, score=float(scores[i])) for i in order]
            dispatcher.event(ReRankEndEvent(nodes=out))
            return out

    Settings.llm = None
    index = VectorStoreIndex([TextNode(id_=c.id, text=c.text) for c in city_corpus],
                             embed_model=llamaindex_embedding(load_encoder(minilm_path)))
    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=DEPTH),
                                            llm=MockLLM(), node_postprocessors=[CrossEncoderRerank()])
    with traced() as exporter:
        for q in QUESTIONS:
            engine.query(q)
    spans = exporter.get_finished_spans()
    given, kept = set(), set()
    for span in spans:
        a = span.attributes
        if a.get("openinference.span.kind") == "RERANKER":
            given |= {a[k] for k in a if k.startswith("reranker.input_documents.")
                      and k.endswith(".document.id")}
            kept |= {a[k] for k in a if k.startswith("reranker.output_documents.")
                     and k.endswith(".document.id")}
    assert given > kept
    data = tmp_path / ".ragcov"
    code, _, err = cli(capsys, "import", str(write_otlp_json(spans, tmp_path / "spans.json")),
                       "--corpus", str(city_corpus_file), "--data-file", str(data))
    assert code == 0, err
    code, out, err = cli(capsys, "json", "--data-file", str(data), "-o", "-")
    assert code == 0, err
    doc = json.loads(out)
    covered = {c for q in doc["queries"].values() for c in q["retrieved"]}
    assert covered == kept
    t = doc["totals"]
    assert t["first_stage_covered_chunks"] == len(given)
    assert t["reranker_dropped_chunks"] == len(given - kept)
    assert set(doc["stages"]["reranker_dropped"]) == given - kept
    assert t["rerank"]["reranker"] == "traces" and t["rerank"]["depth"] == DEPTH
    code, out, _ = cli(capsys, "report", "--data-file", str(data))
    assert f"the reranker drops {len(given - kept)} chunks the first stage found" in out


def test_probes_recorded_without_the_check_get_it_on_the_next_run(capsys, tmp_path: Path,
                                                                   city_corpus_file: Path,
                                                                   minilm_path: str) -> None:
    """A file probed with --no-exact (or before the check existed) has no stage rows; the
    next probe run checks every probe and test it holds, against their recorded lists."""
    data = tmp_path / ".ragcov"
    common = ["--corpus", str(city_corpus_file), "--retriever", "dense", "--model", minilm_path,
              "--data-file", str(data)]
    code, _, err = cli(capsys, "run", *common, "--queries", str(_suite(tmp_path)), "-k", "2", "-q")
    assert code == 0, err
    code, _, err = cli(capsys, "probe", *common, "--no-exact", "-q")
    assert code == 0, err
    con = sqlite3.connect(data)
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'stage_hits'").fetchone() \
        == (0,)
    con.close()
    code, out, err = cli(capsys, "probe", *common, "--format", "json")
    assert code == 0, err
    assert "0 new probe(s)" in err
    doc = json.loads(out)
    con = sqlite3.connect(data)
    checked = dict(con.execute("SELECT side, COUNT(*) FROM stage_recall GROUP BY side"))
    probes = con.execute("SELECT COUNT(*) FROM probes WHERE text != ''").fetchone()[0]
    con.close()
    assert checked == {"probe": probes, "test": len(QUESTIONS)}
    recall = doc["totals"]["index_recall"]
    assert recall["probes"] == 1.0 and recall["tests"] == 1.0  # a flat index is exact
    assert recall["probes_checked"] == probes and recall["tests_checked"] == len(QUESTIONS)
