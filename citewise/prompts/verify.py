"""Fine-grained verification (LLM-Ref): each answer sentence -> the evidence lines that support it."""

PROMPT = """For each numbered answer sentence, list the evidence line labels (like E2.1) that state what the
sentence claims, and say whether it is supported. A sentence is supported only if the listed lines, read on
their own, state its claim; a sentence about what the evidence says or does not say is a claim like any
other. Return one item for every sentence (1 to {count}).

{data_rule}

{sentences}

{evidence}"""
