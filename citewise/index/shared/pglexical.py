"""Lexical ranking of chunks inside PostgreSQL: BM25 as pgvector sparse vectors, or ts_rank_cd.

Two methods behind one class, each in tables of its own (named from `PgLexical.prefix`):

``bm25``
    Lucene BM25 as bm25s computes it for citewise (the local tier's `LexicalIndex`: k1 1.5, b 0.75, its
    tokenizer, `citewise.index.terms`: lower case, English stopwords, Snowball stemming), so that both tiers
    score alike.
    The score of a chunk d for a query q is ``sum over t in q of qtf(t) * idf(t) * tfc(t, d)`` with
    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``, ``tfc(t, d) = tf / (tf + k1 (1 - b + b |d| / avgdl))``.
    That is an inner product: each chunk stores ``tfc`` as a ``sparsevec`` over term ids (``<p>_terms``:
    term, id, document frequency), the query is the sparse vector of its terms' ``qtf * idf``, and
    ``weights <#> query`` (pgvector's negative inner product) ranks. IDF is applied at query time from the
    live ``df`` and chunk count, so it is exact however many chunks were added or removed since; only
    ``avgdl`` is frozen into a chunk's weights when it is written (the raw term counts are kept beside them,
    and `PgLexical.reweight` rewrites the weights of chunks written under another ``avgdl``).

    Candidates are the chunks sharing a term with the query (the chunks bm25s scores above zero), found by a
    GIN index over an ``integer[]`` of the chunk's term ids with PostgreSQL's own ``&&`` (array overlap,
    core ``array_ops``: no intarray extension). Measured against a ``tsvector`` of the ids with ``@@``, it
    is as fast through the index and half the bytes a row (no lexeme strings, no positions), and ``&&`` is
    exactly "shares a term". The planner does not know the query's ids when it plans (they are computed in
    the same statement) and costs ``&&`` far below its real price on a sequential scan (an element-by-element
    compare, about 2 microseconds a row), so the ranking runs in a SQL function with ``enable_seqscan = off``.
    Every candidate costs a heap row and an inner product, and a question's common terms make most chunks
    candidates (a quarter of bench/scale.py's synthetic chunks for a typical SciFact claim); the function
    leaves out the chunks that hold only terms too light to reach the top k (`SEARCH`), for the same result.

``ts_rank_cd``
    PostgreSQL's full-text search: a ``tsvector`` (``to_tsvector('english', text)``) with a GIN index,
    ranked by ``ts_rank_cd``. ``plainto_tsquery`` and ``websearch_to_tsquery`` AND the words, and a long
    question then matches almost no chunk; the query here is the OR of the question's distinct lexemes
    (``match="any"``, the default; ``match="all"`` is ``plainto_tsquery``).

Both return the top k ``(chunk_id, score)``, best first, ties by id. Readers never wait for writers.

Writers do not wait for each other either (several ingest workers write at once, #28): a bm25 writer never
updates a shared row. Each write appends its change to the document frequencies and to the chunk and token
counts as rows of its own (``<p>_pending``: term id, df change; ``<p>_pending_stats``: chunks, tokens), and a
search reads ``df`` and the counts as the folded values plus the pending changes, so it is exact at every
moment. `PgLexical.fold` moves the pending rows into ``<p>_terms`` and ``<p>_stats`` in one transaction (one
fold at a time, by an advisory lock; a writer's rows are invisible to it until they commit, so a fold and a
writer never touch the same row). New terms enter the vocabulary in term order (`PgLexical.register`), so
two writers adding the same new terms wait a moment for each other but never deadlock.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import psycopg
from psycopg import sql

from citewise.index.records import DEFAULT_COLLECTION
from citewise.index.terms import Terms

Method = Literal["bm25", "ts_rank_cd"]

DIMENSIONS = 1_000_000_000
"""The sparse vectors' dimension (pgvector's largest): term ids may grow without rewriting any vector."""

TOTALS = """(SELECT (SELECT chunks FROM {stats}) + coalesce(sum(chunks), 0) AS chunks,
    (SELECT tokens FROM {stats}) + coalesce(sum(tokens), 0) AS tokens FROM {pending_stats})"""
"""bm25: today's chunk and token counts: the folded ones plus the pending changes."""

AVERAGE = "(SELECT greatest(tokens, 1)::float8 / greatest(chunks, 1) AS avgdl FROM {totals} AS t)"
"""bm25: today's average chunk length, in tokens."""

QUERY_TERMS = """
    SELECT v.id, u.n * ln(1 + (s.chunks - f.df + 0.5) / (f.df + 0.5)) AS weight
    FROM unnest({query_terms}::text[], {query_counts}::int[]) AS u(term, n)
    JOIN {terms} AS v ON v.term = u.term
    CROSS JOIN LATERAL (
        SELECT v.df + coalesce(sum(p.df), 0) AS df FROM {pending} AS p WHERE p.term = v.id) AS f
    CROSS JOIN {totals} AS s
    WHERE f.df > 0"""
"""bm25: the query's term ids and their weights ``qtf * idf``, from today's df and chunk count."""

QUERY_VECTOR = """
    SELECT array_agg(t.id) AS ids,
        ('{{' || string_agg(t.id || ':' || t.weight, ',' ORDER BY t.id) || '}}/' || {dim})::sparsevec
            AS vector
    FROM ({query_terms_rows}) AS t"""
"""bm25: the query's term ids and its sparse vector of ``qtf * idf``."""

DIRECT_ROWS = 10_000
"""bm25: a search of collections holding fewer chunks than this scores their chunks sharing a term directly
(no floor's probes): at most this many rows read, where the probes read the whole index's candidates."""

PRUNE_MARGIN = 0.999
"""A term is left out of the candidates' filter only while its bound stays under this share of the floor: the
scores are computed in single precision (pgvector), the bound in double."""

SEARCH = """CREATE OR REPLACE FUNCTION {search_in}(
    query_terms text[], query_counts integer[], k integer, collections text[])
    RETURNS TABLE (id text, distance double precision) LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
    DECLARE
        _vector sparsevec;
        _ids integer[];  -- the query's term ids, the heaviest first
        _weights double precision[];
        _probe integer[] := '{{}}';
        _found bigint;
        _worst double precision;
        _floor double precision;
        _bound double precision := 0;
        _last integer;
        _readable bigint;
    BEGIN
        SELECT array_agg(t.id ORDER BY t.weight DESC, t.id),
            array_agg(t.weight::float8 ORDER BY t.weight DESC, t.id),
            ('{{' || string_agg(t.id || ':' || t.weight, ',' ORDER BY t.id) || '}}/' || {dim})::sparsevec
        INTO _ids, _weights, _vector FROM ({query_terms_rows}) AS t;
        IF _ids IS NULL THEN
            RETURN;
        END IF;
        _last := array_length(_ids, 1);
        IF collections IS NOT NULL THEN
            -- a few collections' chunks (fewer than {direct}) are scored whole, found through the
            -- collection index and the terms' GIN index together: planned with the collections known
            EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM {chunks} WHERE collection = ANY($1) LIMIT $2) AS s'
                INTO _readable USING collections, {direct};
            IF _readable < {direct} THEN
                RETURN QUERY EXECUTE 'SELECT c.id, (c.weights <#> $1)::float8 FROM {chunks} AS c
                    WHERE c.collection = ANY($2) AND c.terms && $3 ORDER BY 2, c.id LIMIT $4'
                    USING _vector, collections, _ids, k;
                RETURN;
            END IF;
        END IF;
        -- a floor: the k-th best score among the chunks holding the heaviest terms (fewest chunks)
        FOR i IN 1 .. array_length(_ids, 1) - 1 LOOP
            _probe := _probe || _ids[i];
            SELECT count(*), max(s.d) INTO _found, _worst FROM (
                SELECT c.weights <#> _vector AS d FROM {chunks} AS c WHERE c.terms && _probe
                AND (collections IS NULL OR c.collection = ANY(collections))
                ORDER BY 1 LIMIT k) AS s;
            IF _found >= k THEN
                _floor := -_worst;
                -- a chunk with none of the heaviest terms up to _last scores under the sum of the others'
                -- weights (a term's weight in a chunk is qtf * idf * tfc, tfc < 1): below the floor, out
                WHILE _last > 1 AND _bound + _weights[_last] < {margin} * _floor LOOP
                    _bound := _bound + _weights[_last];
                    _last := _last - 1;
                END LOOP;
                EXIT;
            END IF;
        END LOOP;
        RETURN QUERY SELECT c.id, c.weights <#> _vector AS distance FROM {chunks} AS c
            WHERE c.terms && _ids[1:_last] AND (collections IS NULL OR c.collection = ANY(collections))
            ORDER BY 2, c.id LIMIT k;
    END $$"""
"""bm25: the k best chunks, found among fewer candidates than every chunk sharing a term (MaxScore's idea).

The chunks holding the query's heaviest (rarest) terms are scored first, the fewest terms whose chunks are k
or more: the k-th best of them is a floor under the k-th best of all. The lightest terms whose weights add up
to less than that floor cannot lift a chunk holding none of the others to it (a chunk's weight for a term,
``tfc``, is below 1), so only chunks holding one of the other terms are candidates. Those are scored whole,
as before: the same k chunks, the same scores, the same order.

`collections` (NULL: every chunk) keeps only the chunks of those collections. When they hold fewer than
`DIRECT_ROWS` chunks (counted through the collection index, up to that many), their chunks sharing a term
are scored whole, with no floor: the statement is planned with the collections known, so PostgreSQL ANDs the
collection index with the terms' GIN index and reads only those rows (one collection of ten on 16,600
SciFact chunks: about 0.6 ms, where the floor's probes, each finding a tenth of what they read, took 11).
Larger collections go the floor's way with the filter in the probes and the final scan alike: the floor is
the k-th best readable chunk's, so pruning stays exact. Either way the same k chunks, the same scores, the
same order, and k are returned when the collections hold k chunks sharing a term."""

BM25_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {terms} (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        term text NOT NULL UNIQUE,
        df integer NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS {stats} (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        chunks bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0)""",
    "INSERT INTO {stats} DEFAULT VALUES ON CONFLICT DO NOTHING",
    "CREATE TABLE IF NOT EXISTS {pending} (term integer NOT NULL, df integer NOT NULL)",
    "CREATE INDEX IF NOT EXISTS {pending_term} ON {pending} (term)",
    "CREATE TABLE IF NOT EXISTS {pending_stats} (chunks bigint NOT NULL, tokens bigint NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {chunks} (
        id text PRIMARY KEY,
        length integer NOT NULL,
        terms integer[] NOT NULL,
        tfs integer[] NOT NULL,
        avgdl double precision NOT NULL,
        weights sparsevec NOT NULL)""",
    # a table made before documents had collections gains the column (its rows: the default collection)
    "ALTER TABLE {chunks} ADD COLUMN IF NOT EXISTS collection text NOT NULL DEFAULT 'default'",
    "CREATE INDEX IF NOT EXISTS {chunks_terms} ON {chunks} USING gin (terms)",
    "CREATE INDEX IF NOT EXISTS {chunks_collection} ON {chunks} (collection)",
    # tfc of each term id (terms in id order), with the average length given
    """CREATE OR REPLACE FUNCTION {weights}(
        terms integer[], tfs integer[], length integer, avgdl double precision)
    RETURNS sparsevec LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT ('{{' || coalesce(string_agg(
            t || ':' || (f / (f + {k1} * (1 - {b} + {b} * length / avgdl)))::real, ',' ORDER BY t), ''
        ) || '}}/' || {dim})::sparsevec
        FROM unnest(terms, tfs) AS u(t, f) $$""",
    SEARCH,
)

TS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {stats} (one boolean PRIMARY KEY DEFAULT true CHECK (one))",
    "INSERT INTO {stats} DEFAULT VALUES ON CONFLICT DO NOTHING",
    "CREATE TABLE IF NOT EXISTS {chunks} (id text PRIMARY KEY, tsv tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS {chunks_tsv} ON {chunks} USING gin (tsv)",
    # the OR of the question's distinct lexemes, each quoted as tsquery input wants it ('' for ', \\ for \)
    r"""CREATE OR REPLACE FUNCTION {search}(query text, k integer, normalization integer)
    RETURNS TABLE (id text, score real) LANGUAGE sql STABLE SET enable_seqscan = off AS $$
        SELECT c.id, ts_rank_cd(c.tsv, q.query, normalization) AS score
        FROM {chunks} AS c, (SELECT (
            SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | ')
            FROM unnest(to_tsvector({config}::regconfig, query)))::tsquery AS query) AS q
        WHERE c.tsv @@ q.query ORDER BY score DESC, c.id LIMIT k $$""",
)

VOCABULARY = """INSERT INTO {terms} (term) SELECT DISTINCT t FROM unnest(%s::text[]) AS t
    ORDER BY t ON CONFLICT DO NOTHING"""
"""bm25: new terms, in term order: writers adding the same new terms wait for each other, never deadlock."""

BM25_ADD = (
    """INSERT INTO {terms} (term) SELECT DISTINCT unnest(terms) AS t FROM {staging}
    ORDER BY t ON CONFLICT DO NOTHING""",
    """INSERT INTO {pending} (term, df) SELECT v.id, c.n FROM (
        SELECT term, count(*) AS n FROM {staging}, unnest(terms) AS term GROUP BY term) AS c
    JOIN {terms} AS v ON v.term = c.term""",
    "INSERT INTO {pending_stats} SELECT count(*), coalesce(sum(length), 0) FROM {staging}",
    """INSERT INTO {chunks} (id, length, terms, tfs, avgdl, weights, collection)
    SELECT s.id, s.length, m.terms, m.tfs, a.avgdl, {weights}(m.terms, m.tfs, s.length, a.avgdl),
        s.collection
    FROM {staging} AS s
    CROSS JOIN {average} AS a
    CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(v.id ORDER BY v.id), '{{}}') AS terms,
               coalesce(array_agg(u.f ORDER BY v.id), '{{}}') AS tfs
        FROM unnest(s.terms, s.tfs) AS u(term, f) JOIN {terms} AS v ON v.term = u.term) AS m""",
)
"""bm25: a staged batch (id, length, terms, counts) into the vocabulary, pending changes and chunks."""

FOLD = (
    """WITH moved AS (DELETE FROM {pending} RETURNING term, df)
    UPDATE {terms} SET df = {terms}.df + m.n
    FROM (SELECT term, sum(df) AS n FROM moved GROUP BY term) AS m WHERE {terms}.id = m.term""",
    """WITH moved AS (DELETE FROM {pending_stats} RETURNING chunks, tokens)
    UPDATE {stats} SET chunks = {stats}.chunks + m.chunks, tokens = {stats}.tokens + m.tokens
    FROM (SELECT coalesce(sum(chunks), 0) AS chunks, coalesce(sum(tokens), 0) AS tokens FROM moved) AS m""",
)
"""bm25: the pending changes moved into the vocabulary's df and the statistics (committed ones only)."""


class PgLexical:
    """Lexical search over chunks in PostgreSQL, by BM25 sparse vectors or by ts_rank_cd.

    Args:
        conn: An open psycopg connection to a database with the ``vector`` extension (bm25). `add`,
            `remove` and `reweight` each run in a transaction of their own.
        method: ``"bm25"`` or ``"ts_rank_cd"``.
        prefix: The tables' name prefix (``<prefix>_chunks``, ``<prefix>_terms``, ``<prefix>_stats``).
        k1: BM25's term-frequency saturation.
        b: BM25's length normalization.
        config: The text search configuration of ``ts_rank_cd``.
        normalization: ``ts_rank_cd``'s normalization flags (0: none; 1: divided by 1 + log(length)).
        match: ``ts_rank_cd``'s query: any of the question's lexemes (OR) or all of them (AND).
    """

    def __init__(
        self,
        conn: psycopg.Connection,
        method: Method = "bm25",
        *,
        prefix: str = "lexical",
        k1: float = 1.5,
        b: float = 0.75,
        config: str = "english",
        normalization: int = 0,
        match: Literal["any", "all"] = "any",
    ) -> None:
        if method not in ("bm25", "ts_rank_cd"):
            raise ValueError(f"unknown method {method!r}")
        self.conn, self.method, self.prefix = conn, method, prefix
        self.k1, self.b = k1, b
        self.config, self.normalization, self.match = config, normalization, match
        self._tokenizer = Terms()
        names = (
            *("chunks", "terms", "stats", "pending", "pending_stats", "weights", "search", "search_in"),
            "staging",
            *("chunks_terms", "chunks_tsv", "pending_term", "chunks_collection"),
        )
        self._names = {name: sql.Identifier(f"{prefix}_{name}") for name in names}

    def _sql(self, template: str, **extra: sql.Composable) -> sql.Composed:
        """A statement with the tables' names and the settings filled in (``{{``, ``}}`` for braces)."""
        values: dict[str, sql.Composable] = {
            **self._names,
            "dim": sql.Literal(DIMENSIONS),
            "k1": sql.Literal(self.k1),
            "b": sql.Literal(self.b),
            "config": sql.Literal(self.config),
        }
        values["totals"] = sql.SQL(TOTALS).format(**values)
        values["average"] = sql.SQL(AVERAGE).format(**values)
        return sql.SQL(template).format(**values, **extra)

    def _query_terms(self, terms: sql.Composable, counts: sql.Composable) -> sql.Composed:
        return self._sql(QUERY_TERMS, query_terms=terms, query_counts=counts)

    def _query_vector(self, terms: sql.Composable, counts: sql.Composable) -> sql.Composed:
        return self._sql(QUERY_VECTOR, query_terms_rows=self._query_terms(terms, counts))

    def create(self) -> None:
        """Create the method's tables, indexes and functions if they do not exist."""
        with self.conn.transaction():
            if self.method == "bm25":
                rows = self._query_terms(sql.Identifier("query_terms"), sql.Identifier("query_counts"))
                for statement in BM25_SCHEMA:
                    self.conn.execute(
                        self._sql(
                            statement,
                            query_terms_rows=rows,
                            margin=sql.Literal(PRUNE_MARGIN),
                            direct=sql.Literal(DIRECT_ROWS),
                        )
                    )
            else:
                for statement in TS_SCHEMA:
                    self.conn.execute(self._sql(statement))

    def drop(self) -> None:
        """Drop the method's tables and functions."""
        with self.conn.transaction():
            for name in ("chunks", "terms", "stats", "pending", "pending_stats"):
                self.conn.execute(self._sql(f"DROP TABLE IF EXISTS {{{name}}}"))
            for name in ("weights", "search", "search_in"):
                self.conn.execute(self._sql(f"DROP FUNCTION IF EXISTS {{{name}}}"))

    def analyze(self) -> None:
        """After a bulk `add`: move the GIN index's pending entries into it, refresh the planner's statistics.

        Rows added after the index was made wait in the index's unsorted pending list, which every search
        reads whole, until a vacuum (autovacuum, in time) merges them: a search right after a bulk load is
        several times slower without this. The pending df changes are folded first (`fold`).
        """
        if self.method == "bm25":
            self.fold()
        index = self._names["chunks_terms" if self.method == "bm25" else "chunks_tsv"]
        self.conn.execute(
            sql.SQL("SELECT gin_clean_pending_list({}::regclass)").format(
                sql.Literal(index.as_string(self.conn))
            )
        )
        self.conn.execute(self._sql("ANALYZE {chunks}"))

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokens as citewise's BM25 makes them (`Terms.tokenize`): lower case, stemmed."""
        return self._tokenizer.tokenize(texts)

    def register(self, tokens: Sequence[Sequence[str]]) -> None:
        """bm25: add the terms of tokenized texts to the vocabulary, in term order, in their own transaction.

        A writer that registers its terms before its own transaction opens (the connection in autocommit)
        never waits in it for another writer's new terms: `add` finds them all there.
        """
        if self.method != "bm25":
            return
        terms = sorted({term for text in tokens for term in text})
        if terms:
            with self.conn.transaction():
                self.conn.execute(self._sql(VOCABULARY), [terms])

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        tokens: Sequence[Sequence[str]] | None = None,
        collections: Sequence[str] | None = None,
    ) -> None:
        """Index new chunks (an id already indexed is an error: `remove` it first).

        For bm25, the chunks' weights use the average length of all chunks once these are in; chunks
        written before keep the average of their time until `reweight`. Writers do not block each other
        (see the module); their df changes wait in ``<p>_pending`` for `fold`.

        Args:
            ids: The chunks' ids.
            texts: Their texts.
            tokens: bm25: the texts as `tokenize` made them, when the caller has them already.
            collections: bm25: each text's document's collection (None: the default collection).
        """
        if len(ids) != len(texts) or (tokens is not None and len(tokens) != len(ids)):
            raise ValueError("as many ids as texts (and tokenized texts)")
        if collections is not None and len(collections) != len(ids):
            raise ValueError("as many collections as ids")
        if not ids:
            return
        with self.conn.transaction(), self.conn.cursor() as cur:
            if self.method == "ts_rank_cd":
                cur.execute(self._sql("CREATE TEMP TABLE {staging} (id text, text text) ON COMMIT DROP"))
                with cur.copy(self._sql("COPY {staging} FROM STDIN")) as copy:
                    for row in zip(ids, texts, strict=True):
                        copy.write_row(row)
                insert = (
                    "INSERT INTO {chunks} SELECT id, to_tsvector({config}::regconfig, text) FROM {staging}"
                )
                cur.execute(self._sql(insert))
                return
            staging = (
                "CREATE TEMP TABLE {staging} (id text, length int, terms text[], tfs int[], collection text)"
                " ON COMMIT DROP"
            )
            cur.execute(self._sql(staging))
            named = [DEFAULT_COLLECTION] * len(ids) if collections is None else list(collections)
            with cur.copy(self._sql("COPY {staging} FROM STDIN")) as copy:
                copy.set_types(["text", "int4", "text[]", "int4[]", "text"])
                every = zip(ids, self.tokenize(texts) if tokens is None else tokens, named, strict=True)
                for key, words, collection in every:
                    counts = Counter(words)
                    copy.write_row((key, len(words), list(counts), list(counts.values()), collection))
            for statement in BM25_ADD:
                cur.execute(self._sql(statement))

    def remove(self, ids: Sequence[str]) -> int:
        """Remove chunks by id (unknown ids are ignored); returns how many were removed.

        For bm25, the df and count changes are pending ones (negative), as `add`'s are: no shared row is
        updated.
        """
        with self.conn.transaction(), self.conn.cursor() as cur:
            if self.method == "ts_rank_cd":
                cur.execute(self._sql("DELETE FROM {chunks} WHERE id = ANY(%s)"), [list(ids)])
                return cur.rowcount
            cur.execute(
                self._sql(
                    """WITH gone AS (DELETE FROM {chunks} WHERE id = ANY(%s) RETURNING length, terms),
                    frequencies AS (
                        INSERT INTO {pending} (term, df)
                        SELECT t, -count(*) FROM gone, unnest(terms) AS t GROUP BY t)
                    INSERT INTO {pending_stats} (chunks, tokens)
                    SELECT -count(*), -coalesce(sum(length), 0) FROM gone
                    RETURNING -chunks"""
                ),
                [list(ids)],
            )
            row = cur.fetchone()
            return int(row[0]) if row else 0

    def fold(self) -> bool:
        """bm25: move the committed pending df and count changes into the vocabulary and the statistics.

        One fold runs at a time (a transaction-level advisory lock named after the tables); a second one
        asked meanwhile returns at once. Searches give the same scores before and after.

        Returns:
            Whether this call folded (False: another fold was running, or the method is ts_rank_cd).
        """
        if self.method != "bm25":
            return False
        with self.conn.transaction(), self.conn.cursor() as cur:
            key = f"citewise.pglexical.fold:{self.prefix}"
            row = cur.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))", [key]).fetchone()
            if not row or not row[0]:
                return False
            for statement in FOLD:
                cur.execute(self._sql(statement))
            return True

    def pending(self) -> int:
        """bm25: how many df changes wait for `fold`."""
        row = self.conn.execute(self._sql("SELECT count(*) FROM {pending}")).fetchone()
        return int(row[0]) if row else 0

    def drift(self) -> float:
        """bm25: the largest relative gap between a chunk's frozen ``avgdl`` and today's (0 when in step)."""
        statement = "SELECT coalesce(max(abs(c.avgdl / s.avgdl - 1)), 0) FROM {chunks} AS c, {average} AS s"
        row = self.conn.execute(self._sql(statement)).fetchone()
        return float(row[0]) if row else 0.0

    def reweight(self, tolerance: float = 0.0) -> int:
        """bm25: rewrite the weights of chunks whose ``avgdl`` is off today's by more than `tolerance`.

        Returns:
            How many chunks were rewritten.
        """
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(self._sql("SELECT 1 FROM {stats} FOR UPDATE"))
            cur.execute(
                self._sql(
                    """UPDATE {chunks} AS c
                    SET avgdl = s.avgdl, weights = {weights}(c.terms, c.tfs, c.length, s.avgdl)
                    FROM {average} AS s WHERE abs(c.avgdl / s.avgdl - 1) > %s"""
                ),
                [tolerance],
            )
            return cur.rowcount

    def set_collection(self, ids: Sequence[str], collection: str) -> None:
        """bm25: record that the given texts' documents are in `collection` now (caller's transaction)."""
        if self.method == "bm25":
            statement = self._sql("UPDATE {chunks} SET collection = %s WHERE id = ANY(%s)")
            self.conn.execute(statement, [collection, list(ids)])

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        prefilter: bool = True,
        prune: bool = True,
        collections: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The `k` best chunks for a query: ``(chunk id, score)``, best first, ties by id.

        Args:
            query: The question as typed.
            k: How many chunks at most; only chunks sharing a term with the query are returned.
            prefilter: bm25: find the candidates with the GIN index (False: score every chunk in a
                sequential scan, for comparison).
            prune: bm25, with `prefilter`: leave out the chunks that hold only terms too light to reach the
                top k (`SEARCH`); False scores every chunk sharing a term (for comparison: the same result).
            collections: bm25: only chunks of these collections (None: every chunk), in the SQL's WHERE.
        """
        if self.method == "ts_rank_cd":
            if collections is not None:
                raise ValueError("a search of some collections: bm25 only")
            return self._search_ts(query, k)
        counts = Counter(self.tokenize([query])[0])
        if not counts or (collections is not None and not collections):
            return []
        parameters: dict[str, Any] = {
            "terms": list(counts),
            "counts": list(counts.values()),
            "k": k,
            "collections": None if collections is None else list(collections),
        }
        readable = "(%(collections)s::text[] IS NULL OR c.collection = ANY(%(collections)s::text[]))"
        if prefilter and prune:
            statement = self._sql(
                "SELECT id, distance FROM {search_in}(%(terms)s, %(counts)s, %(k)s, %(collections)s::text[])"
            )
        elif prefilter:
            statement = self._sql(
                """WITH q AS ({query_vector})
                SELECT c.id, c.weights <#> (SELECT vector FROM q) AS distance FROM {chunks} AS c
                WHERE c.terms && (SELECT ids FROM q) AND {readable} ORDER BY distance, c.id LIMIT %(k)s""",
                readable=sql.SQL(readable),
                query_vector=self._query_vector(sql.Placeholder("terms"), sql.Placeholder("counts")),
            )
            with self.conn.transaction():  # the GIN index whatever the planner thinks (see the module)
                self.conn.execute("SET LOCAL enable_seqscan = off")
                rows = self.conn.execute(statement, parameters).fetchall()
            return [
                (key, -float(distance)) for key, distance in rows if distance is not None and distance < 0
            ]
        else:
            statement = self._sql(
                """WITH q AS ({query_vector})
                SELECT c.id, c.weights <#> (SELECT vector FROM q) AS distance FROM {chunks} AS c
                WHERE {readable} ORDER BY distance, c.id LIMIT %(k)s""",
                readable=sql.SQL(readable),
                query_vector=self._query_vector(sql.Placeholder("terms"), sql.Placeholder("counts")),
            )
        found = self.conn.execute(statement, parameters)
        return [(key, -float(distance)) for key, distance in found if distance is not None and distance < 0]

    def idf(self, tokens: Sequence[str]) -> list[float]:
        """bm25: each token's inverse document frequency, log((N + 1) / (df + 0.5)), as the local tier's.

        From today's df and count (folded plus pending): what local answering weighs a question's terms by.
        """
        if not tokens:
            return []
        rows = self.conn.execute(
            self._sql(
                """SELECT v.term,
                    v.df + coalesce((SELECT sum(p.df) FROM {pending} AS p WHERE p.term = v.id), 0)
                FROM {terms} AS v WHERE v.term = ANY(%s)"""
            ),
            (list(tokens),),
        ).fetchall()
        frequency = {term: int(df) for term, df in rows}
        totals = self.conn.execute(self._sql("SELECT chunks FROM {totals} AS t")).fetchone()
        documents = int(totals[0]) if totals and totals[0] is not None else 0
        return [math.log((documents + 1) / (frequency.get(t, 0) + 0.5)) for t in tokens]

    def scores(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """bm25: the score for a query of each given chunk sharing a term with it, as `search` scores it.

        What a search needs of chunks another retriever found: their BM25, though not in its top k. The
        chunks are found by key (a chunk sharing no term has an inner product of 0 and is left out).
        """
        if self.method != "bm25":
            raise ValueError("scores of given chunks: bm25 only")
        counts = Counter(self.tokenize([query])[0])
        if not counts or not ids:
            return {}
        statement = self._sql(
            """WITH q AS ({query_vector})
            SELECT c.id, c.weights <#> (SELECT vector FROM q) AS distance FROM {chunks} AS c
            WHERE c.id = ANY(%(ids)s)""",
            query_vector=self._query_vector(sql.Placeholder("terms"), sql.Placeholder("counts")),
        )
        parameters = {"terms": list(counts), "counts": list(counts.values()), "ids": list(ids)}
        rows = self.conn.execute(statement, parameters)
        return {key: -float(distance) for key, distance in rows if distance is not None and distance < 0}

    def _search_ts(self, query: str, k: int) -> list[tuple[str, float]]:
        if self.match == "all":
            statement = self._sql(
                """SELECT id, ts_rank_cd(tsv, q, %(normalization)s) AS score
                FROM {chunks}, plainto_tsquery({config}::regconfig, %(query)s) AS q
                WHERE tsv @@ q ORDER BY score DESC, id LIMIT %(k)s"""
            )
        else:
            statement = self._sql("SELECT id, score FROM {search}(%(query)s, %(k)s, %(normalization)s)")
        rows = self.conn.execute(statement, {"query": query, "normalization": self.normalization, "k": k})
        return [(key, float(score)) for key, score in rows]
