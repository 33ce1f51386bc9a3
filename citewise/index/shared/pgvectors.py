"""Chunk vectors in PostgreSQL with pgvector: the dense half of the shared index tier (#28).

`PgVectors` has the local tier's `VectorIndex`'s methods (``upsert``, ``delete``, ``search``, ``count``,
``ids``) over one table, ``<prefix>_chunks``: the chunk id (primary key), its document and paragraph ids,
and its vector, with an HNSW index on cosine distance. The chunk texts are not stored: the document store
has them.

``halfvec``, by default
    IEEE half floats: 776 bytes a 384-dimensional vector where ``vector`` takes 1,544, so the table and its
    index are about half the size (SciFact's 43,500 chunks: table 44.5 MB and HNSW 50.9 MB, against 89.1
    and 89.1) and twice as many chunks stay in the server's memory. The embedding model's L2-normalised
    vectors lose nothing that shows: at the same HNSW settings, halfvec and vector rank alike (nDCG@10
    0.672 and 99.1% of exact search's 100 chunks, both), a halfvec cosine is within 1e-4 of numpy's float32
    one (6.1e-5 at worst), and a search is a little faster (p50 1.9 ms against 2.4). ``kind="vector"`` keeps
    float32.

HNSW settings (``halfvec_cosine_ops``)
    ``m`` 16, ``ef_construction`` 200 and ``ef_search`` 200 by default, Chroma's settings today: on SciFact
    they rank as exact search and Chroma do (nDCG@10 0.672; 99.1% of exact's 100 chunks, Chroma 98.9%),
    and on bench/scale.py's 100,000 synthetic chunks they find 98.1% of exact's 100 (Chroma 97.0%).
    ``ef_construction=64`` (pgvector's default) builds 2.1 times faster (43,500 chunks: 10 s against 21;
    100,000: 48 s against 118) and takes upserts into a built index 1.8 times faster (1,100 chunks/s
    against 600), for 0.001 of nDCG@10 and 98.3% of exact's chunks (100,000: 96.9%). ``ef_search=100``
    saves little at 43,500 chunks and 40% of a search at 100,000 (3.9 ms against 6.7 p50), for 93.9% of
    exact's chunks there. bench/pgvectors.py measured all of these. A build draws random HNSW levels: two
    builds of the same chunks differ a little (nDCG@10 0.669 to 0.671 over five builds at m 16,
    ef_construction 64, ef_search 200).

Searching
    One round trip (psycopg's pipeline mode) sets ``hnsw.ef_search`` and ``hnsw.iterative_scan =
    strict_order`` on the session, then runs ``ORDER BY embedding <=> query LIMIT k``. ``ef_search`` is
    raised to k: without iterative scans pgvector returns at most ``ef_search`` rows whatever the LIMIT
    (its default 40 gives 40 of 100). Iterative scans cost nothing until a scan runs out of candidates,
    which happens when deleted or replaced rows that no vacuum has removed yet fill the first
    ``ef_search`` (the graph still holds them): half the rows deleted, a search of 100 at ef_search 100
    returned 54 rows without, 100 with. k is written into the statement, so that the generic plan psycopg's
    prepared statement comes to has a known LIMIT (it stays on the index). A search reads the heap row of
    each chunk it returns (the distance is computed from it), so a server serving searches holds the HNSW
    index and the table: after SciFact's 809 queries its processes' PSS was 138 MB (44 MB fresh); 255 MB
    for 100,000 chunks.

Writing
    `upsert` sends its rows by binary ``COPY`` (no text formatting of floats) into a temporary table and
    moves them with ``INSERT ... ON CONFLICT (id) DO UPDATE``, in one transaction. Inserting into a built
    HNSW index costs a graph search a row; for a first load, `create` with ``index=False``, `upsert`
    everything, then `create_index` (43,500 chunks: the COPY under a second, the index 20 s). The build
    wants its whole graph in ``maintenance_work_mem`` (about 1.5 kB a halfvec chunk, 2.2 kB a vector one)
    or says so in a NOTICE ("hnsw graph no longer fits into maintenance_work_mem") and slows down (with
    PostgreSQL's default 64 MB, SciFact's vector index overflowed after 29,797 chunks and took 23 s instead
    of 11); `create_index` sets 1 GB for its own transaction.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

from citewise.index.records import DEFAULT_COLLECTION

Kind = Literal["halfvec", "vector"]

SCHEMA = """CREATE TABLE IF NOT EXISTS {chunks} (
    id text PRIMARY KEY,
    doc_id text NOT NULL,
    paragraph_id text NOT NULL,
    embedding {kind}({dim}) NOT NULL,
    collection text NOT NULL DEFAULT 'default')"""
COLLECTION = "ALTER TABLE {chunks} ADD COLUMN IF NOT EXISTS collection text NOT NULL DEFAULT 'default'"
"""A table made before documents had collections gains the column (its rows: the default collection)."""
COLLECTION_INDEX = "CREATE INDEX IF NOT EXISTS {collection_index} ON {chunks} (collection)"
"""What lets a search of a few collections read their rows alone (an exact search: see `SEARCH`)."""

SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, false), set_config('hnsw.iterative_scan', 'strict_order', false)"
)
"""A search's settings, for the session (in autocommit, a transaction's own would end before the query)."""

SEARCH = """SELECT id, embedding <=> %(query)b AS distance FROM {chunks} {where}
    ORDER BY embedding <=> %(query)b LIMIT {k}"""
"""k is written into the statement: psycopg prepares a statement run five times, and a generic plan with an
unknown LIMIT may be costed away from the index. `where` is empty, or the collections' filter, written into
the statement too, so that the planner knows how many rows the collections hold (their share in the
column's statistics) and picks one of two plans by its costs:

- a few collections' rows read through the collection index (`COLLECTION_INDEX`) and ranked exactly, as a
  sort of their distances: one collection of ten on 16,600 SciFact chunks, 1,544 rows in 0.8 ms;
- the HNSW scan with the filter applied to the rows it visits: with ``hnsw.iterative_scan`` it goes on until
  k rows passed it (or ``hnsw.max_scan_tuples``, 20,000 by default, were visited), so a search of a few
  collections still finds k when they hold k; but it visits about k / (their share) rows, and for that one
  collection of ten took 18 ms against 2 unfiltered.

The exact plan ranks as exact search does, so a filtered search finds at least what the HNSW search of every
collection finds of those collections."""

INDEX = """CREATE INDEX IF NOT EXISTS {hnsw} ON {chunks}
    USING hnsw (embedding {ops}) WITH (m = {m}, ef_construction = {ef_construction})"""


class _Query:
    """A query vector as a statement's parameter (its dumper writes pgvector's binary form)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values


class _HalfvecQuery(_Query):
    """A query vector sent as a halfvec."""


class _VectorQuery(_Query):
    """A query vector sent as a vector (float32)."""


QUERY = {"halfvec": _HalfvecQuery, "vector": _VectorQuery}
"""The parameter class of each kind: one connection may serve tables of both, each its own dumper."""


def _dumper(kind: Kind, oid: int) -> type[Dumper]:
    """A binary dumper for pgvector's `kind` (type `oid`): dimension, 0, then big-endian floats."""
    dtype = np.dtype(">f2" if kind == "halfvec" else ">f4")

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            values = np.asarray(obj.values if isinstance(obj, _Query) else obj, dtype=dtype).ravel()
            return struct.pack(">HH", values.size, 0) + values.tobytes()

    VectorDumper.oid = oid
    return VectorDumper


class PgVectors:
    """Chunk vectors in a PostgreSQL table with an HNSW index on cosine distance (pgvector).

    Args:
        conn: An open psycopg connection to a database with the ``vector`` extension; autocommit is best
            (each call then runs in a transaction of its own: `upsert` and `delete` open one anyway).
        dim: The vectors' dimension (the embedding model's).
        prefix: The name prefix of the table and its index (``<prefix>_chunks``, ``<prefix>_hnsw``).
        kind: ``"halfvec"`` (2 bytes a dimension) or ``"vector"`` (float32).
        m: HNSW links a node (pgvector's default too).
        ef_construction: HNSW candidates a build step (pgvector's default is 64: see the module).
        ef_search: HNSW candidates a search, raised to k when k is larger (pgvector's default is 40).
    """

    def __init__(
        self,
        conn: psycopg.Connection,
        dim: int = 384,
        *,
        prefix: str = "vectors",
        kind: Kind = "halfvec",
        m: int = 16,
        ef_construction: int = 200,
        ef_search: int = 200,
    ) -> None:
        if kind not in ("halfvec", "vector"):
            raise ValueError(f"unknown vector kind {kind!r}")
        self.conn, self.dim, self.prefix, self.kind = conn, dim, prefix, kind
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search
        names = ("chunks", "hnsw", "staging", "collection_index")
        self._names = {name: sql.Identifier(f"{prefix}_{name}") for name in names}
        row = conn.execute("SELECT %s::regtype::oid", [kind]).fetchone()
        if row is None:
            raise RuntimeError(f"no type {kind} (is the vector extension created?)")
        self._oid = int(row[0])
        conn.adapters.register_dumper(QUERY[kind], _dumper(kind, self._oid))
        conn.adapters.register_dumper(None, _dumper(kind, self._oid))  # by oid, for COPY

    def _sql(self, template: str, **extra: sql.Composable) -> sql.Composed:
        """A statement with the names and settings filled in."""
        values: dict[str, sql.Composable] = {
            **self._names,
            "kind": sql.SQL(self.kind),
            "ops": sql.SQL(f"{self.kind}_cosine_ops"),
            "dim": sql.Literal(self.dim),
            "m": sql.Literal(self.m),
            "ef_construction": sql.Literal(self.ef_construction),
        }
        return sql.SQL(template).format(**values, **extra)

    def create(self, index: bool = True) -> None:
        """Create the table, and its HNSW index unless `index` is False (a bulk load indexes afterwards)."""
        self.conn.execute(self._sql(SCHEMA))
        self.conn.execute(self._sql(COLLECTION))
        self.conn.execute(self._sql(COLLECTION_INDEX))
        if index:
            self.create_index()

    def create_index(self, maintenance_work_mem: str = "1GB") -> None:
        """Build the HNSW index if it does not exist (after a first bulk `upsert`, much faster than before).

        Args:
            maintenance_work_mem: The build's memory (for this transaction only): the whole graph should fit
                (about 1.5 kB a halfvec chunk of 384 dimensions, 2.3 kB a vector one).
        """
        with self.conn.transaction():
            self.conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", [maintenance_work_mem])
            self.conn.execute(self._sql(INDEX))

    def analyze(self) -> None:
        """Refresh the planner's statistics of the table (after a bulk load)."""
        self.conn.execute(self._sql("ANALYZE {chunks}"))

    def drop(self) -> None:
        """Drop the table (with its index)."""
        self.conn.execute(self._sql("DROP TABLE IF EXISTS {chunks}"))

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, str | int]] | None = None,
    ) -> None:
        """Add or replace chunks, in one transaction (an id given twice keeps its last row).

        Args:
            ids: Chunk ids.
            vectors: One vector a chunk, shape (len(ids), dim).
            texts: Ignored (the document store holds the texts); accepted as `VectorIndex.upsert` takes it.
            metadatas: Each chunk's ``doc_id``, ``paragraph_id`` (empty strings when absent) and
                ``collection`` (the default collection when absent).
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(ids) or (len(ids) and vectors.shape[1] != self.dim):
            raise ValueError(f"expected {len(ids)} vectors of {self.dim} dimensions, got {vectors.shape}")
        if metadatas is not None and len(metadatas) != len(ids):
            raise ValueError("as many metadatas as ids")
        if not len(ids):
            return
        last = {key: n for n, key in enumerate(ids)}  # ON CONFLICT cannot touch a row twice
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(
                self._sql(
                    "CREATE TEMP TABLE {staging} (id text, doc_id text, paragraph_id text, embedding {kind},"
                    " collection text) ON COMMIT DROP"
                )
            )
            with cur.copy(self._sql("COPY {staging} FROM STDIN (FORMAT BINARY)")) as copy:
                copy.set_types(["text", "text", "text", self._oid, "text"])
                for key, n in last.items():
                    meta = metadatas[n] if metadatas is not None else {}
                    doc, paragraph = str(meta.get("doc_id", "")), str(meta.get("paragraph_id", ""))
                    collection = str(meta.get("collection") or DEFAULT_COLLECTION)
                    copy.write_row((key, doc, paragraph, vectors[n], collection))
            cur.execute(
                self._sql(
                    """INSERT INTO {chunks} (id, doc_id, paragraph_id, embedding, collection)
                    SELECT id, doc_id, paragraph_id, embedding, collection FROM {staging}
                    ON CONFLICT (id) DO UPDATE SET doc_id = excluded.doc_id,
                        paragraph_id = excluded.paragraph_id, embedding = excluded.embedding,
                        collection = excluded.collection"""
                )
            )

    def delete(self, ids: Sequence[str]) -> int:
        """Delete chunks by id (missing ids are ignored); returns how many were deleted."""
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(self._sql("DELETE FROM {chunks} WHERE id = ANY(%s)"), [list(ids)])
            return cur.rowcount

    def set_collection(self, ids: Sequence[str], collection: str) -> None:
        """Record that the given rows' documents are in `collection` now (in the caller's transaction)."""
        self.conn.execute(
            self._sql("UPDATE {chunks} SET collection = %s WHERE id = ANY(%s)"), [collection, list(ids)]
        )

    def search(
        self,
        vector: np.ndarray,
        k: int,
        collections: Sequence[str] | None = None,
        ef_search: int | None = None,
    ) -> list[tuple[str, float]]:
        """The k nearest chunks as (id, cosine similarity), best first (fewer when there are fewer).

        The settings (``hnsw.ef_search``, ``hnsw.iterative_scan``) and the query go in one round trip
        (psycopg's pipeline mode); the settings stay on the connection's session afterwards.

        Args:
            vector: The query vector (any norm: the distance is the cosine).
            k: How many chunks at most.
            collections: Only rows of these collections (None: every row), filtered inside the HNSW scan.
            ef_search: HNSW candidates for this search (`ef_search` when None; at least k).
        """
        if k < 1 or (collections is not None and not collections):
            return []
        ef = max(k, self.ef_search if ef_search is None else ef_search)
        query = QUERY[self.kind](np.asarray(vector, dtype=np.float32))
        where: sql.Composable = sql.SQL("")
        if collections is not None:  # a literal: the plan is chosen knowing the collections (see SEARCH)
            where = sql.SQL("WHERE collection = ANY({}::text[])").format(sql.Literal(list(collections)))
        parameters: dict[str, Any] = {"query": query}
        with self.conn.pipeline():
            self.conn.execute(SEARCH_SETTINGS, [str(ef)])
            cursor = self.conn.execute(self._sql(SEARCH, k=sql.Literal(int(k)), where=where), parameters)
        return [(key, 1.0 - float(distance)) for key, distance in cursor.fetchall()]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vector of each given id the table holds, as float32.

        Read in pgvector's binary form (dimension, 0, big-endian floats): a search's few hundred vectors
        come five times faster than as text (``::real[]``), and the same to the last bit.
        """
        if not ids:
            return {}
        dtype = np.dtype(">f2" if self.kind == "halfvec" else ">f4")
        with self.conn.cursor(binary=True) as cur:
            cur.execute(self._sql("SELECT id, embedding FROM {chunks} WHERE id = ANY(%s)"), [list(ids)])
            return {key: np.frombuffer(raw, dtype=dtype, offset=4).astype(np.float32) for key, raw in cur}

    def similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity to a query vector of each given id the table holds (no index: by key)."""
        if not ids:
            return {}
        query = QUERY[self.kind](np.asarray(vector, dtype=np.float32))
        rows = self.conn.execute(
            self._sql("SELECT id, embedding <=> %(query)b FROM {chunks} WHERE id = ANY(%(ids)s)"),
            {"query": query, "ids": list(ids)},
        )
        return {key: 1.0 - float(distance) for key, distance in rows}

    def count(self) -> int:
        """How many chunks the table holds."""
        row = self.conn.execute(self._sql("SELECT count(*) FROM {chunks}")).fetchone()
        return int(row[0]) if row else 0

    def ids(self) -> set[str]:
        """Every chunk id in the table."""
        return {key for (key,) in self.conn.execute(self._sql("SELECT id FROM {chunks}"))}

    def size(self) -> dict[str, int]:
        """Bytes on disk: the table (heap), the HNSW index, and everything (heap, TOAST and all indexes)."""
        row = self.conn.execute(
            self._sql(
                "SELECT pg_relation_size({table}::regclass),"
                " coalesce(pg_relation_size(to_regclass({index})), 0),"
                " pg_total_relation_size({table}::regclass)",
                table=sql.Literal(self._names["chunks"].as_string(self.conn)),
                index=sql.Literal(self._names["hnsw"].as_string(self.conn)),
            )
        ).fetchone()
        assert row is not None
        return {"table": int(row[0]), "hnsw": int(row[1]), "total": int(row[2])}
