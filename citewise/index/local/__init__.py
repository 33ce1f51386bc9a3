"""The local tier: one index under one folder (SQLite the source of truth, Chroma's vectors, bm25s's BM25).

`store.Index` reads and writes it (`citewise.index.reading.SearchIndex`, `citewise.index.writer.IndexWriter`);
`ingest` is its writing half, `docstore` its SQLite store, `vectors` its Chroma collections, `lexical` its
bm25s indexes and `paragraphs` its paragraph vectors. Nothing here knows the shared tier.
"""
