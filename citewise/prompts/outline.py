"""Adaptive outline (SynthRAG): the question type's outline instruction adapted to this question."""

PROMPT = """Plan the outline of a report that answers the question from the user's documents. Follow the
outline instruction for this type of question ({outline_type}), adapted to the question and to what the
evidence overview shows the documents contain: plan between {min_sections} and {max_sections} sections, in
reading order, and only sections the documents can support. Do not plan an introduction or a conclusion
section (they are added later). For each section give a short `title`, a one-sentence `goal`, and one to three
search `queries` that would find its evidence in the documents (use the documents' vocabulary).

Outline instruction:
{instruction}

{data_rule}

{question}

{overview}"""
