"""The cited answer, written iteratively so every call fits the context budget (LLM-Ref)."""

PROMPT = """Answer the question using only the evidence below. After every sentence that uses evidence,
cite it with its label in square brackets, e.g. [E2] or [E1][E3]. Do not cite a label that is not listed.
If the evidence does not answer part of the question, do not guess: write one sentence exactly of the form
"Your documents do not answer this part of the question: <that part, in the question's own words>." (it is
the only uncited sentence allowed). Be concise and precise.

{data_rule}

{question}

{evidence}"""

REFINE_PROMPT = """Here is a draft answer to the question, written from earlier evidence, and further
evidence. Rewrite the draft so it also uses the new evidence where it is relevant: keep every correct, cited
sentence of the draft with its citations, add or correct sentences from the new evidence citing its labels
like [E5], and never cite a label that appears neither in the draft nor below. Do not drop supported
information.

{data_rule}

{question}

{draft}

{evidence}"""

LEAN_PROMPT = """Answer the question from the evidence below, which holds the answer. Give the answer in one
to three sentences, keeping the evidence's own words where you can. After every sentence, cite the passages
it uses with their labels in square brackets, e.g. [E2] or [E1][E3]. Do not cite a label that is not listed.

{data_rule}

{question}

{evidence}"""
"""The lean profile's writer prompt (when `answer_prompt` is left as it is). Whether the documents answer is
decided before it, by local mode's rule, so a small writer is not offered a sentence saying they do not: given
it, Qwen2.5-1.5B wrote only that sentence on 9 of 15 held-out turns whose passages answer."""
