"""ScoreRAG graded summaries: the length of a source's summary follows its relevance band."""

PROMPT = """Summarise each source for answering the question. Each source says how long its summary may be
(its `length`): more relevant sources get longer summaries. Keep numbers, names and claims exactly as the
source states them and add nothing that is not in it. Where the source cites works with markers like [3] or
(Lee et al., 2021), keep the markers next to the claims they support.
Return one summary for every source label ({labels}).

{data_rule}

{question}

{evidence}"""

BANDS = (
    (70.0, 6, "up to 6 sentences (detailed)"),
    (50.0, 4, "up to 4 sentences"),
    (30.0, 2, "up to 2 sentences"),
    (0.0, 1, "1 sentence"),
)
"""Score band -> (sentences, length wording): ScoreRAG's >70 detailed, 50-70, 30-50, 20-30 one line."""


def band(score: float) -> tuple[int, str]:
    """Summary length for a final score: (sentences, wording)."""
    for floor, count, wording in BANDS:
        if score > floor or floor == 0.0:
            return count, wording
    return BANDS[-1][1], BANDS[-1][2]
