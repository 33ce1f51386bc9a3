"""The shared tier: one index in one PostgreSQL database that many servers read and many workers write.

`pgstore.PgStore` is the store (tables, reads, document writes and the work queue, one module each:
`schema`, `reads`, `writes`, `queue`); `index.SharedIndex` searches it and `index.SharedWriter` writes it,
behind the index ports (`citewise.index.reading.SearchIndex`, `citewise.index.writer.IndexWriter`).
Vectors are pgvector's (`pgvectors`) or a Chroma server's (`chromavectors`), BM25 is `pglexical`'s, ingest
workers are `pgworker` (`python -m citewise.index.shared.pgworker`), and `pgserver` starts a throwaway
PostgreSQL with pgvector (tests, benchmarks, a hot standby). Nothing here knows the local tier.
"""
