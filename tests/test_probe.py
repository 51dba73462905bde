"""Reachability: self-query probes, chunk statuses, planted defects, hubs and lost gold.

Statuses are checked against a recount from the data file's own rows with plain
sqlite3, not with ragcov's code.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragcov
from helpers import cli
from ragcov.corpus import load_corpus
from ragcov.reachability.audit import hubs, lorenz
from ragcov.reachability.selfquery import build_probes, sentences

SAMPLE = Path(ragcov.__file__).parent / "data_sample"
PAGES = SAMPLE / "finqa_pages.jsonl"
QUESTIONS = SAMPLE / "finqa_questions.jsonl"
K = 5
# A chunk with words nothing else in the sample uses, so its own probe ranks its twins first.
PLANTED = ("Quarterly aquaculture hatchery yields for sturgeon caviar rose sharply while "
           "zebrafish broodstock mortality in the Norwegian fjord pens fell.")


def _plant(folder: Path, pages: int | None = None) -> Path:
    """The sample's chunks (of its first ``pages`` pages) plus k+1 identical copies of one
    chunk, appended last.

    Ties go to corpus order, so the first k copies fill every top-k list their text
    can reach and the last copy can never enter one: it must be unreachable.
    """
    source = PAGES
    if pages is not None:
        source = folder / "pages.jsonl"
        source.write_text("".join(PAGES.read_text(encoding="utf-8").splitlines(True)[:pages]),
                          encoding="utf-8")
    corpus = load_corpus(source, split=True)
    path = folder / "chunks.jsonl"
    with path.open("w") as f:
        for c in corpus:
            f.write(json.dumps({"id": c.id, "doc_id": c.doc_id, "text": c.text}) + "\n")
        for n in range(K + 1):
            f.write(json.dumps({"id": f"planted#{n}", "doc_id": "planted", "text": PLANTED}) + "\n")
    return path


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _plant(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="module")
def planted_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same on the sample's first 60 pages (319 chunks): what a dense run must embed."""
    return _plant(tmp_path_factory.mktemp("planted-slice"), pages=60)


def _recount(data_file: Path) -> dict[str, str | None]:
    """Statuses from the rows alone: covered if a test hit it, else untested if any probe
    hit it, else unreachable if its own probe was recorded, else no status."""
    con = sqlite3.connect(data_file)
    ids = dict(con.execute("SELECT idx, id FROM chunks ORDER BY idx"))
    tested = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM hits")}
    probed_hit = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM probe_hits")}
    probed = {c for (c,) in con.execute("SELECT DISTINCT chunk_idx FROM probes")}
    con.close()
    status: dict[str, str | None] = {}
    for idx, cid in ids.items():
        status[cid] = ("covered" if idx in tested else "untested" if idx in probed_hit
                       else "unreachable" if idx in probed else None)
    return status


def _run_and_probe(capsys, folder: Path, corpus: Path, retriever: str, *extra: str) -> dict:
    data = folder / ".ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(corpus), "--queries", str(QUESTIONS),
                       "--retriever", retriever, "--data-file", str(data), "-q", *extra)
    assert code == 0, err
    code, out, err = cli(capsys, "probe", "--corpus", str(corpus), "--retriever", retriever,
                         "--data-file", str(data), "--format", "json", "-q", "-o",
                         str(folder / "reach.json"), *extra)
    assert code == 0, err
    return json.loads((folder / "reach.json").read_text())


def _check_planted(doc: dict, data_file: Path) -> None:
    by_id = {c["chunk_id"]: c for c in doc["chunks"]}
    last = by_id[f"planted#{K}"]
    assert last["status"] == "unreachable"
    assert last["displaced_by"] in {f"planted#{n}" for n in range(K)}
    assert last["reason"].startswith("duplicate")
    for n in range(K):
        assert by_id[f"planted#{n}"]["status"] in ("covered", "untested")
    recount = _recount(data_file)
    assert {c["chunk_id"]: c["status"] for c in doc["chunks"]} == recount
    t = doc["totals"]
    assert t["unreachable_chunks"] == sum(1 for s in recount.values() if s == "unreachable")
    assert t["covered_chunks"] == sum(1 for s in recount.values() if s == "covered")
    assert t["reachable_chunks"] == t["covered_chunks"] + t["untested_chunks"]
    assert t["coverage_of_reachable"] == pytest.approx(
        t["covered_chunks"] / (t["chunks"] - t["unreachable_chunks"]))
    assert t["workload_ceiling"] == min(1.0, t["queries"] * K / t["chunks"])


def test_planted_duplicate_is_unreachable_bm25(capsys, tmp_path: Path, planted: Path) -> None:
    doc = _run_and_probe(capsys, tmp_path, planted, "bm25")
    _check_planted(doc, tmp_path / ".ragcov")


@pytest.mark.slow
def test_planted_duplicate_is_unreachable_dense(capsys, tmp_path: Path, planted_slice: Path,
                                                minilm_path: str) -> None:
    doc = _run_and_probe(capsys, tmp_path, planted_slice, "dense", "--model", minilm_path)
    _check_planted(doc, tmp_path / ".ragcov")


def test_probes_never_change_the_suite_coverage(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    code, _, err = cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
                       "--retriever", "bm25", "--data-file", str(data), "-q")
    assert code == 0, err
    before = {cmd: cli(capsys, *cmd.split(), "--data-file", str(data))[1]
              for cmd in ("report --format total --precision 6", "json -o -")}
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                       "--data-file", str(data), "-q")
    assert code == 0, err
    after = {cmd: cli(capsys, *cmd.split(), "--data-file", str(data))[1] for cmd in before}
    assert after["report --format total --precision 6"] == before["report --format total --precision 6"]
    added = {"status", "displaced_by", "unreachable_reason", "probed_chunks", "reachable_chunks",
             "unreachable_chunks", "coverage_of_reachable", "workload_ceiling",
             "coverage_of_ceiling", "not_probed_chunks", "untested_chunks", "unknown_chunks",
             "draft", "exclusion_candidate", "exclusion_candidates", "exclusion_config",
             "exclusion_rules"}

    def strip(text: str) -> dict:
        """The report less its meta and the fields a probed file adds."""
        doc = {k: v for k, v in json.loads(text).items() if k != "meta" and k not in added}
        doc["totals"] = {k: v for k, v in doc["totals"].items() if k not in added}
        doc["chunks"] = {c: {k: v for k, v in e.items() if k not in added}
                         for c, e in doc["chunks"].items()}
        return doc

    assert "unreachable_chunks" in json.loads(after["json -o -"])["totals"]
    assert strip(after["json -o -"]) == strip(before["json -o -"])


def test_probe_resumes_and_refuses_another_retriever(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    # Part of the corpus first, then all of it: the second run adds only what is missing.
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                       "--data-file", str(data), "--sample", "100")
    assert code == 0, err
    first = sqlite3.connect(data).execute("SELECT COUNT(*) FROM probes").fetchone()[0]
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                       "--data-file", str(data))
    assert code == 0, err
    assert f"{first} already recorded" in err
    con = sqlite3.connect(data)
    total, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM probes").fetchone()
    assert total == distinct > first
    # k differs from the recorded run's: refused before any retrieval, nothing written.
    other = tmp_path / "other.ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(other), "-k", "3", "-q")[0] == 0
    code, _, err = cli(capsys, "probe", "--corpus", str(PAGES), "--split", "--retriever", "bm25",
                       "--data-file", str(other))
    assert code == 1 and "corpus differs" in err
    assert "probes" not in {r[0] for r in sqlite3.connect(other).execute(
        "SELECT name FROM sqlite_master")}


def test_probe_needs_a_recorded_run(capsys, tmp_path: Path, planted: Path) -> None:
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                       "--data-file", str(tmp_path / "none.ragcov"))
    assert code == 1 and "run `ragcov run` first" in err
    assert not (tmp_path / "none.ragcov").exists()


def test_generate_skips_unreachable_chunks(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    assert cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
               "--data-file", str(data), "-q")[0] == 0
    unreachable = [c for c, s in _recount(data).items() if s == "unreachable"]
    assert f"planted#{K}" in unreachable
    code, out, err = cli(capsys, "generate", "--corpus", str(planted), "--retriever", "bm25",
                         "--generator", "extractive", "--data-file", str(data), "--budget", "3",
                         "--policy", "order", "-o", str(tmp_path / "gen.jsonl"), "-q")
    assert code == 0, err
    assert f"Skipped {len(unreachable)} unreachable chunk(s)" in out
    aimed = {t for line in (tmp_path / "gen.jsonl").read_text().splitlines()
             for t in json.loads(line).get("targets", [])}
    assert aimed and not aimed & set(unreachable)


def test_self_queries_are_the_chunks_own_words() -> None:
    texts = ["Revenue grew. The sturgeon caviar hatchery in Norway expanded its fjord pens.",
             "the of and", "Net income fell in 2019 because of impairments."]
    probes = build_probes(texts, ["a", "b", "c"], [0, 1, 2])
    kinds = {(p.chunk, p.kind) for p in probes}
    assert (1, "none") in kinds and (0, "terms") in kinds and (0, "sentence") in kinds
    terms = next(p for p in probes if p.chunk == 0 and p.kind == "terms")
    assert set(terms.text.split()) <= set(texts[0].lower().replace(".", "").split())
    sentence = next(p for p in probes if p.chunk == 0 and p.kind == "sentence")
    assert sentence.text == "The sturgeon caviar hatchery in Norway expanded its fjord pens."
    assert sentences("One. Two!\n\nThree") == ["One.", "Two!", "Three"]


def _reference_probes(texts, chunk_ids, rows):  # type: ignore[no-untyped-def]
    """``build_probes`` as first written, every sentence's words kept as strings: the
    reference the numbered words must give probe for probe."""
    import math
    from collections import Counter
    from itertools import chain

    from ragcov.data.probes import ProbeRow
    from ragcov.reachability import selfquery as sq

    split = [[(sent, sq.words(sent)) for sent in sq.sentences(t)] for t in texts]
    df: Counter[str] = Counter()
    for parts in split:
        df.update({w for _, ws in parts for w in ws})
    n = len(texts)
    idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
    out = []
    for row in rows:
        parts = split[row]
        counts = Counter(chain.from_iterable(ws for _, ws in parts))
        if not counts:
            plain = sq.plain_terms(texts[row])
            kind = "terms" if plain else sq.NONE
            out.append(ProbeRow(sq.probe_id(chunk_ids[row], kind), row, kind, " ".join(plain)))
            continue
        top = [w for _, w in sorted((-(c * idf[w]), w) for w, c in counts.items())[:sq.TERMS]]
        out.append(ProbeRow(sq.probe_id(chunk_ids[row], "terms"), row, "terms", " ".join(top)))
        best, best_score = None, -math.inf
        for sent, ws in parts:
            if len(ws) >= sq.MIN_SENTENCE_WORDS and sum(idf[w] for w in ws) / len(ws) > best_score:
                best, best_score = sent, sum(idf[w] for w in ws) / len(ws)
        if best is not None and len(best) > sq.MAX_SENTENCE_CHARS:
            best = best[:sq.MAX_SENTENCE_CHARS].rsplit(" ", 1)[0]
        if best is not None and set(sq.words(best)) != set(top):
            out.append(ProbeRow(sq.probe_id(chunk_ids[row], "sentence"), row, "sentence", best))
    return out


_words = st.sampled_from(["revenue", "Revenue", "grew", "the", "of", "net", "income", "2019",
                          "fjord", "caviar", "zebrafish", "收入", "增长", "매출", "성장", "ab",
                          "x", "€", "Élan", "élan", ""])
_text = st.lists(st.tuples(st.lists(_words, max_size=9), st.sampled_from([". ", "! ", "\n\n", " "])),
                 max_size=5).map(lambda parts: "".join(" ".join(ws) + end for ws, end in parts))


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(_text, min_size=1, max_size=8), data=st.data())
def test_probes_are_the_reference_probes(texts, data) -> None:  # type: ignore[no-untyped-def]
    rows = data.draw(st.lists(st.integers(0, len(texts) - 1), unique=True).map(sorted))
    ids = [f"c{i}" for i in range(len(texts))]
    assert build_probes(texts, ids, rows) == _reference_probes(texts, ids, rows)


def test_the_samples_probes_are_the_reference_probes() -> None:
    corpus = load_corpus(PAGES, split=True)
    texts, ids = corpus.texts, corpus.ids
    for rows in (range(len(texts)), range(0, len(texts), 7)):
        assert build_probes(texts, ids, rows) == _reference_probes(texts, ids, rows)


def test_hubs_hand_worked() -> None:
    occ = np.array([0, 0, 1, 1, 8])  # 10 retrievals, one hub
    h = hubs(occ)
    assert h.retrievals == 10
    assert h.capture["top5"] == 1.0 and h.capture["top1%"] == pytest.approx(0.8)
    # Population skewness of (0, 0, 1, 1, 8): mean 2, m2 = 46 / 5, m3 = 198 / 5.
    assert h.skewness == pytest.approx((198 / 5) / (46 / 5) ** 1.5)
    curve = dict(lorenz(occ, points=6))
    assert curve[0.0] == 0.0 and curve[1.0] == 1.0
    assert curve[0.4] == 0.0 and curve[0.8] == pytest.approx(0.2)
    assert hubs(np.array([2, 2, 2])).skewness is None


def test_lost_gold_from_chunk_qrels(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    status = None
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text("\n".join(json.dumps({"query_id": "q1", "chunk_id": f"planted#{n}"})
                               for n in (0, K)) + "\n")
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                       "--data-file", str(data), "--qrels", str(qrels), "--qrels-level", "chunk",
                       "--format", "json", "-o", str(tmp_path / "r.json"), "-q")
    assert code == 0, err
    gold = json.loads((tmp_path / "r.json").read_text())["lost_gold"]
    status = _recount(data)
    assert gold["relevant"] == 2
    assert f"planted#{K}" in gold["unreachable"]
    assert set(gold["not_covered"]) == {c for c in ("planted#0", f"planted#{K}")
                                        if status[c] != "covered"}


def test_lost_gold_as_text_names_its_unit_and_unknown_ids(capsys, tmp_path: Path,
                                                         planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text("\n".join(json.dumps({"query_id": "q1", "chunk_id": c})
                               for c in (f"planted#{K}", "no-such-chunk")) + "\n")
    code, out, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
                         "--data-file", str(data), "--qrels", str(qrels), "--qrels-level", "chunk")
    assert code == 0, err
    assert ("Lost gold: 1 of 1 relevant chunks no test retrieves; 1 of them no probe retrieves "
            "either") in out
    assert ("1 relevant chunk id(s) in " in err and "name nothing in the corpus "
            "(first: no-such-chunk)" in err)


def test_a_bad_qrels_file_stops_the_probe_before_any_retrieval(capsys, tmp_path: Path,
                                                               city_corpus_file: Path) -> None:
    data = tmp_path / ".ragcov"
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "question": "capital of France"}\n')
    assert cli(capsys, "run", "--corpus", str(city_corpus_file), "--queries", str(queries),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text('{"query_id": "q1", "doc_id": "d1"}\n{"query_id": \n')
    code, _, err = cli(capsys, "probe", "--corpus", str(city_corpus_file), "--retriever", "bm25",
                       "--data-file", str(data), "--qrels", str(qrels))
    assert code == 1 and f"{qrels}:2" in err, err
    con = sqlite3.connect(data)
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master")}
    assert "probes" not in tables or con.execute("SELECT COUNT(*) FROM probes").fetchone() == (0,)


def test_reachable_changes_only_the_denominator(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    code, _, err = cli(capsys, "report", "--reachable", "--data-file", str(data))
    assert code == 1 and "run `ragcov probe`" in err and len(err.strip().splitlines()) == 1
    assert cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
               "--data-file", str(data), "-q")[0] == 0
    status = _recount(data)
    unreachable = sum(1 for s in status.values() if s == "unreachable")
    covered = sum(1 for s in status.values() if s == "covered")
    assert unreachable >= 1

    def totals(*extra: str) -> dict:
        code, out, err = cli(capsys, "json", "-o", "-", "--data-file", str(data), *extra)
        assert code == 0, err
        return json.loads(out)["totals"]

    plain, reach = totals(), totals("--reachable")
    assert plain["covered_chunks"] == reach["covered_chunks"] == covered
    assert plain["chunks"] == len(status) and reach["chunks"] == len(status) - unreachable
    assert reach["excluded_chunks"] == unreachable
    assert reach["chunk_coverage"] == pytest.approx(covered / (len(status) - unreachable))
    assert plain["coverage_of_reachable"] == pytest.approx(reach["chunk_coverage"])
    # The gate and the CI formats count the same denominator.
    gate = f"{reach['chunk_coverage'] * 100:.2f}"
    assert cli(capsys, "report", "--data-file", str(data), "--fail-under", gate)[0] == 2
    assert cli(capsys, "report", "--data-file", str(data), "--reachable",
               "--fail-under", gate)[0] == 0
    code, xml, _ = cli(capsys, "xml", "-o", "-", "--data-file", str(data), "--reachable")
    assert code == 0 and f'lines-valid="{len(status) - unreachable}"' in xml
    # The text report splits the uncovered chunks and names the unreachable ones.
    code, out, _ = cli(capsys, "report", "-m", "--data-file", str(data))
    assert f"{unreachable} unreachable" in out and f"planted:{K + 1}" in out
    shown = next(x for x in out.splitlines() if x.startswith("Unreachable (no probe"))
    # Under --include the list names the same chunks (its rows were the file's rows before).
    code, out, _ = cli(capsys, "report", "-m", "--data-file", str(data), "--include", "planted")
    only = next(x for x in out.splitlines() if x.startswith("Unreachable (no probe"))
    assert only == "Unreachable (no probe retrieves them): " + ", ".join(
        x for x in shown.split(": ", 1)[1].split(", ") if x.startswith("planted:"))


def test_json_report_says_why_each_chunk_is_uncovered(capsys, tmp_path: Path, planted: Path) -> None:
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    code, out, _ = cli(capsys, "json", "-o", "-", "--data-file", str(data))
    assert "status" not in json.loads(out)["chunks"][f"planted#{K}"]  # never probed: no status
    assert cli(capsys, "probe", "--corpus", str(planted), "--retriever", "bm25",
               "--data-file", str(data), "-q")[0] == 0
    code, out, _ = cli(capsys, "json", "-o", "-", "--data-file", str(data))
    doc = json.loads(out)
    recount = _recount(data)
    assert {cid: c["status"] for cid, c in doc["chunks"].items()} == recount
    last = doc["chunks"][f"planted#{K}"]
    assert last["displaced_by"].startswith("planted#") and last["unreachable_reason"]
    t = doc["totals"]
    assert t["probed_chunks"] == len(recount)
    assert t["unreachable_chunks"] == sum(1 for s in recount.values() if s == "unreachable")


def test_diff_of_probed_runs_gives_the_blast_radius(capsys, tmp_path: Path, planted: Path) -> None:
    """k = K + 1 lets the last of K + 1 twins into a top-k list: raising k rescues it,
    lowering it again makes it unreachable."""
    files = {}
    for k in (K, K + 1):
        data = files[k] = tmp_path / f"k{k}.ragcov"
        for cmd in (("run", "--queries", str(QUESTIONS), "-k", str(k)), ("probe",)):
            code, _, err = cli(capsys, *cmd, "--corpus", str(planted), "--retriever", "bm25",
                               "--data-file", str(data), "-q")
            assert code == 0, err
    status = {k: _recount(files[k]) for k in files}
    became = sorted(c for c in status[K] if status[K][c] == "unreachable"
                    and status[K + 1][c] in ("covered", "untested"))
    assert f"planted#{K}" in became
    code, out, err = cli(capsys, "diff", str(files[K + 1]), str(files[K]), "--allow-different-k",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(doc["became_unreachable"]) == became and doc["rescued"] == []
    code, out, _ = cli(capsys, "diff", str(files[K]), str(files[K + 1]), "--allow-different-k",
                       "--format", "json")
    assert sorted(json.loads(out)["rescued"]) == became
    code, out, _ = cli(capsys, "diff", str(files[K]), str(files[K + 1]), "--allow-different-k")
    assert f"0 chunks became unreachable, {len(became)} rescued" in out
    assert f"planted:{K + 1}" in out  # named as a person reads it: DOC:N from 1


@pytest.fixture
def probed_site(tmp_path: Path, planted: Path) -> tuple[Path, Path]:
    """A probed run over the planted corpus plus a hostile document, and its HTML site."""
    corpus = tmp_path / "chunks.jsonl"
    hostile = {"id": "x#0", "doc_id": "</script><script>alert(1)</script>",
               "text": "Sturgeon <b>hatchery</b> caviar & fjord"}
    corpus.write_text(planted.read_text() + json.dumps(hostile) + "\n")
    data = tmp_path / ".ragcov"
    from ragcov.cli import main

    for cmd in (("run", "--queries", str(QUESTIONS)), ("probe",)):
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--corpus", str(corpus), "--retriever", "bm25", "--data-file", str(data),
                  "-q"])
        assert exc.value.code in (0, None)
    with pytest.raises(SystemExit):
        main(["html", "--data-file", str(data), "-d", str(tmp_path / "site")])
    return data, tmp_path / "site"


def test_html_shades_each_status_and_maps_the_corpus(probed_site: tuple[Path, Path]) -> None:
    from ragcov.reporters.html_context import document_filename

    data, site = probed_site
    index = (site / "index.html").read_text()
    status = _recount(data)
    # The map's JSON block: escaped (no raw </script>), and one code per chunk in order.
    block = index.split('id="corpus-map-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block
    docs = json.loads(block)["docs"]
    codes = {None: 0, "covered": 1, "untested": 2, "unreachable": 3}
    ids = list(status)  # corpus order
    assert [c for d in docs for c in d["c"]] == [codes[status[i]] for i in ids]
    # The unreachable table names the planted copy by its id (its DOC#N, planted#6, would be
    # another chunk's id here) and the twin that displaced it.
    table = index.split('id="unreachable"', 1)[1].split("</table>", 1)[0]
    assert f">planted#{K}<" in table and "duplicate" in table
    page = (site / document_filename("planted")).read_text()
    assert page.count('class="chunk missing unreachable"') == sum(
        1 for i in ids if i.startswith("planted#") and status[i] == "unreachable")
    assert "displaced by" in page
    assert "Lorenz curve" in index and "k-occurrence skewness" in index


@pytest.mark.browser
def test_corpus_map_draws_and_links_in_chromium(probed_site: tuple[Path, Path]) -> None:
    from test_html import _chrome

    _, site = probed_site
    driver = _chrome()
    try:
        driver.get((site / "index.html").as_uri())
        canvas = driver.find_element("id", "corpus-map")
        assert int(canvas.get_attribute("height")) > 0
        # The first cell's colour is the first chunk's status; clicking it opens its chunk.
        colour = driver.execute_script(
            "const c = document.getElementById('corpus-map').getContext('2d');"
            "return Array.from(c.getImageData(1, 1, 1, 1).data).slice(0, 3);")
        assert colour in ([63, 154, 58], [224, 168, 0], [107, 74, 145], [217, 217, 217])
        driver.execute_script(
            "const c = document.getElementById('corpus-map'); const b = c.getBoundingClientRect();"
            "c.dispatchEvent(new MouseEvent('click', {clientX: b.left + 1, clientY: b.top + 1}));")
        assert "#c0" in driver.current_url and driver.current_url.endswith(".html#c0")
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
        driver.get((site / "index.html").as_uri())
        assert driver.find_element("id", "shown-count").text.endswith("shown")
        rows = driver.find_elements("css selector", "#documents tbody tr")
        assert driver.find_element("id", "shown-count").text == f"{len(rows)} of {len(rows)} shown"
    finally:
        driver.quit()


def test_probe_through_a_module_attr_retriever(capsys, tmp_path: Path, monkeypatch) -> None:
    """A user's own retriever (module:attr) is probed like the built-in ones: here one that
    never returns the chunk 'hidden', which is then unreachable, displaced by what it got."""
    (tmp_path / "myrag.py").write_text(
        "def retrieve(query, k):\n"
        "    words = set(query.lower().split())\n"
        "    docs = {'alpha': 'sturgeon caviar hatchery', 'beta': 'zebrafish broodstock pens',\n"
        "            'hidden': 'sturgeon caviar hatchery fjord'}\n"
        "    ranked = sorted((c for c in docs if c != 'hidden'),\n"
        "                    key=lambda c: -len(words & set(docs[c].split())))\n"
        "    return ranked[:k]\n")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "alpha", "doc_id": "a", "text": "Sturgeon caviar hatchery"},
        {"id": "beta", "doc_id": "b", "text": "Zebrafish broodstock pens"},
        {"id": "hidden", "doc_id": "c", "text": "Sturgeon caviar hatchery fjord"}]))
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "text": "zebrafish"}) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for cmd in (("run", "--queries", "q.jsonl"), ("probe",)):
        code, _, err = cli(capsys, *cmd, "--corpus", "c.jsonl", "--retriever", "myrag:retrieve",
                           "-k", "1", "-q") if cmd[0] == "run" else cli(
            capsys, *cmd, "--corpus", "c.jsonl", "--retriever", "myrag:retrieve", "-q")
        assert code == 0, err
    status = _recount(tmp_path / ".ragcov")
    assert status == {"alpha": "untested", "beta": "covered", "hidden": "unreachable"}
    code, out, _ = cli(capsys, "json", "-o", "-")
    assert json.loads(out)["chunks"]["hidden"]["displaced_by"] == "alpha"


def test_probe_adds_generated_questions_and_uses_the_recorded_retriever(capsys, tmp_path: Path,
                                                                        planted: Path) -> None:
    """--generator adds one written question per chunk (kind llm), kept apart from the
    self-queries; with no --retriever the probe runs the recorded run's retriever."""
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--data-file", str(data),
                       "--sample", "20", "--generator", "extractive", "-q")
    assert code == 0, err
    con = sqlite3.connect(data)
    kinds = dict(con.execute("SELECT kind, COUNT(*) FROM probes GROUP BY kind"))
    assert kinds["llm"] == 20 and kinds["terms"] == 20
    written = [t for (t,) in con.execute("SELECT text FROM probes WHERE kind = 'llm'")]
    assert all(written) and len(set(written)) > 1
    # Rerun: nothing asked twice.
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--data-file", str(data),
                       "--sample", "20", "--generator", "extractive")
    assert code == 0 and "0 new probe(s)" in err


def test_another_built_in_retriever_is_refused_before_any_work(capsys, tmp_path: Path,
                                                             planted: Path) -> None:
    """A dense probe of a bm25 recording is refused at once, not after embedding the corpus."""
    data = tmp_path / ".ragcov"
    assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(QUESTIONS),
               "--retriever", "bm25", "--data-file", str(data), "-q")[0] == 0
    code, _, err = cli(capsys, "probe", "--corpus", str(planted), "--retriever", "dense",
                       "--data-file", str(data))
    assert code == 1 and "recorded with the bm25 retriever" in err
    assert "probes" not in {r[0] for r in sqlite3.connect(data).execute(
        "SELECT name FROM sqlite_master")}


def test_probe_takes_the_recorded_dense_model_and_int8_backend(tmp_path: Path, planted: Path) -> None:
    """Without --retriever a probe of an int8 dense run embeds with int8 too: fp32 probes
    would be another retriever's top-k, recorded beside the run's as if they were its own."""
    corpus = load_corpus(planted)
    data = tmp_path / ".ragcov"
    fingerprint = {"kind": "dense", "model": "some/model", "index": "flat",
                   "similarity": "cosine", "chunking": corpus.chunking, "backend": "onnx-int8"}
    first = corpus.ids[0]
    ragcov.api.record_retrievals(corpus, 1, fingerprint, {"q": "question"}, {"q": [(first, 1.0)]},
                                 data)
    def settings(path, *given):
        # As ProbeSettings.checked calls it: the file's fingerprint read once, beside it.
        return ragcov.api.settings.probe_settings(path, ragcov.api.settings.recorded_retriever(path),
                                                  *given)

    assert settings(data, str(planted), None, None, None) == ("dense", "some/model", "onnx-int8")
    # What the user gives wins; another built-in retriever or another model is refused
    # before any work (not after the corpus is embedded with it).
    assert settings(data, str(planted), None, "some/model", "torch") == \
        ("dense", "some/model", "torch")
    with pytest.raises(ragcov.RagcovError, match="recorded with the model 'some/model'"):
        settings(data, str(planted), None, "other", None)
    with pytest.raises(ragcov.RagcovError, match="recorded with the dense retriever"):
        settings(data, str(planted), "bm25", None, None)
    # No data file yet: the default retriever for the corpus, nothing recorded to follow.
    assert settings(tmp_path / "none", str(planted), "bm25", None, None) == ("bm25", None, None)


def test_combine_keeps_the_probes_of_every_file_it_merges(capsys, tmp_path: Path,
                                                          planted: Path) -> None:
    """A combine rebuilds the output: the probes it held, and a probed shard's, come along
    (each once), so --reachable reads the same verdicts after a combine as before."""
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:40]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(lines[40:80]), encoding="utf-8")
    data, shard = tmp_path / ".ragcov", tmp_path / "b.ragcov"
    for queries, out in (("a.jsonl", data), ("b.jsonl", shard)):
        assert cli(capsys, "run", "--corpus", str(planted), "--queries", str(tmp_path / queries),
                   "--retriever", "bm25", "--data-file", str(out), "-q")[0] == 0
    for out, sample in ((data, "30"), (shard, "50")):
        assert cli(capsys, "probe", "--corpus", str(planted), "--data-file", str(out),
                   "--sample", sample, "-q")[0] == 0

    def probes(path: Path) -> dict[str, tuple]:
        con = sqlite3.connect(path)
        hits: dict[str, list] = {}
        for pid, c, r in con.execute("SELECT p.id, h.chunk_idx, h.rank FROM probes p "
                                     "JOIN probe_hits h ON h.probe_idx = p.idx"):
            hits.setdefault(pid, []).append((r, c))
        rows = {pid: (chunk, kind, text, tuple(sorted(hits.get(pid, []))))
                for pid, chunk, kind, text in con.execute(
                    "SELECT id, chunk_idx, kind, text FROM probes")}
        con.close()
        return rows

    expected = {**probes(shard), **probes(data)}
    assert len(expected) > 50  # the samples share some probes: each is kept once
    code, _, err = cli(capsys, "combine", "--append", "-o", str(data), str(shard), "-q")
    assert code == 0, err
    assert probes(data) == expected
    code, out, err = cli(capsys, "json", "--reachable", "--data-file", str(data), "-o", "-")
    assert code == 0, err
    totals = json.loads(out)["totals"]
    assert totals["queries"] == 80 and totals["probed_chunks"] == len({c for c, *_ in expected.values()})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("abAB1-z ZİßΣ.\n") + ["the ", "and ", "ab ", "abc "]),
                max_size=60).map("".join))
def test_probe_words_are_the_content_words_of_the_tfidf_pattern(text: str) -> None:
    """Probes and the TF-IDF statistics read text by one rule; on ASCII text it finds
    exactly what the ASCII pattern and the length and stopword filters found before."""
    import re

    from ragcov.reachability.selfquery import words
    from ragcov.tfidf import STOPWORDS
    from ragcov.tfidf import words as tfidf_words

    assert words(text) == tfidf_words(text)
    if text.isascii():
        expected = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9\-]+", text.lower())
                    if len(w) > 2 and w not in STOPWORDS]
        assert words(text) == expected
