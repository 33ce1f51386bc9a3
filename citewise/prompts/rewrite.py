"""ChunkRAG query rewriting: a search-ready query plus sub-queries; corrective on a second pass."""

PROMPT = """Rewrite the question for searching a document collection with keyword (BM25) and semantic search.
Return `query`: the question made specific and self-contained, keeping its key terms, names and numbers, and
`sub_queries`: at most {max_sub_queries} short queries for separate parts of the question (none if it has one
part). Do not answer the question. On a corrective pass, the data below also holds the previous queries
and the closest evidence they found: use different words (synonyms, broader or more specific terms, the
likely vocabulary of the documents).

{data_rule}

{question}
{feedback}"""

FEEDBACK = """
{previous}

{closest}"""
