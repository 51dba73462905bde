"""OpenInference OTLP JSON exports and Phoenix spans parquet read as Arrow columns.

A collector's file exporter writes one OTLP export per line, every attribute a
string or a double, every retrieval a flat ``retrieval.documents.N.document.id``
list of corpus chunks. Reading that through Python objects spends most of an
import building and dropping a dict per span and a record per document. Here
pyarrow's JSON parser reads the file in parts of :data:`PART_BYTES` into columns,
and the spans are picked, ordered and named with vectorised operations: a Python
object is made per retrieval and per hit, never per attribute.

The result is the general reader's (:mod:`.spanfile`, :mod:`.openinference`),
hit for hit; where this path cannot be sure of that it does not guess, it raises
:class:`Fallback` and the general reader reads the file, errors and their lines
included. It falls back on: a part Arrow cannot read with :func:`_schema` (another
layout, a value of another type, a key given twice, a value across a part's
edge), bytes that are not UTF-8, an explicit ``null`` member anywhere (Arrow
reads it as absent, the general reader does not), a null in a list, another
container or span field, array or kvlist values, an intValue not plainly
written, span ids missing or not plain ASCII, a start time that is not plain
digits within int64, a span exported twice, a RETRIEVER span that encloses
another span, a RERANKER span, and any query id taken twice. A retrieval this
path cannot read as plain ids of the corpus (no id, text scores, unknown ids,
``output.value``, a JSON ``input.value``) is read by the general code, one span.
A Phoenix parquet file is read the same way from the columns the import uses
(:func:`read_phoenix_columnar`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ragcov.errors import InputFormatError
from ragcov.traces.openinference import OI_DOC
from ragcov.traces.otlp import Span, otlp_value
from ragcov.traces.records import DistinctResolved, Resolved, SpanStats, Trace

#: The file is parsed in parts of about this many bytes, each cut after a newline.
PART_BYTES = 16 * 2**20
_KIND = "openinference.span.kind"
_DOCS = "retrieval.documents"
_SUBS = OI_DOC
#: The OTLP AnyValue members the columns hold, in the order the general decoder tries them.
_MEMBERS = (("stringValue", "s"), ("boolValue", "b"), ("intValue", "i"), ("doubleValue", "d"))
#: The attributes the OpenInference pick reads from a RETRIEVER span.
_READ = (_KIND, "input.value", "input.mime_type", "output.value", _DOCS)
#: A member set to null: the general reader tells it from an absent one, Arrow cannot.
#: The quote must close a string (an even run of backslashes before it).
_NULL_MEMBER = re.compile(rb'(\\*)"[ \t\r\n]*:[ \t\r\n]*null')


class Fallback(Exception):
    """This file is read by the general reader: the columnar path cannot be sure of it."""


def _schema() -> Any:
    import pyarrow as pa

    s = pa.string()
    value = pa.struct([("stringValue", s), ("boolValue", pa.bool_()), ("intValue", s),
                       ("doubleValue", pa.float64()), ("arrayValue", s), ("kvlistValue", s)])
    attribute = pa.struct([("key", s), ("value", value)])
    # Fields the general reader reads besides these are declared as strings, to be absent.
    span = pa.struct([("traceId", s), ("spanId", s), ("parentSpanId", s),
                      ("startTimeUnixNano", s), ("attributes", pa.list_(attribute))]
                     + [(name, s) for name in _OTHER_SPAN_FIELDS])
    scope = pa.struct([("spans", pa.list_(span))])
    resource = pa.struct([("scopeSpans", pa.list_(scope)),
                          ("instrumentationLibrarySpans", s)])
    return pa.schema([("resourceSpans", pa.list_(resource))])


_OTHER_SPAN_FIELDS = ("context", "trace_id", "span_id", "start_time", "startTime", "span_kind",
                      "parent_span_id", "parent_id", "resourceSpans", "spans", "data")


def read_columnar(path: str | os.PathLike[str], known: Mapping[str, int]
                  ) -> tuple[Iterator[Trace], SpanStats]:
    """The traces of an OpenInference OTLP JSON export and what was empty, as
    :func:`ragcov.traces.openinference.iter_openinference_traces` gives them (no span is
    dropped or merged here); :class:`Fallback` when this path cannot be sure."""
    import pyarrow as pa

    spans: list[Any] = []  # per part: trace, span, parent, start, kind
    # Per RETRIEVER span (by its number in the file): its query and list, read part by part
    # (all that decides a span is in its own attributes), so no part is kept once read.
    read: dict[int, tuple[str, Any]] = {}
    base = 0
    for data in _parts(path):
        batch = _parse(data)
        del data
        got = _part(batch)
        del batch
        n = len(got[0])
        if base + n >= 1 << 29:  # a span's number and its document's share one int64
            raise Fallback("too many spans")
        read.update((base + i, r) for i, r in _documents(path, got[5], known, n).items())
        spans.append(got[:5])
        base += n
    if not spans:
        raise Fallback("no spans")
    trace, span_id, parent, start, kind = (pa.concat_arrays([s[i] for s in spans])
                                           for i in range(5))
    return _finish(path, trace, span_id, parent, start, kind, lambda _n: read)


def _parts(path: str | os.PathLike[str]) -> Any:
    """The file's bytes in parts cut after a newline, each UTF-8 (a byte-order mark at the
    start dropped) and free of null members."""
    with open(path, "rb") as f:
        first = True
        rest = b""
        while True:
            block = f.read(PART_BYTES)
            data = rest + block
            if not data:
                return
            cut = len(data) if not block else data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
            data = _checked(data, first)
            first = False
            if data and not data.isspace():  # blank lines only: nothing to parse
                yield data
            if not block:
                return


def _checked(data: bytes, first: bool) -> bytes:
    if first and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Fallback("not UTF-8") from exc
    if b"null" in data:
        for m in _NULL_MEMBER.finditer(data):
            if len(m.group(1)) % 2 == 0:
                raise Fallback("a null member")
    return data


def _parse(data: bytes) -> Any:
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        table = pj.read_json(pa.BufferReader(data), parse_options=pj.ParseOptions(
            explicit_schema=_schema_once(), unexpected_field_behavior="ignore"),
            read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) // 4 + 1)))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise Fallback(str(exc)) from exc
    return table.column("resourceSpans").combine_chunks()


_SCHEMA_CACHE: list[Any] = []


def _schema_once() -> Any:
    """:func:`_schema`, built when first needed (pyarrow is loaded only then)."""
    if not _SCHEMA_CACHE:
        _SCHEMA_CACHE.append(_schema())
    return _SCHEMA_CACHE[0]


def _items(lists: Any, what: str) -> Any:
    """The entries of a list column (a null list is none), refusing a null entry."""
    import pyarrow.compute as pc

    values = pc.list_flatten(lists)
    if values.null_count:
        raise Fallback(f"a null {what} entry")
    return values


def _absent(arr: Any, what: str) -> None:
    if arr.null_count != len(arr):
        raise Fallback(f"{what} given")


def _part(resource_spans: Any) -> tuple[Any, ...]:
    """One part's spans (ids, parent, start, kind) and its retrievers' attributes read here,
    numbered from 0 within the part (the caller offsets them)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if resource_spans.null_count:
        raise Fallback("a line without resourceSpans")
    rs = _items(resource_spans, "resourceSpans")
    _absent(pc.struct_field(rs, "instrumentationLibrarySpans"), "instrumentationLibrarySpans")
    ss = _items(pc.struct_field(rs, "scopeSpans"), "scopeSpans")
    sp = _items(pc.struct_field(ss, "spans"), "spans")
    for name in _OTHER_SPAN_FIELDS:
        _absent(pc.struct_field(sp, name), name)
    trace, span_id = pc.struct_field(sp, "traceId"), pc.struct_field(sp, "spanId")
    for ids in (trace, span_id):
        if ids.null_count or not pc.all(pc.match_substring_regex(ids, r"^[!-~]+$")).as_py():
            raise Fallback("a span id missing or not plain")
    parent = pc.struct_field(sp, "parentSpanId")
    parent = pc.if_else(pc.equal(parent, ""), pa.scalar(None, pa.string()), parent)
    raw_start = pc.struct_field(sp, "startTimeUnixNano")
    raw_start = pc.if_else(pc.equal(raw_start, ""), pa.scalar(None, pa.string()), raw_start)
    if pc.all(pc.match_substring_regex(raw_start, r"^[0-9]+$")).as_py() not in (True, None):
        raise Fallback("a start time that is not plain digits")
    try:
        nanos = pc.cast(raw_start, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise Fallback("a start time past int64") from exc
    # As the general reader: int(value) / 1e9, the int made a double first.
    secs = nanos.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64) / 1e9
    start = pa.array(secs, mask=np.asarray(pc.is_null(nanos), dtype=bool))
    attrs_list = pc.struct_field(sp, "attributes")
    if attrs_list.null_count:
        raise Fallback("a span without attributes")
    attrs = _items(attrs_list, "attributes")
    owner = np.asarray(pc.list_parent_indices(attrs_list), dtype=np.int64)
    key = pc.struct_field(attrs, "key")
    if key.null_count:
        raise Fallback("an attribute without a key")
    value = pc.struct_field(attrs, "value")
    _absent(pc.struct_field(value, "arrayValue"), "arrayValue")
    _absent(pc.struct_field(value, "kvlistValue"), "kvlistValue")
    ints = pc.struct_field(value, "intValue")
    if ints.null_count != len(ints) and \
            pc.all(pc.match_substring_regex(ints, r"^[+-]?[0-9]+$")).as_py() not in (True, None):
        raise Fallback("an intValue not plainly written")
    # Names are few: each is judged once, in Python, and the verdicts taken by index.
    enc = pc.dictionary_encode(key)
    names = enc.dictionary.to_pylist()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # A key given twice in a span is an error of the general reader's.
    if _repeats(owner * (len(names) + 1) + codes, len(sp) * (len(names) + 1)):
        raise Fallback("an attribute key given twice")
    kind = _kinds(pc, pa, np, len(sp), owner, codes == names.index(_KIND) if _KIND in names
                  else np.zeros(len(codes), dtype=bool), value)
    retriever = kind == 1
    if (kind == 2).any():
        raise Fallback("a RERANKER span")
    read = np.array([k in _READ or k.startswith(_DOCS + ".") for k in names], dtype=bool)
    mask = read[codes] & retriever[owner] if len(codes) else np.zeros(0, dtype=bool)
    mask_arr = pa.array(mask)
    table = pa.table({"span": pa.array(owner[mask]), "key": pc.filter(key, mask_arr),
                      "s": pc.filter(pc.struct_field(value, "stringValue"), mask_arr),
                      "b": pc.filter(pc.struct_field(value, "boolValue"), mask_arr),
                      "i": pc.filter(ints, mask_arr),
                      "d": pc.filter(pc.struct_field(value, "doubleValue"), mask_arr)})
    return trace, span_id, parent, start, pa.array(kind), table


def _repeats(values: Any, bound: int | None) -> bool:
    """Whether a value repeats among ``values`` (whole numbers from 0, below ``bound``
    when it is given and small enough to count them in an array)."""
    import numpy as np

    if len(values) < 2:
        return False
    if bound is not None and bound <= 8 * len(values):
        return bool(np.bincount(values, minlength=bound).max() > 1)
    ordered = np.sort(values)
    return bool((ordered[1:] == ordered[:-1]).any())


def _kinds(pc: Any, pa: Any, np: Any, n: int, owner: Any, at: Any, value: Any) -> Any:
    """Per span: 1 for RETRIEVER, 2 for RERANKER, 0 for any other kind (as the general
    reader: the kind attribute's text upper-cased; a value that is not text is no kind
    of these). ``at``: the attributes that name the kind."""
    text = pc.filter(pc.struct_field(value, "stringValue"), pa.array(at))
    where = owner[at]
    kind = np.zeros(n, dtype=np.int8)
    if len(where):
        enc = pc.dictionary_encode(text)
        names = [None if v is None else v.upper() for v in enc.dictionary.to_pylist()]
        codes = np.array([1 if v == "RETRIEVER" else 2 if v == "RERANKER" else 0
                          for v in names] + [0], dtype=np.int8)
        idx = enc.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
        kind[where] = codes[idx]
    return kind


def _finish(path: Any, trace: Any, span_id: Any, parent: Any, start: Any, kind: Any,
            documents: Callable[[int], dict[int, tuple[str, Any]]]
            ) -> tuple[Iterator[Trace], SpanStats]:
    """The RETRIEVER spans as traces, as :func:`~ragcov.traces.openinference.finish_openinference`
    makes them when no span is a copy, none nests in a retriever and none is a reranker:
    time order (file order on ties) and the same query ids. ``documents`` reads, given how
    many spans there are, each retriever's query and list (by span index)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(trace)
    sep = "\x1f"
    keys = pc.binary_join_element_wise(trace, span_id, sep)
    if pc.count_distinct(keys).as_py() != n:
        raise Fallback("a span exported twice")
    retriever = np.asarray(kind, dtype=np.int8) == 1
    has_parent = pc.is_valid(parent)
    parents = pc.filter(pc.binary_join_element_wise(trace, parent, sep), has_parent)
    if len(parents) and pc.any(pc.is_in(pc.filter(keys, pa.array(retriever)),
                                        value_set=parents)).as_py():
        raise Fallback("a RETRIEVER span encloses another span")
    where = np.flatnonzero(retriever)
    starts = np.asarray(start.fill_null(float("-inf")), dtype=np.float64)[where]
    order = where[np.argsort(starts, kind="stable")]  # time order, file order on ties
    stats = SpanStats()
    per_span = documents(n)
    traces_of = trace.to_pylist()
    counts: dict[str, int] = {}
    for i in where.tolist():
        t = traces_of[i]
        counts[t] = counts.get(t, 0) + 1
    seen: dict[str, int] = {}
    used: set[str] = set()
    qids: list[str] = []
    spans = order.tolist()
    for i in spans:
        t = traces_of[i]
        if counts[t] == 1:
            qid = t
        else:
            seen[t] = seen.get(t, 0) + 1
            qid = f"{t}:{seen[t]}"
        if qid in used:
            raise Fallback("a query id taken twice")
        used.add(qid)
        qids.append(qid)
        if per_span.get(i, ("", None))[1] is None:
            stats.empty += 1
    del used, seen, traces_of
    return _traces(spans, qids, per_span), stats


def _traces(spans: list[int], qids: list[str], per_span: dict[int, tuple[str, Any]]
            ) -> Iterator[Trace]:
    """The traces one at a time, each retrieval let go as it is given (the importer holds
    its Run, never every trace beside it)."""
    for i, qid in zip(spans, qids):
        query, items = per_span.pop(i, ("", None))
        yield Trace(qid, query, [] if items is None else items, None)


def _documents(path: Any, attrs: Any, known: Mapping[str, int], n_spans: int
               ) -> dict[int, tuple[str, Any]]:
    """Per RETRIEVER span (by its index) with anything read: its query and its documents,
    :class:`Resolved` where all are plain ids of the corpus, else as the general pick
    reads the span."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    attrs = attrs.combine_chunks()
    span = attrs.column("span").to_numpy()
    key, s, b, i_, d = (attrs.column(c).combine_chunks() for c in ("key", "s", "b", "i", "d"))
    enc = pc.dictionary_encode(key)
    names = enc.dictionary.to_pylist()
    codes = enc.indices.to_numpy(zero_copy_only=False)

    def named(test: Any) -> Any:
        return np.array([bool(test(k)) for k in names] + [False], dtype=bool)[codes]

    slow = np.zeros(n_spans, dtype=bool)
    # Any of these is read by the general pick, span by span.
    special = named(lambda k: k in ("output.value", _DOCS))
    mime = named(lambda k: k == "input.mime_type")
    if mime.any():
        special[mime] = np.asarray(pc.equal(pc.filter(s, pa.array(mime)), "application/json")
                                   .fill_null(False), dtype=bool)
    slow[span[special]] = True
    doc_rows = named(lambda k: k.startswith(_DOCS + "."))
    out: dict[int, tuple[str, Any]] = {}
    # Queries: input.value when it is text.
    at = named(lambda k: k == "input.value")
    qspan = span[at]
    qtext = pc.filter(s, pa.array(at)).to_pylist()
    queries = {i: q for i, q in zip(qspan.tolist(), qtext) if q is not None}
    if doc_rows.any():
        dmask = pa.array(doc_rows)
        dspan = span[doc_rows]
        parsed = [_name(k) if k.startswith(_DOCS + ".") else None for k in names]
        kidx = codes[doc_rows]
        ok_name = np.array([p is not None for p in parsed], dtype=bool)
        # A name this path does not read (a plain id, a metadata field): the span's pick.
        slow[dspan[~ok_name[kidx]]] = True
        number = np.array([p[0] if p else -1 for p in parsed], dtype=np.int64)[kidx]
        sub = np.array([p[1] if p else -1 for p in parsed], dtype=np.int64)[kidx]
        ds = pc.filter(s, dmask)
        db = pc.filter(b, dmask)
        di = pc.filter(i_, dmask)
        dd = pc.filter(d, dmask)
        # Two names of one document field (``01`` and ``1``): the span's pick.
        field = (dspan << 34) | (np.maximum(number, 0) << 2) | np.maximum(sub, 0)
        if _repeats(field, None):
            for sp_i in _repeated(dspan, number, sub):
                slow[sp_i] = True
        is_id = sub == 0
        is_score = sub == 1
        # Ids: text, not blank, a corpus chunk; anything else is the span's pick.
        id_text = pc.filter(ds, pa.array(is_id))
        enc = pc.dictionary_encode(id_text)
        words = enc.dictionary.to_pylist()
        good = np.array([w is not None and bool(w) and not w.isspace() and w in known
                         for w in words] + [False], dtype=bool)
        widx = enc.indices.fill_null(len(words)).to_numpy(zero_copy_only=False)
        slow[dspan[is_id][~good[widx]]] = True
        # Scores: a finite double or nothing at all.
        score_other = pc.or_(pc.or_(pc.is_valid(pc.filter(ds, pa.array(is_score))),
                                    pc.is_valid(pc.filter(db, pa.array(is_score)))),
                             pc.is_valid(pc.filter(di, pa.array(is_score))))
        score_val = pc.filter(dd, pa.array(is_score))
        finite = pc.is_finite(score_val).fill_null(True)
        bad_score = np.asarray(pc.or_(score_other, pc.invert(finite)), dtype=bool)
        slow[dspan[is_score][bad_score]] = True
        # Every document has its id.
        doc = field >> 2
        has_id = np.asarray(pc.is_in(pa.array(doc), value_set=pa.array(doc[is_id])), dtype=bool)
        slow[dspan[~has_id]] = True
        # The plain retrievals: ids by document number, their scores beside.
        fast_id = is_id & ~slow[dspan]
        id_doc, id_word = doc[fast_id], widx[fast_id[is_id]]
        order = np.argsort(id_doc, kind="stable")
        id_doc, id_word = id_doc[order], id_word[order]
        kept = (is_score & ~slow[dspan])[is_score] & np.asarray(pc.is_valid(score_val), dtype=bool)
        sc_doc = doc[is_score][kept]
        sc_val = np.asarray(score_val.fill_null(0.0), dtype=np.float64)[kept]
        by = np.argsort(sc_doc, kind="stable")
        sc_doc, sc_val = sc_doc[by], sc_val[by]
        at = np.searchsorted(sc_doc, id_doc)
        at_ok = np.minimum(at, max(len(sc_doc) - 1, 0))
        found = (at < len(sc_doc)) & (sc_doc[at_ok] == id_doc) if len(sc_doc) else \
            np.zeros(len(id_doc), dtype=bool)
        scores: list[Any] = sc_val[at_ok].tolist() if len(sc_doc) else [None] * len(id_doc)
        for j in np.flatnonzero(~found).tolist():
            scores[j] = None  # absent (a value of no type): None, as the general reader
        ids = np.array([sys.intern(w) if w is not None else "" for w in words] + [""],
                       dtype=object)
        hits = list(zip(ids[id_word].tolist(), scores))
        id_span = id_doc >> 32
        repeats = _with_repeats(id_span, id_word, len(ids))
        bounds = np.flatnonzero(np.diff(id_span)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), len(id_span)]
        spans_of = id_span[starts].tolist() if len(id_span) else []
        for i, first, last in zip(spans_of, starts, ends):
            kind = Resolved if i in repeats else DistinctResolved
            out[i] = (queries.get(i, ""), kind(hits[first:last]))
    slow_rows = np.flatnonzero(slow[span])
    if len(slow_rows):
        by_span: dict[int, list[dict[str, Any]]] = {}
        for i, row in zip(span[slow_rows].tolist(), attrs.take(pa.array(slow_rows)).to_pylist()):
            by_span.setdefault(i, []).append(row)
        for i, rows in by_span.items():
            out[i] = _picked(path, rows)
    for i, q in queries.items():
        if i not in out:
            out[i] = (q, None)
    return out


def _repeated(span: Any, number: Any, sub: Any) -> list[int]:
    seen: set[tuple[int, int, int]] = set()
    out = []
    for key in zip(span.tolist(), number.tolist(), sub.tolist()):
        if key in seen:
            out.append(key[0])
        seen.add(key)
    return out


def _name(key: str) -> tuple[int, int] | None:
    """``retrieval.documents.N.<sub>`` → (N, the sub's place in :data:`_SUBS`); None for
    any other name under the prefix (the span is then read by the general pick)."""
    head, sep, sub = key[len(_DOCS) + 1:].partition(".")
    if not (head.isascii() and head.isdigit()) or (len(head) > 1 and head[0] == "0") \
            or not sep or sub not in _SUBS or len(head) > 9:
        return None
    return int(head), _SUBS.index(sub)


def _picked(path: Any, rows: list[dict[str, Any]]) -> tuple[str, Any]:
    """One RETRIEVER span read by the general pick, its attributes decoded as the OTLP
    reader decodes them; its error falls back (the general reader gives it its line)."""
    from ragcov.traces.openinference import pick_openinference

    # Each attribute's value as OTLP JSON wrote it (its first member the columns hold), and
    # decoded by the general reader's own decoder.
    decoded = {r["key"]: otlp_value({member: r[col] for member, col in _MEMBERS
                                     if r[col] is not None})
               for r in rows}
    try:
        picked = pick_openinference(Span(None, None, "", None, 0, None, "RETRIEVER", decoded),
                                    path)
    except InputFormatError as exc:
        raise Fallback(str(exc)) from exc
    assert picked is not None
    return picked


#: Phoenix's span columns; phoenix.client's newer dataframe drops the ``context.``.
_PHOENIX_IDS = (("context.trace_id", "context.span_id"), ("trace_id", "span_id"))
_PHOENIX_READ = ("parent_id", "span_kind", "start_time", "attributes." + _KIND,
                 "attributes.input.value", "attributes.input.mime_type",
                 "attributes.output.value", "attributes." + _DOCS)
#: Attribute columns that would flatten into the names the pick reads (a nested object
#: ``attributes.retrieval``, or the documents flattened into columns): the general reader's.
_PHOENIX_OTHER = ("attributes", "attributes.retrieval", "attributes.input", "attributes.output",
                  "attributes.openinference", "attributes.openinference.span")


def read_phoenix_columnar(path: str | os.PathLike[str], known: Mapping[str, int]
                          ) -> tuple[Iterator[Trace], SpanStats]:
    """The traces of a Phoenix spans parquet file, as the general reader
    (:class:`ragcov.traces.phoenix.PhoenixSpans` and the OpenInference pick) gives them,
    from the columns it reads: no Python object per span or row. :class:`Fallback` where
    this path cannot be sure (a span on two rows, nesting, rerankers, column types other
    than Phoenix writes, a time without a zone)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # the general reader says what is wrong with the file
        raise Fallback(str(exc)) from exc
    ids = [pair for pair in _PHOENIX_IDS if any(c in names for c in pair)]
    if len(ids) != 1 or any(c in names for c in _PHOENIX_OTHER) or any(
            c.startswith(("attributes." + _DOCS + ".", "attributes.reranker")) for c in names):
        raise Fallback("columns this path does not read")
    wanted = [c for c in (*ids[0], *_PHOENIX_READ) if c in names]
    try:
        table = pq.read_table(path, columns=wanted).combine_chunks()
    except Exception as exc:
        raise Fallback(str(exc)) from exc
    n = table.num_rows
    if not n:
        raise Fallback("no rows")

    def column(name: str, kind: Any = pa.string()) -> Any:
        """The column as ``kind``, nulls where absent; an all-NaN (pandas' missing) float
        column is absent too; any other type falls back."""
        if name not in table.column_names:
            return pa.nulls(n, kind)
        col = table.column(name).combine_chunks()
        if col.type == pa.large_string() and kind == pa.string():
            col = col.cast(pa.string())  # as pandas' own string dtype writes it
        if col.type == kind:
            return col
        if pa.types.is_null(col.type) or (pa.types.is_floating(col.type) and pc.all(
                pc.is_nan(col).fill_null(True)).as_py()):
            return pa.nulls(n, kind)
        raise Fallback(f"{name} is {col.type}")

    trace, span_id = column(ids[0][0]), column(ids[0][1])
    for col in (trace, span_id):
        if col.null_count or not pc.all(pc.match_substring_regex(col, r"^[!-~]+$")).as_py():
            raise Fallback("a span id missing or not plain")
    parent = column("parent_id")
    parent = pc.if_else(pc.equal(parent, ""), pa.scalar(None, pa.string()), parent)
    start = _phoenix_start(table, n)
    attr_kind, span_kind = column("attributes." + _KIND), column("span_kind")
    # As the general reader: the kind attribute, else span_kind, when not empty.
    kind_text = pc.if_else(pc.fill_null(pc.not_equal(attr_kind, ""), False), attr_kind,
                           pc.if_else(pc.equal(span_kind, ""), pa.scalar(None, pa.string()),
                                      span_kind))
    enc = pc.dictionary_encode(kind_text)
    upper = [v.upper() for v in enc.dictionary.to_pylist()]
    codes = np.array([1 if v == "RETRIEVER" else 2 if v == "RERANKER" else 0 for v in upper]
                     + [0], dtype=np.int8)
    kind = codes[enc.indices.fill_null(len(upper)).to_numpy(zero_copy_only=False)]
    if (kind == 2).any():
        raise Fallback("a RERANKER span")

    def documents(_n: int) -> dict[int, tuple[str, Any]]:
        return _phoenix_documents(path, table, column, kind == 1, known)

    return _finish(path, trace, span_id, parent, pa.array(start, mask=np.isnan(start)),
                   pa.array(kind), documents)


def _phoenix_start(table: Any, n: int) -> Any:
    """Start times in seconds (NaN: none), as the general reader reads a time with its zone:
    its ISO text, which keeps microseconds, back to a timestamp."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if "start_time" not in table.column_names:
        return np.full(n, np.nan)
    col = table.column("start_time").combine_chunks()
    if pa.types.is_null(col.type):
        return np.full(n, np.nan)
    if not pa.types.is_timestamp(col.type) or col.type.tz is None:
        raise Fallback("a start time without a zone")
    micros = pc.cast(col, pa.timestamp("us", tz=col.type.tz), safe=False)
    raw = pc.cast(col, pa.int64())
    if pc.any(pc.less(raw, 0)).as_py():
        raise Fallback("a start time before 1970")
    values = pc.cast(micros, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    out = values.astype(np.float64) / 1e6
    out[np.asarray(pc.is_null(col), dtype=bool)] = np.nan
    return out


def _phoenix_documents(path: Any, table: Any, column: Callable[..., Any], retriever: Any,
                       known: Mapping[str, int]) -> dict[int, tuple[str, Any]]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    slow = np.zeros(n, dtype=bool)
    queries = column("attributes.input.value").to_pylist()
    mime = column("attributes.input.mime_type")
    slow |= np.asarray(pc.equal(mime, "application/json").fill_null(False), dtype=bool)
    slow |= np.asarray(pc.is_valid(column("attributes.output.value")), dtype=bool)
    out: dict[int, tuple[str, Any]] = {}
    name = "attributes." + _DOCS
    lists = None
    if name in table.column_names:
        lists = table.column(name).combine_chunks()
        if pa.types.is_floating(lists.type) or pa.types.is_null(lists.type):
            lists = None if column(name, pa.null()).null_count == n else lists
    if lists is not None:
        if not (pa.types.is_list(lists.type) or pa.types.is_large_list(lists.type)) \
                or not pa.types.is_struct(lists.type.value_type):
            raise Fallback(f"{name} is {lists.type}")
        entry = lists.type.value_type
        fields = {entry.field(i).name: entry.field(i).type for i in range(entry.num_fields)}
        if not set(fields) <= set(_SUBS) or fields.get("document.id", pa.string()) != pa.string() \
                or fields.get("document.score", pa.float64()) not in (pa.float64(), pa.float32(),
                                                                      pa.null()):
            raise Fallback("documents with other fields")
        docs = pc.list_flatten(lists)
        owner = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
        slow[owner[np.asarray(pc.is_null(docs), dtype=bool)]] = True  # a null entry: an error
        ids = pc.struct_field(docs, "document.id") if "document.id" in fields \
            else pa.nulls(len(docs), pa.string())
        enc = pc.dictionary_encode(ids)
        words = enc.dictionary.to_pylist()
        good = np.array([bool(w) and not w.isspace() and w in known for w in words] + [False],
                        dtype=bool)
        widx = enc.indices.fill_null(len(words)).to_numpy(zero_copy_only=False)
        slow[owner[~good[widx]]] = True
        if "document.score" in fields and not pa.types.is_null(fields["document.score"]):
            raw = pc.cast(pc.struct_field(docs, "document.score"), pa.float64())
            has = np.asarray(pc.is_valid(raw), dtype=bool)
            vals = raw.fill_null(0.0).to_numpy(zero_copy_only=False)
            slow[owner[has & ~np.isfinite(vals)]] = True
        else:
            has = np.zeros(len(docs), dtype=bool)
            vals = np.zeros(len(docs))
        interned = [sys.intern(w) for w in words] + [""]
        hit_ids = list(map(interned.__getitem__, widx.tolist()))
        scores = vals.tolist() if has.all() else \
            [v if h else None for v, h in zip(vals.tolist(), has.tolist())]
        hits = list(zip(hit_ids, scores))
        repeats = _with_repeats(owner, widx, len(interned))
        offsets = lists.offsets.to_numpy(zero_copy_only=False)
        valid = np.asarray(pc.is_valid(lists), dtype=bool)
        base = int(offsets[0])
        for i in np.flatnonzero(retriever & valid & ~slow).tolist():
            a, b = int(offsets[i]) - base, int(offsets[i + 1]) - base
            kind = Resolved if i in repeats else DistinctResolved
            out[i] = (queries[i] or "", kind(hits[a:b]) if a < b else [])
    for i in np.flatnonzero(retriever & slow).tolist():
        out[i] = _phoenix_picked(path, table, i)
    for i in np.flatnonzero(retriever).tolist():
        if i not in out and queries[i] is not None:
            out[i] = (queries[i], None)
    return out


def _with_repeats(owner: Any, word: Any, n_words: int) -> set[int]:
    """The lists (by ``owner``) that hold a word twice: the rest are handed over as
    :class:`DistinctResolved`, which the Run keeps without looking at each hit."""
    import numpy as np

    if not len(owner):
        return set()
    key = np.sort(np.asarray(owner, dtype=np.int64) * (n_words + 1) + np.asarray(word))
    twice = key[1:][key[1:] == key[:-1]]
    return set(np.unique(twice // (n_words + 1)).tolist())


def _phoenix_picked(path: Any, table: Any, i: int) -> tuple[str, Any]:
    """Row ``i`` read by the general reader, span and pick; its error falls back."""
    from ragcov.fields import FieldError
    from ragcov.traces.openinference import pick_openinference
    from ragcov.traces.otlp import span_from
    from ragcov.traces.phoenix import _span_object

    try:
        span = span_from(_span_object(table.slice(i, 1).to_pylist()[0]), 0, i + 1)
        picked = pick_openinference(span, path)
    except (FieldError, InputFormatError) as exc:
        raise Fallback(str(exc)) from exc
    assert picked is not None
    return picked
