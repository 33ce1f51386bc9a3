"""Routing: a direct cited answer or a structured report."""

PROMPT = """Decide how to answer the question from the user's documents. Choose `direct` for a question with
one answer: a fact, a number, a definition, a yes/no, a short explanation of one thing. Choose `report` for a
question that needs several parts to answer well: a comparison, an overview or survey, a multi-part
explanation, pros and cons, a history or timeline, or an explicit request for a report. The evidence
overview says how many documents and passages the first search kept. Give a one-line reason.

{data_rule}

{question}

{overview}"""
