"""Accuracy: the GenText written from the trusted sources, and each document's stance towards it."""

GENTEXT_PROMPT = """Write a short text of about {words} words that answers the question using only the
trusted evidence below. Do not use any other knowledge. After every sentence, cite the evidence it uses with
its label in square brackets, e.g. [T1] or [T1][T3]; do not cite a label that is not listed. If the evidence
does not answer the question, say so in one sentence.

{data_rule}

{question}

{evidence}"""

STANCE_PROMPT = """The draft below summarises what trusted sources say in answer to the question. For each
evidence document, decide its stance towards the draft on that question: `supports` (it agrees with the
draft's claims), `contradicts` (it makes claims that conflict with the draft) or `neutral` (it neither agrees
nor conflicts, or is about something else). Judge only the claims; ignore style and wording. Give each
document's label and a one-line reason.

{data_rule}

{question}

{draft}

{evidence}"""
