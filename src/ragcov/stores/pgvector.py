"""pgvector: a Postgres table of chunks and their vectors (``postgresql://USER@HOST:PORT/DB?table=T``).

Most teams keep their vectors in Postgres (Supabase, Neon, RDS, their own server), often
in the table LangChain's ``PGVector`` creates: ``langchain_pg_embedding`` (columns ``id``,
``collection_id``, ``embedding``, ``document``, ``cmetadata``; the older langchain-community
class keeps the caller's id in ``custom_id``) beside ``langchain_pg_collection`` (``uuid``,
``name``). The defaults read that table; query parameters name another table's columns:

``table``       the table (``schema.table`` for another schema); default ``langchain_pg_embedding``
``text``        the chunk text column; default ``document``, else page_content/text/content/chunk
``id``          the chunk id column; default ``id``, else ``custom_id``, else ``uuid``
                (``node_id`` in LlamaIndex's ``data_<name>`` table, beside ``metadata_``)
``vector``      the vector column; default ``embedding``, else the table's only vector column
``metadata``    a JSON column of metadata; default ``cmetadata``, ``metadata`` or ``metadata_``, else the
                table's other columns are the metadata
``doc``         the column (or metadata key) naming a chunk's document
``collection``  a LangChain collection by name, when the table has ``collection_id``
``distance``    ``cosine`` (``<=>``, the default, as LangChain's), ``l2`` (``<->``) or
                ``inner`` (``<#>``): the operator the application searches with

Every other query parameter (``sslmode``, ``connect_timeout``, ...) goes to libpq as it is.
The password is a secret: messages, the corpus source and the retriever fingerprint (which
the data file keeps) carry the URL without it, and errors from the server are scrubbed of
it. ``PGPASSWORD`` or ``~/.pgpass`` keep it off the command line altogether.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

from ragcov.errors import RagcovError
from ragcov.fields import Ranked
from ragcov.files import loads_json
from ragcov.redaction import SECRET_PARAM, redact_url
from ragcov.stores.base import (
    PAGE_SIZE,
    PagedRows,
    StorePage,
    VectorsUnavailable,
    index_settings,
    missing_collection,
    read_ahead,
    require,
)
from ragcov.stores.payload import TEXT_KEYS
from ragcov.stores.urls import StoreURL

DEFAULT_TABLE = "langchain_pg_embedding"
COLLECTION_TABLE = "langchain_pg_collection"
OPTIONS = ("table", "text", "id", "vector", "metadata", "doc", "collection", "distance")
TEXT_COLUMNS = ("document", *TEXT_KEYS)
ID_COLUMNS = ("id", "custom_id", "uuid")
METADATA_COLUMNS = ("cmetadata", "metadata", "metadata_")
# LlamaIndex's PGVectorStore table (``data_<table_name>``): ``id`` is a serial number the
# app never sees; the node id LlamaIndex's retriever returns is ``node_id``.
LLAMAINDEX_COLUMNS = ("node_id", "metadata_")
VECTOR_TYPES = ("vector", "halfvec")
# LangChain's DistanceStrategy names, and pgvector's operator for each.
DISTANCES = {"cosine": "<=>", "l2": "<->", "euclidean": "<->", "inner": "<#>", "ip": "<#>",
             "inner_product": "<#>"}
JSON_SCALARS = (str, int, float, bool, type(None))
# The operator class an index must have for a search with each operator to use it.
OPCLASSES = {"<=>": "cosine_ops", "<->": "l2_ops", "<#>": "ip_ops"}
METRICS = {"<=>": "cosine", "<->": "l2", "<#>": "ip"}
_INDEX_WITH = re.compile(r"(\w+)\s*=\s*'?(\w+)'?")
# Rows per FETCH of the server-side cursor while enumerating.
PG_PAGE = 10_000


def connection_url(url: str) -> str:
    """The URL libpq is given: ``postgresql://``, without SQLAlchemy's ``+driver`` or ragcov's options."""
    parts = urlsplit(url)
    rest = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in OPTIONS]
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(rest), ""))


def scrubber(url: str):
    """Replaces the URL's password (and secret-looking query values) in server messages."""
    parts = urlsplit(url)
    found = {parts.password}
    found.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True) if SECRET_PARAM.search(k))
    forms = {f for v in found if v for f in (v, quote(v, safe=""), quote_plus(v))}
    secrets = sorted(forms, key=len, reverse=True)

    def scrub(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "***")
        return text

    return scrub


def jsonable(value: Any) -> Any:
    """A column value as metadata: JSON's own types kept, anything else (UUID, date) as text."""
    if isinstance(value, JSON_SCALARS):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)


class PgVectorStore(PagedRows):
    """Enumerates with a server-side cursor; searches with pgvector's own distance operator.

    A named cursor makes the server hand rows over a page at a time, so a table of
    millions never sits in this process whole. The session is read-only: measuring
    coverage never writes to the application's database. Scores are ``-distance``
    (higher is nearer), in the order pgvector returns.
    """

    def __init__(self, url: StoreURL) -> None:
        self.psycopg = require("psycopg", "pgvector")
        self.url = redact_url(url.url)
        self._scrub = scrubber(url.url)
        self.sql = self.psycopg.sql
        distance = (url.param("distance") or "cosine").lower()
        if distance not in DISTANCES:
            raise RagcovError(f"{self.url}: unknown distance {distance!r} "
                              "(expected cosine, l2 or inner)")
        self.distance = distance
        self.operator = DISTANCES[distance]
        params = dict(parse_qsl(urlsplit(url.url).query))
        extra = {} if "connect_timeout" in params else {"connect_timeout": 10}
        try:
            self.conn = self.psycopg.connect(connection_url(url.url), autocommit=True,
                                             application_name="ragcov", **extra)
            # Every statement of this session read-only, in or out of a transaction block.
            self.conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            # The rows' metadata parsed by orjson where it reads as json.loads does (half a read).
            self.psycopg.types.json.set_json_loads(loads_json, self.conn)
            self._open(url)
        except self.psycopg.Error as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> RagcovError:
        first = self._scrub(str(exc).strip()).splitlines() or [type(exc).__name__]
        return RagcovError(f"{self.url}: {first[0]}")

    def _rows(self, query: Any, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(query, args)
            return cur.fetchall()

    def _open(self, url: StoreURL) -> None:
        table = url.param("table") or DEFAULT_TABLE
        schema, _, name = table.rpartition(".")
        self.table = self.sql.Identifier(*(p for p in (schema, name) if p))
        self.table_name = table
        regclass = self.table.as_string(self.conn)
        columns = self._rows(
            "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY a.attnum", (regclass,))
        if not columns:
            raise missing_collection(self.url, "table", url.param("table") or DEFAULT_TABLE,
                                     self._vector_tables())
        types = dict(columns)
        names = [c for c, _ in columns]

        def pick(option: str, defaults: Sequence[str], what: str) -> str:
            given = url.param(option)
            if given:
                if given not in types:
                    raise RagcovError(f"{self.url}: table {table} has no column {given!r} "
                                      f"(columns: {', '.join(names)})")
                return given
            for column in defaults:
                if column in types:
                    return column
            raise RagcovError(f"{self.url}: table {table} has no {what} column (add ?{option}=COLUMN; "
                              f"columns: {', '.join(names)})")

        vectors = [c for c in names if types[c] in VECTOR_TYPES]
        self.vector = pick("vector", ["embedding", *vectors[:1]] if len(vectors) == 1 else ["embedding"],
                           "vector")
        if types[self.vector] not in VECTOR_TYPES:
            raise RagcovError(f"{self.url}: column {self.vector} is {types[self.vector]}, "
                              "not a pgvector vector or halfvec")
        self.vector_type = types[self.vector]
        self.text = pick("text", TEXT_COLUMNS, "text")
        llamaindex = all(c in types for c in LLAMAINDEX_COLUMNS)
        self.id = pick("id", ("node_id", *ID_COLUMNS) if llamaindex else ID_COLUMNS, "id")
        meta = url.param("metadata") or next((c for c in METADATA_COLUMNS if c in types), None)
        if meta and meta not in types:
            raise RagcovError(f"{self.url}: table {table} has no column {meta!r} "
                              f"(columns: {', '.join(names)})")
        self.metadata = meta
        self.metadata_json = bool(meta) and types[meta] in ("json", "jsonb")
        skip = {self.id, self.text, self.vector, "collection_id"}
        self.extra = ([] if meta else
                      [c for c in names if c not in skip and types[c] not in ("tsvector", *VECTOR_TYPES)])
        self.doc_key = url.param("doc")
        if self.doc_key and self.doc_key in types and self.doc_key not in self.extra:
            self.extra.append(self.doc_key)
        self.collection, self.collection_id = self._collection(url, schema, types)

    def _vector_tables(self) -> list[str]:
        rows = self._rows("SELECT DISTINCT table_schema, table_name FROM information_schema.columns "
                          "WHERE udt_name = ANY(%s)", (list(VECTOR_TYPES),))
        return [t if s == "public" else f"{s}.{t}" for s, t in rows]

    def _collection(self, url: StoreURL, schema: str, types: dict[str, str]) -> tuple[str | None, Any]:
        """A LangChain collection's uuid by its name; the only one when the URL names none."""
        name = url.param("collection")
        collections = self.sql.Identifier(*(p for p in (schema, COLLECTION_TABLE) if p))
        exists = self._rows("SELECT to_regclass(%s)", (collections.as_string(self.conn),))[0][0]
        if "collection_id" not in types or not exists:
            if name:
                raise RagcovError(f"{self.url}: table {self.table_name} has no collections "
                                  "(no collection_id column or no langchain_pg_collection table)")
            return None, None
        known = dict(self._rows(self.sql.SQL("SELECT name, uuid FROM {}").format(collections)))
        if name is None and len(known) == 1:
            name = next(iter(known))
        if not name or name not in known:
            raise missing_collection(self.url, "collection", name, list(known))
        return name, known[name]

    def _where(self) -> tuple[Any, list[Any]]:
        if self.collection_id is None:
            return self.sql.SQL(""), []
        return self.sql.SQL(" WHERE collection_id = %s"), [self.collection_id]

    def recorded_model(self) -> str | None:
        return None

    def iter_pages(self, page_size: int = PG_PAGE) -> Iterator[StorePage]:
        sql = self.sql
        fields = [sql.Identifier(self.id), sql.Identifier(self.text)]
        fields += [sql.Identifier(c) for c in ([self.metadata] if self.metadata else []) + self.extra]
        where, args = self._where()
        query = sql.SQL("SELECT {} FROM {}{} ORDER BY {}").format(
            sql.SQL(", ").join(fields), self.table, where, sql.Identifier(self.id))
        try:
            with self.conn.transaction(), self.conn.cursor(name="ragcov_chunks") as cur:
                cur.itersize = page_size
                cur.execute(query, args)
                # The next page fetched while this one is read (read_ahead).
                cancel = getattr(self.conn, "cancel_safe", self.conn.cancel)
                pages = read_ahead(iter(functools.partial(cur.fetchmany, page_size), []), cancel)
                try:
                    for rows in pages:
                        yield self._page(rows)
                finally:
                    pages.close()  # the fetch in flight ends before the cursor closes
        except self.psycopg.Error as exc:
            raise self._error(exc) from None

    def _page(self, rows: list[tuple[Any, ...]]) -> StorePage:
        """A page of ``(id, text, [metadata], extra...)`` rows as columns. A JSON object
        from a json/jsonb column is the metadata as it is (the driver parsed it, so it
        holds only JSON's types); anything else goes through :meth:`_metadata`."""
        ids = [str(row[0]) for row in rows]
        texts = [row[1] or "" for row in rows]
        if not self.metadata and not self.extra:
            return StorePage(ids, texts, [{} for _ in rows])
        if self.metadata and not self.extra and self.metadata_json:
            return StorePage(ids, texts, [row[2] if type(row[2]) is dict else self._metadata(row[2:])
                                          for row in rows])
        return StorePage(ids, texts, [self._metadata(row[2:]) for row in rows])

    def _metadata(self, rest: Sequence[Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        rest = list(rest)
        if self.metadata:
            value = rest.pop(0)
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    value = {self.metadata: value}
            if isinstance(value, dict):
                meta.update(jsonable(value))
        meta.update({c: jsonable(v) for c, v in zip(self.extra, rest)})
        return meta

    def search(self, vectors: Sequence[Sequence[float]], k: int) -> list[Ranked]:
        sql = self.sql
        where, args = self._where()
        distance = sql.SQL("{} {} %s::{}").format(sql.Identifier(self.vector), sql.SQL(self.operator),
                                                 sql.Identifier(self.vector_type))
        query = sql.SQL("SELECT {}, {} FROM {}{} ORDER BY {} LIMIT %s").format(
            sql.Identifier(self.id), distance, self.table, where, distance)
        out: list[Ranked] = []
        try:
            with self.conn.cursor() as cur:
                for v in vectors:
                    literal = "[" + ",".join(repr(float(x)) for x in v) + "]"
                    cur.execute(query, [literal, *args, literal, k])
                    out.append([(str(cid), -float(d)) for cid, d in cur.fetchall()])
        except self.psycopg.Error as exc:
            raise self._error(exc) from None
        return out

    def stored_vectors(self, ids: Sequence[str]) -> list[list[float] | None]:
        """The stored vector of each id (None where the row holds none): what the query
        model is checked against (:mod:`ragcov.stores.model_check`)."""
        sql = self.sql
        where, args = self._where()
        clause = sql.SQL(" AND " if args else " WHERE ")
        query = sql.SQL("SELECT {}::text, {}::text FROM {}{}{}{}::text = ANY(%s)").format(
            sql.Identifier(self.id), sql.Identifier(self.vector), self.table, where, clause,
            sql.Identifier(self.id))
        try:
            rows = self._rows(query, [*args, list(ids)])
        except self.psycopg.Error as exc:
            raise self._error(exc) from None
        found = {rid: [float(x) for x in json.loads(vec)] for rid, vec in rows if vec}
        return [found.get(i) for i in ids]

    def describe(self) -> dict[str, Any]:
        return {"store": "pgvector", "url": self.url, "table": self.table_name,
                "collection": self.collection, "distance": self.distance}

    def vector_metric(self) -> str:
        return METRICS[self.operator]

    def _setting(self, name: str) -> str | None:
        """A server setting as this session sees it (None where pgvector does not define it)."""
        rows = self._rows("SELECT current_setting(%s, true)", (name,))
        return rows[0][0] if rows else None

    def index_settings(self) -> dict[str, Any]:
        """The ANN index on the vector column that this search's operator uses, its build
        settings (from its definition) and the session's search settings (``SHOW``)."""
        try:
            rows = self._rows("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname || '.' || "
                              "tablename = %s OR tablename = %s",
                              (self.table_name, self.table_name))
            found = None
            for name, definition in rows:
                method = re.search(r"USING (hnsw|ivfflat) \((.*?)\)", definition, re.I)
                if method and self.vector in method.group(2) and OPCLASSES[self.operator] in method.group(2):
                    found = (name, method.group(1).lower(), definition)
                    break
            if found is None:
                return index_settings("flat", {"index": "none this search uses (every row compared)"},
                                      exact=True)
            name, method, definition = found
            _, _, options = definition.partition(" WITH ")
            built = dict(_INDEX_WITH.findall(options))
            if method == "hnsw":
                ef = self._setting("hnsw.ef_search")
                settings = {"index": name, "m": built.get("m", "16"),
                            "ef_construction": built.get("ef_construction", "64"),
                            "hnsw.ef_search": ef, "hnsw.iterative_scan": self._setting("hnsw.iterative_scan")}
                remedy = (f"raise hnsw.ef_search (now {ef}; pgvector's default is 40, and a search "
                          "returns at most ef_search rows): SET hnsw.ef_search = 100 in the "
                          "application's session, or ALTER DATABASE ... SET hnsw.ef_search = 100; "
                          f"m (now {settings['m']}) and ef_construction (now "
                          f"{settings['ef_construction']}) are fixed when the index is built: "
                          f"REINDEX after CREATE INDEX ... WITH (m = 16, ef_construction = 64)")
                return index_settings("hnsw", settings, remedy)
            probes = self._setting("ivfflat.probes")
            settings = {"index": name, "lists": built.get("lists", "100"), "ivfflat.probes": probes}
            remedy = (f"raise ivfflat.probes (now {probes} of {settings['lists']} lists): "
                      "SET ivfflat.probes = 10 (sqrt(lists) is pgvector's starting point), or "
                      "ALTER DATABASE ... SET ivfflat.probes = 10")
            return index_settings("ivfflat", settings, remedy)
        except self.psycopg.Error as exc:
            raise self._error(exc) from None

    def iter_vectors(self, page_size: int = PAGE_SIZE) -> Iterator[tuple[list[str], Any]]:
        sql = self.sql
        where, args = self._where()
        query = sql.SQL("SELECT {}::text, {}::text FROM {}{} ORDER BY {}").format(
            sql.Identifier(self.id), sql.Identifier(self.vector), self.table, where,
            sql.Identifier(self.id))
        try:
            with self.conn.transaction(), self.conn.cursor(name="ragcov_vectors") as cur:
                cur.itersize = page_size
                cur.execute(query, args)
                while rows := cur.fetchmany(page_size):
                    missing = next((rid for rid, vec in rows if vec is None), None)
                    if missing is not None:
                        raise VectorsUnavailable(f"row {missing} of {self.table_name} has no "
                                                 f"{self.vector}")
                    yield [rid for rid, _ in rows], [vec[1:-1].split(",") for _, vec in rows]
        except self.psycopg.Error as exc:
            raise self._error(exc) from None
