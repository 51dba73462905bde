"""Import recorded retrieval traces into a Run.

A system in production already logs what it retrieved; reading those logs gives
the coverage of real traffic without running anything. Supported formats, one
module each:

``jsonl`` (:mod:`.jsonl`)
    One retrieval per line: ``{"query_id", "query", "retrieved": [ids]}``. Items
    may be ids, ``[id, score]`` pairs or objects with ``id``/``chunk_id`` and
    ``score``; a parallel ``scores`` list is read too. RAGAS's
    ``retrieved_context_ids`` and ``user_input`` are accepted, and so are
    ``retrieved_contexts`` (texts, matched to the corpus by content).
``trec`` (:mod:`.trec`)
    A TREC run file: ``qid Q0 doc_id rank score tag`` per line. Each query's
    list is ordered by score, highest first, ties by rank (as trec_eval and ranx
    read it).
``ranx`` (:mod:`.ranx`)
    ranx / pytrec_eval JSON: ``{qid: {doc_id: score}}``, ordered by score.
``openinference`` (:mod:`.openinference`)
    OpenInference spans exported as JSON (OTLP JSON, one span object per line,
    or a list of spans; attributes flat or nested). Each span of kind RETRIEVER
    is one query: ``input.value`` and ``retrieval.documents.N.document.id``
    (``.score``, and ``.content`` when the id is missing). When a RERANKER span
    follows it in the same trace, the reranker's
    ``reranker.output_documents.N.document.id`` are the final list, since that is
    what reached the LLM.
``otel`` (:mod:`.otel`)
    OpenTelemetry GenAI retrieval spans: ``gen_ai.retrieval.query.text`` and
    ``gen_ai.retrieval.documents`` (a structured list or a JSON string of one;
    its entries ``{"id", "score"}`` objects or plain ids).

The formats are registered once, in :mod:`.formats`. The span formats are read
by :mod:`.spanfile` (containers, streamed, duplicate spans), :mod:`.otlp` (OTLP
values) and :mod:`.retrievals` (documents, query texts and ids); every reader
produces the :mod:`.records` types, and :mod:`.importer` turns them into a Run.
A large JSON-lines span file, or a folder or glob of shards (:mod:`.shards`), is
read in parts by other processes or a Dask cluster and merged in file order
(:mod:`.parallel`), with the same result. An OpenInference OTLP JSON export is first
read as Arrow columns (:mod:`.columnar`), again with the same result; it hands the file
to the general reader wherever it cannot be sure. Modules import downward only: importer
→ columnar, parallel → formats → format modules → retrievals → spanfile → otlp → records.

Ids not in the corpus are an error that lists them, unless ``ignore_unknown``,
which skips and counts them (a corpus that changed since the traces were
recorded). Lists are cut to k before that check: what ranked below k never
reached the model. Malformed records are reported with file and line, never
read as something else: ids and scores go through :mod:`ragcov.fields` (an id
is a non-blank string or a whole number; a score a finite number, numeric text
accepted only in the text-typed JSONL and TREC formats), an OTLP value must
match its declared type, and a documents attribute that is not a list is
refused rather than read as no documents. A span exported twice (same traceId
and spanId) counts once: an identical copy is dropped and counted
(``ImportResult.duplicate_spans``), a different one is an error naming both lines.
"""

from ragcov.traces.formats import FORMATS
from ragcov.traces.importer import import_traces, read_traces
from ragcov.traces.jsonl import read_jsonl
from ragcov.traces.openinference import read_openinference
from ragcov.traces.otel import read_otel
from ragcov.traces.otlp import Span
from ragcov.traces.ranx import read_ranx
from ragcov.traces.records import ImportResult, Item, Trace
from ragcov.traces.spanfile import SpanFile, read_spans, read_spans_counted
from ragcov.traces.trec import read_trec

__all__ = [
    "FORMATS",
    "ImportResult",
    "Item",
    "Span",
    "SpanFile",
    "Trace",
    "import_traces",
    "read_jsonl",
    "read_openinference",
    "read_otel",
    "read_ranx",
    "read_spans",
    "read_spans_counted",
    "read_traces",
    "read_trec",
]
