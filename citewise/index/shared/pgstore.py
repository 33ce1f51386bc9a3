"""The shared tier's document store on one PostgreSQL database, with the work queue its ingest workers share.

What the local tier keeps in SQLite (its `docstore`) lives here in tables named after a prefix
(``citewise`` by default): ``<p>_files``, ``<p>_documents``, ``<p>_paragraphs``, ``<p>_bibliography`` and
``<p>_chunks``, with the same columns. Vectors are in pgvector through `PgVectors` (halfvec, HNSW cosine):
the chunks' in ``<p>_vectors_chunks``, the paragraphs' (embedded whole, or their chunks' normalised sum with
``paragraph_vectors="pooled"``) in ``<p>_pvectors_chunks``. BM25 is `PgLexical`'s, of chunks
(``<p>_lexical_*``) and of paragraphs (``<p>_plexical_*``), over the texts the local tier ranks (the title,
then the text: `chunk_input`). ``<p>_meta`` records the embedding model, its dimension and the chunking, and
where the vectors are: pgvector, or a Chroma server chosen when the store is made
(`citewise.index.shared.chromavectors`, which says how its writes are ordered around the transactions below).

Ingest goes through a queue. `PgStore.enqueue` adds files to ``<p>_queue`` (a file queued twice is queued
once); each worker (`citewise.index.shared.pgworker`) repeats `PgStore.work` until the queue is empty. One
step:

1. Claim: on a connection of its own, the worker opens a transaction and takes the oldest queued file with
   ``SELECT ... FOR UPDATE SKIP LOCKED``: a file another worker holds is passed over, never waited for. That
   transaction holds the one row lock and nothing else while the file is read, chunked and embedded.
2. Write: then, and only then, a transaction opens on the store's connection: the file's documents, their
   paragraphs, bibliography, chunks, vectors and lexical rows, the file's record, and the item's outcome
   (``<p>_outcomes``: done or failed, what was added, what was skipped and why) all commit together. A file
   that changed since it was last ingested loses its stale documents in the same transaction.
3. Release: the claim transaction deletes the queue row and commits.

A worker killed before the write commits leaves nothing: both transactions roll back, and the row, unlocked,
goes to the next worker. Killed after it, the outcome is committed, and a queued row with an outcome is never
claimed again. A file that is not what its name says (a text file named .pdf, empty, unreadable) gets a
failed outcome with the loader's reason, and so does a file a loader fails on in any other way (a bug: the
exception's type and message); the worker goes on with the next.

Every claim is counted (``<p>_attempts``: one row a claim, committed at once on the store's connection, so a
worker that dies leaves it behind). A file that ended `MAX_ATTEMPTS` claims without an outcome (each killed a
worker, or raised in chunking, embedding or writing) is not tried again: its next claim records it failed,
with the last error recorded (or that a worker stopped in it). An exception other than a lost connection is
recorded on the claim's row, the file stays queued, and the worker goes on; the claim that reaches the
limit records the failure. `PgStore.requeue` puts failed files back in the queue, and gives queued files
that used up claims their count afresh.

Workers do not serialise each other. No write updates a row another worker's write updates: documents,
chunks and vectors are new rows (HNSW inserts lock index pages, briefly); the lexical df and count changes
are rows of their own (``<p>_lexical_pending``), folded into the vocabulary now and then (`FOLD_EVERY`)
by one worker at a time (`PgLexical.fold`); new terms are registered before the write transaction, in term
order (no deadlock). The same document in two files ingested at once is stored once: the second write
skips it by its primary key (``ON CONFLICT DO NOTHING``) and records it as a duplicate.

Reads (the primitives a search needs: dense and lexical top-k of chunks and of paragraphs, chunks, their
vectors, paragraphs and documents by id) see what is committed. A `PgStore` holds one connection for
writes and reads (and one for claims): one thread uses it at a time.
"""

from __future__ import annotations

from citewise.index.shared.queue import Queue


class PgStore(Queue):
    """Documents, paragraphs, bibliography, chunks, vectors and BM25 of the shared tier, and its work queue.

    Built in layers, one module each, every one on the one below: `schema.Schema` (the connection, the
    tables, the settings; its arguments are the store's), `reads.Reads`, `writes.Writes` (documents' rows,
    removals, tags) and `queue.Queue` (the work queue).
    """
