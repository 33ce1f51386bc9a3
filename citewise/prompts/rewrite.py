"""ChunkRAG query rewriting: a search-ready query plus sub-queries; corrective on a second pass."""

PROMPT = """Rewrite the question for searching a document collection with keyword (BM25) and semantic search.
Return `query`: the question made specific and self-contained, keeping its key terms, names and numbers, and
`sub_queries`: at most {max_sub_queries} short queries for separate parts of the question (none if it has one
part). Do not answer the question.
{feedback}
{data_rule}

{question}"""

FEEDBACK = """This is a corrective pass: the previous queries found no relevant evidence.
Previous queries: {previous}
Closest evidence found (judged not relevant enough): {closest}
Use different words: synonyms, broader or more specific terms, the likely vocabulary of the documents."""
