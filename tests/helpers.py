"""Helpers shared by test modules (imported as ``from helpers import ...``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from ragcov.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``ragcov ARGS`` in process: (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, captured.out, captured.err


# Real LangChain and LlamaIndex embedding classes over the offline MiniLM encoder, for the
# tests that build those frameworks' own vector stores.
def langchain_embeddings(encoder):
    from langchain_core.embeddings import Embeddings

    class MiniLMEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return encoder.encode(list(texts), normalize_embeddings=True).tolist()

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    return MiniLMEmbeddings()


def llamaindex_embedding(encoder):
    from llama_index.core.embeddings import BaseEmbedding

    class MiniLMEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query):
            return encoder.encode(query, normalize_embeddings=True).tolist()

        def _get_text_embedding(self, text):
            return encoder.encode(text, normalize_embeddings=True).tolist()

        def _get_text_embeddings(self, texts):
            return encoder.encode(list(texts), normalize_embeddings=True).tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

    return MiniLMEmbedding(model_name="all-MiniLM-L6-v2")


def stop(proc: subprocess.Popen, timeout: float) -> None:
    """Stop a server a test started: SIGTERM, then SIGKILL if it has not gone in ``timeout`` s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


def record_spans(instrumentor: object, ask, path) -> None:
    """OpenInference spans the real ``instrumentor`` records while ``ask()`` queries the
    app, written to ``path`` as an exporter's JSON, one span after another."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)  # type: ignore[attr-defined]
    try:
        ask()
    finally:
        instrumentor.uninstrument()  # type: ignore[attr-defined]
    path.write_text("".join(s.to_json() + "\n" for s in exporter.get_finished_spans()))


@contextmanager
def cluster_losing_workers(kill: str) -> Iterator[tuple[str, Callable[[], None], list[str]]]:
    """A real 2-worker LocalCluster on 127.0.0.1 whose workers a test kills (SIGKILL) part
    way, as a machine lost mid-command: ``(scheduler address, kill_now, killed)``.
    ``kill_now()`` kills, once, the first worker busy with a task (``kill`` is "one busy
    worker") or every worker ("every worker"), and lists them in ``killed``."""
    import os
    import signal

    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)  # worker address -> its process
        killed: list[str] = []

        def kill_now() -> None:
            if killed:
                return
            busy = sorted(w for w, keys in client.processing().items() if keys)
            for victim in busy[:1] if kill == "one busy worker" else sorted(pids):
                killed.append(victim)
                os.kill(pids[victim], signal.SIGKILL)

        yield cluster.scheduler_address, kill_now, killed


def kill_after_first_task(monkeypatch: pytest.MonkeyPatch, kill_now: Callable[[], None]) -> None:
    """Call ``kill_now`` once the first task after the workers' fingerprint is back:
    ``ragcov.distributed._warn_caught`` runs once per finished task, the fingerprint's
    first (run and drift on Dask)."""
    from ragcov import distributed

    real = distributed._warn_caught
    calls: list[int] = []

    def counted(caught, shown):  # type: ignore[no-untyped-def]
        real(caught, shown)
        calls.append(1)
        if len(calls) == 2:
            kill_now()

    monkeypatch.setattr(distributed, "_warn_caught", counted)


def kill_after_first_result(monkeypatch: pytest.MonkeyPatch, owner: object, name: str,
                            kill_now: Callable[[], None]) -> None:
    """Wrap ``owner.name``, a generator of the batches' results, to call ``kill_now`` once
    the first result is back (topics' and import's loops on Dask)."""
    real = getattr(owner, name)

    def wrapped(*a, **kw):  # type: ignore[no-untyped-def]
        for n, result in enumerate(real(*a, **kw)):
            if n == 0:
                kill_now()
            yield result

    monkeypatch.setattr(owner, name, wrapped)
