"""One report section, written from its own evidence (SynthRAG's systematic information generation)."""

PROMPT = """Write the section "{title}" of a report that answers the question below. The section's goal:
{goal}
The report's sections are: {titles}. Stay within this section's goal; the other sections cover the rest.
Use only the evidence below. After every sentence that uses evidence, cite it with its label in square
brackets, e.g. [E2] or [E1][E3]; never cite a label that is not listed. Write one to three short paragraphs
of plain prose, no heading, no introduction to the report, no conclusion. Every sentence must state what
its cited evidence says; where the evidence does not cover part of the goal, leave that part out (do not
guess); if it covers none of it, write only: "Your documents hold no evidence for this section."

{data_rule}

{question}

{evidence}"""

REFINE_PROMPT = """Here is a draft of the section "{title}" of a report (goal: {goal}), written from earlier
evidence, and further evidence. Rewrite the draft so it also uses the new evidence where it serves the
section's goal: keep every correct, cited sentence of the draft with its citations, add or correct sentences
from the new evidence citing its labels like [E5], and never cite a label that appears neither in the draft
nor below. No heading.

{data_rule}

{question}

{draft}

{evidence}"""
