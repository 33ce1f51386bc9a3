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

FOLLOW_UP = """A question was searched once; below are the question and the best passages found. Decide if
answering it needs a second search: a multi-hop question ("where was the composer of Carmen born?") needs a
fact about something the passages name (Bizet) that they do not hold themselves. If so, set `needed` and
write at most {count} short search queries for that fact, naming the entity from the passages. If the
passages already answer it, or it has one part, set `needed` to false and give no queries. Do not answer the
question.

{data_rule}

{question}

{passages}"""
