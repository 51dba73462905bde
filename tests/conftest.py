"""Shared fixtures: small corpora (cache, datasets and model fixtures: ../conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CITY_CHUNKS = [
    {"id": "paris", "doc_id": "europe", "text": "Paris is the capital of France and sits on the Seine."},
    {"id": "berlin", "doc_id": "europe", "text": "Berlin is Germany's capital and its largest city."},
    {"id": "madrid", "doc_id": "europe", "text": "Madrid, the Spanish capital, lies in the centre of Spain."},
    {"id": "tokyo", "doc_id": "asia", "text": "Tokyo is the capital of Japan and a huge metropolis."},
    {"id": "photosynthesis", "doc_id": "biology",
     "text": "Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar."},
    {"id": "mitochondria", "doc_id": "biology",
     "text": "Mitochondria produce most of the chemical energy that powers a cell."},
    {"id": "interest", "doc_id": "finance",
     "text": "Interest expense rose in 2009 because the company issued new long-term debt."},
    {"id": "dividends", "doc_id": "finance",
     "text": "The board declared quarterly dividends of $0.25 per share."},
]


@pytest.fixture
def city_corpus_file(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in CITY_CHUNKS), encoding="utf-8")
    return p


@pytest.fixture
def city_corpus(city_corpus_file: Path):
    from ragcov.corpus import load_corpus

    return load_corpus(city_corpus_file)


@pytest.fixture(scope="session")
def pg():
    """A real PostgreSQL server with pgvector on 127.0.0.1 (tests/pg_server.py), started on
    first use and shared by every test that reads a pgvector store; stopped at the end."""
    import pg_server

    server = pg_server.start()
    try:
        yield server
    finally:
        pg_server.stop(server)


@pytest.hookimpl(trylast=True)  # after -m has deselected: torch is imported only for gpu tests kept
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``gpu`` tests are skipped, with the reason, where PyTorch sees no CUDA device."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    try:
        import torch
    except ImportError:
        why = "needs a CUDA device: PyTorch is not installed"
    else:
        from ragcov.retrievers.hardware import _why_no_cuda

        why = "" if torch.cuda.is_available() else (
            f"needs a CUDA device: torch.cuda.is_available() is false ({_why_no_cuda(torch)})")
    if why:
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="module")
def cluster_address():
    """A real 2-worker Dask LocalCluster on 127.0.0.1 for the module's tests: its address."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address
